package io.seglog.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.read.SeglogConfigException;
import io.seglog.spark.read.SeglogSchema;

/** A write's table (issue 41): Spark asks it for its schema while planning every write; its options (a write's) are
 *  not parsed as a read's, which would refuse them anew at each call. A read's are parsed once. */
class SeglogTableTest {
    @TempDir
    Path root;

    private Map<String, String> write() {
        Map<String, String> o = new LinkedHashMap<>();
        o.put("path", root.toString());
        o.put("topic", "small");
        o.put("partitions", "4");
        o.put("txnAppId", "app");
        o.put("txnVersion", "5");
        return o;
    }

    @Test
    void aWritesTableParsesNoReadOptions() {
        SeglogProvider provider = new SeglogProvider();
        SeglogTable table = (SeglogTable) provider.getTable(SeglogSchema.of(false), new Transform[0], write());
        for (int i = 0; i < 3; i++) {
            assertEquals(SeglogSchema.of(false), table.schema());
            assertEquals("seglog[" + root + "]", table.name());
        }
        assertEquals(0, provider.parses, "a write's options were parsed as a read's");
        // a scan of that table is still refused naming the option (the reader's message)
        SeglogConfigException refused = assertThrows(SeglogConfigException.class,
                () -> table.newScanBuilder(new CaseInsensitiveStringMap(Map.of())));
        assertEquals(true, refused.getMessage().contains("unknown option 'partitions'"), refused.getMessage());
    }

    @Test
    void aReadsTableParsesItsOptionsOnce() {
        SeglogProvider provider = new SeglogProvider();
        Map<String, String> read = Map.of("path", root.toString(), "subscribe", "small", "includeHeaders", "true");
        SeglogTable table = (SeglogTable) provider.getTable(null, new Transform[0], read);
        for (int i = 0; i < 3; i++) {
            assertEquals(SeglogSchema.of(true), table.schema());
            assertEquals(true, table.name().startsWith("seglog[" + root + ":"), table.name());
        }
        assertEquals(1, provider.parses);
    }
}
