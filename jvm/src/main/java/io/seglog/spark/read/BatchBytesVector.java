package io.seglog.spark.read;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A binary column (key or value) whose values stay where they were read: each row is an array, an offset and a
 * length into the record batch's bytes, not a copy in the vector's own store (Spark copies a value anyway when it
 * asks for it, {@link #getBinary}). The arrays must not change until Spark has consumed the batch: the reader holds
 * each batch buffer a row points into until the next columnar batch ({@code BatchBuffer#hold}).
 *
 * <p>Invariant: rows [0, {@link #rows()}) were appended since the last {@link #reset}, at most the capacity given
 * (maxRowsPerBatch): a task's memory is flat whatever the log holds. A null is a row without an array.
 */
final class BatchBytesVector extends ColumnVector {
    private final byte[][] arrays;
    private final int[] offsets;
    private final int[] lengths;
    private int rows;
    private int nulls;

    BatchBytesVector(int capacity) {
        super(DataTypes.BinaryType);
        arrays = new byte[capacity][];
        offsets = new int[capacity];
        lengths = new int[capacity];
    }

    /** Empties the vector for the next batch (the arrays of the last one are left to be overwritten). */
    void reset() {
        rows = 0;
        nulls = 0;
    }

    int rows() {
        return rows;
    }

    /** Appends {@code bytes[offset, offset + length)}, kept by reference. */
    void append(byte[] bytes, int offset, int length) {
        int i = rows++;
        arrays[i] = bytes;
        offsets[i] = offset;
        lengths[i] = length;
    }

    void appendNull() {
        int i = rows++;
        arrays[i] = null;
        nulls++;
    }

    @Override
    public boolean hasNull() {
        return nulls > 0;
    }

    @Override
    public int numNulls() {
        return nulls;
    }

    @Override
    public boolean isNullAt(int rowId) {
        return arrays[rowId] == null;
    }

    @Override
    public byte[] getBinary(int rowId) {
        byte[] a = arrays[rowId];
        if (a == null) return null;
        byte[] out = new byte[lengths[rowId]];
        System.arraycopy(a, offsets[rowId], out, 0, out.length);
        return out;
    }

    /** The bytes read as UTF-8 without a copy (what a cast of the column to a string reads). */
    @Override
    public UTF8String getUTF8String(int rowId) {
        byte[] a = arrays[rowId];
        return a == null ? null : UTF8String.fromBytes(a, offsets[rowId], lengths[rowId]);
    }

    @Override
    public void close() {
        // nothing of its own to free: the arrays belong to the batch buffers
    }

    private UnsupportedOperationException notBinary(String what) {
        return new UnsupportedOperationException("seglog: a binary column (key, value) has no " + what);
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw notBinary("boolean");
    }

    @Override
    public byte getByte(int rowId) {
        throw notBinary("byte");
    }

    @Override
    public short getShort(int rowId) {
        throw notBinary("short");
    }

    @Override
    public int getInt(int rowId) {
        throw notBinary("int");
    }

    @Override
    public long getLong(int rowId) {
        throw notBinary("long");
    }

    @Override
    public float getFloat(int rowId) {
        throw notBinary("float");
    }

    @Override
    public double getDouble(int rowId) {
        throw notBinary("double");
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw notBinary("array");
    }

    @Override
    public ColumnarMap getMap(int ordinal) {
        throw notBinary("map");
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        throw notBinary("decimal");
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw notBinary("child column");
    }
}
