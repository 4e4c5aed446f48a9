package io.seglog.spark.read;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The topics of one log root, read as a table (batch and micro-batch). */
final class SeglogTable implements SupportsRead {
    private final ReadOptions opts;
    private final StructType schema;

    SeglogTable(ReadOptions opts) {
        this.opts = opts;
        this.schema = SeglogSchema.of(opts.includeHeaders);
    }

    @Override
    public String name() {
        return "seglog[" + opts.root + ":" + opts.selection.describe() + "]";
    }

    @Override
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new SeglogScanBuilder(opts, schema);
    }
}
