package dev.sluice.gateway.config;

/** Whether a listener's host is reachable from this machine only (the admin listener may then go without a token). */
final class Loopback {
    private Loopback() {
    }

    /**
     * Whether {@code host} binds loopback only: {@code localhost} or a loopback literal (127.0.0.0/8, ::1). A
     * name other than localhost counts as reachable: what it resolves to is not known here, and no lookup is
     * made for it.
     */
    static boolean only(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (h.equalsIgnoreCase("localhost")) {
            return true;
        }
        byte[] literal = io.netty.util.NetUtil.createByteArrayFromIpAddressString(h);
        if (literal == null) {
            return false;
        }
        try {
            return java.net.InetAddress.getByAddress(literal).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false; // a length getByAddress refuses: not an address at all
        }
    }
}
