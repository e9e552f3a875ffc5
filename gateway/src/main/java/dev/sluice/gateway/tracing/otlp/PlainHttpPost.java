package dev.sluice.gateway.tracing.otlp;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * POSTs to a plain-http collector over one kept-alive socket, blocking, on the export thread:
 * HTTP/1.1 with a Content-Length body, the answer's status read and its body skipped. A batch
 * every half second at most needs nothing more, and the JDK's asynchronous client cost about a
 * millisecond of CPU a post (futures, a selector thread, timer events) on the core the requests
 * need (docs/benchmarks.md, "Tracing"). Any failure closes the socket; the next post reconnects.
 * A kept-alive socket the collector (or a load balancer before it) closed while idle fails the next
 * post before any answer byte: that post is sent once more on a new connection, as HTTP clients treat
 * a stale pooled connection (a collector that took the first copy and then dropped the connection
 * gets a batch twice: spans are idempotent enough for that). Posts run on the export thread alone;
 * {@link #close} may come from another thread (shutdown), and unblocks a write to a collector that
 * stopped reading.
 */
final class PlainHttpPost implements AutoCloseable {
    private static final int MAX_HEAD = 16 * 1024;
    private final InetSocketAddress address;
    private final int timeoutMillis;
    private final byte[] head; // request line and headers up to Content-Length's value
    private volatile Socket socket;
    private InputStream in;
    private OutputStream out;
    /** Whether the answer to the post in progress has begun (a byte read): then it is not sent again. */
    private boolean answered;

    PlainHttpPost(URI uri, Map<String, String> headers, Duration timeout) {
        int port = uri.getPort() < 0 ? 80 : uri.getPort();
        this.address = InetSocketAddress.createUnresolved(uri.getHost(), port);
        this.timeoutMillis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        if (uri.getRawQuery() != null) {
            path += "?" + uri.getRawQuery();
        }
        StringBuilder h = new StringBuilder("POST ").append(path).append(" HTTP/1.1\r\nHost: ").append(uri.getHost());
        if (uri.getPort() >= 0) {
            h.append(':').append(port);
        }
        h.append("\r\nContent-Type: application/x-protobuf\r\n");
        headers.forEach((k, v) -> h.append(k).append(": ").append(v).append("\r\n"));
        h.append("Content-Length: ");
        this.head = h.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** Sends {@code body[0, length)} and returns the collector's status. */
    int post(byte[] body, int length) throws IOException {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        boolean reused = socket != null;
        try {
            return send(body, length, deadline);
        } catch (IOException e) {
            close();
            if (!reused || answered || e instanceof SocketTimeoutException) {
                throw e;
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        try {
            return send(body, length, deadline); // the kept-alive socket was stale: once more, on a new one
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private int send(byte[] body, int length, long deadline) throws IOException {
        answered = false;
        if (socket == null) {
            connect();
        }
        out.write(head);
        out.write((length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(body, 0, length);
        out.flush();
        return readResponse(deadline);
    }

    private void connect() throws IOException {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(address.getHostString(), address.getPort()), timeoutMillis);
            s.setSoTimeout(timeoutMillis);
            in = new BufferedInputStream(s.getInputStream(), 8192);
            out = s.getOutputStream();
            socket = s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    private int readResponse(long deadline) throws IOException {
        String status = line(deadline);
        int code = statusCode(status);
        while (code >= 100 && code < 200) { // an interim answer (100 Continue, 103): its headers, then the real one
            while (!line(deadline).isEmpty()) {
                // the interim answer's headers
            }
            status = line(deadline);
            code = statusCode(status);
        }
        long contentLength = -1;
        boolean chunked = false;
        boolean close = status.startsWith("HTTP/1.0");
        String header;
        int headBytes = 0;
        while (!(header = line(deadline)).isEmpty()) {
            headBytes += header.length();
            if (headBytes > MAX_HEAD) {
                throw new IOException("the collector's answer has over " + MAX_HEAD + " bytes of headers");
            }
            int colon = header.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = header.substring(colon + 1).trim();
            switch (name) {
                case "content-length" -> contentLength = Long.parseLong(value);
                case "transfer-encoding" -> chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
                case "connection" -> close = close || value.equalsIgnoreCase("close");
                default -> { }
            }
        }
        if (chunked) {
            long size;
            while ((size = Long.parseLong(line(deadline).split(";", 2)[0].trim(), 16)) > 0) {
                skip(size + 2, deadline); // the chunk and its CRLF
            }
            while (!line(deadline).isEmpty()) {
                // trailers
            }
        } else if (contentLength > 0) {
            skip(contentLength, deadline);
        } else if (contentLength < 0) {
            close = true; // the body runs to the end of the connection: not worth reading
        }
        if (close) {
            close();
        }
        return code;
    }

    private static int statusCode(String status) throws IOException {
        if (!status.startsWith("HTTP/1.") || status.length() < 12) {
            throw new IOException("not an HTTP answer: " + abbreviate(status));
        }
        try {
            return Integer.parseInt(status.substring(9, 12));
        } catch (NumberFormatException e) {
            throw new IOException("not an HTTP status: " + abbreviate(status));
        }
    }

    private String line(long deadline) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = read(deadline)) != '\n') {
            if (b.length() > MAX_HEAD) {
                throw new IOException("the collector's answer has a line over " + MAX_HEAD + " bytes");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    private int read(long deadline) throws IOException {
        if (System.nanoTime() - deadline > 0) {
            throw new SocketTimeoutException("the collector did not answer within " + timeoutMillis + " ms");
        }
        int c = in.read();
        if (c < 0) {
            throw new IOException("the collector closed the connection");
        }
        answered = true;
        return c;
    }

    private void skip(long n, long deadline) throws IOException {
        while (n > 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new SocketTimeoutException("the collector did not answer within " + timeoutMillis + " ms");
            }
            long k = in.skip(n);
            if (k <= 0) {
                read(deadline);
                k = 1;
            }
            n -= k;
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 60 ? s : s.substring(0, 60) + "...";
    }

    @Override
    public void close() {
        Socket s = socket;
        if (s != null) {
            socket = null;
            try {
                s.close();
            } catch (IOException ignored) {
                // closing a broken connection: nothing more to do
            }
        }
    }
}
