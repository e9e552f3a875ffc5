package dev.sluice.gateway.cacheview;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP relay on loopback (port 0) between a subscriber and a publisher that can freeze the
 * connections it carries: a frozen connection stays open but its bytes are read and dropped, the
 * way a subscription that came up dead looks from the subscriber (connected, silent). Connections
 * accepted after a freeze are relayed normally.
 */
final class FreezingRelay implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final List<Pipe> pipes = new CopyOnWriteArrayList<>();
    final AtomicInteger accepted = new AtomicInteger();
    /** Connections accepted that could not be relayed (closed at once). */
    final AtomicInteger failed = new AtomicInteger();

    FreezingRelay(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "relay-accept");
        t.setDaemon(true);
        t.start();
    }

    String endpoint() {
        return "tcp://127.0.0.1:" + server.getLocalPort();
    }

    /** Every connection open now goes silent (kept open, bytes dropped both ways). */
    void freeze() {
        pipes.forEach(p -> p.frozen = true);
    }

    /**
     * Accepts until closed. A connection that cannot be relayed (the publisher's side refused or slow to
     * connect on a loaded machine) is closed and counted, and the relay goes on accepting: a failure of
     * one connection once ended this loop, after which every reopened stream stayed silent.
     */
    private void accept() {
        while (!server.isClosed()) {
            Socket in;
            try {
                in = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            accepted.incrementAndGet();
            Socket out = new Socket();
            try {
                out.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5_000);
            } catch (IOException e) {
                failed.incrementAndGet();
                System.err.println("relay: could not reach the publisher: " + e);
                new Pipe(in, out).close();
                continue;
            }
            Pipe p = new Pipe(in, out);
            pipes.add(p);
            p.start();
        }
    }

    /** What the relay saw, for a failed assertion's message. */
    @Override
    public String toString() {
        return "relay accepted=" + accepted.get() + " failed=" + failed.get() + " frozen="
                + pipes.stream().filter(p -> p.frozen).count() + "/" + pipes.size();
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Pipe p : pipes) {
            p.close();
        }
    }

    private static final class Pipe {
        final Socket a;
        final Socket b;
        volatile boolean frozen;

        Pipe(Socket a, Socket b) {
            this.a = a;
            this.b = b;
        }

        void start() {
            copy(a, b);
            copy(b, a);
        }

        private void copy(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[8192];
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    for (int n; (n = in.read(buf)) >= 0; ) {
                        if (!frozen) {
                            out.write(buf, 0, n);
                            out.flush();
                        }
                    }
                } catch (IOException e) {
                    // either side closed
                }
                close();
            }, "relay-pipe");
            t.setDaemon(true);
            t.start();
        }

        void close() {
            try {
                a.close();
            } catch (IOException ignored) {
                // closing
            }
            try {
                b.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
