package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.bench.BenchBodies;
import dev.sluice.gateway.bench.EventLoopThreadsExecutor;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A request body's way through the gateway, per request: the parse and validation
 * ({@link GenerationRequest#parse}), the prompt token estimate ({@link PromptText}, {@link
 * LearnedRatioCounter}), the request id ({@link RequestIds}), and the worker body: in SGLang mode
 * {@link SglangBootstrap#assign} on the parsed tree and its serialisation (what
 * {@code SglangAttempt.send} does), in unified mode {@link WorkerBodies#clientCopy} and its
 * serialisation ({@code UnifiedAttempt.send}). Beside them two baselines that are not gateway code:
 * the same SGLang rewrite as one streaming token copy (Jackson parser to generator, gateway-owned fields
 * skipped, bootstrap fields appended), and the same as a byte splice (the client's top-level fields
 * copied as byte ranges found by one tokenizer pass), what a rewrite without a tree would cost.
 *
 * <p>In this package because {@link WorkerBodies} is package-private. Run: {@code scripts/bench-jmh}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled", EventLoopThreadsExecutor.JVM_ARG_EXECUTOR,
    EventLoopThreadsExecutor.JVM_ARG_CLASS})
@State(Scope.Thread)
public class BodyRewriteBenchmark {
    /** What SglangAttempt and UnifiedAttempt serialise with (a default ObjectMapper). */
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonFactory FACTORY = JSON.getFactory();

    @Param({"small", "large"})
    public String body;

    private byte[] bytes;
    private ByteBuf content;
    private GenerationRequest parsed;
    private Worker prefill;
    private final LearnedRatioCounter counter = new LearnedRatioCounter(4.0, 4);

