package io.seglog.spark.write;

import io.seglog.spark.QuerySessions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.SparkSession;

/**
 * The streaming query a {@code foreachBatchId} write belongs to, known on the driver JVM while the write is
 * planned, never guessed: its id is the writer the commit log records, stable across restarts from one
 * checkpoint, new for a new checkpoint (whose batch ids restart at 0 and must not be skipped as committed).
 * <ol>
 * <li>The write's input: Spark runs each micro-batch in the query's own cloned session and hands the
 *   foreachBatch function a Dataset that keeps it ({@link QuerySessions}); the write's sessions matched by
 *   identity against every active query's. This holds on any thread (a thread pool inside the function), in
 *   Spark Connect with many queries per session, and in pyspark 4.3's cloned foreachBatch sessions.</li>
 * <li>Else (a DataFrame made from another session inside the function) the calling thread's local property
 *   {@code sql.streaming.queryId}: Spark sets it on the stream's thread.</li>
 * <li>Else, or when the input belongs to several queries: refused, asking for option writerId
 *   (SegmentLogSink's writer_id). A guessed writer (once {@code default}) lets one query's batches be skipped
 *   as another's.</li>
 * </ol>
 */
final class ForeachBatchQuery {
    static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";

    private ForeachBatchQuery() {}

    static String id(long batchId) {
        SparkSession session = SparkSession.active();
        Set<Object> sessions = QuerySessions.ofExecutingWrite(session.sparkContext());
        List<String> matched = new ArrayList<>();
        for (Map.Entry<String, Object> q : QuerySessions.active(session).entrySet()) {
            if (sessions.contains(q.getValue())) matched.add(q.getKey());
        }
        if (matched.size() == 1) return matched.get(0);
        String local = session.sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
        if (matched.isEmpty() && local != null && !local.isEmpty()) return local;
        String found = matched.isEmpty() ? "the write's DataFrame is no streaming query's micro-batch (a call outside "
                + "foreachBatch, or a DataFrame of another session)"
                : "the write's DataFrame comes from " + matched.size() + " streaming queries' micro-batches " + matched;
        throw new SeglogWriteException("seglog write: option 'foreachBatchId' = " + batchId + ": the writer is the calling "
                + "streaming query's id, and " + found + "; give option 'writerId' (SegmentLogSink(writer_id=...)), "
                + "one per query checkpoint");
    }
}
