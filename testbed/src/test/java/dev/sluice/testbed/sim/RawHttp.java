package dev.sluice.testbed.sim;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, for the tests that must see the connection itself: reuse of a
 * keep-alive connection, the server closing it (EOF), a stream cut mid-way.
 */
final class RawHttp implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;

    record Response(int status, Map<String, String> headers, String body) {
    }

    RawHttp(SimWorker w) throws IOException {
        socket = new Socket(w.host(), w.port());
        socket.setSoTimeout(10_000); // a server that never answers fails the test instead of hanging it
        in = new BufferedInputStream(socket.getInputStream());
    }

    void send(String method, String path, String body) throws IOException {
        byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        OutputStream out = socket.getOutputStream();
        out.write((method + " " + path + " HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
    }

    /** A whole response with a Content-Length body. */
    Response readResponse() throws IOException {
        String status = readLine();
        if (status == null) {
            throw new IOException("connection closed before a response");
        }
        Map<String, String> headers = new HashMap<>();
        String line;
        while ((line = readLine()) != null && !line.isEmpty()) {
            int colon = line.indexOf(':');
            headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
        }
        byte[] body = in.readNBytes(Integer.parseInt(headers.getOrDefault("content-length", "0")));
        return new Response(Integer.parseInt(status.split(" ")[1]), headers, new String(body, StandardCharsets.UTF_8));
    }

    /** One line without its line end; null at EOF (a reset counts as EOF: the server went away). */
    String readLine() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        try {
            while ((c = in.read()) != -1 && c != '\n') {
                b.write(c);
            }
        } catch (SocketException reset) {
            c = -1;
        }
        if (c == -1 && b.size() == 0) {
            return null;
        }
        String s = b.toString(StandardCharsets.UTF_8);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
    }

    /** Every remaining line until the server closes the connection. */
    List<String> readToEof() throws IOException {
        List<String> lines = new ArrayList<>();
        String line;
        while ((line = readLine()) != null) {
            lines.add(line);
        }
        return lines;
    }

    /** Whether the server closed the connection (blocks up to the socket timeout). */
    boolean atEof() throws IOException {
        try {
            return in.read() == -1;
        } catch (SocketException reset) {
            return true;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
