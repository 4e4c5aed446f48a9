package io.seglog.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import io.seglog.spark.read.ReadOptions;
import io.seglog.spark.read.SeglogConfigException;
import io.seglog.spark.read.SeglogScanBuilder;
import io.seglog.spark.read.SeglogSchema;
import io.seglog.spark.write.SeglogWriteBuilder;

/**
 * The topics of one log root, read as a table (batch and micro-batch) and written to (batch appends:
 * io.seglog.spark.write). One table serves both, so its options are parsed by the side that uses them:
 * read options when a scan is built, write options when a write is ({@code partitions}, a topic's
 * configuration, ... are write options, which the reader refuses by name).
 */
final class SeglogTable implements SupportsRead, SupportsWrite {
    private final Map<String, String> properties;
    private final SeglogProvider provider;
    private ReadOptions read;

    SeglogTable(Map<String, String> properties, SeglogProvider provider) {
        this.properties = properties;
        this.provider = provider;
    }

    private ReadOptions readOptions() {
        if (read == null) read = provider.options(properties);
        return read;
    }

    /** The read options, or null where they are none (a write's, or refused). A write's options (any key no read
     *  takes: partitions, txnAppId, ...) are not parsed as a read's: the parse would refuse them, building a message
     *  that names the nearest read option, at every call, and a write's planning asks for schema() (issue 41). */
    private ReadOptions readOptionsIfAny() {
        if (!ReadOptions.allKnown(properties)) return null;
        try {
            return readOptions();
        } catch (SeglogConfigException e) {
            return null;
        }
    }

    @Override
    public String name() {
        ReadOptions o = readOptionsIfAny();   // a read's table names what it reads; a write's (no read options) its root
        return o != null ? "seglog[" + o.root + ":" + o.selection.describe() + "]"
            : "seglog[" + new CaseInsensitiveStringMap(properties).get("path") + "]";
    }

    /** The read schema (what a scan gives); a write takes any input (ACCEPT_ANY_SCHEMA) and checks its
     *  columns itself. Options that are no read options (a write's) give the schema without headers. */
    @Override
    public StructType schema() {
        ReadOptions o = readOptionsIfAny();
        return SeglogSchema.of(o != null && o.includeHeaders);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ, TableCapability.BATCH_WRITE,
                TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE, TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        ReadOptions o = readOptions();
        return new SeglogScanBuilder(o, SeglogSchema.of(o.includeHeaders));
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        // a session catalog table's INSERT INTO passes no options: its root and topic are its properties
        Map<String, String> options = new java.util.LinkedHashMap<>();
        CaseInsensitiveStringMap own = new CaseInsensitiveStringMap(properties);
        for (String key : new String[] {"path", "location", "topic"}) {
            if (own.containsKey(key) && !info.options().containsKey(key)) options.put(key, own.get(key));
        }
        if (options.isEmpty()) return new SeglogWriteBuilder(info);
        options.putAll(info.options().asCaseSensitiveMap());
        return new SeglogWriteBuilder(io.seglog.spark.write.WriteInfo.withOptions(info, options));
    }
}
