package dev.sluice.gateway.cli;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigModel;
import dev.sluice.gateway.config.ConfigReference;
import dev.sluice.gateway.config.ConfigSchema;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code schema [--format json|markdown]}: prints the configuration's JSON Schema (what
 * {@code config/gateway.schema.json} holds) or its key reference (what {@code docs/configuration.md}
 * holds), both generated from the configuration readers.
 */
@Command(name = "schema", mixinStandardHelpOptions = true,
        description = "Print the configuration's JSON Schema (config/gateway.schema.json) or, with --format markdown, "
                + "its key reference (docs/configuration.md).")
public final class SchemaCommand implements Callable<Integer> {
    enum Format { json, markdown }

    @Option(names = "--format", defaultValue = "json", description = "json (default) or markdown")
    Format format;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        ConfigModel model = ConfigLoader.model();
        java.io.PrintWriter out = spec.commandLine().getOut();
        out.print(format == Format.json ? ConfigSchema.json(model) : ConfigReference.reference(model));
        out.flush(); // print() does not auto-flush, and main's System.exit would not either
        return 0;
    }
}
