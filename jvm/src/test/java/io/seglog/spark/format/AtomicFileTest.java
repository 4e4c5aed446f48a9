package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Temporary names are unique among a JVM's threads: two sinks of one foreachBatch, each on a pool thread, once read
 *  one nanoTime while creating their topics' metadata, and the second write failed with FileAlreadyExists. */
class AtomicFileTest {
    @TempDir
    Path tmp;

    @Test
    void threadsNeverShareATemporaryName() throws Exception {
        Set<Path> names = ConcurrentHashMap.newKeySet();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 20_000; i++) names.add(AtomicFile.tempSibling(tmp.resolve("x.json")));
                }));
            }
            for (Future<?> f : done) f.get();
        } finally {
            pool.shutdownNow();
        }
        assertEquals(8 * 20_000, names.size());
    }

    @Test
    void topicsCreatedAtOnceFromManyThreadsAreAllRecorded() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<TopicMetadata>> done = new ArrayList<>();
            for (int t = 0; t < 64; t++) {
                String topic = "t" + t;
                done.add(pool.submit(() -> TopicCatalog.create(tmp, topic, 2, new HashMap<String, Object>())));
            }
            for (int t = 0; t < 64; t++) {
                assertEquals("t" + t, done.get(t).get().name());
                assertEquals(2, TopicCatalog.load(tmp, "t" + t).orElseThrow().partitions());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
