package io.seglog.spark.read;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;

/**
 * Spark's pushed filters -> {@link ScanBounds}: the AND of those on {@code timestamp}, {@code offset},
 * {@code partition} and {@code topic} that seglog can honour exactly (the planner's seeks plus the
 * readers' row filter); the rest go back to Spark. Record timestamps are whole ms, Spark's are us:
 * ts > x us <=> ms >= floor(x/1000)+1; ts >= x <=> ms >= ceil(x/1000); ts < x <=> ms <= ceil(x/1000)-1;
 * ts <= x <=> ms <= floor(x/1000); ts = x matches only when x is a whole ms.
 */
final class FilterTranslator {
    private static final Set<String> NOT_NULL = Set.of("topic", "partition", "offset", "timestamp", "timestampType");

    private final ScanBounds b = new ScanBounds();

    /** The filters Spark must still apply after the scan. */
    static List<Filter> push(Filter[] filters, ScanBounds[] out) {
        FilterTranslator t = new FilterTranslator();
        List<Filter> rest = new ArrayList<>();
        for (Filter f : filters) {
            if (!t.accept(f)) rest.add(f);
        }
        out[0] = t.b;
        return rest;
    }

    private static Long micros(Object v) {
        if (v instanceof Timestamp) {
            Timestamp ts = (Timestamp) v;
            return Math.floorDiv(ts.getTime(), 1000L) * 1_000_000L + ts.getNanos() / 1000;
        }
        if (v instanceof Instant) {
            Instant i = (Instant) v;
            return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
        }
        return null;
    }

    private static Long integer(Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        return null;
    }

    private static Long max(Long a, long v) {
        return a == null ? v : Math.max(a, v);
    }

    private static Long min(Long a, long v) {
        return a == null ? v : Math.min(a, v);
    }

    private static <T> Set<T> among(Set<T> current, Set<T> values) {
        if (current == null) return values;
        Set<T> both = new HashSet<>(current);
        both.retainAll(values);
        return both;
    }

    private boolean accept(Filter f) {
        if (f instanceof IsNotNull) return NOT_NULL.contains(((IsNotNull) f).attribute());
        String column;
        Object[] values;
        if (f instanceof EqualTo) {
            column = ((EqualTo) f).attribute();
            values = new Object[] {((EqualTo) f).value()};
        } else if (f instanceof EqualNullSafe) {
            column = ((EqualNullSafe) f).attribute();
            values = new Object[] {((EqualNullSafe) f).value()};
        } else if (f instanceof GreaterThan) {
            column = ((GreaterThan) f).attribute();
            values = new Object[] {((GreaterThan) f).value()};
        } else if (f instanceof GreaterThanOrEqual) {
            column = ((GreaterThanOrEqual) f).attribute();
            values = new Object[] {((GreaterThanOrEqual) f).value()};
        } else if (f instanceof LessThan) {
            column = ((LessThan) f).attribute();
            values = new Object[] {((LessThan) f).value()};
        } else if (f instanceof LessThanOrEqual) {
            column = ((LessThanOrEqual) f).attribute();
            values = new Object[] {((LessThanOrEqual) f).value()};
        } else if (f instanceof In) {
            column = ((In) f).attribute();
            values = ((In) f).values();
        } else {
            return false;
        }
        boolean set = f instanceof EqualTo || f instanceof EqualNullSafe || f instanceof In;
        switch (column) {
            case "timestamp": {
                long[] us = new long[values.length];
                for (int i = 0; i < values.length; i++) {
                    Long m = micros(values[i]);
                    if (m == null) return false;
                    us[i] = m;
                }
                if (set) {
                    Set<Long> ms = new HashSet<>();
                    for (long m : us) if (Math.floorMod(m, 1000L) == 0) ms.add(m / 1000);
                    b.tsIn = among(b.tsIn, ms);
                } else if (f instanceof GreaterThan) {
                    b.tsMin = max(b.tsMin, Math.floorDiv(us[0], 1000L) + 1);
                } else if (f instanceof GreaterThanOrEqual) {
                    b.tsMin = max(b.tsMin, -Math.floorDiv(-us[0], 1000L));
                } else if (f instanceof LessThan) {
                    b.tsMax = min(b.tsMax, -Math.floorDiv(-us[0], 1000L) - 1);
                } else {
                    b.tsMax = min(b.tsMax, Math.floorDiv(us[0], 1000L));
                }
                return true;
            }
            case "offset":
            case "partition": {
                Set<Long> ints = new HashSet<>();
                for (Object v : values) {
                    Long i = integer(v);
                    if (i == null) return false;
                    ints.add(i);
                }
                long v0 = integer(values.length > 0 ? values[0] : 0L);
                boolean offset = column.equals("offset");
                if (set) {
                    if (offset) b.offsetIn = among(b.offsetIn, ints); else b.partitionIn = among(b.partitionIn, ints);
                } else if (f instanceof GreaterThan || f instanceof GreaterThanOrEqual) {
                    if (f instanceof GreaterThan && v0 == Long.MAX_VALUE) return false;
                    long lo = f instanceof GreaterThan ? v0 + 1 : v0;
                    if (offset) b.offsetMin = max(b.offsetMin, lo); else b.partitionMin = max(b.partitionMin, lo);
                } else {
                    if (f instanceof LessThan && v0 == Long.MIN_VALUE) return false;
                    long hi = f instanceof LessThan ? v0 - 1 : v0;
                    if (offset) b.offsetMax = min(b.offsetMax, hi); else b.partitionMax = min(b.partitionMax, hi);
                }
                return true;
            }
            case "topic": {
                if (!set) return false;
                Set<String> names = new HashSet<>();
                for (Object v : values) {
                    if (!(v instanceof String)) return false;
                    names.add((String) v);
                }
                b.topicIn = among(b.topicIn, names);
                return true;
            }
            default:
                return false;
        }
    }
}
