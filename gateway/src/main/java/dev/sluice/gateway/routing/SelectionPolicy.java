package dev.sluice.gateway.routing;

import java.util.List;
import java.util.Optional;

/** Picks one worker among the usable ones; round robin now, load- and prefix-aware later. */
public interface SelectionPolicy {
    Optional<Worker> select(List<Worker> candidates);
}
