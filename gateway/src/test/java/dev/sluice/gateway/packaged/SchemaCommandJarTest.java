package dev.sluice.gateway.packaged;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigReference;
import java.nio.file.Files;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code java -jar sluice-gateway.jar schema} prints the whole schema: the command's output compared
 * byte for byte with the committed {@code config/gateway.schema.json}, and {@code --format markdown}
 * with the generated reference in {@code docs/configuration.md}. (Both once stopped at a multiple of
 * the writer's buffer: the process exited before the last {@code print} was flushed.)
 */
@Tag("packaged")
class SchemaCommandJarTest {
    @Test
    void theJsonSchemaIsPrintedWhole() throws Exception {
        PackagedJar.Run r = PackagedJar.run("schema");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.err()).as(r.toString()).isEmpty();
        String committed = Files.readString(PackagedJar.root().resolve("config/gateway.schema.json"));
        assertThat(committed.length()).as("a schema larger than any writer buffer").isGreaterThan(16_384);
        assertThat(r.out().length()).isEqualTo(committed.length());
        assertThat(r.out()).isEqualTo(committed);
    }

    @Test
    void theMarkdownReferenceIsPrintedWholeAndIsTheOneInTheDocs() throws Exception {
        PackagedJar.Run r = PackagedJar.run("schema", "--format", "markdown");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.err()).as(r.toString()).isEmpty();
        String docs = Files.readString(PackagedJar.root().resolve("docs/configuration.md"));
        String begin = ConfigReference.begin("reference") + "\n";
        int b = docs.indexOf(begin);
        int e = docs.indexOf(ConfigReference.end("reference"));
        assertThat(b).as("the generated reference block in docs/configuration.md").isNotNegative();
        String inDocs = docs.substring(b + begin.length(), e);
        assertThat(inDocs.length()).isGreaterThan(16_384);
        assertThat(r.out()).isEqualTo(inDocs);
    }
}
