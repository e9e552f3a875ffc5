package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CoveredReleasesTest {
    @Test
    void releasesInsideTheRangesAreCoveredTheOthersNamedWithTheRange() {
        assertThat(CoveredReleases.outside("sglang", "0.5.6.post2")).isEmpty();
        assertThat(CoveredReleases.outside("sglang", "0.5.0")).isEmpty();
        assertThat(CoveredReleases.outside("sglang", "v0.5.3rc2")).isEmpty();
        assertThat(CoveredReleases.outside("sglang", "0.4.10.post2")).hasValueSatisfying(w -> assertThat(w)
                .contains("0.4.10.post2").contains("SGLang 0.5.0 up to (not including) 0.6.0"));
        assertThat(CoveredReleases.outside("sglang", "0.6.0")).isPresent();
        assertThat(CoveredReleases.outside("vllm", "0.11.0")).isEmpty();
        assertThat(CoveredReleases.outside("vllm", "0.22.1")).isEmpty();
        assertThat(CoveredReleases.outside("vllm", "0.10.2")).hasValueSatisfying(w -> assertThat(w)
                .contains("vLLM 0.11.0 up to (not including) 0.23.0"));
        assertThat(CoveredReleases.outside("vllm", "1.0.0")).isPresent();
    }

    @Test
    void whatIsNoReleaseNumberOrNoKnownServerIsNotJudged() {
        assertThat(CoveredReleases.outside("sglang", "sim")).isEmpty();
        assertThat(CoveredReleases.outside("sglang", "")).isEmpty();
        assertThat(CoveredReleases.outside("vllm", null)).isEmpty();
        assertThat(CoveredReleases.outside("unknown", "0.1.0")).isEmpty();
    }
}
