package dev.sluice.gateway.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Clients for the chaos suite, over raw sockets so the test decides the bytes and can leave at any
 * moment or read one byte at a time. Every answer is classified: a complete answer, one JSON error
 * (an error status with an OpenAI-style body, or a stream that ends with one error event and
 * {@code [DONE]}), a rejection (429/503 with a JSON body), the client's own departure, or
 * {@link Verdict#BROKEN} (anything else: truncated, not JSON, two answers, no answer in time),
 * which no scenario may ever see.
 */
final class ChaosClients implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    enum Verdict { COMPLETE, ERROR, REJECTED, LEFT, BROKEN }

    /** One client request as sent and as answered. */
    record Result(Verdict verdict, int status, long millis, String detail) {
    }

    /** How a client behaves. */
    enum Behaviour { NORMAL, SLOW_READER, LEAVES_AT_RANDOM }

    private final int port;
    private final Duration deadline;
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "chaos-client");
        t.setDaemon(true);
        return t;
    });
    private final List<Result> results = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Future<?>> loops = new ArrayList<>();

    ChaosClients(int port, Duration deadline) {
        this.port = port;
        this.deadline = deadline;
    }

    /** {@code n} clients that each send requests one after another until {@link #stopAndWait}. */
    void startLoops(int n, Behaviour behaviour) {
        for (int i = 0; i < n; i++) {
            int id = i;
            loops.add(pool.submit(() -> {
                int k = 0;
                while (!stop.get()) {
                    results.add(once(body(id, k++), behaviour));
                }
                return null;
            }));
        }
    }

    /** {@code n} single requests at once (a burst); they count in the results like the loops'. */
    void burst(int n, Behaviour behaviour) {
        for (int i = 0; i < n; i++) {
            int id = 1000 + i;
            loops.add(pool.submit(() -> {
                results.add(once(body(id, 0), behaviour));
                return null;
            }));
        }
    }

    List<Result> stopAndWait() throws Exception {
        stop.set(true);
        for (Future<?> f : loops) {
            f.get(deadline.toMillis() + 30_000, TimeUnit.MILLISECONDS);
        }
        loops.clear();
        return List.copyOf(results);
    }

    int completedSoFar() {
        synchronized (results) {
            return (int) results.stream().filter(r -> r.verdict() == Verdict.COMPLETE).count();
        }
    }

    private static String body(int client, int k) {
        boolean stream = (client + k) % 4 != 0; // mostly streams, some whole answers
        return "{\"model\":\"sim-model\",\"stream\":" + stream + ",\"max_tokens\":" + (8 + (client * 7 + k) % 24)
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"client " + client + " request " + k + " "
                + "lorem ipsum ".repeat(5 + (k % 20)) + "\"}]}";
    }

    /** Sends one request on a fresh connection and classifies the answer. */
    Result once(String json, Behaviour behaviour) {
        long start = System.nanoTime();
        boolean stream = json.contains("\"stream\":true");
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
            s.setSoTimeout(1000);
            if (behaviour == Behaviour.SLOW_READER) {
                s.setReceiveBufferSize(1024);
            }
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\n"
                    + "Connection: close\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            long leaveAfterBytes = behaviour == Behaviour.LEAVES_AT_RANDOM
                    ? ThreadLocalRandom.current().nextLong(-400, 1200) : Long.MAX_VALUE;
            long leaveAtNanos = behaviour == Behaviour.LEAVES_AT_RANDOM
                    ? start + TimeUnit.MILLISECONDS.toNanos(ThreadLocalRandom.current().nextLong(0, 400)) : Long.MAX_VALUE;
            StringBuilder text = new StringBuilder();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[behaviour == Behaviour.SLOW_READER ? 1 : 8192];
            long limit = start + deadline.toNanos();
            while (true) {
                if (System.nanoTime() > leaveAtNanos || text.length() > leaveAfterBytes) {
                    return new Result(Verdict.LEFT, 0, millis(start), "left after " + text.length() + " bytes");
                }
                if (System.nanoTime() > limit) {
                    return new Result(Verdict.BROKEN, status(text), millis(start), "no complete answer within the "
                            + "deadline; got: " + tail(text));
                }
                int n;
                try {
                    n = in.read(buf);
                } catch (SocketTimeoutException e) {
                    continue;
                }
                if (n < 0) {
                    break;
                }
                text.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                if (behaviour == Behaviour.SLOW_READER && text.length() % 64 == 0) {
                    Thread.sleep(1); // one byte at a time, and slower than the stream
                }
            }
            return classify(new String(text.toString().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8),
                    stream, millis(start));
        } catch (IOException e) {
            return new Result(Verdict.BROKEN, 0, millis(start), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(Verdict.BROKEN, 0, millis(start), "interrupted");
        }
    }

    static Result classify(String raw, boolean stream, long ms) {
        int status = status(raw);
        int split = raw.indexOf("\r\n\r\n");
        if (status == 0 || split < 0) {
            return new Result(Verdict.BROKEN, status, ms, "no HTTP response: " + tail(raw));
        }
        String head = raw.substring(0, split).toLowerCase(java.util.Locale.ROOT);
        String payload = raw.substring(split + 4);
        if (head.contains("transfer-encoding: chunked")) {
            payload = dechunk(payload);
            if (payload == null) {
                return new Result(Verdict.BROKEN, status, ms, "truncated chunked body: " + tail(raw));
            }
        }
        try {
            if (status != 200) {
                JsonNode err = JSON.readTree(payload).path("error");
                if (!err.path("message").isTextual()) {
                    return new Result(Verdict.BROKEN, status, ms, "error without a JSON body: " + tail(payload));
                }
                Verdict v = status == 429 || (status == 503 && err.path("code").asText().matches(
                        "no_capacity|worker_suspect|draining|queue_full|worker_ejected")) ? Verdict.REJECTED : Verdict.ERROR;
                return new Result(v, status, ms, err.path("code").asText() + ": " + err.path("message").asText());
            }
            if (!stream) {
                JsonNode doc = JSON.readTree(payload);
                return doc.path("choices").isArray() && doc.path("choices").size() > 0
                        ? new Result(Verdict.COMPLETE, status, ms, "")
                        : new Result(Verdict.BROKEN, status, ms, "200 without choices: " + tail(payload));
            }
            return classifyStream(payload, ms);
        } catch (IOException e) {
            return new Result(Verdict.BROKEN, status, ms, "not JSON: " + e.getMessage() + " in " + tail(payload));
        }
    }

    private static Result classifyStream(String payload, long ms) throws IOException {
        int errors = 0;
        int done = 0;
        int chunks = 0;
        String errorText = "";
        for (String line : payload.split("\n")) {
            if (!line.startsWith("data:")) {
                continue;
            }
            String data = line.substring(5).trim();
            if (data.equals("[DONE]")) {
                done++;
                continue;
            }
            JsonNode event = JSON.readTree(data); // every event must be valid JSON
            if (event.has("error")) {
                errors++;
                errorText = event.path("error").path("message").asText();
            } else {
                chunks++;
            }
        }
        if (done != 1) {
            return new Result(Verdict.BROKEN, 200, ms, "stream with " + done + " [DONE]: " + tail(payload));
        }
        if (errors > 1) {
            return new Result(Verdict.BROKEN, 200, ms, "stream with " + errors + " error events");
        }
        return errors == 1 ? new Result(Verdict.ERROR, 200, ms, "in-stream: " + errorText)
                : chunks > 0 ? new Result(Verdict.COMPLETE, 200, ms, "")
                : new Result(Verdict.BROKEN, 200, ms, "empty stream");
    }

    private static String dechunk(String s) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (true) {
            int eol = s.indexOf("\r\n", i);
            if (eol < 0) {
                return null;
            }
            int size = Integer.parseInt(s.substring(i, eol).trim().split(";")[0], 16);
            if (size == 0) {
                return out.toString();
            }
            if (eol + 2 + size > s.length()) {
                return null;
            }
            out.append(s, eol + 2, eol + 2 + size);
            i = eol + 2 + size + 2;
        }
    }

    private static int status(CharSequence raw) {
        String t = raw.toString();
        if (!t.startsWith("HTTP/1.1 ") || t.length() < 12) {
            return 0;
        }
        return Integer.parseInt(t.substring(9, 12));
    }

    private static String tail(CharSequence s) {
        String t = s.toString();
        return t.length() <= 300 ? t : "..." + t.substring(t.length() - 300);
    }

    private static long millis(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    /** Counts per verdict. */
    static Map<Verdict, Integer> count(List<Result> results) {
        Map<Verdict, Integer> m = new ConcurrentHashMap<>();
        for (Verdict v : Verdict.values()) {
            m.put(v, 0);
        }
        results.forEach(r -> m.merge(r.verdict(), 1, Integer::sum));
        return m;
    }

    @Override
    public void close() {
        stop.set(true);
        pool.shutdownNow();
    }
}
