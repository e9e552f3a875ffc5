package dev.sluice.gateway.health;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The SGLang and vLLM releases whose behaviour this gateway was written and tested against
 * (docs/compatibility.md, "Releases"): a worker reporting a release outside them is used as any
 * other, with a warning in its identity ({@code /admin/state}, the log once per worker), because a
 * server that changed a route, a metric or a handoff field is the likeliest cause of what goes wrong
 * next. A version that is no release number (a source build without one, the simulators' "sim") is
 * not judged.
 *
 * <p>The bounds: SGLang's 0.5 line (sgl-project/sglang python/sglang/version.py reads "0.5.3rc2" at
 * 0175ceecc135, "0.5.6.post2" at fd1216caabc4; python/pyproject.toml "0.5.1.post3" at 0001da81f774;
 * the sources docs/compatibility.md cites were read at commits of that line). vLLM: 0.11 up to 0.22,
 * the releases NixlConnector's {@code kv_transfer_params} handoff was read and reported against
 * (vllm-project/vllm issue 27055 on 0.11; the connector's API as of 0.22 in its out-of-tree ports).
 */
public final class CoveredReleases {
    private static final Pattern RELEASE = Pattern.compile("v?(\\d+)\\.(\\d+)(?:\\.(\\d+))?.*");

    /** One server's covered releases: from {@code from} (included) up to {@code until} (excluded). */
    record Range(String server, String label, int[] from, int[] until) {
        boolean covers(int[] v) {
            return compare(v, from) >= 0 && compare(v, until) < 0;
        }

        String text() {
            return label + " " + dotted(from) + " up to (not including) " + dotted(until);
        }
    }

    static final Range SGLANG = new Range("sglang", "SGLang", new int[] {0, 5, 0}, new int[] {0, 6, 0});
    static final Range VLLM = new Range("vllm", "vLLM", new int[] {0, 11, 0}, new int[] {0, 23, 0});

    private CoveredReleases() {
    }

    /**
     * The warning for a worker of {@code server} ("sglang" or "vllm") reporting {@code version}, or
     * empty when it is covered, is not a release number, or the server is neither.
     */
    public static Optional<String> outside(String server, String version) {
        Range r = "sglang".equals(server) ? SGLANG : "vllm".equals(server) ? VLLM : null;
        if (r == null || version == null) {
            return Optional.empty();
        }
        Matcher m = RELEASE.matcher(version.trim());
        if (!m.matches()) {
            return Optional.empty();
        }
        int[] v = {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                m.group(3) == null ? 0 : Integer.parseInt(m.group(3))};
        if (r.covers(v)) {
            return Optional.empty();
        }
        return Optional.of("reports version " + version.trim() + ", outside the releases this gateway was checked "
                + "against (" + r.text() + "; docs/compatibility.md): routes, metrics or the KV handoff may differ");
    }

    private static int compare(int[] a, int[] b) {
        for (int i = 0; i < 3; i++) {
            if (a[i] != b[i]) {
                return Integer.compare(a[i], b[i]);
            }
        }
        return 0;
    }

    private static String dotted(int[] v) {
        return v[0] + "." + v[1] + "." + v[2];
    }
}
