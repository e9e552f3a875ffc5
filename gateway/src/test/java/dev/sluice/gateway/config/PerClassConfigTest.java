package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code admission.per_class.<class>}: one record per class holding its queue updates and its
 * completion-token ceiling, on_excess and default; old files (queue_updates alone) still load.
 */
class PerClassConfigTest {
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

    @Test
    void eachClassIsOneRecordAndAClassNotNamedHasNone() {
        AdmissionConfig c = admission("""
                admission:
                  per_class:
                    high: { queue_updates: true, max_tokens_ceiling: 4096, on_excess: clamp, default_max_tokens: 512 }
                    normal: { max_tokens_ceiling: 1024 }
                """);
        assertThat(c.classPolicy("high")).isEqualTo(new ClassPolicy(true, 4096, ClassPolicy.OnExcess.CLAMP, 512));
        assertThat(c.classPolicy("normal")).isEqualTo(new ClassPolicy(false, 1024, ClassPolicy.OnExcess.REFUSE, 0));
        assertThat(c.classPolicy("low")).isEqualTo(ClassPolicy.NONE);
        assertThat(c.queueUpdateClasses()).containsExactly("high");
        assertThat(c.toBuilder().build().perClass()).isEqualTo(c.perClass());
    }

    @Test
    void anOldFileWithQueueUpdatesAloneStillLoads() {
        AdmissionConfig c = admission("""
                admission:
                  per_class: { low: { queue_updates: true } }
                """);
        assertThat(c.classPolicy("low")).isEqualTo(new ClassPolicy(true, 0, ClassPolicy.OnExcess.REFUSE, 0));
        assertThat(c.classPolicy("low").limitsTokens()).isFalse();
    }

    @Test
    void badValuesAreRefusedAllAtOnceWithTheirLines() {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> admission("""
                admission:
                  per_class:
                    high: { max_tokens_ceiling: 100, default_max_tokens: 200 }
                    normal: { on_excess: truncate, max_tokens_ceiling: -1 }
                    low: { max_tokens_ceiling: 9000000000000000000 }
                """));
        assertThat(e.problems()).extracting(ConfigProblem::located).satisfiesExactlyInAnyOrder(
                p -> assertThat(p).startsWith("gw.yaml:").contains("admission.per_class.high.default_max_tokens: 200")
                        .contains("<= max_tokens_ceiling (100)"),
                p -> assertThat(p).contains("admission.per_class.normal.on_excess: truncate").contains("clamp or refuse"),
                p -> assertThat(p).contains("admission.per_class.normal.max_tokens_ceiling: -1"),
                p -> assertThat(p).contains("admission.per_class.low.max_tokens_ceiling: 9000000000000000000"));
    }

    @Test
    void theBuilderKeepsTheTokenSettingsWhenQueueUpdatesChange() {
        AdmissionConfig c = admission("").toBuilder()
                .perClass(Map.of("normal", new ClassPolicy(true, 64, ClassPolicy.OnExcess.CLAMP, 8)))
                .queueUpdateClasses(java.util.Set.of("high")).build();
        assertThat(c.classPolicy("normal")).isEqualTo(new ClassPolicy(false, 64, ClassPolicy.OnExcess.CLAMP, 8));
        assertThat(c.classPolicy("high").queueUpdates()).isTrue();
        IllegalArgumentException bad = catchThrowableOfType(IllegalArgumentException.class, () ->
                new ClassPolicy(false, 10, ClassPolicy.OnExcess.REFUSE, 11));
        assertThat(bad).hasMessageContaining("default_max_tokens: 11");
    }
}
