package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.Test;

/**
 * The key/value vector that points into the batch buffers: every getter Spark calls for a binary column (getBinary,
 * isNullAt, hasNull, numNulls, and getUTF8String for a cast), through a ColumnarBatch's rows and Spark's own
 * UnsafeProjection (what ColumnarToRow's copy does), nulls, reuse after reset, the capacity, and a refusal naming
 * the column kind for a getter of another type.
 */
class BatchBytesVectorTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void rowsReadAsAppendedNullsIncluded() {
        byte[] buffer = utf8("..key-one..value-é..");
        BatchBytesVector v = new BatchBytesVector(4);
        assertEquals(DataTypes.BinaryType, v.dataType());
        v.append(buffer, 2, 7);
        v.appendNull();
        v.append(buffer, 11, 8);
        v.append(buffer, 0, 0);                                  // an empty value is not a null
        assertEquals(4, v.rows());
        assertTrue(v.hasNull());
        assertEquals(1, v.numNulls());
        assertFalse(v.isNullAt(0));
        assertTrue(v.isNullAt(1));
        assertArrayEquals(utf8("key-one"), v.getBinary(0));
        assertNull(v.getBinary(1));
        assertArrayEquals(utf8("value-é"), v.getBinary(2));
        assertArrayEquals(new byte[0], v.getBinary(3));
        assertEquals("value-é", v.getUTF8String(2).toString());
        assertNull(v.getUTF8String(1));

        byte[] got = v.getBinary(0);                             // a copy: Spark may keep or change it
        got[0] = 'X';
        assertArrayEquals(utf8("key-one"), v.getBinary(0));

        v.reset();
        assertEquals(0, v.rows());
        assertFalse(v.hasNull());
        assertEquals(0, v.numNulls());
        v.append(buffer, 2, 3);
        assertArrayEquals(utf8("key"), v.getBinary(0));
        assertFalse(v.isNullAt(0));
    }

    @Test
    void aColumnarBatchOfItReadsAsRowsAndThroughSparksProjection() {
        byte[] buffer = utf8("abcdefgh");
        BatchBytesVector key = new BatchBytesVector(3), value = new BatchBytesVector(3);
        key.append(buffer, 0, 1);
        value.append(buffer, 1, 3);
        key.appendNull();
        value.append(buffer, 4, 4);
        key.append(buffer, 7, 1);
        value.appendNull();
        ColumnarBatch batch = new ColumnarBatch(new ColumnVector[] {key, value});
        batch.setNumRows(3);
        StructType schema = new StructType().add("key", "binary").add("value", "binary");
        UnsafeProjection project = UnsafeProjection.create(schema);
        String[][] want = {{"a", "bcd"}, {null, "efgh"}, {"h", null}};
        Iterator<InternalRow> rows = batch.rowIterator();
        for (String[] w : want) {
            InternalRow row = rows.next();
            InternalRow copied = project.apply(row).copy();
            for (int c = 0; c < 2; c++) {
                if (w[c] == null) {
                    assertTrue(row.isNullAt(c));
                    assertTrue(copied.isNullAt(c));
                } else {
                    assertArrayEquals(utf8(w[c]), row.getBinary(c));
                    assertArrayEquals(utf8(w[c]), copied.getBinary(c));
                }
            }
        }
        assertFalse(rows.hasNext());
        batch.close();
    }

    @Test
    void itHoldsNoMoreThanItsCapacity() {
        BatchBytesVector v = new BatchBytesVector(2);
        v.append(new byte[1], 0, 1);
        v.appendNull();
        assertThrows(ArrayIndexOutOfBoundsException.class, () -> v.append(new byte[1], 0, 1));
    }

    @Test
    void gettersOfOtherTypesAreRefusedNamingTheColumn() {
        BatchBytesVector v = new BatchBytesVector(1);
        v.append(new byte[8], 0, 8);
        Executable[] others = {() -> v.getBoolean(0), () -> v.getByte(0), () -> v.getShort(0), () -> v.getInt(0),
            () -> v.getLong(0), () -> v.getFloat(0), () -> v.getDouble(0), () -> v.getArray(0), () -> v.getMap(0),
            () -> v.getDecimal(0, 10, 2), () -> v.getChild(0)};
        for (Executable e : others) {
            UnsupportedOperationException x = assertThrows(UnsupportedOperationException.class, e);
            assertTrue(x.getMessage().contains("binary column"), x.getMessage());
        }
    }

    @FunctionalInterface
    interface Executable extends org.junit.jupiter.api.function.Executable {
        void run();

        @Override
        default void execute() {
            run();
        }
    }
}
