package io.seglog.spark.write;

import java.util.List;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

import io.seglog.spark.format.StagedSegment;

/**
 * What one successful write task hands the driver: the staged segments of every log partition it wrote,
 * in the order it wrote them. The driver publishes them in task (input partition) order.
 *
 * @param task    the input partition
 * @param outputs   per (topic, partition): its staged segments
 * @param newTopics topics the task found missing and staged for, as {@link TopicRequest} planned them: the
 *                  driver's commit creates them (their partition count is the one the task partitioned by)
 * @param nullTopicRows rows with a null {@code topic} and no topic option: not staged; the driver refuses the
 *                  write naming their count over all tasks
 */
record StagedMessage(int task, List<Output> outputs, List<NewTopic> newTopics, long nullTopicRows)
        implements WriterCommitMessage {
    record Output(String topic, int partition, long records, List<StagedSegment> segments) implements java.io.Serializable {}

    record NewTopic(String name, int partitions, java.util.Map<String, Object> config) implements java.io.Serializable {}
}
