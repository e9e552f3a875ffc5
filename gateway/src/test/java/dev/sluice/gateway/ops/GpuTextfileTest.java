package dev.sluice.gateway.ops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.ops.Shell.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/gpu-textfile, the node_exporter textfile fallback for hosts without dcgm-exporter, fed
 * by a FAKE nvidia-smi (no GPU exists here): DCGM's names and labels, readings nvidia-smi lacks
 * left out, a failing nvidia-smi reported, and the file replaced atomically.
 */
class GpuTextfileTest {
    @TempDir
    Path dir;

    /** FAKE nvidia-smi printing {@code csv} for any query (or failing with {@code exit}). */
    private Path fakeNvidiaSmi(String csv, int exit) throws Exception {
        Path p = dir.resolve("nvidia-smi");
        Files.writeString(p, "#!/bin/sh\n# FAKE nvidia-smi (GpuTextfileTest): no GPU exists here\n"
                + "case \"$*\" in *--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.free,utilization.gpu,"
                + "utilization.memory,temperature.gpu,power.draw*--format=csv,noheader,nounits*) ;; "
                + "*) echo \"unexpected arguments: $*\" >&2; exit 9 ;; esac\n"
                + "cat <<'CSV'\n" + csv + "CSV\nexit " + exit + "\n");
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }

    private static final String TWO_GPUS = """
            0, GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52, NVIDIA H100 80GB HBM3, 00000000:17:00.0, 61234, 20000, 87, 41, 65, 512.33
            1, GPU-11111111-2222-3333-4444-555555555555, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 0, 81559, 0, 0, 31, [N/A]
            """;

    private static final String GPU0 = "gpu=\"0\",UUID=\"GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52\","
            + "pci_bus_id=\"00000000:17:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-host\"";

    private List<String> samples(String exposition) {
        return Arrays.stream(exposition.split("\n")).filter(l -> !l.startsWith("#") && !l.isBlank()).toList();
    }

    @Test
    void writesDcgmNamesAndLabelsForEveryGpuAndLeavesOutMissingReadings() throws Exception {
        Result r = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi(TWO_GPUS, 0).toString(),
                "GPU_TEXTFILE_HOSTNAME", "gpu-host"), "gpu-textfile", "--stdout");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.err()).isEmpty();
        assertThat(samples(r.out())).contains(
                "DCGM_FI_DEV_FB_USED{" + GPU0 + "} 61234",
                "DCGM_FI_DEV_FB_FREE{" + GPU0 + "} 20000",
                "DCGM_FI_DEV_GPU_UTIL{" + GPU0 + "} 87",
                "DCGM_FI_DEV_MEM_COPY_UTIL{" + GPU0 + "} 41",
                "DCGM_FI_DEV_GPU_TEMP{" + GPU0 + "} 65",
                "DCGM_FI_DEV_POWER_USAGE{" + GPU0 + "} 512.33",
                "sluice_gpu_textfile_up{Hostname=\"gpu-host\"} 1");
        // 5 readings for GPU 1 (its power is [N/A]: no sample rather than a false 0), 6 for GPU 0, 1 up
        assertThat(samples(r.out())).hasSize(12);
        assertThat(r.out()).doesNotContain("N/A").contains("DCGM_FI_DEV_FB_USED{gpu=\"1\"");
        assertThat(r.out()).contains("# TYPE DCGM_FI_DEV_FB_USED gauge", "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).");
    }

    @Test
    void theOutputParsesAsPrometheusTextWithOnlyDcgmsOwnLabelStyleToLintAbout() throws Exception {
        Path promtool = Path.of("/usr/bin/promtool");
        Result r = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi(TWO_GPUS, 0).toString()), "gpu-textfile", "--stdout");
        assertThat(r.exitCode()).isZero();
        if (!Files.isExecutable(promtool)) {
            // the families must still be contiguous (each # TYPE once), which the text format requires
            assertThat(r.out().split("# TYPE DCGM_FI_DEV_FB_USED ", -1)).hasSize(2);
            return;
        }
        Path file = dir.resolve("gpu.prom");
        Files.writeString(file, r.out());
        Result lint = Shell.run(Map.of(), "sh", "-c", promtool + " check metrics < " + file);
        // exit 3 = lint findings only; the findings must all be modelName, DCGM's camelCase label kept on purpose
        assertThat(lint.exitCode()).as(lint.toString()).isIn(0, 3);
        String findings = (lint.out() + lint.err()).strip();
        for (String line : findings.isEmpty() ? new String[0] : findings.split("\n")) {
            assertThat(line).as(lint.toString()).contains("label names should be written in 'snake_case' not 'camelCase'");
        }
    }

    @Test
    void aFailingNvidiaSmiIsReportedAsUpZeroWithNoGpuSamples() throws Exception {
        Path out = dir.resolve("gpu.prom");
        Result r = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi("", 6).toString(), "GPU_TEXTFILE_HOSTNAME", "h"),
                "gpu-textfile", "--out", out.toString());
        assertThat(r.exitCode()).isEqualTo(1);
        assertThat(r.err()).contains("failed (exit 6)");
        assertThat(samples(Files.readString(out))).containsExactly("sluice_gpu_textfile_up{Hostname=\"h\"} 0");
    }

    @Test
    void theFileIsReplacedWholeWithNoTemporaryFileLeftBehind() throws Exception {
        Path textfiles = Files.createDirectory(dir.resolve("textfile"));
        Path out = textfiles.resolve("gpu.prom");
        Files.writeString(out, "stale\n");
        Result r = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi(TWO_GPUS, 0).toString(),
                "GPU_TEXTFILE_OUT", out.toString()), "gpu-textfile");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(Files.readString(out)).doesNotContain("stale").contains("DCGM_FI_DEV_FB_FREE{gpu=\"1\"");
        assertThat(Files.getPosixFilePermissions(out)).isEqualTo(PosixFilePermissions.fromString("rw-r--r--"));
        try (Stream<Path> files = Files.list(textfiles)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("gpu.prom");
        }
        Result missingDir = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi(TWO_GPUS, 0).toString()),
                "gpu-textfile", "--out", dir.resolve("no/such/dir/gpu.prom").toString());
        assertThat(missingDir.exitCode()).isEqualTo(2);
        assertThat(missingDir.err()).contains("does not exist");
    }

    @Test
    void theDcgmExporterLabelSpellingIsSelectable() throws Exception {
        Result r = Shell.script(Map.of("NVIDIA_SMI", fakeNvidiaSmi(TWO_GPUS, 0).toString(),
                "GPU_TEXTFILE_HOSTNAME", "gpu-host", "GPU_TEXTFILE_HOSTNAME_LABEL", "hostname"), "gpu-textfile", "--stdout");
        assertThat(r.out()).contains(",hostname=\"gpu-host\"}").doesNotContain("Hostname=");
    }
}
