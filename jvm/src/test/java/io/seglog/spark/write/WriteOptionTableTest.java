package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Test;

import io.seglog.spark.OptionTable;

/** WriteOptions against conf/options.yaml (SegmentLogSink is held to the same file by test_option_table.py). */
class WriteOptionTableTest {
    private static final Map<String, JsonNode> TABLE = OptionTable.section("write");

    @Test
    void theJarTakesExactlyTheTablesWriteOptions() {
        TreeSet<String> declared = new TreeSet<>();
        for (String name : TABLE.keySet()) declared.add(name.toLowerCase(Locale.ROOT));
        assertEquals(declared, new TreeSet<>(WriteOptions.OWN));
    }

    @Test
    void defaultsAreTheTables() {
        WriteOptions plain = WriteOptions.parse(Map.of("path", "/data/log", "topic", "t"));
        assertEquals(OptionTable.dflt(TABLE.get("lockTimeoutMs")), String.valueOf(plain.lockTimeoutMs));
        assertEquals(OptionTable.dflt(TABLE.get("renameMinBytes")), String.valueOf(plain.renameMinBytes));
        for (Map.Entry<String, JsonNode> e : TABLE.entrySet()) {
            if (OptionTable.dflt(e.getValue()) != null) {
                assertTrue(e.getKey().equals("lockTimeoutMs") || e.getKey().equals("renameMinBytes"),
                    e.getKey() + " has a default in conf/options.yaml that this test does not compare");
            }
        }
    }

    @Test
    void aValueOfTheWrongTypeIsRefusedNamingTheOption() {
        for (Map.Entry<String, JsonNode> e : TABLE.entrySet()) {
            if (!e.getValue().get("type").asText().equals("int")) continue;
            String name = e.getKey();
            Map<String, String> o = new LinkedHashMap<>();
            o.put("path", "/data/log");
            o.put("topic", "t");
            if (name.equals("txnVersion")) o.put("txnAppId", "app");
            o.put(name, "not-a-value");
            SeglogWriteException x = assertThrows(SeglogWriteException.class, () -> WriteOptions.parse(o), name);
            assertTrue(x.getMessage().contains("'" + name + "'"), x.getMessage());
        }
    }
}