    @Setup
    public void setup() throws ApiException {
        bytes = "small".equals(body) ? BenchBodies.smallChat() : BenchBodies.largeChat(40 * 1024);
        content = Unpooled.unreleasableBuffer(Unpooled.directBuffer(bytes.length).writeBytes(bytes));
        parsed = GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, content);
        prefill = new Worker(WorkerRole.PREFILL, new WorkerEndpoint("http://10.0.0.5:30000", "10.0.0.5", 30000, 8998));
        checkSpliceMatchesTree();
    }

    /** The splice baseline must produce what the tree rewrite produces (as JSON), or its figure means nothing. */
    private void checkSpliceMatchesTree() {
        checkSplice(bytes);
        checkSplice(("{\"rid\":\"mine\",\"model\":\"m\", \"kv_transfer_params\": {\"a\":[1,2]},\"messages\":"
                + "[{\"role\":\"user\",\"content\":\"h\\u00e9 \\\"x\\\"\"}] ,\"bootstrap_room\":5}").getBytes(StandardCharsets.UTF_8));
    }

    private void checkSplice(byte[] in) {
        try {
            GenerationRequest r = GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, Unpooled.wrappedBuffer(in));
            SglangBootstrap.assign(r, prefill, "sluice-0123456789abcdef01234567");
            r.body().put("bootstrap_room", 7);
            ByteBuf out = Unpooled.buffer();
            splice(in, out, 7);
            var spliced = JSON.readTree(new io.netty.buffer.ByteBufInputStream(out, true));
            if (!spliced.equals(r.body())) {
                throw new IllegalStateException("splice baseline differs from the tree rewrite: " + spliced);
            }
        } catch (IOException | ApiException e) {
            throw new IllegalStateException(e);
        }
    }

    /** FrontHandler: the aggregated body into a validated request (Jackson tree). */
    @Benchmark
    public GenerationRequest parse() throws ApiException {
        return GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, content);
    }

    /** FrontHandler: the prompt's texts and the estimator's token count (admission needs it before routing). */
    @Benchmark
    public long promptTokens() {
        return counter.estimate(PromptText.of(parsed));
    }

    /** PdExchange: the request id. */
    @Benchmark
    public String requestId() {
        return RequestIds.next();
    }

    /**
     * SglangAttempt.send's tree path (batches, or a client that sent a gateway-owned field; the only
     * path before the splice): bootstrap fields into the tree, tree to bytes, bytes to a ByteBuf.
     */
    @Benchmark
    public int sglangRewriteSerialise() throws IOException {
        SglangBootstrap.assign(parsed, prefill, "sluice-0123456789abcdef01234567");
        return toBuffer(JSON.writeValueAsBytes(parsed.body()));
    }

    /**
     * SglangAttempt.send's fast path (a single request whose client sent no gateway-owned field):
     * the client's bytes with the four bootstrap fields spliced before the closing brace.
     */
    @Benchmark
    public int sglangSplice() {
        BootstrapAssignment a = SglangBootstrap.single("sluice-0123456789abcdef01234567");
        ByteBuf out = WorkerBodies.spliced(ByteBufAllocator.DEFAULT, parsed, SglangBootstrap.singleFields(prefill, a));
        try {
            return out.readableBytes();
        } finally {
            out.release();
        }
    }

    /** The whole SGLang-mode body path as the gateway runs it now: parse, estimate, rid, splice. */
    @Benchmark
    public int sglangRequestTotalSpliced() throws ApiException {
        GenerationRequest r = GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, content);
        long tokens = counter.estimate(PromptText.of(r));
        String rid = RequestIds.next();
        ByteBuf out = WorkerBodies.spliced(ByteBufAllocator.DEFAULT, r,
                SglangBootstrap.singleFields(prefill, SglangBootstrap.single(rid)));
        try {
            return out.readableBytes() + (int) tokens;
        } finally {
            out.release();
        }
    }

    /** UnifiedAttempt.send on an already parsed request: a deep copy without the gateway-owned fields, to bytes, to a ByteBuf. */
    @Benchmark
    public int unifiedCopySerialise() throws IOException {
        return toBuffer(JSON.writeValueAsBytes(WorkerBodies.clientCopy(parsed.body())));
    }

    /** Everything an SGLang-mode request's body goes through: parse, estimate, rid, rewrite, serialise. */
    @Benchmark
    public int sglangRequestTotal() throws IOException, ApiException {
        GenerationRequest r = GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, content);
        long tokens = counter.estimate(PromptText.of(r));
        SglangBootstrap.assign(r, prefill, RequestIds.next());
        return toBuffer(JSON.writeValueAsBytes(r.body())) + (int) tokens;
    }

    /**
     * Baseline, not gateway code: the SGLang rewrite as one streaming token copy from the client's
     * bytes into a pooled ByteBuf (no tree, no intermediate byte[]).
     */
    @Benchmark
    public int baselineStreamingCopy() throws IOException {
        ByteBuf out = ByteBufAllocator.DEFAULT.buffer(bytes.length + 128);
        try (JsonParser p = FACTORY.createParser(bytes);
             JsonGenerator g = FACTORY.createGenerator((java.io.OutputStream) new ByteBufOutputStream(out))) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("not an object");
            }
            g.writeStartObject();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                if (WorkerBodies.GATEWAY_OWNED.contains(name)) {
                    p.skipChildren();
                    continue;
                }
                g.writeFieldName(name);
                g.copyCurrentStructure(p);
            }
            g.writeStringField("bootstrap_host", prefill.host());
            g.writeNumberField("bootstrap_port", prefill.bootstrapPort());
            g.writeNumberField("bootstrap_room", SglangBootstrap.newRoom());
            g.writeStringField("rid", "sluice-0123456789abcdef01234567");
            g.writeEndObject();
        }
        int n = out.readableBytes();
        out.release();
        return n;
    }

    /**
     * Baseline, not gateway code: the SGLang rewrite as a byte splice. One pass of Jackson's
     * tokenizer finds where each top-level field starts (strings are skipped, never decoded); the
     * client's fields other than the gateway-owned ones are copied as they are, byte ranges into a
     * pooled ByteBuf, and the bootstrap fields appended. No tree, no re-encoding of the prompt.
     */
    @Benchmark
    public int baselineRawSplice() throws IOException {
        ByteBuf out = ByteBufAllocator.DEFAULT.buffer(bytes.length + 160);
        try {
            splice(bytes, out, SglangBootstrap.newRoom());
            return out.readableBytes();
        } finally {
            out.release();
        }
    }

    private void splice(byte[] in, ByteBuf out, long room) throws IOException {
        int[] starts = this.starts;
        boolean[] drop = this.drop;
        int n = 0;
        int end;
        try (JsonParser p = FACTORY.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("not an object");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                starts[n] = (int) p.currentTokenLocation().getByteOffset();
                drop[n] = WorkerBodies.GATEWAY_OWNED.contains(p.currentName());
                n++;
                p.nextToken();
                p.skipChildren();
            }
            if (t != JsonToken.END_OBJECT) {
                throw new IOException("truncated object");
            }
            end = (int) p.currentTokenLocation().getByteOffset();
        }
        out.writeByte('{');
        for (int i = 0; i < n; i++) {
            if (drop[i]) {
                continue;
            }
            int to = i + 1 < n ? starts[i + 1] : end;
            while (to > starts[i] && (in[to - 1] == ',' || in[to - 1] <= ' ')) {
                to--;
            }
            out.writeBytes(in, starts[i], to - starts[i]).writeByte(',');
        }
        out.writeCharSequence("\"bootstrap_host\":\"", StandardCharsets.US_ASCII);
        out.writeCharSequence(prefill.host(), StandardCharsets.UTF_8);
        out.writeCharSequence("\",\"bootstrap_port\":" + prefill.bootstrapPort() + ",\"bootstrap_room\":" + room
                + ",\"rid\":\"sluice-0123456789abcdef01234567\"}", StandardCharsets.US_ASCII);
    }

    private final int[] starts = new int[256];
    private final boolean[] drop = new boolean[256];

    /** As the attempts do: {@code ctx.alloc().buffer(n).writeBytes(bytes)}, released here instead of by the socket. */
    private static int toBuffer(byte[] serialised) {
        ByteBuf buf = ByteBufAllocator.DEFAULT.buffer(serialised.length).writeBytes(serialised);
        int n = buf.readableBytes();
        buf.release();
        return n;
    }
}
