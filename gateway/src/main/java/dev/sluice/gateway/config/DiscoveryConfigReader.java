package dev.sluice.gateway.config;

import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.DiscoveryConfig.Kubernetes;
import dev.sluice.gateway.config.DiscoveryConfig.RoleDiscovery;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Reads {@code workers.discovery} (docs/discovery.md):
 *
 * <pre>
 * workers:
 *   discovery:
 *     decode:
 *       kubernetes: {namespace: llm, selector: {app: sglang-decode}, port_name: http}
 *     prefill:
 *       dns: {name: prefill.llm.svc.cluster.local, port: 30000, bootstrap_port: 8998}
 * </pre>
 */
final class DiscoveryConfigReader {
    private static final String DNS_NAME = "[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\\.?";

    private DiscoveryConfigReader() {
    }

    static DiscoveryConfig read(ConfigNode workers, boolean unified) {
        ConfigNode n = workers.child("discovery", "Workers found at run time, one mechanism per role list (dns or "
                + "kubernetes); a role not named here takes its workers from its list in the file. A discovered "
                + "worker gets traffic once its identity check and first health check pass; one that disappears "
                + "is drained (its requests finish), then removed. Absent: every role is static.");
        if (n.isMissing() && !n.reading().explore()) {
            return DiscoveryConfig.NONE; // nothing in force: the effective configuration has no discovery either
        }
        if (unified) {
            n.allowOnly("unified");
        } else {
            n.allowOnly("prefill", "decode");
        }
        Optional<RoleDiscovery> prefill = unified ? Optional.empty()
                : role(n.child("prefill", "How the prefill workers are found."), true);
        Optional<RoleDiscovery> decode = unified ? Optional.empty()
                : role(n.child("decode", "How the decode workers are found."), false);
        Optional<RoleDiscovery> uni = unified ? role(n.child("unified", "How the unified workers are found."), false)
                : Optional.empty();
        return new DiscoveryConfig(prefill, decode, uni);
    }

    private static Optional<RoleDiscovery> role(ConfigNode n, boolean prefill) {
        n.allowOnly("dns", "kubernetes");
        if (n.isMissing() && !n.reading().explore()) {
            return Optional.empty();
        }
        ConfigNode dns = n.child("dns", "Re-resolve a DNS name (a headless Service, A/AAAA with port, or SRV records "
                + "without it). An empty or failed answer keeps the last good set (and says so in the log).");
        ConfigNode k8s = n.child("kubernetes", "Watch the pods that match a label selector in a namespace (needs the "
                + "RBAC in deploy/kubernetes/discovery-rbac.yaml).");
        boolean both = !dns.isMissing() && !k8s.isMissing() && !n.reading().explore();
        if (both) {
            n.reject("dns and kubernetes", "one mechanism per role list"); // both still read: every problem at once
        }
        if (!n.isMissing() && dns.isMissing() && k8s.isMissing() && !n.reading().explore()) {
            n.reject("empty", "dns: or kubernetes:");
            return Optional.empty();
        }
        boolean explore = n.reading().explore();
        Optional<RoleDiscovery> d = dns.isMissing() && !explore ? Optional.empty() : dns(dns, prefill);
        Optional<RoleDiscovery> k = k8s.isMissing() && !explore ? Optional.empty() : kubernetes(k8s, prefill);
        return both ? Optional.empty() : d.isPresent() ? d : k;
    }

    private static String scheme(ConfigNode n) {
        ConfigNode s = n.child("scheme", "http or https (https: TLS to the worker, upstream.ca_file).");
        String v = s.text("http");
        if (!v.equals("http") && !v.equals("https")) {
            s.reject(v, "http or https");
            return "http";
        }
        return v;
    }

