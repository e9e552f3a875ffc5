package dev.sluice.gateway.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A client over a plain socket, for what HTTP libraries hide: leaving mid-stream, reading slowly,
 * sending a body that is too large. Reads are raw bytes (chunked framing included).
 */
public final class RawHttpClient implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final ByteArrayOutputStream received = new ByteArrayOutputStream();

    public RawHttpClient(int port, int receiveBufferBytes) throws IOException {
        socket = new Socket();
        if (receiveBufferBytes > 0) {
            socket.setReceiveBufferSize(receiveBufferBytes);
        }
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(30_000);
        in = socket.getInputStream();
    }

    public RawHttpClient(int port) throws IOException {
        this(port, 0);
    }

    public void post(String path, String json) throws IOException {
        post(path, json, new String[0]);
    }

    /** A POST with extra headers, given as name, value, name, value... */
    public void post(String path, String json, String... headers) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        StringBuilder extra = new StringBuilder();
        for (int i = 0; i + 1 < headers.length; i += 2) {
            extra.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
        }
        String head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + extra + "Content-Length: " + body.length + "\r\n\r\n";
        socket.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().write(body);
        socket.getOutputStream().flush();
    }

    /** Reads until the received text contains {@code marker}; returns all text so far. */
    public String readUntil(String marker) throws IOException {
        byte[] buf = new byte[8192];
        while (!text().contains(marker)) {
            int n = in.read(buf);
            if (n < 0) {
                throw new IOException("connection closed before '" + marker + "'; got: " + text());
            }
            received.write(buf, 0, n);
        }
        return text();
    }

    /** Reads at most {@code max} bytes (blocking for at least one); -1 at end of stream. */
    public int readSome(byte[] buf, int max) throws IOException {
        int n = in.read(buf, 0, Math.min(max, buf.length));
        if (n > 0) {
            received.write(buf, 0, n);
        }
        return n;
    }

    /** A slow reader's pause between reads: yields the CPU so the stream backs up (not a synchronisation). */
    public void readSomeLater() throws IOException {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    public String text() {
        return received.toString(StandardCharsets.UTF_8);
    }

    public int receivedBytes() {
        return received.size();
    }

    /** Drops what was read so far (keeps memory flat while draining a long stream). */
    public void forget() {
        received.reset();
    }

    /** The value of a response header in what was read so far. */
    public String header(String name) {
        for (String line : text().split("\r\n")) {
            if (line.toLowerCase().startsWith(name.toLowerCase() + ":")) {
                return line.substring(name.length() + 1).trim();
            }
            if (line.isEmpty()) {
                break;
            }
        }
        return null;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
