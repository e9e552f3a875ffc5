package dev.sluice.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code status [--admin URL]}: a terminal view of {@code /admin/state}, refreshing like {@code top}. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Show the gateway's queue, token budget and workers, refreshing like top (Ctrl-C to quit).")
public final class StatusCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--admin", defaultValue = "http://127.0.0.1:8081", paramLabel = "URL",
            description = "the gateway's admin listener (default: ${DEFAULT-VALUE})")
    URI admin;

    @Option(names = "--interval", defaultValue = "1", paramLabel = "SECONDS", description = "refresh period")
    double interval;

    @Option(names = "--once", description = "print one view and exit (for scripts)")
    boolean once;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        PrintWriter out = spec.commandLine().getOut();
        URI state = admin.resolve("/admin/state");
        while (true) {
            String view;
            int code = 0;
            try {
                HttpResponse<String> res = http.send(HttpRequest.newBuilder(state).timeout(Duration.ofSeconds(3)).build(),
                        HttpResponse.BodyHandlers.ofString());
                view = res.statusCode() == 200 ? StatusView.render(JSON.readTree(res.body()), state.toString())
                        : "GET " + state + " answered " + res.statusCode() + "\n";
                code = res.statusCode() == 200 ? 0 : 1;
            } catch (java.io.IOException e) {
                view = "cannot reach " + state + ": " + e.getMessage() + "\n";
                code = 1;
            }
            if (once) {
                out.print(view);
                out.flush();
                return code;
            }
            out.print("\033[H\033[2J" + view); // home + clear: redraw in place
            out.flush();
            Thread.sleep((long) (interval * 1000));
        }
    }

}
