package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * subscribe / subscribePattern / assign as Spark's Kafka source's consumer strategies, over the topics of a log
 * root: exactly one given, each value checked when parsed, resolved against the root at each planning (a batch
 * refuses what is missing, a stream waits for it), and the options only a broker gives meaning refused.
 */
class TopicSelectionTest {
    @TempDir
    Path root;

    /** events-0, events-1, events.eu-0 and other-0: 10 committed offsets each. */
    private void fourPartitions() {
        for (String[] tp : new String[][] {{"events", "0"}, {"events", "1"}, {"events.eu", "0"}, {"other", "0"}}) {
            segment(partitionDir(root, tp[0], Integer.parseInt(tp[1])), 0, batches(0, 10, 5));
        }
        commit(root, "events", Map.of(0, 10L, 1, 10L));
        commit(root, "events.eu", Map.of(0, 10L));
        commit(root, "other", Map.of(0, 10L));
    }

    private ReadOptions options(String... keysAndValues) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString()));
        for (int i = 0; i < keysAndValues.length; i += 2) o.put(keysAndValues[i], keysAndValues[i + 1]);
        return ReadOptions.parse(o);
    }

    private static List<String> read(ReadOptions o) {
        List<String> out = new ArrayList<>();
        for (List<Slice> task : Planner.plan(o, ScanBounds.NONE, 2, new DataLoss(true))) {
            for (Slice s : task) out.add(s.toString());
        }
        out.sort(null);
        return out;
    }

    private static void refused(Class<? extends RuntimeException> type, Runnable r, String... needles) {
        RuntimeException e = assertThrows(type, r::run);
        for (String n : needles) assertTrue(e.getMessage().contains(n), "'" + n + "' not in: " + e.getMessage());
    }

    @Test
    void aPatternMatchesWholeTopicNamesOfTheRoot() {
        fourPartitions();
        assertEquals(List.of("events-0[0,10)", "events-1[0,10)"), read(options("subscribePattern", "events")));
        assertEquals(List.of("events-0[0,10)", "events-1[0,10)", "events.eu-0[0,10)"),
            read(options("subscribePattern", "events.*")));
        assertEquals(List.of("events.eu-0[0,10)", "other-0[0,10)"), read(options("subscribePattern", "other|.*\\.eu")));
        assertEquals(List.of(), read(options("subscribePattern", "nothing.*")), "a pattern matching nothing reads nothing");
        // An offsets JSON may name only topics the pattern can match, and must cover each topic matched.
        refused(SeglogConfigException.class, () -> options("subscribePattern", "events.*",
            "startingOffsets", "{\"other\":{\"0\":0}}"), "'startingOffsets' names topic 'other'", "pattern 'events.*'");
        refused(NoSuchTopicException.class, () -> read(options("subscribePattern", "events",
            "startingOffsets", "{\"events\":{\"0\":2}}")), "missing: events-1");
    }

    @Test
    void assignReadsOnlyThePartitionsItNames() {
        fourPartitions();
        assertEquals(List.of("events-1[0,10)", "other-0[0,10)"), read(options("assign", "{\"events\":[1],\"other\":[0]}")));
        assertEquals(List.of("events-1[3,10)"), read(options("assign", "{\"events\":[1]}",
            "startingOffsets", "{\"events\":{\"1\":3}}")));
        refused(NoSuchTopicException.class, () -> read(options("assign", "{\"events\":[1,4]}")),
            "'assign' names partitions that topic 'events' does not have: events-4", "(partitions: 0, 1)");
        refused(NoSuchTopicException.class, () -> read(options("assign", "{\"nope\":[0]}")), "topic 'nope' not found");
        // A stream's layout leaves out what does not exist yet: it waits for it.
        assertEquals(Map.of("events", List.of(1)), Planner.layout(options("assign", "{\"events\":[1,4],\"nope\":[0]}"), false));
    }

    @Test
    void aStreamWaitsForATopicNotCreatedYetAndABatchReadRefusesIt() {
        fourPartitions();
        ReadOptions o = options("subscribe", "events,later");
        assertEquals(List.of("events"), new ArrayList<>(Planner.layout(o, false).keySet()));
        refused(NoSuchTopicException.class, () -> Planner.checkLayout(o), "topic 'later' not found", "events, events.eu, other");
        // Offsets named for a topic not there are refused either way: there are no such partitions.
        refused(NoSuchTopicException.class, () -> Planner.layout(options("subscribe", "events,later",
            "startingOffsets", "{\"events\":{\"0\":0,\"1\":0},\"later\":{\"0\":0}}"), false), "names topic 'later'");
        segment(partitionDir(root, "later", 0), 0, batches(0, 10, 5));
        assertEquals(List.of("events", "later"), new ArrayList<>(Planner.layout(o, false).keySet()));
    }

    @Test
    void exactlyOneOfSubscribeSubscribePatternAndAssign() {
        refused(SeglogConfigException.class, () -> options("subscribe", "a", "subscribePattern", "a.*"),
            "exactly one of", "subscribe, subscribePattern");
        refused(SeglogConfigException.class, () -> options("topic", "a", "assign", "{\"a\":[0]}"), "exactly one of");
        refused(SeglogConfigException.class, () -> options("topic", "a", "subscribe", "a"), "exactly one of");
        refused(SeglogConfigException.class, () -> options(), "option 'topic' is required");
    }

    @Test
    void badValuesAreRefusedNamingTheOption() {
        refused(SeglogConfigException.class, () -> options("subscribePattern", "events-(["), "'subscribePattern'");
        refused(SeglogConfigException.class, () -> options("subscribePattern", " "), "'subscribePattern'");
        for (String bad : new String[] {"events", "[0]", "{}", "{\"e\":[]}", "{\"e\":[-1]}", "{\"e\":[\"0\"]}",
            "{\"e\":0}", "{\"e/x\":[0]}"}) {
            refused(SeglogConfigException.class, () -> options("assign", bad), "'assign'");
        }
        refused(SeglogConfigException.class, () -> options("subscribe", "a,,b"), "'subscribe'");
    }

    @Test
    void optionsThatNeedABrokerAreRefusedSayingWhy() {
        for (String key : new String[] {"kafka.bootstrap.servers", "kafka.group.id", "KAFKA.security.protocol",
            "groupIdPrefix", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries"}) {
            refused(BrokerOptionException.class, () -> options("topic", "t", key, "x"), "configures Spark's Kafka source's "
                + "use of a broker", "log root");
        }
        refused(BrokerOptionException.class, () -> options("topic", "t", "kafka.isolation.levle", "read_committed"),
            "did you mean 'kafka.isolation.level'");
        // kafka.isolation.level is the consumer setting seglog honours; other unknown options stay unknown.
        assertTrue(options("topic", "t", "kafka.isolation.level", "read_committed").readCommitted);
        RuntimeException unknown = assertThrows(SeglogConfigException.class, () -> options("topic", "t", "bootstrap", "x"));
        assertTrue(!(unknown instanceof BrokerOptionException) && unknown.getMessage().contains("unknown option 'bootstrap'"),
            unknown.getMessage());
    }
}
