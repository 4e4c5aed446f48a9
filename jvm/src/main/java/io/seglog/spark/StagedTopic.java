package io.seglog.spark;

import java.nio.file.Paths;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.read.SeglogConfigException;
import io.seglog.spark.read.SeglogSchema;
import io.seglog.spark.write.SeglogWriteBuilder;
import io.seglog.spark.write.WriteInfo;

/**
 * The topic a CREATE TABLE ... AS SELECT makes (SeglogCatalog.stageCreate), before it exists: the query's rows are
 * written as INSERT INTO's are, with the topic's partitions and configuration as the write's options, so the
 * write's commit creates the topic and appends the rows at once, under the topic's writer lock, and a failed write
 * leaves neither (its commit removes a topic it created). Nothing is on disk before that commit.
 */
final class StagedTopic implements StagedTable, SupportsWrite {
    private final String catalog;
    private final String root;
    private final String topic;
    private final int partitions;
    private final Map<String, String> config;     // Kafka's names, checked already (TopicCatalog.checkNew)

    StagedTopic(String catalog, String root, String topic, int partitions, Map<String, String> config) {
        this.catalog = catalog;
        this.root = root;
        this.topic = topic;
        this.partitions = partitions;
        this.config = config;
    }

    @Override
    public String name() {
        return catalog + "." + topic;
    }

    @Override
    public StructType schema() {
        return SeglogSchema.of(true);
    }

    @Override
    public Set<TableCapability> capabilities() {
        // any schema: the query's columns are taken by name, as INSERT INTO's (the write names a bad one)
        return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> o = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : info.options().asCaseSensitiveMap().entrySet()) {
            String key = e.getKey().toLowerCase(Locale.ROOT);
            if (key.equals("path") || key.equals("location") || key.equals("topic") || key.equals("partitions")
                    || config.keySet().stream().anyMatch(k -> k.equalsIgnoreCase(key))) {
                throw new SeglogConfigException("CREATE TABLE " + name() + " AS SELECT: option '" + e.getKey() + "' is "
                    + "the table's own (its root, topic, partitions and TBLPROPERTIES); drop it");
            }
            o.put(e.getKey(), e.getValue());
        }
        o.putAll(config);
        o.put("path", root);
        o.put("topic", topic);
        o.put("partitions", Integer.toString(partitions));
        return new SeglogWriteBuilder(WriteInfo.withOptions(info, o));
    }

    /** The write has committed (the topic made with its rows); a query that gave no rows made none: recorded now,
     *  the same request, so a topic another creator made meanwhile with other settings is refused, naming both. */
    @Override
    public void commitStagedChanges() {
        TopicCatalog.create(Paths.get(root), topic, partitions, config);
    }

    /** A failed write left nothing (its commit rolled back and removed the topic it created): nothing to undo. */
    @Override
    public void abortStagedChanges() {
    }
}
