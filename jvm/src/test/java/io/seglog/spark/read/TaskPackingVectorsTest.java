package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import io.seglog.spark.ConformanceVectors;

/**
 * Task packing ({@link Planner#targetTaskBytes}, {@link Planner#slack}, {@link Planner#pack}) against
 * tests/conformance/task_packing.json, the vectors source/planning.py is held to as well
 * (tests/conformance/test_twin_vectors.py). A range's cuts are the vector's table, answered as
 * PartitionLog.splitOffset answers from an offset index.
 */
class TaskPackingVectorsTest {
    /** The vector's cuts of each range (by topic-partition), offset -> log bytes from the range's start. */
    private static final class TableCuts implements Planner.Cuts {
        final Map<String, TreeMap<Long, Long>> table = new HashMap<>();

        private TreeMap<Long, Long> of(PartitionRange r) {
            return table.get(r.topic + "-" + r.partition + "@" + r.start);
        }

        private long at(PartitionRange r, long offset) {
            return offset == r.start ? 0 : of(r).get(offset);
        }

        @Override
        public long cut(PartitionRange r, long start, long end, long room) {
            long base = at(r, start);
            long within = -1;
            for (Map.Entry<Long, Long> e : of(r).entrySet()) {
                long off = e.getKey();
                if (!(start < off && off < end)) continue;
                if (e.getValue() - base > room) return within >= 0 ? within : off;
                within = off;
            }
            return within;
        }

        @Override
        public long bytes(PartitionRange r, long start, long cut) {
            return at(r, cut) - at(r, start);
        }
    }

    private static String show(List<List<Slice>> tasks) {
        StringBuilder b = new StringBuilder();
        for (List<Slice> t : tasks) b.append(t).append(' ');
        return b.toString().trim();
    }

    @Test
    void packsAsTheVectorsSay() {
        JsonNode cases = ConformanceVectors.read("task_packing.json").get("cases");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            Map<String, String> given = new HashMap<>();
            given.put("path", "/data/log");
            given.put("topic", "a");
            given.put("maxBytesPerTask", c.get("maxBytesPerTask").asText());
            if (!c.get("minPartitions").isNull()) given.put("minPartitions", c.get("minPartitions").asText());
            ReadOptions o = ReadOptions.parse(given);
            TableCuts cuts = new TableCuts();
            List<PartitionRange> ranges = new ArrayList<>();
            long total = 0;
            for (JsonNode r : c.get("ranges")) {
                PartitionRange range = new PartitionRange(r.get("topic").asText(), r.get("partition").asInt(),
                    r.get("start").asLong(), r.get("end").asLong(), r.get("end").asLong(), r.get("bytes").asLong(), null);
                TreeMap<Long, Long> table = new TreeMap<>();
                for (JsonNode cut : r.get("cuts")) table.put(cut.get(0).asLong(), cut.get(1).asLong());
                cuts.table.put(range.topic + "-" + range.partition + "@" + range.start, table);
                ranges.add(range);
                total += range.bytes;
            }
            long target = Planner.targetTaskBytes(total, o, c.get("cores").asInt());
            long slack = Planner.slack(target, o);
            String why = c.get("why").asText();
            assertEquals(c.get("target").asLong(), target, why + ": target");
            assertEquals(c.get("slack").asLong(), slack, why + ": slack");
            List<List<Slice>> want = new ArrayList<>();
            for (JsonNode t : c.get("expected")) {
                List<Slice> task = new ArrayList<>();
                for (JsonNode s : t) task.add(new Slice(s.get(0).asText(), s.get(1).asInt(), s.get(2).asLong(), s.get(3).asLong()));
                want.add(task);
            }
            assertEquals(show(want), show(Planner.pack(ranges, target, slack, cuts)), why);
        }
    }
}
