package dev.sluice.gateway.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The OpenMetrics exposition: exemplars on buckets only, and only while a sampled request's ids are set. */
class OpenMetricsExemplarsTest {
    private static final String OM = "application/openmetrics-text;version=1.0.0";

    @Test
    void exemplarsStayOnBucketsAndLeaveTheCount() {
        String in = "a_bucket{le=\"1.0\",route=\"x\"} 3.0 # {span_id=\"01\",trace_id=\"02\"} 0.5 1.0\n"
                + "a_count{route=\"x\"} 3.0 # {span_id=\"01\",trace_id=\"02\"} 0.5 1.0\n"
                + "b_count 3.0 # {trace_id=\"02\"} 0.5\n# EOF\n";
        assertThat(GatewayMetrics.bucketExemplarsOnly(in)).isEqualTo(
                "a_bucket{le=\"1.0\",route=\"x\"} 3.0 # {span_id=\"01\",trace_id=\"02\"} 0.5 1.0\n"
                        + "a_count{route=\"x\"} 3.0\nb_count 3.0\n# EOF\n");
    }

    @Test
    void aRequestsIdsBecomeAnExemplarOfItsLatencyBucketOnlyWhileSet() {
        try (GatewayMetrics m = new GatewayMetrics()) {
            m.requestEnded("chat_completions", dev.sluice.gateway.api.Outcome.OK, Duration.ofMillis(30));
            assertThat(m.scrape(OM)).doesNotContain("trace_id=");
            Exemplars.set("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
            try {
                m.requestEnded("chat_completions", dev.sluice.gateway.api.Outcome.OK, Duration.ofMillis(30));
            } finally {
                Exemplars.clear();
            }
            String om = m.scrape(OM);
            assertThat(om).contains("sluice_request_duration_seconds_bucket{route=\"chat_completions\",le=\"0.05\"} 2.0 # "
                    + "{span_id=\"b7ad6b7169203331\",trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.03");
            assertThat(om).contains("gen_ai_server_request_duration_seconds_bucket{gen_ai_operation_name=\"chat\",le=\"0.04\"} 2.0 # {");
            assertThat(om.lines().filter(l -> l.contains(" # {")).allMatch(l -> l.contains("_bucket{"))).isTrue();
            assertThat(m.scrape(null)).doesNotContain("trace_id=");
        }
    }
}
