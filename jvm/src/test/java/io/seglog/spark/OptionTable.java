package io.seglog.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * conf/options.yaml, the one declaration of the read and write options, as the JUnit tests read it: a section
 * line ({@code read:} or {@code write:}) and then one option a line, {@code  name: {JSON}} (the file keeps
 * to that shape so that Jackson reads it without a YAML parser; Python reads the same file as YAML).
 */
public final class OptionTable {
    private OptionTable() {}

    private static final Pattern SECTION = Pattern.compile("^(read|write):\\s*$");
    private static final Pattern OPTION = Pattern.compile("^  ([A-Za-z.]+): (\\{.*\\})\\s*$");

    /** The checkout's conf/options.yaml (the conformance corpus's folder locates the checkout, as ConformanceVectors). */
    public static Path path() {
        return Paths.get(System.getProperty("seglog.conformance.corpus", "../tests/conformance/corpus"))
            .toAbsolutePath().normalize().getParent().getParent().getParent().resolve("conf").resolve("options.yaml");
    }

    /** The options of one section ("read" or "write"), name (as users spell it) -> its JSON, in the file's order. */
    public static Map<String, JsonNode> section(String which) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        String current = null;
        ObjectMapper json = new ObjectMapper();
        try {
            for (String line : Files.readAllLines(path(), StandardCharsets.UTF_8)) {
                if (line.startsWith("#") || line.isBlank()) continue;
                Matcher s = SECTION.matcher(line);
                if (s.matches()) {
                    current = s.group(1);
                    continue;
                }
                Matcher m = OPTION.matcher(line);
                if (!m.matches() || current == null) throw new IllegalStateException("conf/options.yaml: a line not of the shape: " + line);
                if (current.equals(which)) out.put(m.group(1), json.readTree(m.group(2)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path(), e);
        }
        if (out.isEmpty()) throw new IllegalStateException("conf/options.yaml has no " + which + " options");
        return out;
    }

    /** Whether the option is taken by the JVM's parser. */
    public static boolean jvm(JsonNode option) {
        for (JsonNode side : option.get("sides")) if (side.asText().equals("jvm")) return true;
        return false;
    }

    /** The default as text, or null. */
    public static String dflt(JsonNode option) {
        JsonNode d = option.get("default");
        return d == null || d.isNull() ? null : d.asText();
    }
}
