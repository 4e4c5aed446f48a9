package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** A refused record's key is named as Python shows bytes (repr), its first 40 bytes: the sink's messages
 *  (the expected strings are CPython's repr of the same bytes). */
class ShowKeyTest {
    private static String show(String s) {
        return SegmentStager.showKey(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    @Test
    void asPythonsRepr() {
        assertEquals("null", SegmentStager.showKey(null));
        assertEquals("b'33'", show("33"));
        assertEquals("b''", show(""));
        assertEquals("b\"it's\"", show("it's"));
        assertEquals("b'say \"x\" it\\'s'", show("say \"x\" it's"));
        assertEquals("b'a\\\\b\\t\\n\\r\\x00\\xff'", show("a\\b\t\n\r\u0000\u00ff"));
        assertEquals("b'" + "k".repeat(40) + "'...", show("k".repeat(41)));
        assertEquals("b'" + "k".repeat(40) + "'", show("k".repeat(40)));
    }
}
