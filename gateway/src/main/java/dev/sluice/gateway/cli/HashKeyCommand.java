package dev.sluice.gateway.cli;

import dev.sluice.gateway.admission.ApiKeys;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code hash-key}: reads one API key from standard input (not an argument: arguments land in shell
 * history and {@code ps}) and prints its SHA-256 in hex, the value {@code admission.api_keys.*.sha256}
 * takes. Same as {@code printf %s "$KEY" | sha256sum}.
 */
@Command(name = "hash-key", mixinStandardHelpOptions = true,
        description = "Read an API key from standard input and print its SHA-256 (hex), for admission.api_keys.*.sha256.")
public final class HashKeyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String key = in.readLine();
        if (key == null || key.isBlank()) {
            spec.commandLine().getErr().println("hash-key: no key on standard input (try: printf %s \"$KEY\" | "
                    + "sluice-gateway hash-key)");
            return 2;
        }
        spec.commandLine().getOut().println(ApiKeys.hex(key.strip()));
        return 0;
    }
}
