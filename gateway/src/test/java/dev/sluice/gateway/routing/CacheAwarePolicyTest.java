package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import dev.sluice.gateway.routing.RoutingPolicy.Choice;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CacheAwarePolicyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SYSTEM = "You are a careful assistant. ".repeat(150).substring(0, 4096);

    private final List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
    private final FakeLoad load = new FakeLoad();
    private final CacheAwarePolicy policy = new CacheAwarePolicy(WorkerRole.PREFILL,
            CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS));

    /** A chat request's key: the messages given as role, content, role, content, ... */
    private static RoutingRequest chat(String... roleContent) {
        ObjectNode body = JSON.createObjectNode();
        ArrayNode messages = body.putArray("messages");
        for (int i = 0; i < roleContent.length; i += 2) {
            messages.addObject().put("role", roleContent[i]).put("content", roleContent[i + 1]);
        }
        String key = PrefixKey.of("chat_completions", body);
        return new RoutingRequest(key, key.length() / 4);
    }

    /** Chooses, dispatches, and puts the prompt's tokens into the chosen worker's window. */
    private Choice route(RoutingRequest r) {
        Choice c = policy.choose(ws, r, load);
        policy.dispatched(c.worker(), r);
        load.tokens(c.worker(), load.windowTokens(c.worker()) + r.tokens())
                .requests(c.worker(), load.windowRequests(c.worker()) + 1);
        return c;
    }

    @Test
    void clientsSharingALongSystemPromptLandOnOneWorkerWhileLoadsStayInsideTheGuard() {
        Choice first = route(chat("system", SYSTEM, "user", "What is the capital of France?"));
        assertThat(first.reason()).isEqualTo("prefix_miss");

        for (int i = 0; i < 8; i++) {
            Choice c = route(chat("system", SYSTEM, "user", "Question number " + i + ": tell me about topic " + i));
            assertThat(c.worker()).isSameAs(first.worker());
            assertThat(c.reason()).isEqualTo("prefix_hit");
        }
        assertThat(load.windowTokens(first.worker())).isLessThan(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS);
        assertThat(policy.stateSize(first.worker())).isGreaterThan(SYSTEM.length());
    }

    @Test
    void spreadsWhenTheStickyWorkersLoadPassesTheGuard() {
        Worker sticky = route(chat("system", SYSTEM, "user", "first")).worker();
        load.tokens(sticky, 30_000).requests(sticky, 3); // far above the others, within its window

        Choice c = route(chat("system", SYSTEM, "user", "second"));

        assertThat(c.reason()).isEqualTo("balance_override");
        assertThat(c.worker()).isNotSameAs(sticky);
        // the override's worker now holds the prompt too: the next one sticks to it, not to the loaded one
        Choice next = route(chat("system", SYSTEM, "user", "third"));
        assertThat(next.reason()).isEqualTo("prefix_hit");
        assertThat(next.worker()).isSameAs(c.worker());
    }

    @Test
    void aModestLoadGapKeepsTheAffinity() {
        Worker sticky = route(chat("system", SYSTEM, "user", "first")).worker();
        load.tokens(sticky, 12_000).requests(sticky, 2); // less than balance_abs_threshold ahead

        Choice c = route(chat("system", SYSTEM, "user", "second"));

        assertThat(c.worker()).isSameAs(sticky);
        assertThat(c.reason()).isEqualTo("prefix_hit");
    }

    @Test
    void aShortSharedPrefixBelowTheThresholdGoesByLoad() {
        String shared = "x".repeat(100);
        RoutingRequest seen = new RoutingRequest(shared + "a".repeat(900), 250);
        policy.dispatched(ws.get(0), seen);
        load.tokens(ws.get(0), 500).requests(ws.get(0), 1).tokens(ws.get(1), 300).requests(ws.get(1), 1);

        Choice c = policy.choose(ws, new RoutingRequest(shared + "b".repeat(900), 250), load);

        assertThat(c.reason()).isEqualTo("prefix_miss");
        assertThat(c.worker()).isSameAs(ws.get(2));
    }

    @Test
    void newPrefixesSpreadOverIdleWorkers() {
        Set<Worker> used = new HashSet<>();
        for (char c = 'a'; c < 'd'; c++) {
            RoutingRequest r = new RoutingRequest(String.valueOf(c).repeat(1000), 250);
            Choice choice = policy.choose(ws, r, load);
            assertThat(choice.reason()).isEqualTo("prefix_miss");
            policy.dispatched(choice.worker(), r);
            used.add(choice.worker());
        }
        assertThat(used).hasSize(3);
    }

    @Test
    void theWholeConversationCountsNotOnlyTheFirstMessage() {
        String first = "You are a travel agent. ".repeat(40);
        RoutingRequest paris = chat("system", first, "user", "Plan three days in Paris. ".repeat(60),
                "assistant", "Day one: the Louvre... ".repeat(60));
        RoutingRequest rome = chat("system", first, "user", "Plan three days in Rome. ".repeat(60),
                "assistant", "Day one: the Colosseum... ".repeat(60));
        policy.dispatched(ws.get(0), paris);
        policy.dispatched(ws.get(1), rome);

        Choice followUp = policy.choose(ws, chat("system", first, "user", "Plan three days in Rome. ".repeat(60),
                "assistant", "Day one: the Colosseum... ".repeat(60), "user", "And a fourth day?"), load);

        assertThat(followUp.worker()).isSameAs(ws.get(1));
        assertThat(followUp.reason()).isEqualTo("prefix_hit");
    }

    @Test
    void aBestMatchThatIsNoCandidateIsNeverPicked() {
        RoutingRequest r = chat("system", SYSTEM, "user", "hello");
        policy.dispatched(ws.get(0), r);
        ws.get(0).status(new WorkerStatus(WorkerState.EJECTED, "test", java.time.Instant.now()));
        List<Worker> candidates = ws.subList(1, 3); // admission offers only routable workers

        Choice c = policy.choose(candidates, r, load);

        assertThat(candidates).contains(c.worker());
        assertThat(c.reason()).isEqualTo("prefix_miss");
    }

    @Test
    void decodeGuardCountsStreams() {
        List<Worker> decodes = RoutingFixtures.workers(WorkerRole.DECODE, 2);
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.DECODE, CacheAware.defaults(RoutingConfig.DEFAULT_DECODE_BALANCE_ABS));
        RoutingRequest r = new RoutingRequest("p".repeat(1000), 250);
        p.dispatched(decodes.get(0), r);

        FakeLoad streams = new FakeLoad().requests(decodes.get(0), 20);
        assertThat(p.choose(decodes, r, streams).reason()).isEqualTo("prefix_hit");
        streams.requests(decodes.get(0), 40);
        Choice c = p.choose(decodes, r, streams);
        assertThat(c.reason()).isEqualTo("balance_override");
        assertThat(c.worker()).isSameAs(decodes.get(1));
    }

    @Test
    void forgetDropsAWorkersTree() {
        RoutingRequest r = chat("system", SYSTEM, "user", "hello");
        policy.dispatched(ws.get(0), r);
        assertThat(policy.stateSize(ws.get(0))).isEqualTo(r.prefixKey().length());

        policy.forget(ws.get(0));

        assertThat(policy.stateSize(ws.get(0))).isZero();
        assertThat(policy.choose(ws, r, load).reason()).isEqualTo("prefix_miss");
    }

    @Test
    void anEmptyKeyIsAMiss() {
        Choice c = policy.choose(ws, new RoutingRequest("", 10), load);
        assertThat(c.reason()).isEqualTo("prefix_miss");
        policy.dispatched(c.worker(), new RoutingRequest("", 10));
        assertThat(policy.stateSize(c.worker())).isZero();
    }
}
