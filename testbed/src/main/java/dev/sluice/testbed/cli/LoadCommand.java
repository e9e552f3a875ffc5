package dev.sluice.testbed.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.load.ClientClass;
import dev.sluice.testbed.load.LoadOptions;
import dev.sluice.testbed.load.LoadRun;
import dev.sluice.testbed.load.LoadSpec;
import dev.sluice.testbed.load.SessionWorkload;
import dev.sluice.testbed.load.TextReport;
import java.io.File;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice-testbed load}: streaming chat load through Sluice, or straight to the workers as SGLang's router. */
@Command(name = "load", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Send chat completions (streamed or not) and report TTFT/TPOT/ITL/E2E, goodput, rejections, client "
                + "give-ups and, from the workers, KV transfer failures, work done for departed clients, prefix "
                + "cache hits, prefill GPU time and how it was spread over the prefill workers.")
public final class LoadCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--target", required = true, description = "gateway | direct")
    String target;
    @Option(names = "--url", description = "gateway: Sluice's base URL, e.g. http://127.0.0.1:8080")
    URI url;
    @Option(names = "--replica-url", description = "gateway: another replica's base URL (repeatable); the clients "
            + "are split round robin over --url and these, a chat session kept to one replica")
    List<URI> replicaUrls = new ArrayList<>();
    @Option(names = "--prefill", description = "direct: a prefill worker URL (repeatable)")
    List<URI> prefills = new ArrayList<>();
    @Option(names = "--bootstrap-port", description = "direct: bootstrap port of each --prefill, in order")
    List<Integer> bootstrapPorts = new ArrayList<>();
    @Option(names = "--decode", description = "direct: a decode worker URL (repeatable)")
    List<URI> decodes = new ArrayList<>();

    @Option(names = "--workload", defaultValue = "independent",
            description = "independent: one distinct prompt per request, sent at --arrival times; chat-sessions: "
                    + "multi-turn conversations over shared system prompts (--sessions ...) (default: ${DEFAULT-VALUE}).")
    String workload;
    @Option(names = "--requests", defaultValue = "0", description = "Requests to send (0: as many as --duration allows).")
    int requests;
    @Option(names = "--duration", converter = DurationConverter.class, description = "Arrival window, e.g. 120s.")
    Duration duration;
    @Option(names = "--arrival", defaultValue = "poisson", description = "burst | poisson | burst+poisson (default: ${DEFAULT-VALUE}).")
    String arrival;
    @Option(names = "--burst", defaultValue = "0", description = "Requests sent at once at time zero.")
    int burst;
    @Option(names = "--rate", defaultValue = "0",
            description = "Poisson arrivals per second (chat-sessions: conversations started per second).")
    double rate;
    @Option(names = "--seed", defaultValue = "1", description = "Seed of arrivals and prompts (default: ${DEFAULT-VALUE}).")
    long seed;
    @Option(names = "--prompt-tokens", description = "Prompt size, ~4 bytes per token, ±10%% (default: 1000).")
    Integer promptTokens;
    @Option(names = "--prompt-tokens-range", paramLabel = "MIN-MAX",
            description = "Prompt sizes log-uniform between MIN and MAX tokens (each doubling equally likely), "
                    + "drawn per request from --seed; instead of --prompt-tokens.")
    String promptTokensRange;
    @Option(names = "--stream", defaultValue = "true", arity = "1", paramLabel = "true|false",
            description = "Streamed (SSE) requests, or one JSON answer each (default: ${DEFAULT-VALUE}).")
    boolean stream;
    @Option(names = "--class", paramLabel = "NAME:SHARE:PATIENCE",
            description = "A client class (repeatable; shares sum to 1): that share of the requests, drawn per "
                    + "request from --seed, give up after PATIENCE without a first token, have PATIENCE as their "
                    + "TTFT objective, and carry X-Sluice-Priority: NAME through the gateway. "
                    + "Replaces --client-timeout and --slo-ttft.")
    List<String> classes = new ArrayList<>();
    @Option(names = "--metrics-url", paramLabel = "URL",
            description = "gateway: the base URL whose /metrics the queue timeline reads, e.g. Sluice's admin "
                    + "listener http://127.0.0.1:8081 (default: --url).")
    URI metricsUrl;
    @Option(names = "--router", paramLabel = "sglang-router|mini-lb",
            description = "direct: the router played. sglang-router: on a give-up only the decode connection closes, "
                    + "the prefill half is read to its end; mini-lb: SGLang's Python mini_lb, a streamed give-up "
                    + "closes both connections, a non-streamed one neither (default: sglang-router).")
    String router;
    @Option(names = "--max-tokens", defaultValue = "128", description = "max_tokens of each request (default: ${DEFAULT-VALUE}).")
    int maxTokens;
    @Option(names = "--model", defaultValue = "sim-model", description = "model field (default: ${DEFAULT-VALUE}).")
    String model;
    @Option(names = "--client-timeout", converter = DurationConverter.class,
            description = "A client gives up (closes its connection) when no first token came this long after "
                    + "sending, or no byte this long after that (default: 30s).")
    Duration clientTimeout;
    @Option(names = "--slo-ttft", converter = DurationConverter.class, description = "TTFT objective for goodput.")
    Duration sloTtft;
    @Option(names = "--slo-tpot", converter = DurationConverter.class, description = "TPOT objective for goodput.")
    Duration sloTpot;
    @Option(names = "--slo-e2e", converter = DurationConverter.class, description = "E2E latency objective for goodput.")
    Duration sloE2e;
    @Option(names = "--concurrency-limit", defaultValue = "0", description = "Requests in flight at most (0: unlimited).")
    int concurrencyLimit;

    @Option(names = "--sessions", defaultValue = "64",
            description = "chat-sessions: conversations (default: ${DEFAULT-VALUE}).")
    int sessions;
    @Option(names = "--turns", defaultValue = "6",
            description = "chat-sessions: requests per conversation (default: ${DEFAULT-VALUE}).")
    int turns;
    @Option(names = "--system-prompts", defaultValue = "8",
            description = "chat-sessions: shared system prompts (default: ${DEFAULT-VALUE}).")
    int systemPrompts;
    @Option(names = "--system-prompt-tokens", defaultValue = "2000",
            description = "chat-sessions: size of each system prompt, ±10%% (default: ${DEFAULT-VALUE}).")
    int systemPromptTokens;
    @Option(names = "--user-tokens", defaultValue = "100",
            description = "chat-sessions: size of each new user message, ±10%% (default: ${DEFAULT-VALUE}).")
    int userTokens;
    @Option(names = "--reply-tokens",
            description = "chat-sessions: size of the stand-in assistant reply later turns carry, ±10%% "
                    + "(default: --max-tokens).")
    Integer replyTokens;
    @Option(names = "--zipf", defaultValue = "1.0",
            description = "chat-sessions: system prompt k is picked with weight 1/(k+1)^zipf "
                    + "(default: ${DEFAULT-VALUE}).")
    double zipf;
    @Option(names = "--think-time", defaultValue = "4s", converter = DurationConverter.class,
            description = "chat-sessions: mean pause between an answer and the next turn, exponential, at most 3x "
                    + "the mean (default: ${DEFAULT-VALUE}).")
    Duration thinkTime;

    @Option(names = "--worker", description = "A worker whose /metrics and /sim/stats are read before and after "
            + "(repeatable; direct mode defaults to every --prefill and --decode).")
    List<URI> workers = new ArrayList<>();
    @Option(names = "--settle", defaultValue = "300s", converter = DurationConverter.class,
            description = "Longest wait after the clients are done for every worker to go idle (default: ${DEFAULT-VALUE}).")
    Duration settle;
    @Option(names = "--label", description = "Name of this run in the report (default: the target).")
    String label;
    @Option(names = "--json", description = "Also write the report as JSON to this file.")
    File json;

    @Override
    public Integer call() throws Exception {
        LoadSpec.Target t = switch (target) {
            case "gateway" -> LoadSpec.Target.GATEWAY;
            case "direct" -> LoadSpec.Target.DIRECT;
            default -> throw new CommandLine.ParameterException(spec.commandLine(),
                    "--target: '" + target + "' (expected: gateway or direct)");
        };
        LoadSpec.Arrival a = switch (arrival) {
            case "burst" -> LoadSpec.Arrival.BURST;
            case "poisson" -> LoadSpec.Arrival.POISSON;
            case "burst+poisson" -> LoadSpec.Arrival.BURST_POISSON;
            default -> throw new CommandLine.ParameterException(spec.commandLine(),
                    "--arrival: '" + arrival + "' (expected: burst, poisson or burst+poisson)");
        };
        LoadSpec s;
        try {
            SessionWorkload chat = switch (workload) {
                case "independent" -> null;
                case "chat-sessions" -> new SessionWorkload(sessions, turns, systemPrompts, systemPromptTokens,
                        userTokens, replyTokens == null ? maxTokens : replyTokens, zipf, rate, thinkTime);
                default -> throw new IllegalArgumentException("--workload: '" + workload
                        + "' (expected: independent or chat-sessions)");
            };
            if (promptTokens != null && promptTokensRange != null) {
                throw new IllegalArgumentException("give --prompt-tokens or --prompt-tokens-range, not both");
            }
            if (clientTimeout != null && !classes.isEmpty()) {
                throw new IllegalArgumentException("--client-timeout: with --class each class's patience is its "
                        + "clients' timeout (drop --client-timeout)");
            }
            LoadOptions options = LoadOptions.DEFAULTS.withStream(stream)
                    .withClasses(classes.stream().map(c -> ClientClass.parse(c, DurationConverter::parse)).toList())
                    .withRouter(router == null ? null : LoadOptions.Router.parse(router)).withMetricsUrl(metricsUrl)
                    .withReplicaUrls(replicaUrls);
            if (promptTokensRange != null) {
                int[] range = range(promptTokensRange);
                options = options.withPromptRange(range[0], range[1]);
            }
            s = new LoadSpec(t, url, prefills, bootstrapPorts, decodes, requests, duration, a, burst, rate, seed,
                    promptTokens == null ? 1000 : promptTokens, maxTokens,
                    clientTimeout == null ? Duration.ofSeconds(30) : clientTimeout, sloTtft, sloTpot, sloE2e,
                    concurrencyLimit, model, workers, settle, label == null ? target : label, chat, options);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        ObjectNode report = new LoadRun(s, System.err).run();
        spec.commandLine().getOut().print(TextReport.render(report));
        spec.commandLine().getOut().flush();
        if (json != null) {
            new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json, report);
        }
        return 0;
    }

    /** {@code MIN-MAX}, e.g. {@code 1000-16000}. */
    static int[] range(String v) {
        String[] parts = v.trim().split("-");
        try {
            if (parts.length == 2) {
                return new int[] {Integer.parseInt(parts[0].trim()), Integer.parseInt(parts[1].trim())};
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("--prompt-tokens-range: '" + v + "' (expected: MIN-MAX, e.g. 1000-16000)");
    }
}
