package io.seglog.spark.write;

import java.util.List;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

import io.seglog.spark.format.StagedSegment;

/**
 * What one successful write task hands the driver: the staged segments of every log partition it wrote,
 * in the order it wrote them. The driver publishes them in task (input partition) order.
 *
 * @param task    the input partition
 * @param outputs per (topic, partition): its staged segments
 */
record StagedMessage(int task, List<Output> outputs) implements WriterCommitMessage {
    record Output(String topic, int partition, long records, List<StagedSegment> segments) implements java.io.Serializable {}
}
