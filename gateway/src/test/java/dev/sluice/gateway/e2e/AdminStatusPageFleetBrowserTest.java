package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.CoordinatedFleet;
import dev.sluice.gateway.testing.HeadlessChromium;
import dev.sluice.gateway.testing.PdTestbed;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;

/**
 * The admin page of a replica in a coordinated fleet (a real redis-server) shows the fleet: Redis up,
 * where the limits come from, every live replica with its leases, and a replica that leaves.
 */
class AdminStatusPageFleetBrowserTest {
    @TempDir
    Path dir;
    private CoordinatedFleet fleet;
    private ChromeDriver browser;

    @BeforeEach
    void start() throws Exception {
        fleet = CoordinatedFleet.start(dir.resolve("redis"), 1, 4_000);
        browser = HeadlessChromium.start();
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (browser != null) {
                browser.quit();
            }
        } finally {
            fleet.close();
        }
    }

    private GatewayServer replica(String id) throws Exception {
        return fleet.gateway(fleet.workersYaml() + "timeouts: {connect: 2s}\nhealth: {interval: 200ms, timeout: 3s}\n"
                + "admin: {port: 0}\nadmission: {max_queued_requests: 32}\n" + fleet.coordinationYaml(id, "10s"));
    }

    /** The peers table's rows; the page redraws it every poll, so a read that meets a redraw is tried again. */
    private List<String> peerRows() {
        for (int i = 0; i < 20; i++) {
            try {
                return browser.findElements(By.cssSelector("#peers tbody tr")).stream().map(WebElement::getText)
                        .toList();
            } catch (WebDriverException e) {
                // redrawn while read (a stale row): read the new table
            }
        }
        return List.of();
    }

    private String summary() {
        try {
            return browser.findElement(By.id("coordination-summary")).getText();
        } catch (WebDriverException e) {
            return "";
        }
    }

    @Test
    void aReplicasPageShowsTheFleetItsLeasesAndAReplicaLeaving() throws Exception {
        GatewayServer a = replica("gw-a");
        GatewayServer b = replica("gw-b");
        browser.get("http://127.0.0.1:" + a.adminPort() + "/");

        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> browser.findElement(By.id("coordination"))
                .isDisplayed() && peerRows().size() == 2 && summary().contains("Replicas 2")))
                .as("two replicas on the page: %s / %s", summary(), peerRows()).isTrue();
        assertThat(summary()).contains("Redis up").contains("Limits from leased").contains("Replica gw-a")
                .containsPattern("This replica's grants .*queue \\d+");
        assertThat(peerRows()).anySatisfy(r -> assertThat(r).startsWith("gw-a (this one)").contains("queue "))
                .anySatisfy(r -> assertThat(r).startsWith("gw-b").doesNotContain("this one")
                        .contains(":" + b.port()));

        fleet.stop(b); // a graceful stop gives its leases back: the page shows one replica left
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> peerRows().size() == 1
                && summary().contains("Replicas 1")))
                .as("gw-b gone from the page: %s / %s", summary(), peerRows()).isTrue();
    }
}
