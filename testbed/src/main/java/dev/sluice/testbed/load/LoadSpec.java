package dev.sluice.testbed.load;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Everything one load run needs. {@code target} GATEWAY sends to {@code url}; DIRECT plays a plain
 * SGLang PD router over {@code prefills} (with their {@code bootstrapPorts}) and {@code decodes}.
 *
 * @param requests       arrivals to send; 0 = bounded by {@code duration} only
 * @param duration       arrival window; null = bounded by {@code requests} only
 * @param clientTimeout  a client gives up when no first token came this long after sending, or no
 *                       byte this long after the previous one
 * @param sloTtft        null = no TTFT objective (likewise {@code sloTpot}, {@code sloE2e})
 * @param concurrencyLimit requests in flight at most; 0 = unlimited (open loop)
 * @param workers        URLs whose {@code /metrics} and {@code /sim/stats} are read before and after
 * @param settle         longest wait, after the clients are done, for every worker to go idle
 * @param sessions       the {@code chat-sessions} workload, which has its own rate and sizes ({@code requests},
 *                       {@code arrival}, {@code burst}, {@code rate} and {@code promptTokens} are then not
 *                       used; {@code duration} bounds the conversations' starts); null: independent
 *                       requests, one distinct prompt each
 * @param options        streaming, prompt size distribution, client classes, the router played in direct mode
 */
public record LoadSpec(Target target, URI url, List<URI> prefills, List<Integer> bootstrapPorts, List<URI> decodes,
                       int requests, Duration duration, Arrival arrival, int burst, double rate, long seed,
                       int promptTokens, int maxTokens, Duration clientTimeout, Duration sloTtft, Duration sloTpot,
                       Duration sloE2e, int concurrencyLimit, String model, List<URI> workers, Duration settle,
                       String label, SessionWorkload sessions, LoadOptions options) {

    public enum Target { GATEWAY, DIRECT }

    public enum Arrival { BURST, POISSON, BURST_POISSON }

    /** Independent requests (no {@code chat-sessions} workload). */
    public LoadSpec(Target target, URI url, List<URI> prefills, List<Integer> bootstrapPorts, List<URI> decodes,
                    int requests, Duration duration, Arrival arrival, int burst, double rate, long seed,
                    int promptTokens, int maxTokens, Duration clientTimeout, Duration sloTtft, Duration sloTpot,
                    Duration sloE2e, int concurrencyLimit, String model, List<URI> workers, Duration settle,
                    String label) {
        this(target, url, prefills, bootstrapPorts, decodes, requests, duration, arrival, burst, rate, seed,
                promptTokens, maxTokens, clientTimeout, sloTtft, sloTpot, sloE2e, concurrencyLimit, model, workers,
                settle, label, null, LoadOptions.DEFAULTS);
    }

    /** With or without the {@code chat-sessions} workload, the overload options at their defaults. */
    public LoadSpec(Target target, URI url, List<URI> prefills, List<Integer> bootstrapPorts, List<URI> decodes,
                    int requests, Duration duration, Arrival arrival, int burst, double rate, long seed,
                    int promptTokens, int maxTokens, Duration clientTimeout, Duration sloTtft, Duration sloTpot,
                    Duration sloE2e, int concurrencyLimit, String model, List<URI> workers, Duration settle,
                    String label, SessionWorkload sessions) {
        this(target, url, prefills, bootstrapPorts, decodes, requests, duration, arrival, burst, rate, seed,
                promptTokens, maxTokens, clientTimeout, sloTtft, sloTpot, sloE2e, concurrencyLimit, model, workers,
                settle, label, sessions, LoadOptions.DEFAULTS);
    }

    /** The same settings with other overload options. */
    public LoadSpec withOptions(LoadOptions o) {
        return new LoadSpec(target, url, prefills, bootstrapPorts, decodes, requests, duration, arrival, burst, rate,
                seed, promptTokens, maxTokens, clientTimeout, sloTtft, sloTpot, sloE2e, concurrencyLimit, model,
                workers, settle, label, sessions, o);
    }

    public LoadSpec {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(arrival, "arrival");
        Objects.requireNonNull(clientTimeout, "clientTimeout");
        prefills = List.copyOf(prefills);
        bootstrapPorts = List.copyOf(bootstrapPorts);
        decodes = List.copyOf(decodes);
        workers = List.copyOf(workers);
        if (target == Target.GATEWAY && url == null) {
            throw new IllegalArgumentException("--target gateway needs --url");
        }
        if (target == Target.DIRECT && (prefills.isEmpty() || decodes.isEmpty())) {
            throw new IllegalArgumentException("--target direct needs --prefill and --decode");
        }
        if (target == Target.DIRECT && bootstrapPorts.size() != prefills.size()) {
            throw new IllegalArgumentException("give one --bootstrap-port per --prefill (" + prefills.size() + ")");
        }
        if (sessions == null && requests <= 0 && duration == null) {
            throw new IllegalArgumentException("give --requests or --duration");
        }
        if (sessions == null && arrival != Arrival.POISSON && burst <= 0 && requests <= 0) {
            throw new IllegalArgumentException("--arrival " + arrival.name().toLowerCase().replace('_', '+')
                    + " needs --burst");
        }
        if (sessions == null && arrival != Arrival.BURST && !(rate > 0)) {
            throw new IllegalArgumentException("--rate must be > 0 for Poisson arrivals");
        }
        if (promptTokens < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("--prompt-tokens and --max-tokens must be >= 1");
        }
        if (clientTimeout.isZero() || clientTimeout.isNegative()) {
            throw new IllegalArgumentException("--client-timeout must be > 0");
        }
        options = options == null ? LoadOptions.DEFAULTS : options;
        if (sessions != null && (options.promptRange() || !options.classes().isEmpty())) {
            throw new IllegalArgumentException("--prompt-tokens-range and --class apply to --workload independent "
                    + "(chat-sessions has its own sizes and one kind of client)");
        }
        if (!options.classes().isEmpty() && sloTtft != null) {
            throw new IllegalArgumentException("--slo-ttft: with --class each class's patience is its TTFT "
                    + "objective (drop --slo-ttft)");
        }
        if (target == Target.DIRECT && options.metricsUrl() != null) {
            throw new IllegalArgumentException("--metrics-url applies to --target gateway (straight to the workers, "
                    + "the timeline reads each prefill's /metrics)");
        }
        if (target == Target.GATEWAY && options.router() != null) {
            throw new IllegalArgumentException("--router applies to --target direct (through the gateway, the "
                    + "gateway is the router)");
        }
    }

    /** The settings, for the report (durations in ms, absent ones null). */
    public com.fasterxml.jackson.databind.node.ObjectNode toJson() {
        var o = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        o.put("target", target.name().toLowerCase());
        o.put("url", url == null ? null : url.toString());
        o.put("prefill", prefills.toString());
        o.put("bootstrap_port", bootstrapPorts.toString());
        o.put("decode", decodes.toString());
        o.put("requests", requests);
        o.put("duration_ms", duration == null ? null : duration.toMillis());
        o.put("arrival", arrival.name().toLowerCase().replace('_', '+'));
        o.put("burst", burst);
        o.put("rate", rate);
        o.put("seed", seed);
        o.put("prompt_tokens", promptTokens);
        o.put("max_tokens", maxTokens);
        o.put("client_timeout_ms", clientTimeout.toMillis());
        o.put("slo_ttft_ms", sloTtft == null ? null : sloTtft.toMillis());
        o.put("slo_tpot_ms", sloTpot == null ? null : sloTpot.toMillis());
        o.put("slo_e2e_ms", sloE2e == null ? null : sloE2e.toMillis());
        o.put("concurrency_limit", concurrencyLimit);
        o.put("model", model);
        o.put("workers", workersToRead().toString());
        o.put("settle_ms", settle.toMillis());
        o.put("stream", options.stream());
        o.put("prompt_tokens_range", options.promptRange() ? options.promptMin() + "-" + options.promptMax() : null);
        o.put("prompt_distribution", options.promptRange() ? "log-uniform" : "fixed, ±10% bytes");
        var classes = o.putArray("classes");
        for (ClientClass c : options.classes()) {
            classes.addObject().put("name", c.name()).put("share", c.share()).put("patience_ms", c.patience().toMillis());
        }
        o.put("router", target == Target.DIRECT ? options.routerOrDefault().wireName() : null);
        o.put("metrics_url", target == Target.GATEWAY ? (options.metricsUrl() == null ? url : options.metricsUrl())
                .toString() : null);
        if (sessions == null) {
            o.putObject("workload").put("name", "independent");
        } else {
            o.set("workload", sessions.toJson());
        }
        return o;
    }

    /** The workers to read: the ones named, or in direct mode every prefill and decode. */
    public List<URI> workersToRead() {
        if (!workers.isEmpty() || target == Target.GATEWAY) {
            return workers;
        }
        List<URI> all = new java.util.ArrayList<>(prefills);
        all.addAll(decodes);
        return all;
    }
}
