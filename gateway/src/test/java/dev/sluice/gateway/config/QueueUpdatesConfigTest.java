package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sluice.gateway.admission.RequestClassifier;
import dev.sluice.gateway.api.ApiException;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@code admission.per_class.<class>.queue_updates}: read, checked against the classes, and, with
 * the header {@code X-Sluice-Queue-Updates}, what decides whether a request hears of its wait.
 */
class QueueUpdatesConfigTest {
    private static final String WORKERS = """
            workers:
              prefill:
                - url: http://10.0.0.1:30000
                  bootstrap_port: 8998
              decode:
                - url: http://10.0.0.2:30001
            """;

    private static AdmissionConfig admission(String yaml) {
        return ConfigLoader.parse(WORKERS + yaml, "gw.yaml").admission();
    }

    private static HttpHeaders headers(String... nameValue) {
        HttpHeaders h = new DefaultHttpHeaders();
        for (int i = 0; i < nameValue.length; i += 2) {
            h.add(nameValue[i], nameValue[i + 1]);
        }
        return h;
    }

    @Test
    void theClassesWithQueueUpdatesAreRead() {
        assertThat(admission("").queueUpdateClasses()).isEmpty();
        AdmissionConfig c = admission("""
                admission:
                  per_class: { high: { queue_updates: true }, low: { queue_updates: false }, normal: {} }
                """);
        assertThat(c.queueUpdateClasses()).containsExactly("high");
        assertThat(c.toBuilder().build().queueUpdateClasses()).containsExactly("high");
    }

    @Test
    void anUnknownClassOrKeyOrValueIsRefusedWithItsLine() {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> admission("""
                admission:
                  per_class:
                    urgent: { queue_updates: true }
                    high: { queue_update: true }
                    low: { queue_updates: sometimes }
                """));
        assertThat(e.problems()).extracting(ConfigProblem::located).satisfiesExactly(
                p -> assertThat(p).startsWith("gw.yaml:").contains("admission.per_class.urgent: urgent")
                        .contains("one of admission.priorities [high, normal, low]"),
                p -> assertThat(p).contains("admission.per_class.high.queue_update: unknown key"),
                p -> assertThat(p).contains("admission.per_class.low.queue_updates: sometimes"));
    }

    @Test
    void theBuilderRefusesAClassThatIsNotOne() {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class, () ->
                admission("").toBuilder().queueUpdateClasses(Set.of("urgent")).build());
        assertThat(e).hasMessageContaining("admission.per_class: urgent");
    }

    @Test
    void theHeaderAsksOrDeclinesAndTheClassDecidesWithoutIt() throws Exception {
        RequestClassifier classifier = new RequestClassifier(admission("""
                admission:
                  per_class: { high: { queue_updates: true } }
                """));
        assertThat(classifier.classify(headers(), 0).queueUpdates()).isFalse();
        assertThat(classifier.classify(headers("X-Sluice-Priority", "high"), 0).queueUpdates()).isTrue();
        assertThat(classifier.classify(headers("X-Sluice-Priority", "high", "X-Sluice-Queue-Updates", "0"), 0)
                .queueUpdates()).isFalse();
        assertThat(classifier.classify(headers("X-Sluice-Queue-Updates", "1"), 0).queueUpdates()).isTrue();
        assertThat(classifier.classify(headers("X-Sluice-Queue-Updates", "true"), 0).queueUpdates()).isTrue();
        ApiException bad = catchThrowableOfType(ApiException.class, () ->
                classifier.classify(headers("X-Sluice-Queue-Updates", "yes please"), 0));
        assertThat(bad.error().code()).isEqualTo("invalid_queue_updates");
        assertThat(bad.error().status().code()).isEqualTo(400);
    }
}
