package dev.sluice.gateway.testing;

import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;

/**
 * What the model pool tests stand on: two simulated fleets serving two models, an SGLang PD pair serving
 * {@code big-model} (alias {@code big}) and a unified server serving {@code small-model}, and the
 * {@code pools:} file that puts each behind one gateway as its own pool ({@code big}, the default, and
 * {@code small}). Each test writes its own top-level sections and each pool's admission.
 */
public final class TwoModelPools implements AutoCloseable {
    public final SimCluster big;
    public final SimCluster small;

    private TwoModelPools(SimCluster big, SimCluster small) {
        this.big = big;
        this.small = small;
    }

    /** The two fleets, each simulator as {@code bigSim} and {@code smallSim} say, with its model set here. */
    public static TwoModelPools start(SimConfig bigSim, SimConfig smallSim) throws Exception {
        SimCluster big = SimCluster.start(1, 1, 0, bigSim.withModel("big-model"), SimMode.SGLANG);
        try {
            return new TwoModelPools(big, SimCluster.start(0, 1, 0, smallSim.withModel("small-model"),
                    SimMode.UNIFIED));
        } catch (Exception | Error e) {
            big.close();
            throw e;
        }
    }

    /** Both fleets with health generations off (the checks are GET /health only). */
    public static TwoModelPools start() throws Exception {
        return start(SimConfig.defaults().withHealthGeneration(false), SimConfig.defaults().withHealthGeneration(false));
    }

    /** The file: {@code top} (the top-level sections), then both pools; the small pool's unified worker is the fleet's. */
    public String yaml(String top, String bigAdmission, String smallAdmission) {
        return yaml(top, bigAdmission, small.unified().get(0).url(), smallAdmission);
    }

    /**
     * ... with {@code smallUrl} as the small pool's one unified worker; a pool's admission line is left out where
     * its argument is null.
     */
    public String yaml(String top, String bigAdmission, String smallUrl, String smallAdmission) {
        return top
                + "pools:\n"
                + "  - name: big\n"
                + "    models: [big-model, big]\n"
                + "    disaggregation: sglang\n"
                + "    workers:\n"
                + "      prefill: [{url: " + big.prefills().get(0).url() + ", bootstrap_port: "
                + big.prefills().get(0).bootstrapPort() + "}]\n"
                + "      decode: [{url: " + big.decodes().get(0).url() + "}]\n"
                + (bigAdmission == null ? "" : "    admission: " + bigAdmission + "\n")
                + "  - name: small\n"
                + "    models: [small-model]\n"
                + "    disaggregation: none\n"
                + "    workers:\n"
                + "      unified: [{url: " + smallUrl + "}]\n"
                + (smallAdmission == null ? "" : "    admission: " + smallAdmission + "\n");
    }

    @Override
    public void close() {
        try {
            big.close();
        } finally {
            small.close();
        }
    }
}
