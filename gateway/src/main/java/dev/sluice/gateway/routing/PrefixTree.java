package dev.sluice.gateway.routing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An approximate picture of which prompt prefixes each worker holds in its prefix cache: one
 * radix tree of characters shared by all workers, each node marked with the workers that were
 * sent its text (the sgl-model-gateway design), and per worker a bound on the characters it is
 * credited with, kept by evicting its least recently used leaves.
 *
 * <p>Invariant: a worker marked on a node is marked on all its ancestors, so a worker's match is
 * the depth of the deepest node on the key's path that carries its mark. Each worker's marks sit
 * in an LRU list that is touched deepest-first, so ancestors are always more recent than their
 * descendants and the least recent mark is always one of the worker's leaves: eviction is O(1)
 * per node, with no scan of the tree.
 *
 * <p>Not thread-safe for updates: {@link #insert}, {@link #match} and {@link #remove} run under the
 * admission controller's lock. {@link #size} may be read from any thread (the metrics gauge). So
 * that the lock pays only for the walk, a key is a {@link Key} prepared before it (on the event
 * loop, when the ticket is built), and labels are compared with {@link Arrays#mismatch}, which the
 * JIT turns into vector compares: a char-by-char walk of an 8,000-character prompt was most of a
 * cache-aware decision. The price: labels are {@code char[]}, twice the bytes of a Latin-1 String's
 * (the per-worker bound counts characters either way).
 */
public final class PrefixTree<W> {
    private final long maxSizePerWorker;
    private final Node<W> root = new Node<>(new char[0], null);
    private final Map<W, Lru<W>> lrus = new ConcurrentHashMap<>();

    /** @param maxSizePerWorker characters of prompt text credited to one worker at most */
    public PrefixTree(long maxSizePerWorker) {
        if (maxSizePerWorker < 1) {
            throw new IllegalArgumentException("maxSizePerWorker: " + maxSizePerWorker + " (expected: >= 1)");
        }
        this.maxSizePerWorker = maxSizePerWorker;
    }

    /** The longest key prefix that counts (a longer key is inserted cut to this length). */
    public long maxSizePerWorker() {
        return maxSizePerWorker;
    }

    /**
     * A key ready for the tree: its characters, copied once off the lock. The tree reads only the
     * first {@link #maxSizePerWorker} of them, so one key serves trees of any bound.
     */
    public static final class Key {
        public static final Key EMPTY = new Key(new char[0]);
        private final char[] chars;

        private Key(char[] chars) {
            this.chars = chars;
        }

        public static Key of(String key) {
            return key.isEmpty() ? EMPTY : new Key(key.toCharArray());
        }

        public int length() {
            return chars.length;
        }
    }

    /** Records that {@code worker} was sent {@code key}; evicts its oldest leaves past the bound. */
    public void insert(String key, W worker) {
        insert(Key.of(key), worker);
    }

    /** As {@link #insert(String, Object)}, for a key prepared off the lock. */
    public void insert(Key prepared, W worker) {
        char[] key = prepared.chars;
        int end = end(prepared);
        if (end == 0) {
            return;
        }
        List<Node<W>> path = new ArrayList<>();
        Node<W> node = root;
        int pos = 0;
        while (pos < end) {
            Node<W> child = node.child(key[pos]);
            if (child == null) {
                child = new Node<>(Arrays.copyOfRange(key, pos, end), node);
                node.children().put(key[pos], child);
                pos = end;
            } else {
                int common = commonPrefix(child.label, key, pos, end);
                if (common < child.label.length) {
                    child = split(child, common);
                }
                pos += common;
            }
            path.add(child);
            node = child;
        }
        Lru<W> lru = lrus.computeIfAbsent(worker, w -> new Lru<>());
        for (int i = path.size() - 1; i >= 0; i--) { // deepest first: ancestors end up more recent
            Node<W> n = path.get(i);
            Entry<W> e = n.holders.get(worker);
            if (e == null) {
                e = new Entry<>(n);
                n.holders.put(worker, e);
                lru.size += n.label.length;
            } else {
                e.unlink();
            }
            lru.linkLast(e);
        }
        while (lru.size > maxSizePerWorker) {
            evictOldest(worker, lru);
        }
    }

    /** Characters of {@code key} each candidate holds as a prefix, index for index. Changes nothing. */
    public int[] match(String key, List<W> candidates) {
        return match(Key.of(key), candidates);
    }

    /** As {@link #match(String, List)}, for a key prepared off the lock. */
    public int[] match(Key prepared, List<W> candidates) {
        int[] out = new int[candidates.size()];
        char[] key = prepared.chars;
        int end = end(prepared);
        List<Node<W>> path = new ArrayList<>();
        int[] depth = new int[8];
        Node<W> node = root;
        int pos = 0;
        while (pos < end) {
            Node<W> child = node.child(key[pos]);
            if (child == null) {
                break;
            }
            int common = commonPrefix(child.label, key, pos, end);
            pos += common;
            if (path.size() == depth.length) {
                depth = Arrays.copyOf(depth, depth.length * 2);
            }
            depth[path.size()] = pos; // a partly matched edge counts: its holders have the whole edge
            path.add(child);
            if (common < child.label.length) {
                break;
            }
            node = child;
        }
        for (int c = 0; c < out.length; c++) {
            W w = candidates.get(c);
            for (int i = path.size() - 1; i >= 0; i--) {
                if (path.get(i).holders.containsKey(w)) {
                    out[c] = depth[i];
                    break;
                }
            }
        }
        return out;
    }

    /** Where the tree stops reading a key: the per-worker bound. */
    private int end(Key key) {
        return (int) Math.min(key.chars.length, maxSizePerWorker);
    }

    /** Characters credited to {@code worker} (0 if none); safe to read from any thread. */
    public long size(W worker) {
        Lru<W> lru = lrus.get(worker);
        return lru == null ? 0 : lru.size;
    }

    /** Forgets everything about {@code worker} (e.g. it restarted and its cache is empty). */
    public void remove(W worker) {
        Lru<W> lru = lrus.get(worker);
        if (lru == null) {
            return;
        }
        while (lru.size > 0) {
            evictOldest(worker, lru);
        }
        lrus.remove(worker);
    }

    /**
     * Checks the invariants (for tests): every node has a label and a holder, a holder's marks run
     * up to the root, each worker's size is the sum of its labels, each LRU list is older-child-first.
     * Returns the number of nodes, root excluded.
     */
    int checkInvariants() {
        Map<W, Long> sizes = new HashMap<>();
        Map<Entry<W>, Integer> position = new HashMap<>();
        lrus.forEach((w, lru) -> {
            int i = 0;
            for (Entry<W> e = lru.head.next; e != lru.head; e = e.next) {
                position.put(e, i++);
            }
        });
        int count = 0;
        List<Node<W>> stack = new ArrayList<>(List.of(root));
        while (!stack.isEmpty()) {
            Node<W> n = stack.remove(stack.size() - 1);
            if (n != root) {
                count++;
                if (n.label.length == 0 || n.holders.isEmpty()) {
                    throw new IllegalStateException("empty node under " + new String(n.parent.label));
                }
                for (Map.Entry<W, Entry<W>> h : n.holders.entrySet()) {
                    sizes.merge(h.getKey(), (long) n.label.length, Long::sum);
                    Entry<W> up = n.parent == root ? null : n.parent.holders.get(h.getKey());
                    if (n.parent != root && (up == null || position.get(up) < position.get(h.getValue()))) {
                        throw new IllegalStateException("mark of " + h.getKey() + " not above, or older than, its child");
                    }
                }
            }
            if (n.children != null) {
                stack.addAll(n.children.values());
            }
        }
        lrus.forEach((w, lru) -> {
            if (lru.size != sizes.getOrDefault(w, 0L)) {
                throw new IllegalStateException("size of " + w + ": " + lru.size + " != " + sizes.get(w));
            }
        });
        return count;
    }

    private void evictOldest(W worker, Lru<W> lru) {
        Entry<W> e = lru.head.next;
        Node<W> n = e.node;
        e.unlink();
        n.holders.remove(worker);
        lru.size -= n.label.length;
        if (n.holders.isEmpty()) {
            // no holder left means no descendant either (invariant): the node is a leaf
            n.parent.children.remove(n.label[0]);
        }
    }

    /** Cuts {@code n}'s edge after {@code at} characters; the new upper node inherits n's holders. */
    private Node<W> split(Node<W> n, int at) {
        Node<W> upper = new Node<>(Arrays.copyOf(n.label, at), n.parent);
        n.parent.children.put(upper.label[0], upper);
        n.label = Arrays.copyOfRange(n.label, at, n.label.length);
        n.parent = upper;
        upper.children().put(n.label[0], n);
        for (Map.Entry<W, Entry<W>> h : n.holders.entrySet()) {
            Entry<W> e = new Entry<>(upper);
            upper.holders.put(h.getKey(), e);
            h.getValue().linkAfter(e); // just more recent than n: still older than n's ancestors
        }
        return upper;
    }

    /** Characters {@code label} shares with {@code key[from, end)}. */
    private static int commonPrefix(char[] label, char[] key, int from, int end) {
        int max = Math.min(label.length, end - from);
        int i = Arrays.mismatch(label, 0, max, key, from, from + max);
        return i < 0 ? max : i;
    }

    private static final class Node<W> {
        char[] label;
        Node<W> parent;
        Map<Character, Node<W>> children;
        final Map<W, Entry<W>> holders = new HashMap<>(4);

        Node(char[] label, Node<W> parent) {
            this.label = label;
            this.parent = parent;
        }

        Node<W> child(char c) {
            return children == null ? null : children.get(c);
        }

        Map<Character, Node<W>> children() {
            if (children == null) {
                children = new HashMap<>(4);
            }
            return children;
        }
    }

    /** One worker's mark on one node, linked into that worker's LRU list. */
    private static final class Entry<W> {
        final Node<W> node;
        Entry<W> prev;
        Entry<W> next;

        Entry(Node<W> node) {
            this.node = node;
        }

        void unlink() {
            prev.next = next;
            next.prev = prev;
            prev = next = null;
        }

        void linkAfter(Entry<W> e) {
            e.prev = this;
            e.next = next;
            next.prev = e;
            next = e;
        }
    }

    /** A worker's marks, least recently used first, and the characters they add up to. */
    private static final class Lru<W> {
        final Entry<W> head = new Entry<>(null);
        volatile long size;

        Lru() {
            head.prev = head;
            head.next = head;
        }

        void linkLast(Entry<W> e) {
            head.prev.linkAfter(e);
        }
    }
}
