package dev.sluice.gateway.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One keep-alive client connection over a raw socket, for tests where the test decides every byte:
 * exact request bytes out, one Content-Length framed response in (1xx responses skipped).
 */
public final class Wire implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A response: status, head text, headers by lower-case name, body bytes. */
    public record Response(int status, String head, Map<String, String> headers, byte[] body) {
        public JsonNode json() throws IOException {
            return JSON.readTree(body);
        }

        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    private final Socket socket = new Socket();
    private final InputStream in;

    public Wire(int port) throws IOException {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(15_000);
        in = socket.getInputStream();
    }

    public Response exchange(byte[] request) throws IOException {
        socket.getOutputStream().write(request);
        socket.getOutputStream().flush();
        Response r = read();
        while (r.status() >= 100 && r.status() < 200) {
            r = read(); // 100 Continue (Expect: 100-continue), then the answer
        }
        return r;
    }

    private Response read() throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed before a response head; got: " + head);
            }
            head.write(b);
            matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        String[] lines = text.split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
        }
        int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        if (body.length < length) {
            throw new IOException("closed inside a body; head: " + text);
        }
        return new Response(Integer.parseInt(lines[0].split(" ")[1]), text, headers, body);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
