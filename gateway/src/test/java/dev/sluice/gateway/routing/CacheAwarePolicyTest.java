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
        // three apps, each its own system prompt, with equal traffic: each prompt keeps to one worker
        String[] systems = {SYSTEM, SYSTEM.replace("careful", "concise"), SYSTEM.replace("careful", "playful")};
        Worker[] home = new Worker[3];
        for (int a = 0; a < 3; a++) {
            Choice first = route(chat("system", systems[a], "user", "What is the capital of France?"));
            assertThat(first.reason()).isEqualTo("prefix_miss");
            home[a] = first.worker();
        }
        assertThat(new HashSet<>(List.of(home))).hasSize(3);

        for (int i = 0; i < 8; i++) {
            for (int a = 0; a < 3; a++) {
                Choice c = route(chat("system", systems[a], "user", "Question number " + i + ": tell me about topic " + i));
                assertThat(c.worker()).isSameAs(home[a]);
                assertThat(c.reason()).isEqualTo("prefix_hit");
            }
        }
        assertThat(load.windowTokens(home[0])).isLessThan(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS);
        assertThat(policy.stateSize(home[0])).isGreaterThan(SYSTEM.length());
    }

    @Test
    void aHotPromptSpreadsOnceItsWorkerGetsMoreThanItsShareLately() {
        long[] now = {0};
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.PREFILL,
                CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS), () -> now[0]);
        java.util.Map<Worker, Integer> perWorker = new java.util.HashMap<>();
        int overrides = 0;
        // one app only, a request every 100 ms, windows empty (moderate load: the balance guard never trips)
        for (int i = 0; i < 60; i++) {
            RoutingRequest r = chat("system", SYSTEM, "user", "conversation " + i + " starts here");
            Choice c = p.choose(ws, r, load);
            p.dispatched(c.worker(), r);
            perWorker.merge(c.worker(), 1, Integer::sum);
            overrides += c.reason().equals("share_override") ? 1 : 0;
            now[0] += 100_000_000L;
        }
        assertThat(overrides).isPositive();
        assertThat(perWorker).hasSize(3);
        assertThat(perWorker.values()).allMatch(n -> n <= 1.3 * 60 / 3 + 2);
    }

    @Test
    void aLongConversationStaysWithItsHistoryEvenOnABusyWorker() {
        long[] now = {0};
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.PREFILL,
                CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS), () -> now[0]);
        String history = "user: tell me more about the harbour. assistant: the harbour was built in 1820... ".repeat(300);
        RoutingRequest earlier = chat("system", SYSTEM, "user", history);
        // everyone holds the system prompt; worker 0 also this conversation's ~6K tokens of history
        p.dispatched(ws.get(1), chat("system", SYSTEM, "user", "a"));
        p.dispatched(ws.get(2), chat("system", SYSTEM, "user", "b"));
        p.dispatched(ws.get(0), earlier);
        for (int i = 0; i < 5; i++) {
            p.dispatched(ws.get(0), chat("system", SYSTEM, "user", history + " filler " + i)); // worker 0 well over its share
        }

        Choice next = p.choose(ws, chat("system", SYSTEM, "user", history + " And the lighthouse?"), load);
        assertThat(next.worker()).isSameAs(ws.get(0));
        assertThat(next.reason()).isEqualTo("prefix_hit");

        // a new conversation on the same prompt, held equally by all three, goes to a home sent less
        // lately: it recomputes nothing, and needs no override
        Choice fresh = p.choose(ws, chat("system", SYSTEM, "user", "hello"), load);
        assertThat(fresh.reason()).isEqualTo("prefix_hit");
        assertThat(fresh.worker()).isNotSameAs(ws.get(0));

        // the share is "lately": ten half-lives on, worker 0's past traffic no longer counts
        now[0] += 10 * RoutingConfig.CacheAware.DEFAULT_SHARE_HALF_LIFE.toNanos();
        p.dispatched(ws.get(1), chat("system", SYSTEM, "user", "c"));
        p.dispatched(ws.get(2), chat("system", SYSTEM, "user", "d"));
        Choice later = p.choose(ws, chat("system", SYSTEM, "user", history + " And the lighthouse?"), load);
        assertThat(later.reason()).isEqualTo("prefix_hit");
    }

    @Test
    void withPeersTheShareGuardJudgesTheFleetsTrafficNotThisReplicasAlone() {
        long[] now = {0};
        CacheAware d = CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS);
        FleetRoutedLoad fleet = new FleetRoutedLoad(d.shareHalfLife().toNanos(), () -> now[0]);
        CacheAwarePolicy alone = new CacheAwarePolicy(WorkerRole.PREFILL, d, () -> now[0], java.util.Optional.empty());
        CacheAwarePolicy coordinated = new CacheAwarePolicy(WorkerRole.PREFILL, d, () -> now[0],
                java.util.Optional.empty(), java.util.Optional.of(fleet));
        // this replica's clients happen to be worker 0's: their conversations went there (lopsided here)
        for (CacheAwarePolicy p : List.of(alone, coordinated)) {
            p.dispatched(ws.get(1), chat("system", SYSTEM, "user", "a"));
            p.dispatched(ws.get(2), chat("system", SYSTEM, "user", "b"));
            for (int i = 0; i < 6; i++) {
                p.dispatched(ws.get(0), chat("system", SYSTEM, "user", "conversation " + i));
            }
        }
        assertThat(fleet.ownNow()).containsOnlyKeys(ws.get(0).url(), ws.get(1).url(), ws.get(2).url());
        assertThat(fleet.ownNow().get(ws.get(0).url())).isGreaterThan(5 * fleet.ownNow().get(ws.get(1).url()));

        RoutingRequest next = chat("system", SYSTEM, "user", "conversation 0 goes on");
        // alone, the replica takes its own lopsided share for the fleet's and moves the conversation
        assertThat(alone.choose(ws, next, load).reason()).isEqualTo("share_override");
        // the other replicas sent workers 1 and 2 as much: the fleet is even, the conversation stays with its cache
        double w0 = fleet.ownNow().get(ws.get(0).url());
        fleet.peersReported(java.util.Map.of(ws.get(1).url(), w0, ws.get(2).url(), w0));
        Choice c = coordinated.choose(ws, next, load);
        assertThat(c.reason()).isEqualTo("prefix_hit");
        assertThat(c.worker()).isSameAs(ws.get(0));
        // the peers' figures decay like this replica's own: ten half-lives on they no longer count
        now[0] += 10 * d.shareHalfLife().toNanos();
        assertThat(fleet.peersNow(ws.get(1))).isLessThan(w0 / 1000);
    }

    @Test
    void withTheWorkersCountersTheShareGuardJudgesTheFleetsTrafficWithoutCoordination() {
        long[] now = {0};
        CacheAware d = CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS);
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.PREFILL, d, () -> now[0]);
        FakeLoad counted = new FakeLoad();
        for (Worker w : ws) {
            counted.promptTokens(w, 0);
        }
        assertThat(p.choose(ws, chat("system", SYSTEM, "user", "warm-up"), counted)).isNotNull(); // the baselines
        // this replica's clients happen to be worker 0's: lopsided here
        p.dispatched(ws.get(1), chat("system", SYSTEM, "user", "a"));
        p.dispatched(ws.get(2), chat("system", SYSTEM, "user", "b"));
        long perWorker = 0;
        for (int i = 0; i < 6; i++) {
            RoutingRequest r = chat("system", SYSTEM, "user", "conversation " + i);
            p.dispatched(ws.get(0), r);
            perWorker += r.tokens();
        }
        RoutingRequest next = chat("system", SYSTEM, "user", "conversation 0 goes on");
        // the counters not grown yet (or unknown): this replica's own lopsided figures decide
        assertThat(p.choose(ws, next, load).reason()).isEqualTo("share_override");
        assertThat(p.choose(ws, next, counted).reason()).isEqualTo("share_override");
        // the workers counted as much on 1 and 2 (the other replicas' clients): the fleet is even
        for (Worker w : ws) {
            counted.promptTokens(w, perWorker + 1_000);
        }
        Choice c = p.choose(ws, next, counted);
        assertThat(c.reason()).isEqualTo("prefix_hit");
        assertThat(c.worker()).isSameAs(ws.get(0));
        // and when worker 0's counter grew far past the others', the guard acts on it
        counted.promptTokens(ws.get(0), 20 * perWorker);
        assertThat(p.choose(ws, next, counted).reason()).isEqualTo("share_override");
    }

    @Test
    void twoEquallyLoadedHomesOfAPrefixTakeTurnsByWhatEachWasSentLately() {
        long[] now = {0};
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.PREFILL,
                CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS), () -> now[0]);
        // workers 0 and 1 both hold the prompt; worker 0 was also sent another app's traffic lately
        p.dispatched(ws.get(0), chat("system", SYSTEM, "user", "x"));
        p.dispatched(ws.get(1), chat("system", SYSTEM, "user", "y"));
        p.dispatched(ws.get(0), chat("system", "another app entirely", "user", "z"));
        Choice c = p.choose(ws, chat("system", SYSTEM, "user", "a new conversation"), load);
        assertThat(c.reason()).isEqualTo("prefix_hit");
        assertThat(c.worker()).as("windows empty, matches equal: the one sent less lately").isSameAs(ws.get(1));
        // load now still comes first
        load.tokens(ws.get(1), 3_000).requests(ws.get(1), 1);
        assertThat(p.choose(ws, chat("system", SYSTEM, "user", "a new conversation"), load).worker())
                .isSameAs(ws.get(0));
    }

    @Test
    void theShareGuardCanBeTurnedOff() {
        CacheAware d = CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS);
        CacheAwarePolicy p = new CacheAwarePolicy(WorkerRole.PREFILL, new CacheAware(d.matchThreshold(),
                d.balanceAbsThreshold(), d.balanceRelThreshold(), d.maxTreeSize(), 0, d.shareHalfLife(),
                d.shareMaxRecompute()));
        Worker first = null;
        for (int i = 0; i < 20; i++) {
            RoutingRequest r = chat("system", SYSTEM, "user", "q" + i);
            Choice c = p.choose(ws, r, load);
            p.dispatched(c.worker(), r);
            first = first == null ? c.worker() : first;
            assertThat(c.worker()).isSameAs(first);
        }
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
