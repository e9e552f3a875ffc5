package dev.sluice.gateway.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PrefillRateFileTest {
    @TempDir
    Path dir;

    @Test
    void ratesRoundTripAndOtherWorkersEntriesAreKept() {
        Path file = dir.resolve("state/prefill-rates.json");
        Instant t0 = Instant.parse("2026-12-04T00:00:00Z");
        PrefillRateFile.write(file, Map.of("http://a:1", 2_480.44, "http://b:1", 900.0), t0);
        PrefillRateFile.write(file, Map.of("http://a:1", 2_600.0), t0.plusSeconds(30));
        assertThat(PrefillRateFile.read(file, t0.plusSeconds(60)))
                .isEqualTo(Map.of("http://a:1", 2_600.0, "http://b:1", 900.0));
    }

    @Test
    void aStaleOrBrokenFileGivesNoPriorsAndNoFailure() throws Exception {
        Path file = dir.resolve("prefill-rates.json");
        Instant t0 = Instant.parse("2026-12-04T00:00:00Z");
        PrefillRateFile.write(file, Map.of("http://a:1", 2_500.0), t0);
        assertThat(PrefillRateFile.read(file, t0.plus(PrefillRateFile.MAX_AGE).plus(Duration.ofMinutes(1)))).isEmpty();
        Files.writeString(file, "{not json");
        assertThat(PrefillRateFile.read(file, t0)).isEmpty();
        assertThat(PrefillRateFile.read(dir.resolve("absent.json"), t0)).isEmpty();
        PrefillRateFile.write(file, Map.of("http://a:1", 2_500.0), t0); // a broken file is replaced
        assertThat(PrefillRateFile.read(file, t0)).isEqualTo(Map.of("http://a:1", 2_500.0));
    }

    @Test
    void nothingMeasuredWritesNothing() {
        Path file = dir.resolve("none.json");
        PrefillRateFile.write(file, Map.of(), Instant.now());
        assertThat(file).doesNotExist();
    }
}
