package io.seglog.spark.write;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * The streaming query a {@code foreachBatchId} write belongs to, found on the driver JVM while the write is
 * planned (public API only). Its id is the writer the commit log records: stable across restarts from one
 * checkpoint, new for a new checkpoint (whose batch ids restart at 0 and must not be skipped as committed).
 * <ol>
 * <li>The calling thread's local property {@code sql.streaming.queryId}: Spark sets it on the stream's thread,
 *   and classic PySpark runs a foreachBatch function's JVM calls on that thread.</li>
 * <li>Else, when the call comes from Spark Connect's foreachBatch worker ({@code byTrigger}: Connect runs the
 *   function's write on a Connect thread), the one streaming query of the active session whose status says a
 *   trigger is active: a foreachBatch function runs inside its query's trigger. None or several: a typed error
 *   asking for a writer id, since a guessed writer could skip another query's batches as committed.</li>
 * <li>Else the call is not a query's (a plain {@code sink(df, batch_id)} call): the writer {@code default}, as
 *   SegmentLogSink has always recorded such calls.</li>
 * </ol>
 */
final class ForeachBatchQuery {
    static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";

    private ForeachBatchQuery() {}

    static final String OUTSIDE_A_QUERY = "default";

    static String id(long batchId, boolean byTrigger) {
        SparkSession session = SparkSession.active();
        String local = session.sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
        if (local != null && !local.isEmpty()) return local;
        if (!byTrigger) return OUTSIDE_A_QUERY;
        List<String> triggering = new ArrayList<>();
        for (StreamingQuery q : session.streams().active()) {
            if (q.status().isTriggerActive()) triggering.add(q.id().toString());
        }
        if (triggering.size() == 1) return triggering.get(0);
        String found = triggering.isEmpty() ? "no streaming query of this session is running a micro-batch"
                : triggering.size() + " streaming queries of this session are running a micro-batch (" + triggering + ")";
        throw new SeglogWriteException("seglog write: option 'foreachBatchId' = " + batchId + ": the writer is the calling "
                + "streaming query's id, and " + found + "; give option 'writerId' (SegmentLogSink(writer_id=...)), "
                + "one per query checkpoint");
    }
}
