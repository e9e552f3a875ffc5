package dev.sluice.gateway.cacheview;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/** Python's {@code json.dumps(ensure_ascii=False)} output of the values a chat template sees. */
final class PythonJson {
    private PythonJson() {
    }

    /** @param indent -1: none (items joined by ", " and ": ", as Python's default separators) */
    static String dumps(Object v, int indent, boolean sortKeys) {
        StringBuilder b = new StringBuilder();
        write(b, v, indent, sortKeys, 0);
        return b.toString();
    }

    private static void write(StringBuilder b, Object v, int indent, boolean sortKeys, int depth) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Boolean bool) {
            b.append(bool ? "true" : "false");
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof java.math.BigInteger) {
            b.append(v);
        } else if (v instanceof Number n) {
            double d = n.doubleValue();
            b.append(d == Math.rint(d) && !Double.isInfinite(d) && Math.abs(d) < 1e16 ? String.valueOf(d)
                    : Double.toString(d).replace("E", "e"));
        } else if (v instanceof Map<?, ?> m) {
            List<Map.Entry<?, ?>> entries = new ArrayList<>(m.entrySet());
            if (sortKeys) {
                entries.sort((x, y) -> String.valueOf(x.getKey()).compareTo(String.valueOf(y.getKey())));
            }
            b.append('{');
            int i = 0;
            for (Map.Entry<?, ?> e : entries) {
                separate(b, i++, indent, depth + 1);
                string(b, String.valueOf(e.getKey()));
                b.append(": ");
                write(b, e.getValue(), indent, sortKeys, depth + 1);
            }
            close(b, i, indent, depth, '}');
        } else if (v instanceof Collection<?> c) {
            b.append('[');
            int i = 0;
            for (Object o : c) {
                separate(b, i++, indent, depth + 1);
                write(b, o, indent, sortKeys, depth + 1);
            }
            close(b, i, indent, depth, ']');
        } else {
            string(b, v.toString());
        }
    }

    private static void separate(StringBuilder b, int i, int indent, int depth) {
        if (indent < 0) {
            b.append(i == 0 ? "" : ", ");
        } else {
            b.append(i == 0 ? "\n" : ",\n").append(" ".repeat(indent * depth));
        }
    }

    private static void close(StringBuilder b, int n, int indent, int depth, char c) {
        if (indent >= 0 && n > 0) {
            b.append('\n').append(" ".repeat(indent * depth));
        }
        b.append(c);
    }

    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
