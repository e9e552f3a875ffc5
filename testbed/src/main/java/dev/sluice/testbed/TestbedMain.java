package dev.sluice.testbed;

/** Entry point of the testbed jar (placeholder until the cluster command lands). */
public final class TestbedMain {
    public static void main(String[] args) {
        System.out.println("sluice-testbed");
    }
}
