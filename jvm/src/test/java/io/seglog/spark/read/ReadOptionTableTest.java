package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Test;

import io.seglog.spark.OptionTable;

/** ReadOptions against conf/options.yaml (the Python reader is held to the same file by test_option_table.py). */
class ReadOptionTableTest {
    private static final Map<String, JsonNode> TABLE = OptionTable.section("read");

    private static Map<String, String> base(String... kv) {
        Map<String, String> m = new HashMap<>();
        m.put("path", "/data/log");
        m.put("topic", "events");
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    private static boolean streamOnly(JsonNode o) {
        return o.has("only") && o.get("only").asText().equals("stream");
    }

    @Test
    void theJarTakesExactlyTheJvmSide() {
        Set<String> declared = new TreeSet<>();
        TABLE.forEach((name, o) -> { if (OptionTable.jvm(o)) declared.add(name); });
        assertEquals(declared, new TreeSet<>(ReadOptions.KNOWN.values()));
        for (String broker : ReadOptions.BROKER_ONLY.values()) assertTrue(!TABLE.containsKey(broker), broker);
    }

    /** The value the parsed options hold for an option, as the table writes a default. */
    private static String parsedDefault(String name, ReadOptions p) throws ReflectiveOperationException {
        switch (name) {
            case "startingOffsets": return p.starting.kind.name().toLowerCase(java.util.Locale.ROOT);
            case "endingOffsets": return p.ending.kind.name().toLowerCase(java.util.Locale.ROOT);
            case "startingOffsetsByTimestampStrategy": return p.strategyLatest ? "latest" : "error";
            case "isolation.level":
            case "kafka.isolation.level": return p.readCommitted ? ReadOptions.READ_COMMITTED : ReadOptions.READ_UNCOMMITTED;
            case "maxTriggerDelay": return String.valueOf(p.maxTriggerDelayMs);
            default:
                Object v = ReadOptions.class.getField(name).get(p);
                return String.valueOf(v);
        }
    }

    @Test
    void defaultsAreTheTables() throws ReflectiveOperationException {
        ReadOptions batch = ReadOptions.parse(base());
        ReadOptions stream = ReadOptions.parse(base(), true);
        int checked = 0;
        for (Map.Entry<String, JsonNode> e : TABLE.entrySet()) {
            String name = e.getKey();
            JsonNode o = e.getValue();
            String type = o.get("type").asText();
            String want = OptionTable.dflt(o);
            if (type.equals("duration")) want = String.valueOf(ReadOptions.parseDuration(name, want));
            if (want == null) {
                if (!type.equals("int") || name.endsWith("Timestamp")) continue;   // chooses a bound: no field
                want = "0";                                                        // the jar's "not given"
            }
            assertEquals(want, parsedDefault(name, streamOnly(o) ? stream : batch), name + ": the jar's default");
            checked++;
        }
        assertTrue(checked >= 15, "defaults compared: " + checked);
    }

    @Test
    void aValueOfTheWrongTypeIsRefusedNamingTheOption() {
        for (Map.Entry<String, JsonNode> e : TABLE.entrySet()) {
            String type = e.getValue().get("type").asText();
            if (!Set.of("bool", "int", "enum", "duration").contains(type)) continue;
            String name = e.getKey();
            SeglogConfigException x = assertThrows(SeglogConfigException.class,
                () -> ReadOptions.parse(base(name, "not-a-value"), streamOnly(e.getValue())), name);
            assertTrue(x.getMessage().contains("'" + name + "'"), x.getMessage());
        }
    }

    @Test
    void everyAllowedEnumAndBoolValueIsTaken() {
        for (Map.Entry<String, JsonNode> e : TABLE.entrySet()) {
            String type = e.getValue().get("type").asText();
            if (!type.equals("bool") && !type.equals("enum")) continue;
            for (JsonNode v : e.getValue().get("allowed")) ReadOptions.parse(base(e.getKey(), v.asText()));
        }
    }
}
