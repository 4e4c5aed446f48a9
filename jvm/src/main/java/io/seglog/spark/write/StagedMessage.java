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
final class StagedMessage implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    private final int task;
    private final List<Output> outputs;
    private final List<NewTopic> newTopics;
    private final long nullTopicRows;

    StagedMessage(int task, List<Output> outputs, List<NewTopic> newTopics, long nullTopicRows) {
        this.task = task;
        this.outputs = outputs;
        this.newTopics = newTopics;
        this.nullTopicRows = nullTopicRows;
    }

    public int task() { return task; }
    public List<Output> outputs() { return outputs; }
    public List<NewTopic> newTopics() { return newTopics; }
    public long nullTopicRows() { return nullTopicRows; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof StagedMessage)) return false;
        StagedMessage that = (StagedMessage) o;
        return task == that.task
                && java.util.Objects.equals(outputs, that.outputs)
                && java.util.Objects.equals(newTopics, that.newTopics)
                && nullTopicRows == that.nullTopicRows;
    }

    @Override public int hashCode() { return java.util.Objects.hash(task, outputs, newTopics, nullTopicRows); }

    @Override public String toString() { return "StagedMessage[task=" + task + ", outputs=" + outputs + ", newTopics=" + newTopics + ", nullTopicRows=" + nullTopicRows + "]"; }

    static final class Output implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        private final String topic;
        private final int partition;
        private final long records;
        private final List<StagedSegment> segments;

        Output(String topic, int partition, long records, List<StagedSegment> segments) {
            this.topic = topic;
            this.partition = partition;
            this.records = records;
            this.segments = segments;
        }

        public String topic() { return topic; }
        public int partition() { return partition; }
        public long records() { return records; }
        public List<StagedSegment> segments() { return segments; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Output)) return false;
            Output that = (Output) o;
            return java.util.Objects.equals(topic, that.topic)
                    && partition == that.partition
                    && records == that.records
                    && java.util.Objects.equals(segments, that.segments);
        }

        @Override public int hashCode() { return java.util.Objects.hash(topic, partition, records, segments); }

        @Override public String toString() { return "Output[topic=" + topic + ", partition=" + partition + ", records=" + records + ", segments=" + segments + "]"; }
    }

    static final class NewTopic implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        private final String name;
        private final int partitions;
        private final java.util.Map<String, Object> config;

        NewTopic(String name, int partitions, java.util.Map<String, Object> config) {
            this.name = name;
            this.partitions = partitions;
            this.config = config;
        }

        public String name() { return name; }
        public int partitions() { return partitions; }
        public java.util.Map<String, Object> config() { return config; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof NewTopic)) return false;
            NewTopic that = (NewTopic) o;
            return java.util.Objects.equals(name, that.name)
                    && partitions == that.partitions
                    && java.util.Objects.equals(config, that.config);
        }

        @Override public int hashCode() { return java.util.Objects.hash(name, partitions, config); }

        @Override public String toString() { return "NewTopic[name=" + name + ", partitions=" + partitions + ", config=" + config + "]"; }
    }
}
