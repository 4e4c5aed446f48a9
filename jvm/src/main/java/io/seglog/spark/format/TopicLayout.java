package io.seglog.spark.format;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Which topics and partitions a log root holds (docs/format.md "Files"): a topic's partitions are 0 to
 * its recorded count ({@code _seglog/topics/<topic>.json}, written once) plus any partition folder
 * found. A partition the sink never wrote has no folder and reads as empty.
 */
public final class TopicLayout {
    private static final Pattern PARTITION_DIR = Pattern.compile("([a-zA-Z0-9._-]{1,249})-(\\d+)");
    private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");
    private static final ObjectMapper JSON = new ObjectMapper();

    private TopicLayout() {}

    /** Kafka's topic rule: no name can make a path leave the root. */
    public static boolean validTopic(String name) {
        return TOPIC.matcher(name).matches() && !name.equals(".") && !name.equals("..");
    }

    /**
     * Kafka's {@code Topic.hasCollision}: '.' and '_' name one metric, so a new topic that differs from an existing one
     * only there collides with it (Kafka refuses it). The existing topic it collides with (the first in sorted
     * order), or null; a topic never collides with itself. indexer/names.py's colliding_topic is the same rule
     * (tests/conformance/topic_names.json pins both).
     */
    public static String collidingTopic(String topic, java.util.Collection<String> existing) {
        String key = topic.replace('.', '_');
        return new TreeSet<>(existing).stream()
            .filter(t -> !t.equals(topic) && t.replace('.', '_').equals(key))
            .findFirst().orElse(null);
    }

    /** {@code <root>/<topic>-<partition>}; a symbolic link there is refused ({@link RootFiles#refuseSymlink}): it
     *  would lead to another root's segments (a write or a roll back would change them). */
    public static Path partitionDir(Path root, String topic, int partition) {
        Path dir = root.resolve(topic + "-" + partition);
        RootFiles.refuseSymlink(dir);
        return dir;
    }

    private static List<String[]> folders(Path root) {
        List<String[]> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                Matcher m = PARTITION_DIR.matcher(name);
                if (!name.equals("_seglog") && m.matches() && !m.group(1).equals(".") && !m.group(1).equals("..")) {
                    out.add(new String[] {m.group(1), m.group(2)});
                }
            }
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            throw new CorruptLogException("cannot list the log root " + root + ": " + e, e);
        }
        return out;
    }

    /** The recorded partition count of {@code topic}, or 0 when it was never created. */
    public static int recordedPartitions(Path root, String topic) {
        Path file = RootFiles.metaPath(root, "topics", topic + ".json");
        try {
            JsonNode doc = JSON.readTree(Files.readAllBytes(file));
            if (!topic.equals(doc.get("name").asText())) {
                throw new CorruptLogException("topic metadata " + file + " names topic " + doc.get("name") + ", not " + topic);
            }
            int n = doc.get("partitions").asInt(-1);
            if (n < 1) throw new CorruptLogException("topic metadata " + file + ": partitions = " + doc.get("partitions"));
            return n;
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException | NullPointerException e) {
            throw new CorruptLogException("topic metadata " + file + " is unreadable: " + e, e);
        }
    }

    /** The topic's recorded config has {@code cleanup.policy} holding {@code compact} (a comma list or a
     *  JSON list, as the Python core's conf/topic_config.py accepts); false when it was never created. */
    public static boolean recordedCompacted(Path root, String topic) {
        Path file = RootFiles.metaPath(root, "topics", topic + ".json");
        JsonNode policy;
        try {
            JsonNode config = JSON.readTree(Files.readAllBytes(file)).get("config");
            policy = config == null ? null : config.get("cleanup.policy");
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw new CorruptLogException("topic metadata " + file + " is unreadable: " + e, e);
        }
        if (policy == null || policy.isNull()) return false;
        List<String> names = new ArrayList<>();
        if (policy.isArray()) {
            for (JsonNode n : policy) names.add(n.asText());
        } else {
            names.add(policy.asText());
        }
        return compacts(names);
    }

    /** A recorded config's {@code cleanup.policy} value ({@link TopicMetadata#config}: a comma list, a list of them, or
     *  null) holds {@code compact}: {@link #recordedCompacted}'s rule, on a config already read. */
    public static boolean compacts(Object policy) {
        if (policy == null) return false;
        if (policy instanceof java.util.Collection) {
            for (Object p : (java.util.Collection<?>) policy) if (compacts(p)) return true;
            return false;
        }
        for (String n : policy.toString().split(",")) if (n.trim().equals("compact")) return true;
        return false;
    }

    /** Whether {@code topic} exists under the root: recorded, or with a partition folder (a root written before
     *  topics were recorded), as the SQL catalog lists it. */
    public static boolean exists(Path root, String topic) {
        return !partitions(root, topic).isEmpty();
    }

    public static List<Integer> partitions(Path root, String topic) {
        TreeSet<Integer> found = new TreeSet<>();
        for (String[] f : folders(root)) {
            if (f[0].equals(topic)) found.add(Integer.parseInt(f[1]));
        }
        int n = recordedPartitions(root, topic);
        for (int p = 0; p < n; p++) found.add(p);
        return new ArrayList<>(found);
    }

    /** Every topic of the root whose name {@code wanted} accepts, with its partitions: one listing of the root
     *  for them all (a pattern's topics, resolved at every trigger of a stream). */
    public static java.util.Map<String, List<Integer>> partitionsOf(Path root, java.util.function.Predicate<String> wanted) {
        java.util.Map<String, TreeSet<Integer>> found = new java.util.TreeMap<>();
        for (String[] f : folders(root)) {
            if (wanted.test(f[0])) found.computeIfAbsent(f[0], k -> new TreeSet<>()).add(Integer.parseInt(f[1]));
        }
        for (String topic : metadataTopics(root)) {
            if (!wanted.test(topic)) continue;
            TreeSet<Integer> parts = found.computeIfAbsent(topic, k -> new TreeSet<>());
            int n = recordedPartitions(root, topic);
            for (int p = 0; p < n; p++) parts.add(p);
        }
        java.util.Map<String, List<Integer>> out = new java.util.LinkedHashMap<>();
        for (java.util.Map.Entry<String, TreeSet<Integer>> e : found.entrySet()) {
            if (!e.getValue().isEmpty()) out.put(e.getKey(), new ArrayList<>(e.getValue()));
        }
        return out;
    }

    private static List<String> metadataTopics(Path root) {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(RootFiles.metaPath(root, "topics"), "*.json")) {
            for (Path p : ds) {
                String n = p.getFileName().toString();
                out.add(n.substring(0, n.length() - 5));
            }
        } catch (IOException e) {
            // no metadata folder: topics are the folders found
        }
        return out;
    }

    public static List<String> topics(Path root) {
        TreeSet<String> found = new TreeSet<>();
        for (String[] f : folders(root)) found.add(f[0]);
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(RootFiles.metaPath(root, "topics"), "*.json")) {
            for (Path p : ds) {
                String n = p.getFileName().toString();
                found.add(n.substring(0, n.length() - 5));
            }
        } catch (IOException e) {
            // no metadata folder: topics are the folders found
        }
        return new ArrayList<>(found);
    }
}
