package dev.sluice.gateway.admission;

/** Hooks for metrics and logs; called outside the controller's lock. */
public interface AdmissionObserver {
    void rejected(Ticket ticket, RejectReason reason);

    void dispatched(Ticket ticket);

    AdmissionObserver NONE = new AdmissionObserver() {
        @Override
        public void rejected(Ticket ticket, RejectReason reason) {
        }

        @Override
        public void dispatched(Ticket ticket) {
        }
    };
}
