package dev.sluice.gateway.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.testing.TestDnsServer;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.resolver.dns.SingletonDnsServerAddressStreamProvider;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The DNS source against a real DNS server on loopback (Netty's DNS codec over UDP, answering from a
 * table the test changes): A records with the configured port, SRV records with theirs, a new
 * answer picked up when the TTL runs out (not at the long interval), and an empty answer keeping the
 * last good set while the source keeps asking.
 */
class DnsEndpointSourceTest {
    private TestDnsServer dns;
    private DnsEndpointSource source;

    @BeforeEach
    void startServer() throws Exception {
        dns = new TestDnsServer();
    }

    @AfterEach
    void stop() {
        if (source != null) {
            source.close();
        }
        dns.close();
    }

    private void start(Dns config, AtomicReference<List<WorkerEndpoint>> seen) {
        source = new DnsEndpointSource("decode", config, Optional.empty(), dns.loop(), NioDatagramChannel.class,
                new SingletonDnsServerAddressStreamProvider(dns.address()));
        source.start(seen::set);
    }

    private static List<String> urls(AtomicReference<List<WorkerEndpoint>> seen) {
        List<WorkerEndpoint> s = seen.get();
        return s == null ? List.of() : s.stream().map(WorkerEndpoint::url).sorted().toList();
    }

    private static boolean eventually(Duration d, BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return c.getAsBoolean();
    }

    @Test
    void aRecordsAreFollowedAtTheirTtlAndAnEmptyAnswerKeepsTheLastGoodSet() throws Exception {
        dns.a.put("decode.test.", List.of("127.0.0.1", "127.0.0.2"));
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        // a 1 s TTL against a 60 s interval: the source must ask again at the TTL
        start(new Dns("decode.test", Optional.of(30000), Optional.empty(), "http", Duration.ofSeconds(60),
                Duration.ofMillis(100)), seen);
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.1:30000",
                "http://127.0.0.2:30000")))).as("%s", urls(seen)).isTrue();

        dns.a.put("decode.test.", List.of("127.0.0.3"));
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.3:30000"))))
                .as("re-resolved when the TTL ran out: %s", urls(seen)).isTrue();

        dns.a.put("decode.test.", List.of()); // an empty answer: the last good set stays
        int asked = dns.queries.get();
        assertThat(eventually(Duration.ofSeconds(5), () -> dns.queries.get() >= asked + 4)).as("it keeps asking").isTrue();
        assertThat(urls(seen)).containsExactly("http://127.0.0.3:30000");

        dns.a.put("decode.test.", List.of("127.0.0.4")); // and it recovers
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.4:30000"))))
                .as("%s", urls(seen)).isTrue();
    }

    @Test
    void srvRecordsGiveEachWorkerItsPortAndAPrefillItsBootstrapPort() throws Exception {
        dns.srv.put("_http._tcp.prefill.test.", List.of("30000 p1.test", "30010 p2.test"));
        dns.a.put("p1.test.", List.of("127.0.0.5"));
        dns.a.put("p2.test.", List.of("127.0.0.6"));
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        start(new Dns("_http._tcp.prefill.test", Optional.empty(), Optional.of(8998), "http", Duration.ofSeconds(60),
                Duration.ofMillis(100)), seen);
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).size() == 2)).as("%s", urls(seen)).isTrue();
        assertThat(urls(seen)).containsExactly("http://127.0.0.5:30000", "http://127.0.0.6:30010");
        assertThat(seen.get()).allSatisfy(e -> assertThat(e.bootstrapPort()).isEqualTo(8998));
    }
}
