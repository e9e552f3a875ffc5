package dev.sluice.gateway.tracing;

/** The open spans of one attempt's calls to its workers, as {@link RequestTrace} keeps them. */
final class AttemptSpans {
    final Object key;
    final int number;
    RecordedSpan prefill;
    RecordedSpan decode;
    RecordedSpan handoff;

    AttemptSpans(Object key, int number) {
        this.key = key;
        this.number = number;
    }
}
