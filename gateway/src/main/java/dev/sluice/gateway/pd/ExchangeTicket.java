package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.QueueWatch;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.routing.PrefixKey;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.channel.EventLoop;
import java.util.List;
import java.util.Optional;

/**
 * An exchange's one admission ticket, from its submission to its release when the whole exchange is
 * over: what the exchange asks of admission control (submit, prefill done, requeue for a retry,
 * release), in one place. Absent until submitted: a request refused before admission has none.
 * Each wait for a pair is an admission span of the request's trace (queued or not, the wait, the
 * decision and its reason), recorded here, between the exchange and admission control.
 * Touched only on the exchange's event loop.
 */
final class ExchangeTicket implements TicketListener {
    private final AdmissionController admission;
    private final String rid;
    private final GenerationRequest request;
    private final ExchangeSettings settings;
    private final EventLoop loop;
    private final TicketListener listener;
    private final RequestTrace trace;
    private Ticket ticket;
    /** The priority class the request was admitted under (a reload may drop the class while it runs). */
    private String priorityName = "-";

    ExchangeTicket(AdmissionController admission, String rid, GenerationRequest request, ExchangeSettings settings,
                   EventLoop loop, TicketListener listener, RequestTrace trace) {
        this.admission = admission;
        this.rid = rid;
        this.request = request;
        this.settings = settings;
        this.loop = loop;
        this.listener = listener;
        this.trace = trace;
    }

    @Override
    public void granted(Worker prefill, Worker decode) {
        // a grant is always posted to the loop: whether the ticket waited is its queued time (0: dispatched at submit)
        trace.admitted(prefill.name(), decode.name(), ticket.queuedNanos());
        listener.granted(prefill, decode);
    }

    @Override
    public void rejected(Rejection r) {
        trace.rejected(r.reason().status().code(), r.reason().code(), r.message(), r.retryAfterSeconds());
        listener.rejected(r);
    }

    /**
     * Submits the request's ticket under class {@code priority}: the rejection, or null when it was
     * granted (the listener already told) or queued. {@code watch}: told its place while it waits, or null.
     */
    Rejection submit(long promptTokens, int[] promptIds, int priority, String tenant, long deadlineNanos,
                     QueueWatch watch) {
        List<String> classes = admission.config().priorities();
        priorityName = priority >= 0 && priority < classes.size() ? classes.get(priority) : "-";
        ticket = new Ticket(rid, promptTokens, priority, tenant, deadlineNanos, loop, this)
                .wholeAnswer(request.stream() ? 0 : request.maxTokens(), request.parallelSamples())
                .streamed(request.stream())
                // rendering the prompt costs up to 64K characters of work on the loop: only for a policy that reads it
                .prefix(settings.routingUsesPrefix() ? PrefixKey.of(request.route().label(), request.body()) : "",
                        promptIds)
                .direct(settings.directDecodeMaxTokens() > 0 && promptTokens <= settings.directDecodeMaxTokens()
                        && request.batchSize() == 0);
        if (watch != null) {
            ticket.watch(watch); // queue updates: told its position while it waits
        }
        trace.admissionStarted(priorityName, tenant, promptTokens);
        Rejection r = admission.submit(ticket);
        if (r != null) { // refused at once: recorded like a later refusal
            trace.rejected(r.reason().status().code(), r.reason().code(), r.message(), r.retryAfterSeconds());
        }
        return r;
    }

    /** The data-parallel ranks of the pair just granted (read on the grant, before a retry could requeue it). */
    dev.sluice.gateway.routing.RankChoice ranks() {
        return ticket == null ? dev.sluice.gateway.routing.RankChoice.NONE : ticket.ranks();
    }

    /**
     * Its stream, with no first token, may be waiting in its decode for a slot (the decode watchdog asks):
     * a slot freed within the watchdog's own wait may not have been given to it yet.
     */
    boolean decodeWaitingForSlot() {
        return ticket != null
                && admission.decodeWaitingForSlot(ticket, settings.watchdog().firstTokenAfterPrefill().toNanos());
    }

    /** The decode's first token: admission stops counting the stream as awaiting one (only when it did). */
    void decodeStarted() {
        if (ticket != null && ticket.awaitsDecodeStart()) {
            admission.decodeStarted(ticket);
        }
    }

    Optional<Ticket> ticket() {
        return Optional.ofNullable(ticket);
    }

    String priorityName() {
        return priorityName;
    }

    /** The admission deadline, or -1 without a ticket (nothing to retry within). */
    long deadlineNanos() {
        return ticket == null ? -1 : ticket.deadlineNanos();
    }

    long expectedPrefillNanos() {
        return admission.expectedPrefillNanos(ticket);
    }

    /** The prefill's work is done: its prompt tokens stop counting against the pending budget. */
    void prefillDone() {
        if (ticket != null) {
            admission.prefillDone(ticket);
        }
    }

    /** Back to the queue for another pair, avoiding {@code avoid}; false when admission refuses it. */
    boolean requeue(List<Worker> avoid) {
        trace.admissionStarted(priorityName, ticket.tenant(), ticket.tokens());
        return admission.requeue(ticket, avoid);
    }

    /** Released before its end (the client left); true when it was still queued. */
    boolean release() {
        return ticket != null && admission.release(ticket);
    }

    /**
     * Released at the exchange's end. A good answer ({@code ok}, its prefill done at {@code
     * prefillDoneNanos}, 0 for never) teaches admission the decode pace: the time since the prefill's
     * end for {@code completionTokens}.
     */
    void releaseAtEnd(boolean ok, long prefillDoneNanos, long completionTokens) {
        if (ticket == null) {
            return;
        }
        boolean learn = ok && prefillDoneNanos != 0;
        admission.release(ticket, learn ? (System.nanoTime() - prefillDoneNanos) / 1e9 : 0, learn ? completionTokens : 0);
    }
}
