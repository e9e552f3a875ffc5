package dev.sluice.gateway.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.ops.Shell.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/serve-prefill, serve-decode (SGLang) and serve-vllm-prefill, serve-vllm-decode, run with
 * DRY_RUN / --print on a machine without GPUs: the flags that mattered in the incident, the
 * environment that overrides them, refusals of bad values, and the real (exec) path through a
 * stand-in interpreter that prints what it was given.
 */
class ServeScriptsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static List<String> dryRun(String script, Map<String, String> env, String... args) throws Exception {
        Map<String, String> e = new HashMap<>(env);
        e.put("DRY_RUN", "1");
        Result r = Shell.script(e, script, args);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.err()).as(r.toString()).isEmpty();
        assertThat(r.out().strip()).as("one line").doesNotContain("\n");
        return r.words();
    }

    /** The value following {@code flag}, which must occur exactly once. */
    private static String value(List<String> words, String flag) {
        assertThat(words).as("%s in %s", flag, words).containsOnlyOnce(flag);
        int i = words.indexOf(flag);
        assertThat(i + 1).as("%s has a value", flag).isLessThan(words.size());
        return words.get(i + 1);
    }

    @Test
    void sglangPrefillHasThePdFlagsMetricsQueueLimitAndHiCacheByRatio() throws Exception {
        List<String> w = dryRun("serve-prefill", Map.of());
        // one node, two GPUs (docs/quickstart-2gpu.md): prefill on GPU 0, decode on GPU 1, TP 1, a small model
        assertThat(w.subList(0, 5)).containsExactly("CUDA_VISIBLE_DEVICES=0", "SGLANG_ENABLE_METRICS_DEVICE_TIMER=1",
                "python3", "-m", "sglang.launch_server");
        assertThat(value(w, "--disaggregation-mode")).isEqualTo("prefill");
        assertThat(value(w, "--disaggregation-bootstrap-port")).isEqualTo("8998");
        assertThat(value(w, "--disaggregation-transfer-backend")).isEqualTo("mooncake");
        assertThat(value(w, "--max-queued-requests")).isEqualTo("32");
        assertThat(value(w, "--hicache-ratio")).isEqualTo("2.0");
        assertThat(value(w, "--model-path")).isEqualTo("Qwen/Qwen3-0.6B");
        assertThat(value(w, "--tp-size")).isEqualTo("1");
        assertThat(value(w, "--host")).isEqualTo("127.0.0.1");
        assertThat(value(w, "--port")).isEqualTo("30000");
        assertThat(w).containsOnlyOnce("--enable-metrics", "--enable-hierarchical-cache");
        // some models (DeepSeek V4 among them) refuse --hicache-size; the ratio is the portable knob
        assertThat(w).doesNotContain("--hicache-size", "--disaggregation-ib-device");
    }

    @Test
    void sglangDecodeHasNoBootstrapPortAndNoHiCache() throws Exception {
        List<String> w = dryRun("serve-decode", Map.of());
        assertThat(w.subList(0, 5)).containsExactly("CUDA_VISIBLE_DEVICES=1", "SGLANG_ENABLE_METRICS_DEVICE_TIMER=1",
                "python3", "-m", "sglang.launch_server");
        assertThat(value(w, "--disaggregation-mode")).isEqualTo("decode");
        assertThat(value(w, "--disaggregation-transfer-backend")).isEqualTo("mooncake");
        assertThat(value(w, "--max-queued-requests")).isEqualTo("32");
        assertThat(value(w, "--port")).isEqualTo("30001");
        assertThat(w).containsOnlyOnce("--enable-metrics");
        assertThat(w).doesNotContain("--disaggregation-bootstrap-port", "--enable-hierarchical-cache", "--hicache-ratio");
    }

    @Test
    void theScriptsSayWhyTheQueueLimitIsThereAndWhyTheRatio() throws Exception {
        String source = Files.readString(Shell.root().resolve("scripts/serve-sglang"));
        assertThat(source).contains("ignores --max-queued-requests", "admission limits", "DeepSeek", "--hicache-ratio");
    }

    @Test
    void theEnvironmentAndExtraFlagsOverrideTheDefaults() throws Exception {
        List<String> w = dryRun("serve-prefill", Map.of("SERVE_MODEL", "deepseek-ai/DeepSeek-V4",
                "CUDA_VISIBLE_DEVICES", "2,3", "SERVE_TP", "2", "SERVE_HOST", "10.0.0.5", "SERVE_PORT", "31000",
                "SERVE_BOOTSTRAP_PORT", "9100", "SERVE_TRANSFER_BACKEND", "nixl", "SERVE_IB_DEVICE", "mlx5_0,mlx5_1",
                "SERVE_HICACHE_RATIO", "1.5", "SERVE_EXTRA_ARGS", "--page-size 64 --trust-remote-code"),
                "--print", "--mem-fraction-static", "0.8");
        assertThat(w.get(0)).isEqualTo("CUDA_VISIBLE_DEVICES=2,3");
        assertThat(value(w, "--model-path")).isEqualTo("deepseek-ai/DeepSeek-V4");
        assertThat(value(w, "--tp-size")).isEqualTo("2");
        assertThat(value(w, "--host")).isEqualTo("10.0.0.5");
        assertThat(value(w, "--port")).isEqualTo("31000");
        assertThat(value(w, "--disaggregation-bootstrap-port")).isEqualTo("9100");
        assertThat(value(w, "--disaggregation-transfer-backend")).isEqualTo("nixl");
        assertThat(value(w, "--disaggregation-ib-device")).isEqualTo("mlx5_0,mlx5_1");
        assertThat(value(w, "--hicache-ratio")).isEqualTo("1.5");
        assertThat(value(w, "--page-size")).isEqualTo("64");
        assertThat(w.subList(w.size() - 3, w.size())).containsExactly("--trust-remote-code", "--mem-fraction-static", "0.8");

        List<String> off = dryRun("serve-prefill", Map.of("SERVE_HICACHE", "0"));
        assertThat(off).doesNotContain("--enable-hierarchical-cache", "--hicache-ratio");
        assertThat(value(off, "--disaggregation-bootstrap-port")).isEqualTo("8998");
    }

    @Test
    void badValuesAreRefusedWithTheVariableAndWhatWasExpected() throws Exception {
        Map<String, String> cases = Map.of(
                "SERVE_TRANSFER_BACKEND", "rdma",
                "SERVE_PORT", "30000x",
                "SERVE_TP", "four",
                "SERVE_HICACHE_RATIO", "two");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            Result r = Shell.script(Map.of(c.getKey(), c.getValue(), "DRY_RUN", "1"), "serve-prefill");
            assertThat(r.exitCode()).as("%s=%s: %s", c.getKey(), c.getValue(), r).isEqualTo(2);
            assertThat(r.err()).as("%s=%s", c.getKey(), c.getValue()).contains(c.getKey(), "'" + c.getValue() + "'", "expected");
            assertThat(r.out()).isEmpty();
        }
        Result noRole = Shell.script(Map.of(), "serve-sglang");
        assertThat(noRole.exitCode()).isEqualTo(2);
        assertThat(noRole.err()).contains("expected: prefill or decode");
        Result help = Shell.script(Map.of(), "serve-prefill", "--help");
        assertThat(help.exitCode()).isZero();
        assertThat(help.out()).contains("DRY_RUN", "SERVE_MODEL", "CUDA_VISIBLE_DEVICES", "SERVE_TRANSFER_BACKEND");
    }

    /** A stand-in for python3 / vllm: prints its environment of interest and its arguments, one per line. */
    private Path standIn(String name) throws Exception {
        Path p = dir.resolve(name);
        Files.writeString(p, """
                #!/bin/sh
                echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
                echo "VLLM_NIXL_SIDE_CHANNEL_PORT=$VLLM_NIXL_SIDE_CHANNEL_PORT"
                echo "SGLANG_ENABLE_METRICS_DEVICE_TIMER=$SGLANG_ENABLE_METRICS_DEVICE_TIMER"
                printf '%s\\n' "$@"
                """);
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }

    @Test
    void withoutDryRunTheScriptExecsTheSameCommandWithItsEnvironment() throws Exception {
        Path python = standIn("python3");
        List<String> printed = dryRun("serve-prefill", Map.of("SERVE_PYTHON", python.toString()));
        Result ran = Shell.script(Map.of("SERVE_PYTHON", python.toString()), "serve-prefill");
        assertThat(ran.exitCode()).as(ran.toString()).isZero();
        List<String> lines = List.of(ran.out().split("\n"));
        assertThat(lines.get(0)).isEqualTo("CUDA_VISIBLE_DEVICES=0");
        assertThat(lines.get(2)).isEqualTo("SGLANG_ENABLE_METRICS_DEVICE_TIMER=1");
        // the last call is the server itself (the ones before check that sglang and mooncake import)
        List<String> args = lines.subList(lines.lastIndexOf("SGLANG_ENABLE_METRICS_DEVICE_TIMER=1") + 1, lines.size());
        assertThat(args).isEqualTo(printed.subList(3, printed.size()));

        Path vllm = standIn("vllm");
        List<String> vPrinted = dryRun("serve-vllm-decode", Map.of("SERVE_VLLM", vllm.toString()));
        Result vRan = Shell.script(Map.of("SERVE_VLLM", vllm.toString()), "serve-vllm-decode");
        assertThat(vRan.exitCode()).as(vRan.toString()).isZero();
        List<String> vLines = List.of(vRan.out().split("\n"));
        assertThat(vLines.subList(0, 2)).containsExactly("CUDA_VISIBLE_DEVICES=1", "VLLM_NIXL_SIDE_CHANNEL_PORT=5601");
        assertThat(vLines.subList(3, vLines.size())).isEqualTo(vPrinted.subList(3, vPrinted.size()));
    }

    @Test
    void vllmWorkersUseNixlConnectorWithASideChannelPortEach() throws Exception {
        List<String> p = dryRun("serve-vllm-prefill", Map.of());
        List<String> d = dryRun("serve-vllm-decode", Map.of());
        assertThat(p.subList(0, 5)).containsExactly("CUDA_VISIBLE_DEVICES=0", "VLLM_NIXL_SIDE_CHANNEL_PORT=5600",
                "vllm", "serve", "Qwen/Qwen3-0.6B");
        assertThat(d.subList(0, 5)).containsExactly("CUDA_VISIBLE_DEVICES=1", "VLLM_NIXL_SIDE_CHANNEL_PORT=5601",
                "vllm", "serve", "Qwen/Qwen3-0.6B");
        for (List<String> w : List.of(p, d)) {
            JsonNode kv = JSON.readTree(value(w, "--kv-transfer-config"));
            assertThat(kv.path("kv_connector").asText()).isEqualTo("NixlConnector");
            assertThat(kv.path("kv_role").asText()).isEqualTo("kv_both");
            assertThat(value(w, "--tensor-parallel-size")).isEqualTo("1");
            assertThat(w).doesNotContain("--enforce-eager");
        }
        assertThat(value(p, "--port")).isEqualTo("8100");
        assertThat(value(d, "--port")).isEqualTo("8200");

        List<String> eager = dryRun("serve-vllm-prefill", Map.of("SERVE_ENFORCE_EAGER", "1",
                "VLLM_NIXL_SIDE_CHANNEL_PORT", "6000", "VLLM_NIXL_SIDE_CHANNEL_HOST", "10.0.0.7", "SERVE_TP", "8"),
                "--max-model-len", "32768");
        assertThat(eager).contains("VLLM_NIXL_SIDE_CHANNEL_PORT=6000", "VLLM_NIXL_SIDE_CHANNEL_HOST=10.0.0.7");
        assertThat(eager).containsOnlyOnce("--enforce-eager");
        assertThat(value(eager, "--tensor-parallel-size")).isEqualTo("8");
        assertThat(eager.subList(eager.size() - 2, eager.size())).containsExactly("--max-model-len", "32768");
    }

    @Test
    void theWorkerUnitsStartTheseScripts() throws Exception {
        Map<String, String> units = Map.of(
                "sglang-prefill.service", "serve-prefill",
                "sglang-decode.service", "serve-decode",
                "vllm-prefill.service", "serve-vllm-prefill",
                "vllm-decode.service", "serve-vllm-decode");
        for (Map.Entry<String, String> u : units.entrySet()) {
            String unit = Files.readString(Shell.root().resolve("deploy/systemd").resolve(u.getKey()));
            assertThat(unit).as(u.getKey()).containsPattern("(?m)^ExecStart=/opt/sluice/scripts/" + u.getValue() + "$")
                    .containsPattern("(?m)^LimitMEMLOCK=infinity$")
                    .containsPattern("(?m)^Restart=on-failure$");
            assertThat(Shell.root().resolve("scripts").resolve(u.getValue())).isExecutable();
        }
    }

    @Test
    void withoutTheServerSoftwareTheScriptsSayWhatToInstall() throws Exception {
        Path python = dir.resolve("python3");
        Files.writeString(python, "#!/bin/sh\nexit 1\n"); // an interpreter that imports nothing
        Files.setPosixFilePermissions(python, PosixFilePermissions.fromString("rwxr-xr-x"));
        Result noSglang = Shell.script(Map.of("SERVE_PYTHON", python.toString()), "serve-prefill");
        assertThat(noSglang.exitCode()).as(noSglang.toString()).isEqualTo(127);
        assertThat(noSglang.err()).contains("cannot import sglang", "pip install");
        Result noVllm = Shell.script(Map.of("SERVE_VLLM", dir.resolve("no-such-vllm").toString()), "serve-vllm-decode");
        assertThat(noVllm.exitCode()).as(noVllm.toString()).isEqualTo(127);
        assertThat(noVllm.err()).contains("needs", "no-such-vllm");
    }
}
