package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.HfTokenizerCounter;
import dev.sluice.gateway.admission.LearnedRatioCounter;
import dev.sluice.gateway.admission.PromptTokenCounter;
import dev.sluice.gateway.cacheview.ModelTokenizer;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.ConfigException;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.tls.ClientTls;
import dev.sluice.gateway.tls.ServerTls;
import java.io.IOException;
import java.nio.file.Path;

/** The parts built from files the configuration names (the CA file, the tokenizer files), with a config error each. */
final class FileBackedParts {
    private FileBackedParts() {
    }

    /** TLS towards https:// workers (built whether or not any is configured now: a reload may add one). */
    static ClientTls clientTls(GatewayConfig config) {
        try {
            return ClientTls.create(config.upstream().caFile());
        } catch (IOException e) {
            throw new ConfigException("upstream.ca_file: " + e.getMessage());
        }
    }

    /** The client listener's certificate and key ({@code listen.tls}), or null without TLS. */
    static ServerTls serverTls(GatewayConfig config) {
        if (config.listen().tls().isEmpty()) {
            return null;
        }
        try {
            return ServerTls.load(config.listen().tls().get());
        } catch (IOException e) {
            throw new ConfigException("listen.tls: the certificate and key do not load: " + e.getMessage());
        }
    }

    static ModelTokenizer modelTokenizer(Path path, AdmissionConfig ac) {
        try {
            // as many threads as admission's counting pool, and a queue of 64 prompts a thread: past that a
            // request is routed without the view rather than waiting (docs/cache-affinity.md, the cost)
            return ModelTokenizer.load(path, ac.tokenizer().threads(), 64 * ac.tokenizer().threads());
        } catch (IOException | RuntimeException e) {
            throw new ConfigException("routing.kv_events.tokenizer: hf: " + path + " cannot be loaded ("
                    + e.getMessage() + ")", e);
        }
    }

    static PromptTokenCounter exactCounter(Path path, AdmissionConfig ac, LearnedRatioCounter estimator) {
        try {
            return new HfTokenizerCounter(path, ac.tokenizer().threads(), ac.tokenizer().chatTokensPerMessage(),
                    estimator);
        } catch (IOException | RuntimeException e) {
            throw new ConfigException("admission.tokenizer.path: " + path + " cannot be loaded (" + e.getMessage()
                    + ")", e);
        }
    }
}
