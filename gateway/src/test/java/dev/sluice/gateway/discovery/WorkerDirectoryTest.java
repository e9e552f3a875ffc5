package dev.sluice.gateway.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.DiscoveryConfig;
import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.routing.WorkerRole;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The directory's merge of file, discovery and admin, against sources and worker lists the test drives. */
class WorkerDirectoryTest {
    /** What the directory asked of the worker lists, as names per role. */
    private final Map<WorkerRole, List<String>> lists = new EnumMap<>(WorkerRole.class);
    private final List<String> aborted = new ArrayList<>();
    private final java.util.Set<String> draining = new java.util.HashSet<>();
    /** Every source the directory built, newest last, with the sink it was started with. */
    private final List<FakeSource> sources = new ArrayList<>();

    private final class FakeSource implements EndpointSource {
        Consumer<List<WorkerEndpoint>> sink;
        boolean closed;

        @Override
        public WorkerSource kind() {
            return WorkerSource.DNS;
        }

        @Override
        public void start(Consumer<List<WorkerEndpoint>> sink) {
            this.sink = sink;
        }

        @Override
        public void close() {
            closed = true;
        }

        void answer(String... urls) {
            sink.accept(java.util.Arrays.stream(urls).map(u -> WorkerEndpoint.of(u, null, Optional.empty())).toList());
        }
    }

    private final WorkerDirectory directory = new WorkerDirectory(false, new WorkerDirectory.WorkerLists() {
        @Override
        public void reconcile(WorkerRole role, List<WorkerEndpoint> wanted) {
            List<String> next = wanted.stream().map(WorkerDirectory::name).toList();
            // as the real lists do: a worker that left drains (until the test says it retired), one back is undrained
            lists.getOrDefault(role, List.of()).stream().filter(n -> !next.contains(n)).forEach(draining::add);
            draining.removeAll(next);
            lists.put(role, next);
        }

        @Override
        public boolean abortRequests(String name) {
            aborted.add(name);
            return draining.contains(name);
        }
    }, (role, d, auth) -> {
        FakeSource s = new FakeSource();
        sources.add(s);
        return s;
    });

    private static WorkerEndpoint ep(String url) {
        return WorkerEndpoint.of(url, null, Optional.empty());
    }

    private static WorkersConfig config(List<String> decodes, Optional<DiscoveryConfig.RoleDiscovery> decodeDiscovery) {
        return new WorkersConfig(List.of(ep("http://10.0.0.1:1")), decodes.stream().map(WorkerDirectoryTest::ep).toList(),
                List.of(), Optional.empty(), new DiscoveryConfig(Optional.empty(), decodeDiscovery, Optional.empty()),
                Optional.empty());
    }

    private static Optional<DiscoveryConfig.RoleDiscovery> dns(String name) {
        return Optional.of(new Dns(name, Optional.of(2), Optional.empty(), "http", Duration.ofSeconds(10),
                Duration.ofSeconds(1)));
    }

    @Test
    void fileDiscoveryAndAdminMergeAndAReloadKeepsTheWatchAndTheAdminWorkers() {
        directory.start(config(List.of("http://10.0.1.1:2"), dns("decode.test")));
        assertThat(sources).hasSize(1);
        sources.get(0).answer("http://10.0.2.1:2", "http://10.0.2.2:2");
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.1.1:2", "10.0.2.1:2", "10.0.2.2:2");
        assertThat(directory.source("10.0.2.1:2")).isEqualTo(WorkerSource.DNS);
        assertThat(directory.source("10.0.1.1:2")).isEqualTo(WorkerSource.FILE);

        // the admin API adds only to static roles: the prefill list here
        assertThat(directory.add("decode", "http://10.0.3.1:2", null).status()).isEqualTo(409);
        assertThat(directory.add("prefill", "http://10.0.3.1:1", null).status()).isEqualTo(201);
        assertThat(lists.get(WorkerRole.PREFILL)).containsExactly("10.0.0.1:1", "10.0.3.1:1");
        assertThat(directory.add("prefill", "http://10.0.3.1:1", null).status()).isEqualTo(409);
        assertThat(directory.add("unified", "http://10.0.3.2:1", null).status()).isEqualTo(400);

        // a reload with the same mechanism: the same watch, the admin worker kept
        directory.configure(config(List.of(), dns("decode.test")));
        assertThat(sources).hasSize(1);
        assertThat(sources.get(0).closed).isFalse();
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.2.1:2", "10.0.2.2:2");
        assertThat(lists.get(WorkerRole.PREFILL)).containsExactly("10.0.0.1:1", "10.0.3.1:1");

        // another mechanism: the old one stops, its late answers count for nothing, its workers leave
        directory.configure(config(List.of(), dns("other.test")));
        assertThat(sources).hasSize(2);
        assertThat(sources.get(0).closed).isTrue();
        assertThat(lists.get(WorkerRole.DECODE)).isEmpty();
        sources.get(0).answer("http://10.0.9.9:2");
        assertThat(lists.get(WorkerRole.DECODE)).isEmpty();
        sources.get(1).answer("http://10.0.4.1:2");
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.4.1:2");
    }

    @Test
    void aDrainedDiscoveredWorkerStaysOutUntilItDisappearsAndComesBack() {
        directory.start(config(List.of(), dns("decode.test")));
        FakeSource dns = sources.get(0);
        dns.answer("http://10.0.2.1:2", "http://10.0.2.2:2");

        assertThat(directory.drain("10.0.2.1:2").status()).isEqualTo(200);
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.2.2:2");
        dns.answer("http://10.0.2.1:2", "http://10.0.2.2:2", "http://10.0.2.3:2");
        assertThat(lists.get(WorkerRole.DECODE)).as("still held out").containsExactly("10.0.2.2:2", "10.0.2.3:2");
        dns.answer("http://10.0.2.2:2", "http://10.0.2.3:2");
        dns.answer("http://10.0.2.1:2", "http://10.0.2.2:2", "http://10.0.2.3:2");
        assertThat(lists.get(WorkerRole.DECODE)).as("gone and back").contains("10.0.2.1:2");

        assertThat(directory.delete("10.0.2.3:2").status()).isEqualTo(200);
        assertThat(aborted).containsExactly("10.0.2.3:2");
        assertThat(lists.get(WorkerRole.DECODE)).doesNotContain("10.0.2.3:2");
        assertThat(directory.drain("10.0.2.3:2").status()).as("no longer in rotation").isEqualTo(404);
        // a delete of a worker that is only draining still cuts its streams; once retired, it is unknown
        assertThat(directory.delete("10.0.2.3:2").status()).isEqualTo(200);
        assertThat(aborted).containsExactly("10.0.2.3:2", "10.0.2.3:2");
        draining.remove("10.0.2.3:2");
        assertThat(directory.delete("10.0.2.3:2").status()).isEqualTo(404);
    }

    @Test
    void beforeStartOnlyTheFileCountsAndCloseStopsEverySource() {
        directory.configure(config(List.of("http://10.0.1.1:2"), dns("decode.test")));
        assertThat(sources).as("no mechanism runs before start").isEmpty();
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.1.1:2");
        directory.start(config(List.of("http://10.0.1.1:2"), dns("decode.test")));
        assertThat(sources).hasSize(1);
        directory.close();
        assertThat(sources.get(0).closed).isTrue();
        sources.get(0).answer("http://10.0.2.1:2");
        assertThat(lists.get(WorkerRole.DECODE)).containsExactly("10.0.1.1:2");
    }
}
