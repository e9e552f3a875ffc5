package dev.sluice.gateway.health;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The per-rank running cap read from SGLang's /server_info, newer and older. */
class WorkerRunningCapTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static int cap(String info) throws Exception {
        return WorkerIdentityProbe.runningPerRank(JSON.readTree(info));
    }

    @Test
    void theRanksOwnCapWhenTheSchedulersReportIt() throws Exception {
        assertThat(cap("{\"max_running_requests\":32,\"dp_size\":4,\"enable_dp_attention\":true,"
                + "\"internal_states\":[{\"effective_max_running_requests_per_dp\":6}]}")).isEqualTo(6);
    }

    @Test
    void olderServersTheArgumentDividedAmongTheRanksWithDpAttention() throws Exception {
        assertThat(cap("{\"max_running_requests\":32,\"dp_size\":4,\"enable_dp_attention\":true}")).isEqualTo(8);
        // plain data parallelism: every replica's scheduler runs the whole argument
        assertThat(cap("{\"max_running_requests\":32,\"dp_size\":4,\"enable_dp_attention\":false}")).isEqualTo(32);
        assertThat(cap("{\"max_running_requests\":null,\"dp_size\":4,\"enable_dp_attention\":true}")).isZero();
        assertThat(cap("{\"dp_size\":4}")).isZero();
        assertThat(cap("{\"max_running_requests\":\"lots\"}")).isZero();
    }
}
