package io.seglog.spark.write;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * One binary field's bytes where they already lie (an {@code UnsafeRow}'s memory, or an array), so
 * a record's value is copied once, straight into the batch buffer: no array per row, no second copy.
 * One view per task, re-pointed at each row's field; valid until the row iterator moves on.
 */
final class BytesView {
    private static final int REUSED_MAX = 256;    // arrays up to this length are reused (keys)
    private byte[][] reused;                       // by length, made on first use
    private Object base;
    private long offset;
    private int length = -1;   // -1: null

    /** Point at field {@code ordinal} of {@code row} (binary; may be null). */
    BytesView at(InternalRow row, int ordinal) {
        if (row.isNullAt(ordinal)) {
            length = -1;
        } else if (row instanceof UnsafeRow) {
            // an UnsafeRow's variable-length field: (offset << 32 | size) in its fixed-width slot
            UnsafeRow u = (UnsafeRow) row;
            long offsetAndSize = u.getLong(ordinal);
            base = u.getBaseObject();
            offset = u.getBaseOffset() + (offsetAndSize >>> 32);
            length = (int) offsetAndSize;
        } else {
            at(row.getBinary(ordinal));
        }
        return this;
    }

    /** Point at {@code bytes} (null: a null field). */
    BytesView at(byte[] bytes) {
        base = bytes;
        offset = Platform.BYTE_ARRAY_OFFSET;
        length = bytes == null ? -1 : bytes.length;
        return this;
    }

    static BytesView of(byte[] bytes) {
        return new BytesView().at(bytes);
    }

    boolean isNull() {
        return length < 0;
    }

    /** The byte count (-1: null). */
    int length() {
        return length;
    }

    /** The bytes as an array (null for a null field): for lengths up to 256, one array per length
     *  reused across rows, so it is valid only until the next call (a key: partitioned, then encoded). */
    byte[] array() {
        if (length < 0) {
            return null;
        }
        byte[] out;
        if (length <= REUSED_MAX) {
            if (reused == null) {
                reused = new byte[REUSED_MAX + 1][];
            }
            out = reused[length];
            if (out == null) {
                out = reused[length] = new byte[length];
            }
        } else {
            out = new byte[length];
        }
        copyTo(out, 0);
        return out;
    }

    /** Copy the bytes into {@code dst} at {@code at} (the caller made room). */
    void copyTo(byte[] dst, int at) {
        Platform.copyMemory(base, offset, dst, Platform.BYTE_ARRAY_OFFSET + at, length);
    }
}
