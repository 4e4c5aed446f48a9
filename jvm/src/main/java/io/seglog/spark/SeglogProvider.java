package io.seglog.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import io.seglog.spark.read.Planner;
import io.seglog.spark.read.ReadOptions;
import io.seglog.spark.read.SeglogSchema;

/**
 * {@code format("seglog")}: registered with Spark through {@code META-INF/services} (a
 * {@link DataSourceRegister}), so it is found whenever the connector jar is on the classpath. Options
 * are parsed (and refused, naming the option) when the DataFrame is defined, as Spark's Kafka source's
 * {@code KafkaSourceProvider} does, and the layout checked then; only a topic not created yet waits: a
 * stream waits for it (as subscribe on a broker), a batch read refuses it when it is planned.
 */
public final class SeglogProvider implements TableProvider, DataSourceRegister {
    public static final String NAME = "seglog";

    private ReadOptions parsed;
    private Map<String, String> parsedFrom;
    int parses;   // read options parsed (or refused) by this provider: SeglogTableTest counts them

    @Override
    public String shortName() {
        return NAME;
    }

    ReadOptions options(Map<String, String> options) {
        if (parsed == null || !options.equals(parsedFrom)) {
            parses++;
            parsed = ReadOptions.parse(options, true);   // batch-only rules are checked by toBatch()
            parsedFrom = options;
        }
        return parsed;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        ReadOptions o = options(withoutCatalogAdds(options.asCaseSensitiveMap()));
        // An incomplete offsets JSON, a missing root: refused at load(). A topic not created yet is not: a stream
        // waits for it (as subscribe on a broker); a batch read refuses it when planned (SeglogScan.toBatch).
        Planner.layout(o, false);
        return SeglogSchema.of(o.includeHeaders);
    }

    /** A write gives its input's schema here and is not asked to infer one (which would check the topics
     *  as a read does); the table parses read or write options when a scan or a write is built. */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    /** What the session catalog adds to a table's options ({@code CREATE TABLE ... USING seglog}: Spark's reserved
     *  table properties, CatalogV2Util.TABLE_RESERVED_PROPERTIES), none of them an option of the source or the write;
     *  its {@code location} is the root (ReadOptions, WriteOptions). */
    static final java.util.Set<String> CATALOG_ADDS = java.util.Set.of("owner", "provider", "comment", "external",
        "is_managed_location");

    static Map<String, String> withoutCatalogAdds(Map<String, String> properties) {
        Map<String, String> options = new java.util.LinkedHashMap<>();
        for (Map.Entry<String, String> e : properties.entrySet()) {
            if (!CATALOG_ADDS.contains(e.getKey().toLowerCase(java.util.Locale.ROOT))) options.put(e.getKey(), e.getValue());
        }
        return options;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SeglogTable(withoutCatalogAdds(properties), this);
    }
}
