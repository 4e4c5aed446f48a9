package io.seglog.spark.write;

import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.SQLConf;

import io.seglog.spark.format.CommitLogWriter;


/**
 * A {@code df.write.format("seglog").mode("append")...save(root)}: options and input columns are parsed
 * and the topic checked here, on the driver, before any task runs, so a bad request is refused with
 * nothing written. {@code mode("overwrite")} is refused by name (Spark asks for a truncate): a log is
 * appended to.
 */
public final class SeglogWriteBuilder implements WriteBuilder, SupportsTruncate {
    private final LogicalWriteInfo info;

    public SeglogWriteBuilder(LogicalWriteInfo info) {
        this.info = info;
    }

    @Override
    public WriteBuilder truncate() {
        throw new SeglogWriteException("seglog write: mode 'overwrite' (and a stream's outputMode 'complete') is not "
                + "supported: a log is only appended to; use mode(\"append\") (outputMode \"append\")");
    }

    @Override
    public Write build() {
        Map<String, String> given = info.options().asCaseSensitiveMap();
        WriteOptions parsed = WriteOptions.parse(given);
        // a foreachBatch call: the calling query is found now, on the driver thread planning the write
        WriteOptions o = parsed.foreachBatchId == null ? parsed
                : parsed.forForeachBatch(parsed.writerGiven ? null : ForeachBatchQuery.id(parsed.foreachBatchId));
        InputColumns columns = InputColumns.of(info.schema());
        if (o.topic == null && columns.topic < 0) {
            throw new SeglogWriteException("seglog write: no topic: give option 'topic' or a 'topic' column");
        }
        Path root = Path.of(o.root);
        TopicRequest request = new TopicRequest(o);
        TopicTarget target = o.topic == null ? null : TopicTarget.of(request.named(o.topic, "option 'topic'"));
        TopicTarget topic = target;
        String zone = SQLConf.get().sessionLocalTimeZone();
        return new Write() {
            @Override
            public BatchWrite toBatch() {
                // a hint without the lock (the commit checks again under it, from this read if no commit came in
                // since): a re-run's tasks stage nothing
                CommitLogWriter log = o.topic != null && o.txnVersion != null ? new CommitLogWriter(root, o.topic) : null;
                boolean skip = log != null && DriverCommit.committed(log.latest(), o);
                String staging = DriverCommit.writerStaging(o.root, o.writer, o.topic)
                        .resolve((o.txnVersion == null ? "append" : o.txnVersion.toString()) + "-" + UUID.randomUUID()).toString();
                return new SeglogBatchWrite(o, new WritePlan(o.root, staging, topic, request, columns, System.currentTimeMillis(),
                        zone, skip, o.renameMinBytes), log);
            }

            @Override
            public StreamingWrite toStreaming() {
                o.forStream(given, info.queryId(), 0);   // refuses batch-only options now, before the query runs
                return new SeglogStreamingWrite(o, given, info.queryId(), topic, request, columns, zone);
            }

            @Override
            public String description() {
                return "seglog[" + o.root + ":" + (o.topic == null ? "<topic column>" : o.topic) + "] " + o.describe();
            }
        };
    }
}
