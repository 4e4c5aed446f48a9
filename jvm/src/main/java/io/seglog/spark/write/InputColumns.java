package io.seglog.spark.write;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * The input columns of a write, as Spark's Kafka sink takes them (docs/spec.md §7; the Python sink's
 * sink/input_schema.py, the same rules): {@code value} binary or string (required), {@code key} binary or
 * string, {@code topic} string, {@code partition} int, {@code timestamp} timestamp or timestamp_ntz,
 * {@code headers} array<struct<key string, value binary>>. A known column of the wrong type is refused
 * naming it; any other column is ignored (a replay read by the {@code seglog} source writes back as is).
 * Positions are the input row's ordinals; -1 where the column is absent.
 */
final class InputColumns implements Serializable {
    private static final long serialVersionUID = 1L;
    final int key;
    final int value;
    final int topic;
    final int partition;
    final int timestamp;
    final int headers;
    final DataType partitionType;
    final boolean timestampNtz;   // a wall time in the session time zone, as Spark's CAST reads it

    private InputColumns(StructType schema) {
        key = schema.getFieldIndex("key").isDefined() ? schema.fieldIndex("key") : -1;
        value = schema.getFieldIndex("value").isDefined() ? schema.fieldIndex("value") : -1;
        topic = schema.getFieldIndex("topic").isDefined() ? schema.fieldIndex("topic") : -1;
        partition = schema.getFieldIndex("partition").isDefined() ? schema.fieldIndex("partition") : -1;
        timestamp = schema.getFieldIndex("timestamp").isDefined() ? schema.fieldIndex("timestamp") : -1;
        headers = schema.getFieldIndex("headers").isDefined() ? schema.fieldIndex("headers") : -1;
        partitionType = partition < 0 ? null : schema.fields()[partition].dataType();
        timestampNtz = timestamp >= 0 && schema.fields()[timestamp].dataType() instanceof TimestampNTZType;
    }

    static InputColumns of(StructType schema) {
        List<String> names = new ArrayList<>();
        TreeSet<String> seen = new TreeSet<>();
        TreeSet<String> dupes = new TreeSet<>();
        for (StructField f : schema.fields()) {
            names.add(f.name());
            if (!seen.add(f.name())) dupes.add(f.name());
        }
        if (!dupes.isEmpty()) throw new InputColumnsException("seglog write: the input has duplicate columns " + dupes);
        if (!seen.contains("value")) {
            throw new InputColumnsException("seglog write: the input has no 'value' column (binary or string, required); columns: " + names);
        }
        for (StructField f : schema.fields()) {
            DataType t = f.dataType();
            String expected = expectedType(f.name(), t);
            if (expected != null) {
                throw new InputColumnsException("seglog write: column '" + f.name() + "' is " + t.simpleString() + "; expected " + expected);
            }
        }
        return new InputColumns(schema);
    }

    /** What column {@code name} must be when its type {@code t} is wrong, or null when it is right. */
    private static String expectedType(String name, DataType t) {
        switch (name) {
            case "value": case "key": return t instanceof BinaryType || t instanceof StringType ? null : "binary or string";
            case "topic": return t instanceof StringType ? null : "string";
            case "partition": return t instanceof IntegerType || t instanceof ShortType || t instanceof ByteType ? null : "int";
            case "timestamp": return t instanceof TimestampType || t instanceof TimestampNTZType ? null : "timestamp";
            case "headers": return isHeaders(t) ? null : "array<struct<key: string, value: binary>>";
            default: return null;   // any other column is ignored
        }
    }

    private static boolean isHeaders(DataType t) {
        if (!(t instanceof ArrayType) || !(((ArrayType) t).elementType() instanceof StructType)) return false;
        StructField[] f = ((StructType) ((ArrayType) t).elementType()).fields();
        return f.length == 2 && f[0].name().equals("key") && f[0].dataType() instanceof StringType
                && f[1].name().equals("value") && f[1].dataType() instanceof BinaryType;
    }
}
