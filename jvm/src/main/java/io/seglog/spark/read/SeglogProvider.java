package io.seglog.spark.read;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

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

    @Override
    public String shortName() {
        return NAME;
    }

    ReadOptions options(Map<String, String> options) {
        if (parsed == null || !options.equals(parsedFrom)) {
            parsed = ReadOptions.parse(options, true);   // batch-only rules are checked by toBatch()
            parsedFrom = options;
        }
        return parsed;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        ReadOptions o = options(options.asCaseSensitiveMap());
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

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SeglogTable(properties, this);
    }
}
