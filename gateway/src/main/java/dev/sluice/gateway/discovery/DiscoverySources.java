package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.DiscoveryConfig.Kubernetes;
import dev.sluice.gateway.config.DiscoveryConfig.RoleDiscovery;
import dev.sluice.gateway.config.Secret;
import dev.sluice.gateway.routing.WorkerRole;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.DatagramChannel;
import io.netty.resolver.dns.DnsServerAddressStreamProvider;
import io.netty.resolver.dns.DnsServerAddressStreamProviders;
import io.netty.resolver.dns.SingletonDnsServerAddressStreamProvider;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Builds each role's mechanism: DNS queries on the control loop (the system's name servers), a
 * Kubernetes client configured the standard way (in a pod: its service account; else the kubeconfig or
 * the {@code kubernetes.*} system properties), one per source.
 */
public final class DiscoverySources implements WorkerDirectory.SourceFactory {
    private final Supplier<EventLoop> loops;
    private final Class<? extends DatagramChannel> datagram;
    private final DnsServerAddressStreamProvider nameServers;
    private final Supplier<KubernetesClient> clients;

    public DiscoverySources(Supplier<EventLoop> loops, Class<? extends DatagramChannel> datagram,
                            DnsServerAddressStreamProvider nameServers, Supplier<KubernetesClient> clients) {
        this.loops = loops;
        this.datagram = datagram;
        this.nameServers = nameServers;
        this.clients = clients;
    }

    /** The system's name servers (resolv.conf) and the standard Kubernetes client configuration. */
    public static DiscoverySources standard(Supplier<EventLoop> loops, Class<? extends DatagramChannel> datagram) {
        return new DiscoverySources(loops, datagram, DnsServerAddressStreamProviders.platformDefault(),
                () -> new KubernetesClientBuilder().build());
    }

    @Override
    public EndpointSource create(WorkerRole role, RoleDiscovery discovery, Optional<Secret> authorization) {
        if (discovery instanceof Dns dns) {
            DnsServerAddressStreamProvider servers = dns.server().<DnsServerAddressStreamProvider>map(
                    SingletonDnsServerAddressStreamProvider::new).orElse(nameServers);
            return new DnsEndpointSource(role.label(), dns, authorization, loops.get(), datagram, servers);
        }
        return new KubernetesEndpointSource(role.label(), (Kubernetes) discovery, authorization, clients.get(), true);
    }
}
