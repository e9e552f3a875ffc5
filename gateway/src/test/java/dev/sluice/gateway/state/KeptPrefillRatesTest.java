package dev.sluice.gateway.state;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sluice.gateway.background.BackgroundTasks;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** The state file's side of {@link KeptPrefillRates} (Redis: FleetPrefillRatesEndToEndTest). */
class KeptPrefillRatesTest {
    @TempDir
    Path dir;
    private final ScheduledExecutorService fileIo = Executors.newSingleThreadScheduledExecutor();
    private final BackgroundTasks background = new BackgroundTasks(new SimpleMeterRegistry());
    private final List<Map<String, Double>> given = new ArrayList<>();

    @AfterEach
    void stop() throws InterruptedException {
        background.close();
        fileIo.shutdown();
        fileIo.awaitTermination(5, TimeUnit.SECONDS);
    }

    private KeptPrefillRates kept(Path file, Map<String, Double> measured) {
        return new KeptPrefillRates(given::add, () -> measured, () -> Optional.ofNullable(file), Optional.empty(),
                Duration.ofSeconds(1), fileIo, background);
    }

    @Test
    void theRatesOfTheFileAreGivenAtStartAndTheMeasuredOnesWrittenAtTheStop() throws Exception {
        Path file = dir.resolve("state/sluice/prefill-rates.json"); // its directories made at start
        PrefillRateFile.write(file, Map.of("http://a:1", 2_500.0), Instant.now().minusSeconds(60));
        KeptPrefillRates k = kept(file, Map.of("http://b:1", 900.0));
        k.start();
        assertThat(given).containsExactly(Map.of("http://a:1", 2_500.0));
        fileIo.submit(k::saveAtStop).get(5, TimeUnit.SECONDS);
        assertThat(PrefillRateFile.read(file, Instant.now())).isEqualTo(Map.of("http://a:1", 2_500.0, "http://b:1", 900.0));
    }

    @Test
    void anUnwritablePlaceIsOneWarningNeverAFailedStart() throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "x"); // unwritable even for root
        Path file = notADirectory.resolve("sluice/prefill-rates.json");
        Logger logger = (Logger) LoggerFactory.getLogger(KeptPrefillRates.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try {
            KeptPrefillRates k = kept(file, Map.of("http://b:1", 900.0));
            k.start();
            fileIo.submit(k::saveAtStop).get(5, TimeUnit.SECONDS);
        } finally {
            logger.detachAppender(lines);
        }
        assertThat(given).isEmpty();
        assertThat(lines.list).filteredOn(e -> e.getLevel() == Level.WARN).hasSize(1)
                .allMatch(e -> e.getFormattedMessage().contains("not writable")
                        && e.getFormattedMessage().contains(file.toString()));
        assertThat(Files.isRegularFile(notADirectory)).isTrue();
    }

    @Test
    void noFileNoRedisNothingKept() throws Exception {
        KeptPrefillRates k = kept(null, Map.of("http://b:1", 900.0));
        k.start();
        fileIo.submit(k::saveAtStop).get(5, TimeUnit.SECONDS);
        assertThat(given).isEmpty();
        assertThat(dir).isEmptyDirectory();
    }
}
