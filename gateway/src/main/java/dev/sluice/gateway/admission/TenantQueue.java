package dev.sluice.gateway.admission;

import java.util.AbstractCollection;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * One tenant's queued tickets of one class, in the order they will be served (a retry first, then
 * deadline or arrival): a randomized balanced search tree (a treap) whose every node also carries
 * the count, the prompt tokens and the longest prompt ({@link Ticket#LONGEST_FIRST}) of its subtree,
 * and the longest that may still give way ({@link Ticket#committed} not set: {@link #longestSheddable}).
 * So adding, removing, a ticket's rank, and the tokens and the longest prompt of the first k tickets
 * each cost O(log n), without a walk. A ticket that becomes committed is taken out and put back
 * ({@link #recommit}), so that its node's numbers are read again. Under the admission lock, through {@link QueueLane}.
 */
final class TenantQueue extends AbstractCollection<Ticket> {
    private static final class Node {
        final Ticket t;
        final int weight;
        Node left;
        Node right;
        final long ownTokens; // the ticket's, read here (not through it) when the subtree is summed
        final long ownArrival;
        int count;
        long tokens;
        Ticket longest;
        long longestTokens;
        long longestArrival;
        final boolean ownCommitted; // read when the node is made: a ticket that commits is put back anew
        Ticket sheddable; // the longest not committed, or null
        long sheddableTokens;
        long sheddableArrival;

        Node(Ticket t, int weight) {
            ownTokens = t.tokens; // its key and length are fixed while it is queued
            ownArrival = t.arrival;
            ownCommitted = t.committed;
            this.t = t;
            this.weight = weight;
            count = 1; // a leaf: its subtree is itself
            tokens = ownTokens;
            longest = t;
            longestTokens = ownTokens;
            longestArrival = ownArrival;
            own();
        }

        /** The sheddable longest of the node alone. */
        private void own() {
            sheddable = ownCommitted ? null : t;
            sheddableTokens = ownCommitted ? -1 : ownTokens;
            sheddableArrival = ownArrival;
        }

        void pull() {
            count = 1 + count(left) + count(right);
            tokens = ownTokens + tokens(left) + tokens(right);
            longest = t;
            longestTokens = ownTokens;
            longestArrival = ownArrival;
            own();
            take(left);
            take(right);
        }

        /** The child's longest if it is longer ({@link Ticket#LONGEST_FIRST}), from the numbers kept here. */
        private void take(Node child) {
            if (child != null && (child.longestTokens > longestTokens
                    || child.longestTokens == longestTokens && child.longestArrival > longestArrival)) {
                longest = child.longest;
                longestTokens = child.longestTokens;
                longestArrival = child.longestArrival;
            }
            if (child != null && child.sheddable != null && (child.sheddableTokens > sheddableTokens
                    || child.sheddableTokens == sheddableTokens && child.sheddableArrival > sheddableArrival)) {
                sheddable = child.sheddable;
                sheddableTokens = child.sheddableTokens;
                sheddableArrival = child.sheddableArrival;
            }
        }
    }

    private final Comparator<Ticket> order;
    private Node root;
    private int seed = 0x9E3779B9;

    TenantQueue(Comparator<Ticket> order) {
        this.order = order;
    }

    private static int count(Node n) {
        return n == null ? 0 : n.count;
    }

    private static long tokens(Node n) {
        return n == null ? 0 : n.tokens;
    }

    /** The longer prompt of the two (the later arrival among equals), either may be null. */
    static Ticket longer(Ticket a, Ticket b) {
        if (a == null) {
            return b;
        }
        return b == null || Ticket.LONGEST_FIRST.compare(a, b) <= 0 ? a : b;
    }

    @Override
    public int size() {
        return count(root);
    }

    @Override
    public boolean add(Ticket t) {
        seed ^= seed << 13; // xorshift: the heap weights that keep the tree balanced in expectation
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        root = insert(root, new Node(t, seed));
        return true;
    }

    /** Inserts {@code x} under {@code n}: down to its weight's level, there the subtree split around it. */
    private Node insert(Node n, Node x) {
        if (n == null) {
            return x;
        }
        if (x.weight > n.weight) {
            split(n, x.t);
            x.left = splitBefore;
            x.right = splitAfter;
            x.pull();
            return x;
        }
        if (order.compare(x.t, n.t) < 0) {
            n.left = insert(n.left, x);
        } else {
            n.right = insert(n.right, x);
        }
        n.pull();
        return n;
    }

    private Node splitBefore; // split's answer: the tickets before t, and the others (no array per level)
    private Node splitAfter;

    /** Splits {@code n} into the tickets before {@code t} and the others (in order). */
    private void split(Node n, Ticket t) {
        if (n == null) {
            splitBefore = null;
            splitAfter = null;
        } else if (order.compare(n.t, t) < 0) {
            split(n.right, t);
            n.right = splitBefore;
            n.pull();
            splitBefore = n;
        } else {
            split(n.left, t);
            n.left = splitAfter;
            n.pull();
            splitAfter = n;
        }
    }

    private static Node merge(Node a, Node b) {
        if (a == null) {
            return b;
        }
        if (b == null) {
            return a;
        }
        if (a.weight > b.weight) {
            a.right = merge(a.right, b);
            a.pull();
            return a;
        }
        b.left = merge(a, b.left);
        b.pull();
        return b;
    }

    @Override
    public boolean remove(Object o) {
        if (!(o instanceof Ticket t)) {
            return false;
        }
        int before = size();
        root = remove(root, t);
        return size() < before;
    }

    private Node remove(Node n, Ticket t) {
        if (n == null) {
            return null;
        }
        int c = n.t == t ? 0 : order.compare(t, n.t);
        if (c == 0) {
            if (n.t != t) {
                return n; // an equal key that is another ticket: t is not here
            }
            return merge(n.left, n.right);
        }
        if (c < 0) {
            n.left = remove(n.left, t);
        } else {
            n.right = remove(n.right, t);
        }
        n.pull();
        return n;
    }

    Ticket first() {
        return end(true);
    }

    Ticket last() {
        return end(false);
    }

    /** The first (leftmost) or the last ticket; NoSuchElementException when empty, as a sorted set's. */
    private Ticket end(boolean leftmost) {
        Node n = root;
        if (n == null) {
            throw new NoSuchElementException();
        }
        for (Node next = leftmost ? n.left : n.right; next != null; next = leftmost ? n.left : n.right) {
            n = next;
        }
        return n.t;
    }

    Ticket pollFirst() {
        Ticket t = first();
        remove(t);
        return t;
    }

    /** The longest queued prompt here (the later arrival among equals), or null. */
    Ticket longest() {
        return root == null ? null : root.longest;
    }

    /** The longest queued prompt here that is not committed (the later arrival among equals), or null. */
    Ticket longestSheddable() {
        return root == null ? null : root.sheddable;
    }

    /** {@code t} (queued here) became committed: its node is made anew. False: it is not here. */
    boolean recommit(Ticket t) {
        if (!remove(t)) {
            return false;
        }
        t.committed = true;
        add(t);
        return true;
    }

    /** How many tickets come before {@code t} (queued here). */
    int rank(Ticket t) {
        int rank = 0;
        Node n = root;
        while (n != null && n.t != t) {
            if (order.compare(t, n.t) < 0) {
                n = n.left;
            } else {
                rank += count(n.left) + 1;
                n = n.right;
            }
        }
        return n == null ? rank : rank + count(n.left);
    }

    /** Adds the count, the tokens and the longest prompt of the first {@code k} tickets to {@code place}. */
    void first(int k, QueuePlace place) {
        Node n = root;
        while (n != null && k > 0) {
            int left = count(n.left);
            if (k <= left) {
                n = n.left;
                continue;
            }
            if (n.left != null) {
                place.add(n.left.count, n.left.tokens, n.left.sheddable);
            }
            place.add(1, n.t.tokens, n.ownCommitted ? null : n.t);
            k -= left + 1;
            n = n.right;
        }
    }

    @Override
    public Iterator<Ticket> iterator() {
        return new Iterator<>() {
            private final ArrayDeque<Node> path = new ArrayDeque<>();
            private Node last;

            {
                descend(root);
            }

            private void descend(Node n) {
                for (; n != null; n = n.left) {
                    path.push(n);
                }
            }

            @Override
            public boolean hasNext() {
                return !path.isEmpty();
            }

            @Override
            public Ticket next() {
                if (path.isEmpty()) {
                    throw new NoSuchElementException();
                }
                last = path.pop();
                descend(last.right);
                return last.t;
            }
        };
    }
}
