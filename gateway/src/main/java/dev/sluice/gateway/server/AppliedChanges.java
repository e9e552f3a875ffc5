package dev.sluice.gateway.server;

import java.util.List;

/** What a reload put in force ({@code applied}: section names), and what differs but waits for a restart. */
public record AppliedChanges(List<String> applied, List<String> restartRequired) {
}
