package io.seglog.spark.tools;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.seglog.spark.format.AppendRules;
import io.seglog.spark.format.CommitLogReader;
import io.seglog.spark.format.CommitLogWriter;
import io.seglog.spark.format.CommittedEndRollBack;
import io.seglog.spark.format.StagedPublisher;
import io.seglog.spark.format.StagedSegment;
import io.seglog.spark.format.CommitState;
import io.seglog.spark.format.FileLock;
import io.seglog.spark.format.PythonJson;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicConfigRules;

/**
 * The JVM's writers of the shared formats, one call per run, for the differential tests that hold them
 * to the Python core's (tests/sink/test_jvm_formats.py): {@code java -cp <jar>:<spark jars>
 * io.seglog.spark.tools.FormatTool COMMAND ARGS}. Prints one JSON line of result; an error is printed
 * as {@code {"error": "<class>", "message": ...}} with exit status 1, so a test can assert the refusal.
 */
public final class FormatTool {
    private FormatTool() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("serve")) {
            serve();
            return;
        }
        try {
            System.out.println(run(args[0], Arrays.asList(args).subList(1, args.length)));
        } catch (RuntimeException e) {
            System.out.println("{\"error\": \"" + e.getClass().getSimpleName() + "\", \"message\": "
                    + jsonString(String.valueOf(e.getMessage())) + "}");
            System.exit(1);
        }
    }

    /** A metadata log's state as the differential test compares it (tests/remote/test_jvm_remote_meta.py). */
    private static String remoteState(io.seglog.spark.format.RemoteSegmentLog.State s) {
        StringBuilder out = new StringBuilder("{\"live\": [");
        String sep = "";
        for (io.seglog.spark.format.RemoteSegmentLog.Entry e : s.live.values()) {
            out.append(sep).append('[').append(e.base()).append(", ").append(e.next()).append(", ").append(e.last()).append(", ")
                .append(e.maxTs()).append(", ").append(e.log().size()).append(']');
            sep = ", ";
        }
        return out.append("], \"deleting\": ").append(s.deleting.keySet()).append(", \"deleted\": ").append(s.deleted)
            .append(", \"start\": ").append(s.start() < 0 ? "null" : String.valueOf(s.start()))
            .append(", \"end\": ").append(s.end() < 0 ? "null" : String.valueOf(s.end()))
            .append(", \"torn\": ").append(s.torn).append('}').toString();
    }

    /**
     * Many calls in one JVM (a property test makes hundreds): each stdin line a JSON array of strings, the
     * command and its arguments; each answered with one JSON line, an error as {@code {"error": ...}}.
     */
    static void serve() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            List<String> call = json.readValue(line, new com.fasterxml.jackson.core.type.TypeReference<List<String>>() {});
            String answer;
            try {
                answer = run(call.get(0), call.subList(1, call.size()));
            } catch (RuntimeException e) {
                answer = "{\"error\": \"" + e.getClass().getSimpleName() + "\", \"message\": "
                        + jsonString(String.valueOf(e.getMessage())) + "}";
            }
            System.out.println(answer.replace("\n", " "));
            System.out.flush();
        }
    }

    static String run(String command, List<String> a) throws Exception {
        switch (command) {
            case "commit": {   // ROOT TOPIC WRITER BATCH ALLOW_LOWER(true|false) RETAIN P=END...
                Map<Integer, Long> ends = new HashMap<>();
                for (String pe : a.subList(6, a.size())) {
                    String[] kv = pe.split("=");
                    ends.put(Integer.parseInt(kv[0]), Long.parseLong(kv[1]));
                }
                CommitState s = new CommitLogWriter(Path.of(a.get(0)), a.get(1), Integer.parseInt(a.get(5)))
                        .commit(a.get(2), Long.parseLong(a.get(3)), ends, Boolean.parseBoolean(a.get(4)));
                return s.toJson();
            }
            case "commit-series": {   // ROOT TOPIC WRITER PARTITION COUNT: batch i commits end i + 1
                CommitLogWriter w = new CommitLogWriter(Path.of(a.get(0)), a.get(1));
                int p = Integer.parseInt(a.get(3));
                CommitState s = null;
                for (int i = 0; i < Integer.parseInt(a.get(4)); i++) {
                    s = w.commit(a.get(2), i, Map.of(p, (long) i + 1), false);
                }
                return s == null ? "null" : s.toJson();
            }
            case "lock-path":  // ROOT NAME
                return PythonJson.string(FileLock.lockPath(Path.of(a.get(0)), a.get(1)).toString());
            case "create-topic": {   // ROOT TOPIC PARTITIONS KEY=VALUE...
                Map<String, Object> config = new java.util.LinkedHashMap<>();
                for (String kv : a.subList(3, a.size())) {
                    int eq = kv.indexOf('=');
                    config.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                return TopicCatalog.create(Path.of(a.get(0)), a.get(1), Integer.parseInt(a.get(2)), config)
                        .toJson().replace("\n", "");
            }
            case "forget-topic":       // ROOT TOPIC
                return Boolean.toString(TopicCatalog.forgetUncommitted(Path.of(a.get(0)), a.get(1)));
            case "remote-states": {   // META_FILE...: each remote segment metadata log's state, or its error
                StringBuilder out = new StringBuilder("[");
                for (String file : a) {
                    if (out.length() > 1) out.append(", ");
                    try {
                        String state = remoteState(io.seglog.spark.format.RemoteSegmentLog.read(Path.of(file)));
                        out.append("{\"ok\": ").append(state).append('}');
                    } catch (io.seglog.spark.format.CorruptLogException e) {
                        out.append("{\"error\": ").append(PythonJson.string(e.getMessage())).append('}');
                    }
                }
                return out.append(']').toString();
            }
            case "validate-configs": { // stdin: one JSON object of key -> value per line
                com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
                StringBuilder out = new StringBuilder("[");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    Map<String, Object> config = json.readValue(line, new com.fasterxml.jackson.core.type.TypeReference<java.util.LinkedHashMap<String, Object>>() {});
                    config.replaceAll((k, v) -> v instanceof Integer ? (Object) ((Integer) v).longValue() : v);
                    if (out.length() > 1) out.append(", ");
                    try {
                        String ok = json.writeValueAsString(TopicConfigRules.requested(config, "config"));
                        out.append("{\"ok\": ").append(ok).append('}');
                    } catch (io.seglog.spark.format.TopicConfigException e) {
                        out.append("{\"error\": ").append(PythonJson.string(e.getMessage())).append('}');
                    }
                }
                return out.append(']').toString();
            }
            case "stage": {   // PLAN_JSON_FILE ROWS_JSON_FILE: rows [{base, n, p, key, value, ts_ms}] staged as one task
                com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
                java.util.List<org.apache.spark.sql.catalyst.InternalRow> rows = new java.util.ArrayList<>();
                for (com.fasterxml.jackson.databind.JsonNode r : json.readTree(Path.of(a.get(1)).toFile())) {
                    rows.add(new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(new Object[] {
                        r.get("base").asInt(), r.get("n").asInt(), r.get("p").isNull() ? null : r.get("p").asInt(),
                        r.get("key").isNull() ? null : r.get("key").asText().getBytes(StandardCharsets.UTF_8),
                        r.get("value").asText().getBytes(StandardCharsets.UTF_8),
                        r.get("ts_ms").isNull() ? null : r.get("ts_ms").asLong() * 1000, null}));
                }
                return io.seglog.spark.write.StagedWrite.writeRows(java.nio.file.Files.readString(Path.of(a.get(0))), rows.iterator());
            }
            case "publish": {  // ROOT TOPIC PARTITION REPORT_JSON_FILE SLOT RENAME_MIN_BYTES KEY=VALUE...: under the partition's lock
                com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
                java.util.List<StagedSegment> staged = new java.util.ArrayList<>();
                for (String report : a.get(3).split(",")) {   // several reports: their segments in that order
                    for (com.fasterxml.jackson.databind.JsonNode o : json.readTree(Path.of(report).toFile()).get("outputs")) {
                        if (o.get("slot").asInt() != Integer.parseInt(a.get(4))) continue;
                        for (com.fasterxml.jackson.databind.JsonNode g : o.get("segments")) {
                            staged.add(new StagedSegment(g.get("stem").asText(), g.get("size").asLong(), g.get("records").asLong(),
                                    g.get("batches").asInt(), g.get("durable").asBoolean()));
                        }
                    }
                }
                Map<String, Object> config = new java.util.LinkedHashMap<>();
                for (String kv : a.subList(6, a.size())) {
                    int eq = kv.indexOf('=');
                    config.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                AppendRules rules = io.seglog.spark.write.TopicTarget.appendRules(TopicConfigRules.validate(config, null, "config"));
                Path root = Path.of(a.get(0));
                int partition = Integer.parseInt(a.get(2));
                try (FileLock lock = FileLock.partition(root, a.get(1), partition).acquire(60_000L)) {
                    StagedPublisher.Result r = StagedPublisher.publish(root, a.get(1), partition, staged, rules, Long.parseLong(a.get(5)));
                    return "{\"start\": " + r.start() + ", \"end\": " + r.end() + ", \"bases\": " + r.bases()
                            + ", \"copied\": " + r.copied() + "}";
                }
            }
            case "rollback": { // ROOT TOPIC PARTITION COMMITTED SEGMENT_INDEX_BYTES, under the partition's lock
                Path root = Path.of(a.get(0));
                int partition = Integer.parseInt(a.get(2));
                try (FileLock lock = FileLock.partition(root, a.get(1), partition).acquire(60_000L)) {
                    CommittedEndRollBack.Result r = CommittedEndRollBack.rollBack(root, a.get(1), partition,
                            Long.parseLong(a.get(3)), Integer.parseInt(a.get(4)));
                    return "{\"cut\": " + r.cut() + ", \"end\": " + r.logEnd() + "}";
                }
            }
            case "stage-config": {   // KEY=VALUE...: the stager's rules for a topic with that configuration
                Map<String, Object> config = new java.util.LinkedHashMap<>();
                for (String kv : a) {
                    int eq = kv.indexOf('=');
                    config.put(kv.substring(0, eq), kv.substring(eq + 1));
                }
                return io.seglog.spark.write.TopicTarget.stageConfig(TopicConfigRules.validate(config, null, "config")).toJson();
            }
            case "latest":     // ROOT TOPIC
                return CommitLogReader.latest(Path.of(a.get(0)), a.get(1)).map(CommitState::toJson).orElse("null");
            case "lock": {     // ROOT NAME TIMEOUT_MS: hold the lock until a line (or EOF) on stdin
                FileLock lock = new FileLock(FileLock.lockPath(Path.of(a.get(0)), a.get(1)), a.get(1));
                lock.acquire(Long.parseLong(a.get(2)));
                System.out.println("{\"locked\": true}");
                System.out.flush();
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
                lock.release();
                return "{\"released\": true}";
            }
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    static String jsonString(String s) {
        return PythonJson.string(s);
    }
}
