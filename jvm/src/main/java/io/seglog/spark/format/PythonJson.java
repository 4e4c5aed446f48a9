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
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
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

    /** A finite double as Python's repr writes it in the range configuration values take (plain
     *  notation from 1e-4 to 1e16, else Python's exponent form). */
    public static String number(double d) {
        if (d == Math.rint(d) && Math.abs(d) < 1e16) return java.math.BigDecimal.valueOf(d).toBigInteger() + ".0";
        double a = Math.abs(d);
        if (a >= 1e-4 && a < 1e16) return java.math.BigDecimal.valueOf(d).toPlainString();
        String s = Double.toString(d).replace("E", "e");   // 1.0E-5 -> 1e-05, as Python
        String[] parts = s.split("e");
        String mantissa = parts[0].endsWith(".0") ? parts[0].substring(0, parts[0].length() - 2) : parts[0];
        int exp = Integer.parseInt(parts[1]);
        return mantissa + "e" + (exp < 0 ? "-" : "+") + String.format("%02d", Math.abs(exp));
    }
}
