package dev.sluice.gateway.packaged;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every shell block of README.md and docs/*.md (docs/testing.md, "The docs test"): blocks that can run
 * here are run against a simulated SGLang 1P1D cluster behind the packaged gateway ({@code java -jar}),
 * with the documented ports 8080 and 8081 replaced by that gateway's; a {@code console} block's
 * commands ({@code $ ...}) must print what the block shows. A block marked {@code no-run:REASON} in its
 * info string is checked as far as it can be here: its syntax ({@code bash -n}), the repository files
 * it names, and, for each {@code scripts/...} or gateway command in it, that {@code --help} works and
 * lists every option the block gives.
 */
@Tag("packaged")
class DocsCommandsTest {
    /** Why a block cannot run here. */
    static final Set<String> NO_RUN = Set.of("gpu", "kubectl", "systemd", "long", "example");
    private static final Set<String> SHELL = Set.of("bash", "sh", "console");
    private static final Pattern FENCE = Pattern.compile("^(\\s*)```(.*)$");
    private static final Pattern REPO_PATH = Pattern.compile(
            "(?<![\\w./-])((?:scripts|config|deploy|docs|src|\\.ci)/[\\w./{},-]*[\\w}])");
    private static final Pattern OPTION = Pattern.compile("(?<=\\s)(--[a-z][a-z0-9-]*)");
    private static final Pattern LISTENING = Pattern.compile("gateway listening address=\\S*:(\\d+)");
    private static final Pattern ADMIN = Pattern.compile("admin listening address=\\S*:(\\d+)");

    /** One fenced block: where it is, its language, its markers, its lines. */
    record Block(String file, int line, String language, List<String> markers, List<String> lines) {
        String where() {
            return file + ":" + line;
        }

        boolean runnable() {
            return markers.stream().noneMatch(m -> m.startsWith("no-run:"));
        }

        /** The shell text: for a console block the {@code $} lines (and their continuation lines). */
        String script() {
            if (!language.equals("console")) {
                return String.join("\n", lines) + "\n";
            }
            return String.join("\n", commands().stream().map(Command::text).toList()) + "\n";
        }

        /** A console block's commands, each with the output it shows. */
        List<Command> commands() {
            List<Command> out = new ArrayList<>();
            for (int i = 0; i < lines.size(); i++) {
                String l = lines.get(i);
                if (!l.startsWith("$ ")) {
                    continue;
                }
                StringBuilder cmd = new StringBuilder(l.substring(2));
                while (cmd.toString().endsWith("\\") && i + 1 < lines.size()) {
                    cmd.append('\n').append(lines.get(++i));
                }
                List<String> expected = new ArrayList<>();
                while (i + 1 < lines.size() && !lines.get(i + 1).startsWith("$ ")) {
                    expected.add(lines.get(++i));
                }
                out.add(new Command(cmd.toString(), expected));
            }
            return out;
        }
    }

    record Command(String text, List<String> expected) {
    }

