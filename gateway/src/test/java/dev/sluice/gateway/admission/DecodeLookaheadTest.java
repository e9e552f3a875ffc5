package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DecodeLookaheadTest {
    @Test
    void aShareAtOrBelowTheRankCapIsWarnedWithTheWindowThatKeepsTheRanksFull() {
        assertThat(DecodeLookahead.bubble(32, 4, 8)).hasValueSatisfying(w -> assertThat(w)
                .startsWith("admission.decode.max_inflight_streams: 32 (8 a rank over 4 ranks)")
                .contains("running cap of 8 a rank").contains("here 40"));
        // below the cap: the gateway's window is the running set, every end leaves a gap all the same
        assertThat(DecodeLookahead.bubble(16, 4, 8)).isPresent();
        // 33 over 4 ranks: RankWindows gives each rank 9, one above the cap
        assertThat(DecodeLookahead.bubble(33, 4, 8)).isEmpty();
        assertThat(DecodeLookahead.bubble(40, 4, 8)).isEmpty();
    }

    @Test
    void nothingToSayWithoutRanksOrAKnownCap() {
        assertThat(DecodeLookahead.bubble(32, 1, 8)).isEmpty();
        assertThat(DecodeLookahead.bubble(32, 4, 0)).isEmpty();
    }
}
