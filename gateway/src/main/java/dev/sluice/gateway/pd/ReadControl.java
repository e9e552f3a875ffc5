package dev.sluice.gateway.pd;

/** Reading of one worker's answer, paused while the client cannot take more (backpressure). */
interface ReadControl {
    void pauseReading();

    void resumeReading();
}
