package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig.ApiKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The configured client keys, held as SHA-256 digests only. A presented key is hashed once and
 * compared with every digest in constant time ({@link MessageDigest#isEqual}, no early exit, no hash
 * map keyed by the secret), so neither the comparison nor the lookup tells an attacker how close a
 * guess was. Hashing first also makes every comparison the same length whatever the guess.
 */
public final class ApiKeys {
    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    });

    private final List<ApiKey> keys;
    private final byte[][] digests;

    ApiKeys(Map<String, ApiKey> configured) {
        this.keys = List.copyOf(configured.values());
        this.digests = new byte[keys.size()][];
        for (int i = 0; i < keys.size(); i++) {
            digests[i] = HexFormat.of().parseHex(keys.get(i).sha256());
        }
    }

    boolean isEmpty() {
        return keys.isEmpty();
    }

    /** The configured key matching {@code presented}, or null. Every digest is compared, always. */
    ApiKey match(String presented) {
        byte[] digest = sha256(presented);
        ApiKey found = null;
        for (int i = 0; i < digests.length; i++) {
            if (MessageDigest.isEqual(digests[i], digest)) {
                found = keys.get(i);
            }
        }
        return found;
    }

    static byte[] sha256(String key) {
        return SHA256.get().digest(key.getBytes(StandardCharsets.UTF_8));
    }

    /** The lower-case hex SHA-256 of a key: what {@code admission.api_keys.*.sha256} holds. */
    public static String hex(String key) {
        return HexFormat.of().formatHex(sha256(key));
    }
}