    static List<Block> blocks() throws IOException {
        Path root = PackagedJar.root();
        List<Path> files = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        }
        List<Block> out = new ArrayList<>();
        for (Path f : files) {
            List<String> lines = Files.readAllLines(f);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = FENCE.matcher(lines.get(i));
                if (!m.matches()) {
                    continue;
                }
                String indent = m.group(1);
                String[] info = m.group(2).trim().split("\\s+");
                int start = i + 1;
                List<String> body = new ArrayList<>();
                while (++i < lines.size() && !lines.get(i).trim().equals("```")) {
                    String l = lines.get(i);
                    body.add(l.startsWith(indent) ? l.substring(indent.length()) : l.stripLeading());
                }
                out.add(new Block(root.relativize(f).toString(), start, info[0],
                        List.of(info).subList(1, info.length), body));
            }
        }
        return out;
    }

    static List<Block> shellBlocks() throws IOException {
        return blocks().stream().filter(b -> SHELL.contains(b.language())).toList();
    }

    @Test
    void everyBlockNamesItsLanguageAndEveryMarkerIsKnown() throws IOException {
        List<String> problems = new ArrayList<>();
        for (Block b : blocks()) {
            if (b.language().isEmpty()) {
                problems.add(b.where() + ": a fenced block without a language (bash, console, text, yaml, ...)");
            }
            for (String m : b.markers()) {
                if (!m.startsWith("no-run:") || !NO_RUN.contains(m.substring("no-run:".length()))) {
                    problems.add(b.where() + ": unknown marker '" + m + "' (expected: no-run:" + NO_RUN + ")");
                }
            }
            if (!b.markers().isEmpty() && !SHELL.contains(b.language())) {
                problems.add(b.where() + ": a no-run marker on a " + b.language() + " block");
            }
        }
        assertThat(problems).isEmpty();
        assertThat(shellBlocks()).as("shell blocks found").hasSizeGreaterThan(10);
        assertThat(shellBlocks().stream().filter(Block::runnable)).as("runnable blocks found").hasSizeGreaterThan(4);
    }

    @TestFactory
    Stream<DynamicTest> everyShellBlockParsesAndTheFilesItNamesExist() throws IOException {
        Path root = PackagedJar.root();
        return shellBlocks().stream().map(b -> DynamicTest.dynamicTest(b.where(), () -> {
            Run syntax = bash(root, Map.of(), "-n", "-c", b.script());
            assertThat(syntax.exitCode()).as("%s: bash -n\n%s\n%s", b.where(), b.script(), syntax).isZero();
            for (String p : namedPaths(b.script())) {
                assertThat(root.resolve(p)).as("%s names %s", b.where(), p).exists();
            }
        }));
    }

    /** The repository paths a text names, with {a,b} expanded; paths under run/ are made by the scripts. */
    static Set<String> namedPaths(String text) {
        Set<String> out = new LinkedHashSet<>();
        Matcher m = REPO_PATH.matcher(text);
        while (m.find()) {
            String p = m.group(1);
            Matcher brace = Pattern.compile("\\{([^}]*)}").matcher(p);
            if (brace.find()) {
                for (String alt : brace.group(1).split(",")) {
                    out.add(p.substring(0, brace.start()) + alt + p.substring(brace.end()));
                }
            } else {
                out.add(p);
            }
        }
        return out;
    }

    @TestFactory
    Stream<DynamicTest> everyCommandOfOursAcceptsTheOptionsTheDocsGive() throws IOException {
        Path root = PackagedJar.root();
        List<DynamicTest> tests = new ArrayList<>();
        for (Block b : shellBlocks()) {
            for (String line : b.script().replace("\\\n", " ").split("\n")) {
                for (String part : line.replaceAll("\\s#.*$", "").split("&&|\\|\\||;|\\|")) {
                    List<String> help = helpCommand(part.trim());
                    if (help.isEmpty()) {
                        continue;
                    }
                    tests.add(DynamicTest.dynamicTest(b.where() + ": " + String.join(" ", help), () -> {
                        Run r = run(root, Map.of(), help);
                        assertThat(r.exitCode()).as("%s\n%s", help, r).isZero();
                        String text = r.out() + r.err();
                        if (text.contains("EXTRA ")) {
                            return; // a serve script: the options after it are the server's, passed on as they are
                        }
                        Matcher o = OPTION.matcher(" " + part);
                        while (o.find()) {
                            assertThat(text).as("%s: %s is in %s's --help", b.where(), o.group(1), help).contains(o.group(1));
                        }
                    }));
                }
            }
        }
        assertThat(tests).as("commands of ours in the docs").hasSizeGreaterThan(10);
        return tests.stream();
    }

    /** The --help command for a command line that starts one of ours (after VAR=value words), else empty. */
    static List<String> helpCommand(String command) {
        List<String> words = new ArrayList<>(List.of(command.split("\\s+")));
        while (!words.isEmpty() && words.get(0).matches("[A-Z_][A-Z0-9_]*=.*")) {
            words.remove(0);
        }
        if (words.isEmpty()) {
            return List.of();
        }
        String first = words.get(0);
        if (first.matches("scripts/[\\w.-]+") && !first.endsWith(".py")) {
            return List.of(first, "--help");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String jar = PackagedJar.jar().toString();
        if (first.equals("java") && words.size() >= 4 && words.get(2).endsWith("sluice-gateway.jar")) {
            return List.of(java, "-jar", jar, words.get(3), "--help");
        }
        if (first.equals("sluice-gateway") && words.size() >= 2) {
            return List.of(java, "-jar", jar, words.get(1), "--help");
        }
        return List.of();
    }

    // ---- the blocks that run ---------------------------------------------------------------------

    private static SimCluster cluster;
    private static Process gateway;
    private static Path gatewayLog;
    private static int port;
    private static int adminPort;

    @BeforeAll
    static void startClusterAndGateway(@TempDir Path dir) throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false), SimMode.SGLANG);
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        Path config = dir.resolve("gateway.yaml");
        Files.writeString(config, """
                listen: { host: 127.0.0.1, port: 0 }
                admin: { host: 127.0.0.1, port: 0 }
                disaggregation: sglang
                workers:
                  prefill:
                    - url: %s
                      bootstrap_port: %d
                  decode:
                    - url: %s
                health: { interval: 200ms, timeout: 2s }
                """.formatted(p.url(), p.bootstrapPort(), d.url()));
        gatewayLog = dir.resolve("gateway.log");
        gateway = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
                PackagedJar.jar().toString(), "serve", "--config", config.toString())
                .directory(PackagedJar.root().toFile()).redirectErrorStream(true)
                .redirectOutput(gatewayLog.toFile()).start();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (port == 0 || adminPort == 0) {
            String log = Files.readString(gatewayLog);
            Matcher a = LISTENING.matcher(log);
            Matcher b = ADMIN.matcher(log);
            if (a.find() && b.find()) {
                port = Integer.parseInt(a.group(1));
                adminPort = Integer.parseInt(b.group(1));
            } else if (System.nanoTime() > deadline || !gateway.isAlive()) {
                fail("the gateway did not start; log:\n" + log);
            } else {
                Thread.sleep(50);
            }
        }
        // ready: both workers healthy
        while (run(PackagedJar.root(), Map.of(), List.of("curl", "-fsS", "-o", "/dev/null",
                "http://127.0.0.1:" + port + "/readiness")).exitCode() != 0) {
            if (System.nanoTime() > deadline) {
                fail("the gateway did not become ready; log:\n" + Files.readString(gatewayLog));
            }
            Thread.sleep(100);
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (gateway != null) {
            gateway.destroy();
            if (!gateway.waitFor(15, TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
            }
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    /** The documented ports, 8080 (clients) and 8081 (admin), become this gateway's. */
    static String withTestPorts(String text) {
        return text.replaceAll("(127\\.0\\.0\\.1|localhost):8081\\b", "127.0.0.1:" + adminPort)
                .replaceAll("(127\\.0\\.0\\.1|localhost):8080\\b", "127.0.0.1:" + port);
    }

    @TestFactory
    Stream<DynamicTest> runnableBlocksRunAgainstTheSimulatedCluster() throws IOException {
        Path root = PackagedJar.root();
        List<Block> runnable = shellBlocks().stream().filter(Block::runnable).toList();
        return runnable.stream().map(b -> DynamicTest.dynamicTest(b.where() + " (" + b.language() + ")", () -> {
            if (!b.language().equals("console")) {
                Run r = bash(root, Map.of(), "-e", "-o", "pipefail", "-c", withTestPorts(b.script()));
                assertThat(r.exitCode()).as("%s ran\n%s\n%s\ngateway log:\n%s", b.where(), b.script(), r, tail())
                        .isZero();
                return;
            }
            for (Command c : b.commands()) {
                List<String> expected = new ArrayList<>(c.expected());
                while (!expected.isEmpty() && expected.get(expected.size() - 1).isBlank()) {
                    expected.remove(expected.size() - 1);
                }
                int exit = 0;
                if (!expected.isEmpty() && expected.get(expected.size() - 1).matches("\\(exit \\d+\\)")) {
                    String last = expected.remove(expected.size() - 1);
                    exit = Integer.parseInt(last.replaceAll("\\D", ""));
                }
                Run r = bash(root, Map.of(), "-o", "pipefail", "-c", withTestPorts(c.text()) + " 2>&1");
                assertThat(r.exitCode()).as("%s: $ %s\n%s", b.where(), c.text(), r).isEqualTo(exit);
                List<String> actual = List.of(r.out().stripTrailing().split("\n", -1));
                assertThat(matches(expected, actual)).as("%s: $ %s printed\n%s\nexpected (... = any lines, or any text "
                        + "within a line)\n%s", b.where(), c.text(), r.out(), String.join("\n", expected)).isTrue();
            }
        }));
    }

    /** Line by line; a line "..." matches any number of lines, "..." inside a line any text. */
    static boolean matches(List<String> expected, List<String> actual) {
        if (expected.isEmpty()) {
            return actual.isEmpty() || actual.size() == 1 && actual.get(0).isEmpty();
        }
        String e = expected.get(0).stripTrailing();
        if (e.strip().equals("...")) {
            for (int i = 0; i <= actual.size(); i++) {
                if (matches(expected.subList(1, expected.size()), actual.subList(i, actual.size()))) {
                    return true;
                }
            }
            return false;
        }
        if (actual.isEmpty()) {
            return false;
        }
        String regex = String.join(".*", List.of(e.split("\\.\\.\\.", -1)).stream().map(Pattern::quote).toList());
        return withTestPorts(actual.get(0)).stripTrailing().matches(regex)
                || actual.get(0).stripTrailing().matches(withTestPorts(regex))
                ? matches(expected.subList(1, expected.size()), actual.subList(1, actual.size())) : false;
    }

    private static String tail() throws IOException {
        String log = Files.readString(gatewayLog);
        return log.substring(Math.max(0, log.length() - 3000));
    }

    // ---- processes -------------------------------------------------------------------------------

    record Run(int exitCode, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\nstdout: " + out + "\nstderr: " + err;
        }
    }

    static Run bash(Path dir, Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash"));
        cmd.addAll(List.of(args));
        return run(dir, env, cmd);
    }

    /** In {@code dir}, with PATH (the JDK running the tests first), a private HOME and {@code env}. */
    static Run run(Path dir, Map<String, String> env, List<String> cmd) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
        Map<String, String> e = pb.environment();
        String path = Path.of(System.getProperty("java.home"), "bin") + ":" + e.getOrDefault("PATH", "/usr/bin:/bin");
        e.clear();
        e.put("PATH", path);
        e.put("HOME", System.getProperty("java.io.tmpdir"));
        e.put("LC_ALL", "C.UTF-8");
        e.putAll(env);
        Path out = Files.createTempFile("docs", ".out");
        Path err = Files.createTempFile("docs", ".err");
        try {
            Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            p.getOutputStream().close();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("timed out after 60 s: " + cmd);
            }
            return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }
}
