package io.seglog.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.nio.file.Paths;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The vector files under tests/conformance/ that the JUnit runners and the pytest runners both read (one file per rule
 * that Python and Java implement alike). The folder comes from the system property {@code seglog.conformance.corpus}
 * (the corpus folder, whose siblings the vector files are), else the checkout's own.
 */
public final class ConformanceVectors {
    private ConformanceVectors() {}

    /** The vector file {@code name} (for example {@code "root_uris.json"}). */
    public static Path path(String name) {
        return Paths.get(System.getProperty("seglog.conformance.corpus", "../tests/conformance/corpus"))
            .toAbsolutePath().normalize().resolveSibling(name);
    }

    /** The vector file {@code name}, parsed. */
    public static JsonNode read(String name) {
        try {
            return new ObjectMapper().readTree(path(name).toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the vector file " + path(name), e);
        }
    }
}
