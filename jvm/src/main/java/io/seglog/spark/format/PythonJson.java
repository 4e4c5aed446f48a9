package io.seglog.spark.format;

/**
 * JSON text as the Python core's {@code json.dumps} writes it (ASCII only: every character past 0x7e
 * as {@code \\uXXXX}, one per UTF-16 unit, as Python escapes astral characters by surrogate pair), so
 * that a file the JVM writes is byte for byte the file the Python core writes for the same state
 * (the differential tests compare them).
 */
public final class PythonJson {
    private PythonJson() {}

    public static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    public static String string(String s) {
        StringBuilder out = new StringBuilder(s.length() + 2);
        string(out, s);
        return out.toString();
    }
}
