package dev.sluice.gateway;

/** Entry point of the gateway jar (placeholder). */
public final class GatewayMain {
    public static void main(String[] args) {
        System.out.println("sluice-gateway");
    }
}
