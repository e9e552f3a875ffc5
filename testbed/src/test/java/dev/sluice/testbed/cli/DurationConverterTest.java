package dev.sluice.testbed.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DurationConverterTest {
    @Test
    void parsesTheUsualForms() {
        assertThat(DurationConverter.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(DurationConverter.parse("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThat(DurationConverter.parse("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(DurationConverter.parse("0")).isEqualTo(Duration.ZERO);
        assertThat(DurationConverter.parse("PT1S")).isEqualTo(Duration.ofSeconds(1));
        assertThatThrownBy(() -> DurationConverter.parse("soon")).isInstanceOf(CommandLine.TypeConversionException.class);
    }
}
