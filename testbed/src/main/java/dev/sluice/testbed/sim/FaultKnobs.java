package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Faults one simulated server injects, changeable at any time from any thread (and over HTTP with
 * {@code POST /sim/faults}). All off by default; the token faults apply to decode servers.
 */
public final class FaultKnobs {
    private volatile int failStatus;
    private volatile int stallAfterTokens = -1;
    private volatile int dropAfterTokens = -1;
    private volatile int failAfterTokens = -1;
    private volatile double slowFactor = 1.0;

    /** When > 0, every generation request is answered at once with this status and a JSON error. */
    public int failStatus() {
        return failStatus;
    }

    public FaultKnobs setFailStatus(int status) {
        this.failStatus = status;
        return this;
    }

    /** When >= 0, a decode stops emitting after this many tokens and keeps the connection open. */
    public int stallAfterTokens() {
        return stallAfterTokens;
    }

    public FaultKnobs setStallAfterTokens(int tokens) {
        this.stallAfterTokens = tokens;
        return this;
    }

    /** When >= 0, a decode closes the connection abruptly after this many tokens. */
    public int dropAfterTokens() {
        return dropAfterTokens;
    }

    public FaultKnobs setDropAfterTokens(int tokens) {
        this.dropAfterTokens = tokens;
        return this;
    }

    /** When >= 0, a decode ends the request with an error after this many tokens. */
    public int failAfterTokens() {
        return failAfterTokens;
    }

    public FaultKnobs setFailAfterTokens(int tokens) {
        this.failAfterTokens = tokens;
        return this;
    }

    /** Multiplies prefill time and decode step time; 1.0 is normal speed. */
    public double slowFactor() {
        return slowFactor;
    }

    public FaultKnobs setSlowFactor(double factor) {
        if (!(factor > 0)) {
            throw new IllegalArgumentException("slowFactor: " + factor + " (expected: > 0)");
        }
        this.slowFactor = factor;
        return this;
    }

    public FaultKnobs reset() {
        failStatus = 0;
        stallAfterTokens = -1;
        dropAfterTokens = -1;
        failAfterTokens = -1;
        slowFactor = 1.0;
        return this;
    }

    /** Applies the fields present in {@code json}; absent fields keep their value. */
    public void apply(JsonNode json) {
        if (json.path("reset").asBoolean(false)) {
            reset();
        }
        if (json.has("failStatus")) {
            setFailStatus(json.get("failStatus").asInt());
        }
        if (json.has("stallAfterTokens")) {
            setStallAfterTokens(json.get("stallAfterTokens").asInt());
        }
        if (json.has("dropAfterTokens")) {
            setDropAfterTokens(json.get("dropAfterTokens").asInt());
        }
        if (json.has("failAfterTokens")) {
            setFailAfterTokens(json.get("failAfterTokens").asInt());
        }
        if (json.has("slowFactor")) {
            setSlowFactor(json.get("slowFactor").asDouble());
        }
    }

    public ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("failStatus", failStatus);
        o.put("stallAfterTokens", stallAfterTokens);
        o.put("dropAfterTokens", dropAfterTokens);
        o.put("failAfterTokens", failAfterTokens);
        o.put("slowFactor", slowFactor);
        return o;
    }

    @Override
    public String toString() {
        return toJson().toString();
    }
}
