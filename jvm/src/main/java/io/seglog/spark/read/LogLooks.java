package io.seglog.spark.read;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.seglog.spark.format.CommitLogReader;
import io.seglog.spark.format.SegmentListings;

/**
 * How a driver path looks at a root's partitions and commit logs: afresh ({@link #fresh()}: a batch read plans
 * once), or through what a stream keeps between its triggers ({@link #kept()}: the folders' segment listings,
 * the commit logs followed from the seq seen last), so that a trigger's cost does not grow with the history.
 */
final class LogLooks {
    final SegmentListings listings;
    private final Map<Path, CommitLogReader.Tail> tails;   // null: every look lists the commit log

    private LogLooks(SegmentListings listings, Map<Path, CommitLogReader.Tail> tails) {
        this.listings = listings;
        this.tails = tails;
    }

    static LogLooks fresh() {
        return new LogLooks(SegmentListings.NONE, null);
    }

    static LogLooks kept() {
        return new LogLooks(SegmentListings.kept(), new ConcurrentHashMap<>());
    }

    /** partition -> committed end offset (exclusive) of {@code topic}, as of now (read-only). */
    Map<Integer, Long> committedEnds(Path root, String topic) {
        if (tails == null) return CommitLogReader.committedEnds(root, topic);
        return tails.computeIfAbsent(CommitLogReader.dir(root, topic), d -> new CommitLogReader.Tail(root, topic))
            .committedEnds();
    }

    /** After a look found the log changed under it: the next look lists every folder again. */
    void forget() {
        listings.forget();
    }
}
