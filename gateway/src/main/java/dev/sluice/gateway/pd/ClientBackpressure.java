package dev.sluice.gateway.pd;

/**
 * The client's side of backpressure: when the client stops taking bytes, the current attempt's
 * decode stops being read (TCP pushes back on the worker); when it drains, reading resumes and
 * the idle clock restarts (the worker was not idle, it was held). Event-loop confined.
 */
final class ClientBackpressure {
    private final ClientSink client;
    private final AttemptSequence attempts;
    private final ExchangeTimeline timeline;
    /** The decode is paused because the client stopped taking bytes (set and cleared with the pause). */
    private boolean paused;

    ClientBackpressure(ClientSink client, AttemptSequence attempts, ExchangeTimeline timeline) {
        this.client = client;
        this.attempts = attempts;
        this.timeline = timeline;
    }

    /** A chunk of attempt {@code a} went to the client: pause its decode if the client cannot take more. */
    void relayed(AttemptKey a) {
        if (!client.writable() && attempts.isCurrent(a)) {
            paused = true;
            attempts.current().pauseDecode();
        }
    }

    void writabilityChanged(boolean writable) {
        Attempt a = attempts.current();
        if (writable && a != null) {
            if (paused) {
                // the client made progress: the idle clock restarts (the worker was not idle, it was held)
                paused = false;
                timeline.clientResumed(System.nanoTime());
            }
            a.resumeDecode();
        }
    }

    /** The decode is held for the client (the idle watchdog does not blame the worker). */
    boolean paused() {
        return paused;
    }
}
