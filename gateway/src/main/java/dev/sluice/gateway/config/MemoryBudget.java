package dev.sluice.gateway.config;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A memory budget written as a byte size ({@code 512MiB}, {@code 268435456}) or as a share of the
 * JVM's maximum heap ({@code 25%}, of {@link Runtime#maxMemory}, the {@code -Xmx}); resolved
 * against the heap of the process that applies it.
 *
 * @param bytes       the budget as bytes; 0 when given as a share
 * @param heapPercent the budget as a percentage of the heap, in (0, 100]; 0 when given as bytes
 */
public record MemoryBudget(long bytes, double heapPercent) {
    /** What a budget looks like: a byte size, or a percentage (also the JSON Schema's {@code pattern}). */
    public static final String REGEX = "^\\s*((\\d+)\\s*(B|KiB|MiB|GiB|KB|MB|GB)?|(\\d+(\\.\\d+)?)\\s*%)\\s*$";
    private static final Pattern PERCENT = Pattern.compile("^\\s*(\\d+(\\.\\d+)?)\\s*%\\s*$");

    public MemoryBudget {
        if ((bytes > 0) == (heapPercent > 0) || heapPercent > 100 || bytes < 0 || heapPercent < 0) {
            throw new IllegalArgumentException("a memory budget is bytes > 0 or a heap percentage in (0, 100]");
        }
    }

    /** @throws IllegalArgumentException when {@code text} is neither a byte size nor a percentage in (0, 100] */
    public static MemoryBudget parse(String text) {
        Matcher m = PERCENT.matcher(text);
        if (m.matches()) {
            return new MemoryBudget(0, Double.parseDouble(m.group(1)));
        }
        return new MemoryBudget(ByteSizes.parse(text), 0);
    }

    /** The budget in bytes in a JVM whose maximum heap is {@code maxHeap}. */
    public long resolve(long maxHeap) {
        return bytes > 0 ? bytes : (long) (maxHeap * heapPercent / 100);
    }

    /** As the config file writes it. */
    public String format() {
        if (bytes > 0) {
            return ByteSizes.format(bytes);
        }
        return (heapPercent == Math.rint(heapPercent) ? String.valueOf((long) heapPercent)
                : String.format(Locale.ROOT, "%s", heapPercent)) + "%";
    }
}
