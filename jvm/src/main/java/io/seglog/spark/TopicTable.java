package io.seglog.spark;

import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import io.seglog.spark.format.TopicConfigRules;
import io.seglog.spark.format.TopicMetadata;
import io.seglog.spark.read.ReadOptions;
import io.seglog.spark.read.SeglogConfigException;
import io.seglog.spark.read.SeglogScanBuilder;
import io.seglog.spark.read.SeglogSchema;
import io.seglog.spark.read.TopicStats;
import io.seglog.spark.write.SeglogWriteBuilder;
import io.seglog.spark.write.WriteInfo;

/**
 * One topic of a {@link SeglogCatalog}'s root as a table: read (batch and stream) with the source's options, appended
 * to (INSERT INTO, writeStream.toTable) through the same write as {@code format("seglog")}, never overwritten or
 * changed in place. Its schema is the source's with headers (a query that does not select them does not read them).
 * Its properties are what Kafka's DescribeTopics/DescribeConfigs say: partitions, offsets, sizes, timestamps and
 * every topic configuration key with its source ({@code <key>.source}: {@code default} or {@code set}).
 */
final class TopicTable implements SupportsRead, SupportsWrite, SupportsRowLevelOperations {
    /** Options a table fixes itself: the root and the topic are the table's. */
    private static final Set<String> FIXED = Set.of("path", "location", "topic", "subscribe", "subscribepattern", "assign",
        "includeheaders");

    private final String catalog;
    private final String root;
    private final String topic;
    private final TopicMetadata meta;     // null: a topic with partition folders and no metadata file
    private Map<String, String> properties;

    TopicTable(String catalog, String root, String topic, TopicMetadata meta) {
        this.catalog = catalog;
        this.root = root;
        this.topic = topic;
        this.meta = meta;
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
        // TRUNCATE so that INSERT OVERWRITE reaches the write builder, which refuses it saying why
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ, TableCapability.BATCH_WRITE,
            TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE, TableCapability.ACCEPT_ANY_SCHEMA);
    }

    /** Computed once per loaded table, when asked (DESCRIBE, SHOW TBLPROPERTIES): the statistics read the topic. */
    @Override
    public Map<String, String> properties() {
        if (properties == null) {
            Map<String, String> out = new LinkedHashMap<>();
            out.put("provider", SeglogCatalog.PROVIDER);
            out.put("location", root);
            out.putAll(TopicStats.of(root, topic));
            Map<String, Object> set = meta == null ? Map.of() : meta.config();
            Map<String, Object> effective = meta == null ? TopicConfigRules.DEFAULTS : meta.topicConfig();
            for (Map.Entry<String, Object> e : new TreeMap<>(effective).entrySet()) {
                out.put(e.getKey(), show(e.getValue()));
                out.put(e.getKey() + ".source", set.containsKey(e.getKey()) ? "set" : "default");
            }
            properties = out;
        }
        return properties;
    }

    static String show(Object v) {
        if (v == null) return "";
        if (v instanceof Double) return io.seglog.spark.format.PythonJson.number((Double) v);
        return v.toString();
    }

    /** The table's own options plus the statement's (WITH (...), DataFrameReader options); those naming another
     *  root or topic are refused. */
    private Map<String, String> options(CaseInsensitiveStringMap given, String what, Set<String> fixed) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : given.asCaseSensitiveMap().entrySet()) {
            String key = e.getKey().toLowerCase(Locale.ROOT);
            if (fixed.contains(key)) {
                throw new SeglogConfigException(what + " " + name() + ": option '" + e.getKey() + "' is the table's own ("
                    + "the root " + root + ", the topic " + topic + "); drop it");
            }
            out.put(e.getKey(), e.getValue());
        }
        out.put("path", root);
        out.put("topic", topic);
        return out;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        Map<String, String> o = options(options, "reading", FIXED);
        o.put("includeHeaders", "true");
        return new SeglogScanBuilder(ReadOptions.parse(o, true), schema());
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> o = options(info.options(), "writing to", Set.of("path", "location", "topic"));
        SeglogWriteBuilder write = new SeglogWriteBuilder(WriteInfo.withOptions(info, o));
        String table = name();
        return new AppendOnlyWrite(write, table);
    }

    /** The write, with INSERT OVERWRITE (a truncate) refused by name. */
    private static final class AppendOnlyWrite implements WriteBuilder, SupportsTruncate {
        private final SeglogWriteBuilder write;
        private final String table;

        AppendOnlyWrite(SeglogWriteBuilder write, String table) {
            this.write = write;
            this.table = table;
        }

        @Override
        public WriteBuilder truncate() {
            throw new AppendOnlyException("INSERT OVERWRITE (or a stream's complete output mode) of", table);
        }

        @Override
        public Write build() {
            return write.build();
        }
    }

    /** UPDATE, DELETE and MERGE ask for this while they are analysed: refused then, nothing read or written. */
    @Override
    public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
        throw new AppendOnlyException(info.command().toString(), name());
    }
}
