package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DecisionsTest {
    private final Decisions decisions = new Decisions();

    /** True when another thread can take the lock now (so this thread does not hold it). */
    private boolean lockFree() throws Exception {
        return CompletableFuture.supplyAsync(() -> decisions.read(() -> true)).get(5, TimeUnit.SECONDS);
    }

    @Test
    void whatADecisionLeavesRunsAfterTheLockIsReleasedInOrder() {
        List<String> log = new ArrayList<>();
        String answer = decisions.decide(after -> {
            after.add(() -> log.add("first, lock free: " + free()));
            after.add(() -> log.add("second"));
            log.add("deciding");
            return "yes";
        });
        assertThat(answer).isEqualTo("yes");
        assertThat(log).containsExactly("deciding", "first, lock free: true", "second");
    }

    private boolean free() {
        try {
            return lockFree();
        } catch (Exception e) {
            return false;
        }
    }

    @Test
    void aFailedDecisionReleasesTheLockAndRunsNothing() throws Exception {
        List<String> log = new ArrayList<>();
        assertThatThrownBy(() -> decisions.act(after -> {
            after.add(() -> log.add("must not run"));
            throw new IllegalStateException("boom");
        })).hasMessage("boom");
        assertThat(log).isEmpty();
        assertThat(lockFree()).isTrue();
    }

    @Test
    void anActionMayMakeTheNextDecision() {
        List<String> log = new ArrayList<>();
        decisions.act(after -> after.add(() -> decisions.act(inner -> inner.add(() -> log.add("inner")))));
        assertThat(log).containsExactly("inner");
    }
}
