package io.seglog.spark.read;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** The source's fixed schema: Spark's Kafka source's columns, headers when includeHeaders=true. */
public final class SeglogSchema {
    private SeglogSchema() {}

    public static final StructType HEADER = new StructType()
        .add("key", DataTypes.StringType)
        .add("value", DataTypes.BinaryType);

    public static StructType of(boolean includeHeaders) {
        StructType s = new StructType()
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("timestamp", DataTypes.TimestampType)
            .add("timestampType", DataTypes.IntegerType);
        return includeHeaders ? s.add("headers", DataTypes.createArrayType(HEADER)) : s;
    }
}
