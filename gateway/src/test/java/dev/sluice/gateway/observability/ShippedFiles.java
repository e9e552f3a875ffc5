package dev.sluice.gateway.observability;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates the repository's shipped observability files from the test's working directory. */
final class ShippedFiles {
    private ShippedFiles() {
    }

    /** The repository root: the first ancestor of the working directory holding config/prometheus. */
    static Path root() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("config/prometheus/alerts.yml"))) {
                return p;
            }
        }
        throw new IllegalStateException("no config/prometheus/alerts.yml above " + dir);
    }

    static Path alerts() {
        return root().resolve("config/prometheus/alerts.yml");
    }

    static Path prometheusConfig() {
        return root().resolve("config/prometheus/prometheus.yml");
    }

    static Path dashboard() {
        return root().resolve("config/grafana/dashboards/sluice.json");
    }

    static Path grafanaProvisioning() {
        return root().resolve("config/grafana/provisioning");
    }

    static Path operationsDoc() {
        return root().resolve("docs/operations.md");
    }
}
