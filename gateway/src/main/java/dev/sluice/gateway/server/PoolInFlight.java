package dev.sluice.gateway.server;

import dev.sluice.gateway.pd.InFlight;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One model pool's requests in flight, each also in the gateway's set: the gateway's drain and its count
 * see every request, while the pool's health (an ejection) and its retirement by a reload (wait for its
 * requests, then stop what is left of them) reach only the pool's own. Thread-safe.
 */
final class PoolInFlight extends AbstractSet<InFlight> {
    private final Set<InFlight> own = ConcurrentHashMap.newKeySet();
    private final Set<InFlight> gateway;

    PoolInFlight(Set<InFlight> gateway) {
        this.gateway = Objects.requireNonNull(gateway, "gateway");
    }

    @Override
    public boolean add(InFlight e) {
        gateway.add(e);
        return own.add(e);
    }

    @Override
    public boolean remove(Object o) {
        gateway.remove(o);
        return own.remove(o);
    }

    @Override
    public Iterator<InFlight> iterator() {
        Iterator<InFlight> it = own.iterator();
        return new Iterator<>() {
            private InFlight last;

            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public InFlight next() {
                last = it.next();
                return last;
            }

            @Override
            public void remove() {
                it.remove();
                gateway.remove(last);
            }
        };
    }

    @Override
    public int size() {
        return own.size();
    }
}
