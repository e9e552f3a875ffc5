package dev.sluice.gateway.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where the admin token comes from: {@code admin.token_file} (a Secret mounted as a file, a systemd
 * credential) or the environment variable {@code SLUICE_ADMIN_TOKEN}, one of the two. Read once per load,
 * kept as a {@link Secret}: the file's path is printed, its contents never.
 */
final class AdminTokens {
    static final String ENV = "SLUICE_ADMIN_TOKEN";
    /** A token is a line of text; more than this is a wrong file (a key pair, /dev/zero), not read into memory. */
    static final int MAX_BYTES = 4096;

    private AdminTokens() {
    }

    static Optional<Secret> read(ConfigNode fileNode) {
        String fromEnv = fileNode.reading().env(ENV);
        boolean envSet = fromEnv != null && !fromEnv.isBlank(); // blank: unset, as before token_file existed
        Optional<Path> file = GatewayConfigReader.readableFile(fileNode);
        if (file.isEmpty()) {
            return envSet ? Optional.of(new Secret(fromEnv.trim())) : Optional.empty();
        }
        String shown = file.get().toString();
        if (envSet) {
            // two sources would leave an operator guessing which one a rotation has to change
            fileNode.reject(shown, "one source of the admin token, but " + ENV + " is set too");
            return Optional.empty();
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file.get())) {
            bytes = in.readNBytes(MAX_BYTES + 1);
        } catch (IOException e) {
            fileNode.reject(shown, "a readable file holding the admin token (" + e.getClass().getSimpleName() + ")");
            return Optional.empty();
        }
        if (bytes.length > MAX_BYTES) {
            fileNode.reject(shown, "a file holding the admin token, at most " + MAX_BYTES + " bytes");
            return Optional.empty();
        }
        String token;
        try {
            token = StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)).toString().trim();
        } catch (CharacterCodingException e) {
            fileNode.reject(shown, "a file holding the admin token as UTF-8 text");
            return Optional.empty();
        }
        if (token.isEmpty()) {
            fileNode.reject(shown, "a file holding the admin token (it is empty)");
            return Optional.empty();
        }
        return Optional.of(new Secret(token));
    }
}
