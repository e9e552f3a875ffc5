package dev.sluice.gateway.coordination;

import dev.sluice.gateway.config.CoordinationConfig;

/** Who this replica is among its peers: its id and this process's incarnation (docs/scale-out.md, "Fencing"). */
public final class ReplicaIdentity {
    private ReplicaIdentity() {
    }

    /**
     * This process's incarnation: unique among the processes that ever use a replica id (the start
     * time in ms, and random bits against two starting in the same ms), so two processes given the
     * same id are two members, and a renewal sent again after a lost answer is still the same one.
     */
    static long incarnation() {
        return System.currentTimeMillis() * 1000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(1000);
    }

    /** This replica's id: the configured one, else host name + "-" + pid. */
    public static String of(CoordinationConfig config) {
        if (!config.replicaId().isEmpty()) {
            return config.replicaId();
        }
        String host = System.getenv("HOSTNAME");
        if (host == null || host.isBlank()) {
            try {
                host = java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.net.UnknownHostException e) {
                host = "localhost";
            }
        }
        return host + "-" + ProcessHandle.current().pid();
    }
}
