package dev.sluice.testbed.sim;

/** The generation endpoints both roles serve. */
enum Route {
    GENERATE("/generate"),
    CHAT("/v1/chat/completions"),
    COMPLETIONS("/v1/completions");

    final String path;

    Route(String path) {
        this.path = path;
    }

    static Route of(String path) {
        for (Route r : values()) {
            if (r.path.equals(path)) {
                return r;
            }
        }
        return null;
    }
}
