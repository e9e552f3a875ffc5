package dev.sluice.gateway.admission;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prefill rates a run measured, kept for the next one ({@code admission.prefill_rate.state_file}):
 * {@code {"version": 1, "workers": {"<url>": {"tokens_per_second": 2480.5, "measured_at": "<instant>"}}}}.
 * Written whole to a temporary file and moved into place (a crash leaves the old file or the new
 * one, never half of one); a rate older than {@link #MAX_AGE} is not trusted (the model or the
 * hardware behind a URL may have changed). A missing or unreadable file means no priors, never a
 * failed start. Never called under the admission lock.
 */
public final class PrefillRateFile {
    private static final Logger log = LoggerFactory.getLogger(PrefillRateFile.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Older measurements are ignored at start. */
    static final Duration MAX_AGE = Duration.ofDays(7);

    private PrefillRateFile() {
    }

    /** The rates in {@code file} younger than {@link #MAX_AGE} at {@code now}, by worker URL; empty if none. */
    public static Map<String, Double> read(Path file, Instant now) {
        Map<String, Double> out = new HashMap<>();
        if (!Files.exists(file)) {
            return out;
        }
        try {
            JsonNode root = JSON.readTree(file.toFile());
            root.path("workers").fields().forEachRemaining(e -> {
                double rate = e.getValue().path("tokens_per_second").asDouble(Double.NaN);
                Instant at = parse(e.getValue().path("measured_at").asText(""));
                if (rate >= 1 && at != null && Duration.between(at, now).compareTo(MAX_AGE) <= 0) {
                    out.put(e.getKey(), rate);
                }
            });
            log.info("prefill rates read file={} workers={}", file, out.keySet());
        } catch (IOException | RuntimeException e) {
            log.warn("prefill rate file unreadable, starting without its priors file={} detail=\"{}\"", file,
                    e.toString());
        }
        return out;
    }

    private static Instant parse(String s) {
        try {
            return Instant.parse(s);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Writes {@code rates} (measured now) into {@code file}, keeping the entries of workers not in
     * it (another configuration's workers, or one not measured this run); an unreadable old file is
     * replaced. Failures are logged.
     */
    public static void write(Path file, Map<String, Double> rates, Instant now) {
        if (rates.isEmpty()) {
            return;
        }
        try {
            ObjectNode root = JSON.createObjectNode().put("version", 1);
            ObjectNode workers = root.putObject("workers");
            if (Files.exists(file)) {
                try {
                    JsonNode old = JSON.readTree(file.toFile()).path("workers");
                    old.fields().forEachRemaining(e -> workers.set(e.getKey(), e.getValue()));
                } catch (IOException e) {
                    log.warn("prefill rate file unreadable, replaced file={} detail=\"{}\"", file, e.toString());
                }
            }
            rates.forEach((url, rate) -> workers.putObject(url).put("tokens_per_second", Math.round(rate * 10) / 10.0)
                    .put("measured_at", now.toString()));
            Path dir = file.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
            Files.write(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            log.warn("prefill rate file not written file={} detail=\"{}\"", file, e.toString());
        }
    }
}
