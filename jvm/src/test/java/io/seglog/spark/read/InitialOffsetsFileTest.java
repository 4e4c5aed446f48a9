package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Item 15 of issue 23: the initial offsets file is written once; a second writer (a query attempt racing
 * the first) reads the first's, as Spark's HDFSMetadataLog ensures, and never overwrites it.
 */
class InitialOffsetsFileTest {
    private static SeglogSourceOffset at(long offset) {
        return new SeglogSourceOffset(Map.of("t", Map.of(0, offset)));
    }

    @Test
    void theFirstWriterWins(@TempDir Path cp) throws Exception {
        org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(cp.toUri().toString(), "seglog-initial-offsets.json");
        Configuration conf = new Configuration();
        // The second attempt resolves its offsets (100) while the first publishes its own (7) meanwhile.
        SeglogSourceOffset got = InitialOffsetsFile.getOrCreate(file, conf, () -> {
            SeglogSourceOffset first = InitialOffsetsFile.getOrCreate(file, conf, () -> at(7));
            assertEquals(at(7).json(), first.json());
            return at(100);
        });
        assertEquals(at(7).json(), got.json());
        assertEquals(at(7).json(), Files.readString(cp.resolve("seglog-initial-offsets.json"), StandardCharsets.UTF_8));
        // later attempts read it as it is
        assertEquals(at(7).json(), InitialOffsetsFile.getOrCreate(file, conf, () -> at(999)).json());
        try (var names = Files.list(cp)) {
            assertEquals(1, names.filter(p -> p.getFileName().toString().contains("seglog-initial-offsets")).count());
        }
    }
}
