package dev.sluice.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The readers and the builders check the same bounds in two places (the readers with file and
 * line, the builders as the last line of defence): every bound a reader accepts must build. Each
 * key with a bound is set alone to its lowest and its highest accepted value; a builder stricter
 * than its reader fails the load with its own message.
 */
class ReaderBuilderBoundsTest {
    private static final String MINIMAL = """
            workers:
              prefill: [ { url: "http://10.0.0.1:30000" } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            coordination:   # present, so its keys are read; renew_interval at most half of lease_ttl's lowest
              redis: { url: "redis://10.0.0.3:6379" }
              renew_interval: 500ms
            """;
    /** The same in unified mode: the unified role's keys are read only there. */
    private static final String MINIMAL_UNIFIED = """
            disaggregation: none
            workers:
              unified: [ { url: "http://10.0.0.1:30000" } ]
            """;
    private static final Pattern DNS_KEY = Pattern.compile("(workers\\.discovery\\.\\w+\\.dns)\\..+");
    private static final Pattern DURATION_BOUND = Pattern.compile(">= (\\d+(ms|s|m|h))");

    @Test
    void everyBoundTheReadersAcceptBuilds() {
        List<String> sets = new ArrayList<>();
        for (ConfigKey k : ConfigLoader.model().walk()) {
            if (k.path().contains("[") || k.path().contains("*")) {
                continue; // list items and user-named entries: no path to set alone
            }
            switch (k.type()) {
                case INTEGER, NUMBER, BYTE_SIZE -> {
                    if (k.minimum() != null) {
                        sets.add(k.path() + "=" + ConfigNode.num(k.minimum().doubleValue()));
                    }
                    if (k.maximum() != null) {
                        sets.add(k.path() + "=" + ConfigNode.num(k.maximum().doubleValue()));
                    }
                }
                case DURATION -> {
                    Matcher m = DURATION_BOUND.matcher(k.bounds());
                    if (m.matches()) {
                        sets.add(k.path() + "=" + m.group(1));
                    }
                }
                default -> {
                }
            }
        }
        assertThat(sets).hasSizeGreaterThan(60); // the walk found the keys
        List<String> refused = new ArrayList<>();
        for (String set : sets) {
            // a discovery mechanism's key is read with the mechanism: give it the name it cannot do without
            Matcher dns = DNS_KEY.matcher(set.substring(0, set.indexOf('=')));
            List<String> overrides = dns.matches() ? List.of(dns.group(1) + ".name=workers.example", set) : List.of(set);
            String base = set.startsWith("workers.discovery.unified.") ? MINIMAL_UNIFIED : MINIMAL;
            try {
                ConfigLoader.parse(base, "bounds.yaml", ConfigOverrides.of(Map.of(), overrides));
            } catch (ConfigException e) {
                refused.add(set + ": " + e.getMessage());
            }
        }
        assertThat(refused).isEmpty();
    }
}
