package dev.sluice.gateway.testing;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven through Debian's chromedriver, for tests of the admin page in a
 * real browser. Both paths are given to Selenium explicitly: left to itself, Selenium Manager would
 * try to download a browser and a driver, and this machine reaches no such site. A machine without
 * them fails the test (it never skips): {@code .ci/run --install-only} installs both.
 */
public final class HeadlessChromium {
    /** Overridable for a machine that has them elsewhere: {@code -Dsluice.chromium=... -Dsluice.chromedriver=...}. */
    private static final Path BROWSER = Path.of(System.getProperty("sluice.chromium", "/usr/bin/chromium"));
    private static final Path DRIVER = Path.of(System.getProperty("sluice.chromedriver", "/usr/bin/chromedriver"));

    private HeadlessChromium() {
    }

    /** A new headless browser with its console log kept (read it with {@code manage().logs().get("browser")}). */
    public static ChromeDriver start() {
        for (Path p : new Path[] {BROWSER, DRIVER}) {
            if (!Files.isExecutable(p)) {
                throw new AssertionError(p + " is not installed: the admin page's browser tests need Debian's chromium"
                        + " and chromium-driver packages (run .ci/run --install-only, or apt-get install chromium"
                        + " chromium-driver)");
            }
        }
        ChromeOptions options = new ChromeOptions();
        options.setBinary(BROWSER.toFile());
        // as root (CI, these machines) Chromium refuses to start with its sandbox; /dev/shm may be small in a container
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--no-first-run", "--window-size=1400,1000");
        options.setCapability("goog:loggingPrefs", Map.of("browser", "ALL"));
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(new File(DRIVER.toString())).usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }
}
