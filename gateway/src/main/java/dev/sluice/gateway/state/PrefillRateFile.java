package dev.sluice.gateway.state;

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
 * The prefill rates a run measured, kept for the next one ({@code admission.prefill_rate.state_file}, {@link StateDirectory}):
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
    static final Duration MAX_AGE = SavedRate.MAX_AGE;

    private PrefillRateFile() {
    }

    /** The rates in {@code file} younger than {@link #MAX_AGE} at {@code now}, by worker URL; empty if none. */
    public static Map<String, Double> read(Path file, Instant now) {
        return SavedRate.rates(entries(file, now));
    }

    /** The entries in {@code file} younger than {@link #MAX_AGE} at {@code now}, by worker URL; empty if none. */
    public static Map<String, SavedRate> entries(Path file, Instant now) {
        Map<String, SavedRate> out = new HashMap<>();
        if (!Files.exists(file)) {
            return out;
        }
        try {
            JsonNode root = JSON.readTree(file.toFile());
            root.path("workers").fields().forEachRemaining(e ->
                    SavedRate.of(e.getValue(), now).ifPresent(r -> out.put(e.getKey(), r)));
            log.info("prefill rates read file={} workers={}", file, out.keySet());
        } catch (IOException | RuntimeException e) {
            log.warn("prefill rate file unreadable, starting without its priors file={} detail=\"{}\"", file,
                    e.toString());
        }
        return out;
    }

    /**
     * Writes {@code rates} (measured now) into {@code file}, keeping the entries of workers not in
     * it (another configuration's workers, or one not measured this run); an unreadable old file is
     * replaced. Failures are logged; false then.
     */
    public static boolean write(Path file, Map<String, Double> rates, Instant now) {
        if (rates.isEmpty()) {
            return true;
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
            rates.forEach((url, rate) -> workers.set(url, new SavedRate(rate, now).toJson()));
            Path dir = file.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
            Files.write(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return true;
        } catch (IOException | RuntimeException e) {
            log.warn("prefill rate file not written file={} detail=\"{}\"", file, e.toString());
            return false;
        }
    }
}
