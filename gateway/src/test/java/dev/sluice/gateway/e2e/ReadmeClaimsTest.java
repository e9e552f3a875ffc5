package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The README's claims, each read from the README itself and checked against the real thing: the routes it
 * lists on each listener answer there (and {@code /metrics} is not on the client listener), errors and
 * rejections carry what it says, the packages its layout names are the gateway's packages, every repository
 * path it names exists, every page of docs/ is reachable from it, and what its first-request claim rests on
 * (the serve script's GPU timer, the systemd unit's state directory, the state file on by default) is so.
 * The behaviour behind the first-request claim itself: PrefillRatePriorEndToEndTest and
 * FleetPrefillRatesEndToEndTest.
 */
class ReadmeClaimsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern ROUTE = Pattern.compile("`(?:(GET|POST) )?(/[a-z0-9_/.]*)`");
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
    }

    private static String readme() throws IOException {
        return Files.readString(ROOT.resolve("README.md"));
    }

    /** The paragraph of the README from {@code from} up to {@code to}. */
    private static String between(String text, String from, String to) {
        int a = text.indexOf(from);
        assertThat(a).as("README names '%s'", from).isNotNegative();
        int b = text.indexOf(to, a + from.length());
        assertThat(b).as("README names '%s' after '%s'", to, from).isPositive();
        return text.substring(a, b);
    }

    /** {@code `POST /a`, `/b`, `GET /c`}: each path with the method last named before it. */
    static List<String[]> routes(String paragraph) {
        List<String[]> out = new ArrayList<>();
        String method = "GET";
        Matcher m = ROUTE.matcher(paragraph);
        while (m.find()) {
            if (m.group(1) != null) {
                method = m.group(1);
            }
            out.add(new String[] {method, m.group(2)});
        }
        return out;
    }

    private HttpResponse<String> call(int port, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (method.equals("POST")) {
            b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        }
        return bed.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String bodyFor(String path) {
        return switch (path) {
            case "/v1/chat/completions" -> "{\"model\":\"sim-model\",\"max_tokens\":2,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
            case "/v1/completions" -> "{\"model\":\"sim-model\",\"max_tokens\":2,\"prompt\":\"hi\"}";
            case "/generate" -> "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}";
            default -> "{}";
        };
    }

    @Test
    void theRoutesItListsAnswerOnTheListenersItNames() throws Exception {
        // the shipped listener settings (no internal endpoints on the client port)
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults(), "{connect: 1s, first_token: 20s, "
                + "idle_stream: 10s}", "listen: {host: 127.0.0.1, port: 0}\n"
                + "admission: {prefill_rate: {prior_tokens_per_second: 1000, from_telemetry: false}}\n");
        String text = readme();
        List<String[]> client = routes(between(text, "Routes on the client listener", "On the admin listener"));
        List<String[]> admin = routes(between(text, "On the admin listener", "Errors are OpenAI-style"));
        assertThat(client).extracting(r -> r[0] + " " + r[1]).contains("POST /v1/chat/completions", "POST /generate",
                "GET /v1/models", "GET /health", "GET /readiness");
        assertThat(admin).extracting(r -> r[0] + " " + r[1]).contains("GET /", "GET /metrics", "GET /admin/state",
                "POST /admin/reload");
        for (String[] r : client) {
            HttpResponse<String> res = call(bed.port(), r[0], r[1], bodyFor(r[1]));
            assertThat(res.statusCode()).as("%s %s on the client listener: %s", r[0], r[1], res.body()).isEqualTo(200);
            if (r[0].equals("POST")) {
                assertThat(res.headers().firstValue("X-Sluice-Queue-Wait-Ms")).as("every admitted answer").isPresent();
            }
        }
        assertThat(call(bed.port(), "GET", "/metrics", "").statusCode()).as("/metrics is the admin listener's")
                .isEqualTo(404);
        for (String[] r : admin) {
            HttpResponse<String> res = call(bed.gateway.adminPort(), r[0], r[1], "{}");
            assertThat(res.statusCode()).as("%s %s on the admin listener: %s", r[0], r[1], res.body()).isNotEqualTo(404);
            if (r[0].equals("GET")) {
                assertThat(res.statusCode()).as("%s %s", r[0], r[1]).isEqualTo(200);
            }
        }
        assertThat(call(bed.gateway.adminPort(), "GET", "/metrics", "").body()).contains("sluice_");

        // "Errors are OpenAI-style JSON {error: {message, type, code}}; rejections also carry X-Sluice-Reject-Reason
        // and Retry-After, every answer to a request that reached admission X-Sluice-Queue-Wait-Ms"
        HttpResponse<String> bad = call(bed.port(), "POST", "/v1/completions", "{\"prompt\": ");
        assertThat(bad.statusCode()).isEqualTo(400);
        JsonNode error = JSON.readTree(bad.body()).path("error");
        assertThat(error.path("message").asText()).isNotEmpty();
        assertThat(error.path("type").asText()).isNotEmpty();
        assertThat(error.path("code").asText()).isNotEmpty();
        // 3,000 prompt tokens at the configured 1,000 tokens/s cannot start streaming within 200 ms
        String tooMuch = "{\"model\":\"sim-model\",\"max_tokens\":2,\"prompt\":[" + "7,".repeat(3_000) + "7]}";
        HttpResponse<String> refused = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bed.port()
                + "/v1/completions")).header("Content-Type", "application/json").header("X-Sluice-Deadline-Ms", "200")
                .POST(HttpRequest.BodyPublishers.ofString(tooMuch)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).as(refused.body()).isIn(429, 503);
        assertThat(JSON.readTree(refused.body()).path("error").path("code").asText()).isNotEmpty();
        assertThat(refused.headers().firstValue("X-Sluice-Reject-Reason")).isPresent();
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(refused.headers().firstValue("X-Sluice-Queue-Wait-Ms")).isPresent();
    }

    @Test
    void theLayoutNamesEveryPackageOfTheGatewayAndNoOther() throws Exception {
        Matcher m = Pattern.compile("dev\\.sluice\\.gateway\\.\\{([a-z,]+)}").matcher(readme());
        assertThat(m.find()).as("the layout's package list").isTrue();
        Set<String> named = new TreeSet<>(List.of(m.group(1).split(",")));
        Set<String> actual = new TreeSet<>();
        try (Stream<Path> dirs = Files.list(ROOT.resolve("gateway/src/main/java/dev/sluice/gateway"))) {
            dirs.filter(Files::isDirectory).forEach(d -> actual.add(d.getFileName().toString()));
        }
        assertThat(named).isEqualTo(actual);
    }

    @Test
    void everyRepositoryPathItNamesExists() throws Exception {
        Matcher m = Pattern.compile("(?<![\\w./-])((?:scripts|config|deploy|docs|src|gateway|testbed|\\.ci)/[\\w./-]*\\w)")
                .matcher(readme());
        Set<String> missing = new LinkedHashSet<>();
        int named = 0;
        while (m.find()) {
            String p = m.group(1);
            if (p.startsWith("gateway/target/") || p.startsWith("testbed/target/") || p.startsWith("run/")) {
                continue; // built or written at run time
            }
            named++;
            if (!Files.exists(ROOT.resolve(p))) {
                missing.add(p);
            }
        }
        assertThat(named).isGreaterThan(20);
        assertThat(missing).isEmpty();
    }

    @Test
    void everyPageOfTheDocsIsReachableFromIt() throws Exception {
        Pattern link = Pattern.compile("(?:docs/|\\()([\\w-]+\\.md)");
        Set<String> seen = new TreeSet<>();
        Deque<String> next = new ArrayDeque<>();
        Matcher m = link.matcher(readme());
        while (m.find()) {
            next.add(m.group(1));
        }
        while (!next.isEmpty()) {
            String page = next.poll();
            Path file = ROOT.resolve("docs").resolve(page);
            if (!Files.exists(file) || !seen.add(page)) {
                continue;
            }
            Matcher in = link.matcher(Files.readString(file));
            while (in.find()) {
                next.add(in.group(1));
            }
        }
        Set<String> all = new TreeSet<>();
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".md")).forEach(all::add);
        }
        assertThat(seen).containsAll(all);
    }

    /** What "from the first request on" rests on, as the README words it. */
    @Test
    void theFirstRequestClaimsGroundsAreSo() throws Exception {
        String claim = between(readme(), "From\nthe first request on", "Each admitted request");
        assertThat(claim).contains("SGLANG_ENABLE_METRICS_DEVICE_TIMER=1", "scripts/serve-prefill",
                "admission.prefill_rate.state_file: auto", "/var/lib/sluice", "coordination:");
        // scripts/serve-prefill starts SGLang with the GPU timer the gateway reads
        Process p = new ProcessBuilder("bash", ROOT.resolve("scripts/serve-prefill").toString(), "--print")
                .redirectErrorStream(true).start();
        String printed = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(printed).isZero();
        assertThat(printed).contains("SGLANG_ENABLE_METRICS_DEVICE_TIMER=1").contains("--enable-metrics");
        // the systemd unit gives the gateway its state directory, /var/lib/sluice
        assertThat(Files.readString(ROOT.resolve("deploy/systemd/sluice-gateway.service")))
                .containsPattern("(?m)^StateDirectory=sluice$");
        // the state file is on by default: a configuration without it keeps the rates in the state directory
        assertThat(ConfigLoader.parse("disaggregation: none\nworkers: {unified: [{url: http://127.0.0.1:1}]}\n",
                "test", dev.sluice.gateway.config.ConfigOverrides.of(java.util.Map.of("STATE_DIRECTORY",
                        "/var/lib/sluice"), List.of())).admission().prefillRate().stateFile())
                .contains(Path.of("/var/lib/sluice/prefill-rates.json"));
    }
}
