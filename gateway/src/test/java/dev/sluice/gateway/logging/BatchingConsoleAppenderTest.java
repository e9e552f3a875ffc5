package dev.sluice.gateway.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.LoggingEvent;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BatchingConsoleAppenderTest {
    private final LoggerContext context = (LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();
    private final ByteArrayOutputStream sink = new ByteArrayOutputStream();

    private BatchingConsoleAppender appender(int queueSize) {
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("[%thread] %msg%n");
        encoder.start();
        BatchingConsoleAppender a = new BatchingConsoleAppender();
        a.setContext(context);
        a.setEncoder(encoder);
        a.setQueueSize(queueSize);
        a.setFlushMillis(5);
        a.setTarget(sink);
        a.start();
        return a;
    }

    private LoggingEvent event(String format, Object... args) {
        return new LoggingEvent("test", context.getLogger("test"), Level.INFO, format, null, args);
    }

    @Test
    void everyLineFromEveryThreadIsWrittenInOrderByTheStop() throws Exception {
        BatchingConsoleAppender a = appender(100_000);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int id = t;
            threads.add(new Thread(() -> {
                for (int i = 0; i < 2_000; i++) {
                    a.doAppend(event("line thread={} n={}", id, i));
                }
            }, "writer-" + t));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        a.stop();

        String[] lines = sink.toString(StandardCharsets.UTF_8).split("\n");
        assertThat(lines).hasSize(8_000);
        for (int t = 0; t < 4; t++) {
            int expected = 0;
            for (String line : lines) {
                if (line.startsWith("[writer-" + t + "] line thread=" + t + " ")) {
                    assertThat(line).endsWith(" n=" + expected); // the thread name and message were taken at append
                    expected++;
                }
            }
            assertThat(expected).isEqualTo(2_000);
        }
    }

    @Test
    void pastTheBoundLinesAreDroppedAndTheDropIsReported() throws Exception {
        BatchingConsoleAppender a = appender(10);
        a.setFlushMillis(5);
        for (int i = 0; i < 1_000; i++) { // far faster than one 5 ms flush period
            a.doAppend(event("n={}", i));
        }
        a.stop();

        String out = sink.toString(StandardCharsets.UTF_8);
        long written = out.lines().filter(l -> l.contains("] n=")).count();
        assertThat(written).isBetween(10L, 999L);
        assertThat(out).containsPattern("\\d+ log lines dropped \\(stdout could not keep up\\)");
    }
}
