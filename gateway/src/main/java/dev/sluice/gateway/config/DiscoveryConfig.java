package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code workers.discovery}: for each role list (prefill, decode, unified) at most one mechanism that
 * finds its workers at run time instead of (or besides) the file's list. A role without one is static.
 */
public record DiscoveryConfig(Optional<RoleDiscovery> prefill, Optional<RoleDiscovery> decode,
                              Optional<RoleDiscovery> unified) {
    public static final DiscoveryConfig NONE = new DiscoveryConfig(Optional.empty(), Optional.empty(), Optional.empty());

    public DiscoveryConfig {
        Objects.requireNonNull(prefill, "prefill");
        Objects.requireNonNull(decode, "decode");
        Objects.requireNonNull(unified, "unified");
    }

    /** The mechanism of the role list labelled {@code role} ("prefill", "decode", "unified"). */
    public Optional<RoleDiscovery> forRole(String role) {
        return switch (role) {
            case "prefill" -> prefill;
            case "decode" -> decode;
            default -> unified;
        };
    }

    /** One role list's mechanism. */
    public sealed interface RoleDiscovery permits Dns, Kubernetes {
        /** The label of the source in /admin/state, {@code status} and the log. */
        String source();
    }

    /**
     * A DNS name re-resolved: A/AAAA records with {@code port}, or (no port) SRV records, which carry
     * each worker's port. Resolved again when the answer's shortest TTL runs out, clamped to
     * [{@code min_interval}, {@code interval}].
     */
    public record Dns(String name, Optional<Integer> port, Optional<Integer> bootstrapPort, String scheme,
                      Duration interval, Duration minInterval, Optional<java.net.InetSocketAddress> server)
            implements RoleDiscovery {
        public Dns {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(server, "server");
            Objects.requireNonNull(port, "port");
            Objects.requireNonNull(bootstrapPort, "bootstrapPort");
            Objects.requireNonNull(scheme, "scheme");
        }

        public boolean srv() {
            return port.isEmpty();
        }

        public Dns(String name, Optional<Integer> port, Optional<Integer> bootstrapPort, String scheme,
                   Duration interval, Duration minInterval) {
            this(name, port, bootstrapPort, scheme, interval, minInterval, Optional.empty());
        }

        @Override
        public String source() {
            return "dns";
        }
    }

    /**
     * Pods of {@code namespace} matching {@code selector}, watched; only Ready pods that are not
     * terminating. The worker's port is the container port named {@code portName} (else the pod
     * annotation {@code sluice.dev/port}); a prefill's bootstrap port the one named
     * {@code bootstrapPortName} (else the annotation {@code sluice.dev/bootstrap-port}).
     */
    public record Kubernetes(String namespace, Map<String, String> selector, String portName,
                             String bootstrapPortName, String scheme) implements RoleDiscovery {
        public static final String PORT_ANNOTATION = "sluice.dev/port";
        public static final String BOOTSTRAP_PORT_ANNOTATION = "sluice.dev/bootstrap-port";

        public Kubernetes {
            Objects.requireNonNull(namespace, "namespace");
            selector = Map.copyOf(selector);
            Objects.requireNonNull(portName, "portName");
            Objects.requireNonNull(bootstrapPortName, "bootstrapPortName");
            Objects.requireNonNull(scheme, "scheme");
        }

        @Override
        public String source() {
            return "kubernetes";
        }
    }
}
