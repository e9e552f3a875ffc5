package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** One entry a name, made once, and a table that starts over rather than grow. */
class NameTableTest {
    @Test
    void anEqualNameFindsItsEntryAndEndlessNamesStayWithinHalfTheSlots() {
        AtomicInteger made = new AtomicInteger();
        NameTable<StringBuilder> t = new NameTable<>(8, n -> {
            made.incrementAndGet();
            return new StringBuilder(n);
        });
        StringBuilder admission = t.get("admission");
        assertThat(t.get(new String("admission"))).isSameAs(admission);
        assertThat(made).hasValue(1);
        for (int i = 0; i < 100; i++) {
            assertThat(t.get("span " + i).toString()).isEqualTo("span " + i);
            assertThat(t.size()).isBetween(1, 4);
        }
        assertThat(t.get("admission").toString()).isEqualTo("admission");
        assertThatThrownBy(() -> new NameTable<>(12, n -> n)).isInstanceOf(IllegalArgumentException.class);
    }
}
