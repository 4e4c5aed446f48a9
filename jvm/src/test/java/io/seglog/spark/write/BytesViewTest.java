package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.junit.jupiter.api.Test;

/** A view reads an UnsafeRow's binary fields in place, and its reused arrays hold each row's bytes. */
class BytesViewTest {
    private static UnsafeRow row(byte[] a, byte[] b) {
        UnsafeRowWriter w = new UnsafeRowWriter(2);
        w.reset();
        w.zeroOutNullBytes();
        if (a == null) {
            w.setNullAt(0);
        } else {
            w.write(0, a);
        }
        w.write(1, b);
        return w.getRow();
    }

    @Test
    void readsUnsafeRowFieldsInPlace() {
        byte[] big = new byte[1000];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 7);
        }
        UnsafeRow r = row(new byte[] {1, 2, 3}, big);
        BytesView v = new BytesView();
        assertArrayEquals(new byte[] {1, 2, 3}, v.at(r, 0).array());
        assertEquals(1000, v.at(r, 1).length());
        byte[] dst = new byte[1010];
        v.copyTo(dst, 10);
        for (int i = 0; i < big.length; i++) {
            assertEquals(big[i], dst[10 + i]);
        }
        assertNull(new BytesView().at(row(null, big), 0).array());
        assertEquals(-1, new BytesView().at(row(null, big), 0).length());
    }

    @Test
    void shortArraysAreReusedPerLengthAndHoldTheLatestRow() {
        BytesView v = new BytesView();
        byte[] first = v.at(new byte[] {9, 9}).array();
        byte[] second = v.at(new byte[] {4, 5}).array();
        assertSame(first, second);
        assertArrayEquals(new byte[] {4, 5}, second);
        byte[] three = v.at(new byte[] {1, 2, 3}).array();
        assertNotSame(second, three);
        byte[] longOne = new byte[300];
        assertNotSame(v.at(longOne).array(), v.at(longOne).array());
    }
}
