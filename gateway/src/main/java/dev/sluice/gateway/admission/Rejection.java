package dev.sluice.gateway.admission;

/** A "no" from admission control, with the seconds an honest client should wait before retrying. */
public record Rejection(RejectReason reason, String message, long retryAfterSeconds) {
}
