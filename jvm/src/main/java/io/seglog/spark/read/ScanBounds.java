package io.seglog.spark.read;

import java.io.Serializable;
import java.util.Collections;
import java.util.Set;

/**
 * What the pushed-down filters allow, as bounds the planner and the readers use (docs/spec.md §8).
 * Timestamps are ms (the log's unit), inclusive; null is unbounded. The {@code *In} sets are finite
 * (empty matches nothing). Partition and topic bounds prune whole partitions.
 */
public final class ScanBounds implements Serializable {
    public static final ScanBounds NONE = new ScanBounds();

    Long tsMin, tsMax, offsetMin, offsetMax, partitionMin, partitionMax;
    Set<Long> tsIn, offsetIn, partitionIn;
    Set<String> topicIn;

    public boolean keepsPartition(String topic, int partition) {
        if (topicIn != null && !topicIn.contains(topic)) return false;
        if (partitionIn != null && !partitionIn.contains((long) partition)) return false;
        if (partitionMin != null && partition < partitionMin) return false;
        return partitionMax == null || partition <= partitionMax;
    }

    /** The smallest timestamp a kept record may have (a seek target), or null. */
    public Long lowestTimestamp() {
        Long lo = tsMin;
        if (tsIn != null && !tsIn.isEmpty()) {
            long m = Collections.min(tsIn);
            lo = lo == null ? m : Math.max(lo, m);
        }
        return lo;
    }

    /** [lo, hi) of the offsets the filters allow; hi = Long.MAX_VALUE when unbounded. */
    public long[] offsetRange() {
        long lo = 0, hi = Long.MAX_VALUE;
        if (offsetMin != null) lo = Math.max(lo, offsetMin);
        if (offsetMax != null) hi = offsetMax == Long.MAX_VALUE ? hi : offsetMax + 1;
        if (offsetIn != null) {
            if (offsetIn.isEmpty()) return new long[] {0, 0};
            lo = Math.max(lo, Collections.min(offsetIn));
            hi = Math.min(hi, Collections.max(offsetIn) + 1);
        }
        return new long[] {lo, hi};
    }

    public boolean isEmpty() {
        if (tsIn != null && tsIn.isEmpty()) return true;
        if (tsMin != null && tsMax != null && tsMin > tsMax) return true;
        long[] r = offsetRange();
        return r[1] <= r[0];
    }

    /** True when records inside the planned offset ranges may still fail a pushed filter. */
    public boolean needsRowFilter() {
        return tsMin != null || tsMax != null || tsIn != null || offsetIn != null;
    }

    /** The row filter the readers apply: exactly the handled filters the ranges do not already ensure. */
    public boolean keeps(long offset, long timestamp) {
        if (tsMin != null && timestamp < tsMin) return false;
        if (tsMax != null && timestamp > tsMax) return false;
        if (tsIn != null && !tsIn.contains(timestamp)) return false;
        return offsetIn == null || offsetIn.contains(offset);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("[");
        if (tsMin != null) b.append("timestamp>=").append(tsMin).append("ms ");
        if (tsMax != null) b.append("timestamp<=").append(tsMax).append("ms ");
        if (tsIn != null) b.append("timestamp in ").append(tsIn).append(' ');
        if (offsetMin != null) b.append("offset>=").append(offsetMin).append(' ');
        if (offsetMax != null) b.append("offset<=").append(offsetMax).append(' ');
        if (offsetIn != null) b.append("offset in ").append(offsetIn).append(' ');
        if (partitionIn != null || partitionMin != null || partitionMax != null) b.append("partition bounds ");
        if (topicIn != null) b.append("topic in ").append(topicIn);
        return b.toString().trim() + "]";
    }
}