    private static Optional<RoleDiscovery> dns(ConfigNode n, boolean prefill) {
        n.allowOnly(prefill ? new String[] {"name", "port", "bootstrap_port", "scheme", "interval", "min_interval",
            "server"} : new String[] {"name", "port", "scheme", "interval", "min_interval", "server"});
        ConfigNode nameNode = n.child("name", "The name to resolve, e.g. prefill.llm.svc.cluster.local (SRV: "
                + "_http._tcp.prefill.llm.svc.cluster.local).");
        String name = n.isMissing() && !n.reading().explore() ? null : nameNode.requiredText();
        if (name != null && !name.matches(DNS_NAME)) {
            nameNode.reject(name, "a DNS name");
            name = null;
        }
        Optional<Integer> port = n.child("port", "The workers' port with A/AAAA records. Absent: SRV records are "
                + "asked for, and each answer names its port.").optionalInt(1, 65535);
        Optional<Integer> bootstrap = prefill ? n.child("bootstrap_port", "The prefills' "
                + "--disaggregation-bootstrap-port (sglang mode). Absent: null, the server's default.")
                .optionalInt(1, 65535) : Optional.empty();
        String scheme = scheme(n);
        Duration interval = n.child("interval", "The longest time between two resolutions; a shorter TTL in the "
                + "answer resolves sooner.").durationAtLeast(Duration.ofSeconds(10), Duration.ofMillis(100));
        Duration min = n.child("min_interval", "The shortest time between two resolutions, whatever the TTL "
                + "(a TTL of 0 does not make the gateway query without pause).")
                .durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(10));
        Optional<java.net.InetSocketAddress> server = server(n.child("server", "The name server to ask, an IP "
                + "address and port (10.96.0.10:53, [fd00::a]:53). Absent: the host's (/etc/resolv.conf)."));
        if (n.isMissing() || name == null) {
            return Optional.empty();
        }
        return Optional.of(new Dns(name, port, bootstrap, scheme, interval, min.compareTo(interval) > 0 ? interval
                : min, server));
    }

    /** An IP literal and a port: a name server named by a host name would need a name server first. */
    private static Optional<java.net.InetSocketAddress> server(ConfigNode n) {
        Optional<String> raw = n.optionalText();
        if (raw.isEmpty()) {
            return Optional.empty();
        }
        String v = raw.get().trim();
        int colon = v.lastIndexOf(':');
        String host = colon > 0 ? v.substring(0, colon).replaceAll("^\\[|\\]$", "") : "";
        boolean literal = host.matches("[0-9.]+") || host.contains(":");
        try {
            int port = Integer.parseInt(v.substring(colon + 1));
            if (literal && port >= 1 && port <= 65535) {
                return Optional.of(new java.net.InetSocketAddress(java.net.InetAddress.getByName(host), port));
            }
        } catch (NumberFormatException | java.net.UnknownHostException e) {
            // rejected below
        }
        n.reject(v, "an IP address and port, such as 10.96.0.10:53 or [fd00::a]:53");
        return Optional.empty();
    }

    private static Optional<RoleDiscovery> kubernetes(ConfigNode n, boolean prefill) {
        n.allowOnly(prefill ? new String[] {"namespace", "selector", "port_name", "bootstrap_port_name", "scheme"}
                : new String[] {"namespace", "selector", "port_name", "scheme"});
        String namespace = n.child("namespace", "The namespace the pods run in. Empty: the gateway's own (the "
                + "service account's namespace, else default).").text("");
        ConfigNode sel = n.child("selector", "Labels a pod must carry, all of them (a label selector's "
                + "matchLabels), e.g. {app: sglang, sluice.dev/role: decode}. At least one.");
        Map<String, String> selector = new LinkedHashMap<>();
        for (Map.Entry<String, ConfigNode> e : sel.entries("A label and the value it must have.")) {
            String v = e.getValue().text("");
            selector.put(e.getKey(), v);
        }
        if (!n.isMissing() && selector.isEmpty() && !n.reading().explore()) {
            sel.reject(sel.isMissing() ? "missing" : "empty", "at least one label");
        }
        String portName = n.child("port_name", "The name of the container port the worker serves HTTP on; a pod "
                + "without one gives its port in the annotation " + Kubernetes.PORT_ANNOTATION + ".").text("http");
        String bootstrapName = prefill ? n.child("bootstrap_port_name", "The name of the prefill's container port "
                + "for --disaggregation-bootstrap-port; else the annotation " + Kubernetes.BOOTSTRAP_PORT_ANNOTATION
                + "; else null (the server's default).").text("bootstrap") : "bootstrap";
        String scheme = scheme(n);
        if (n.isMissing() || selector.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Kubernetes(namespace, selector, portName, bootstrapName, scheme));
    }
}
