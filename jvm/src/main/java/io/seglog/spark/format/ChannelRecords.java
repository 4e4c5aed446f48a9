package io.seglog.spark.format;

import java.io.File;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.nio.channels.FileChannel;

import org.apache.kafka.common.record.FileRecords;

/**
 * Kafka's {@link FileRecords} over a channel we give it: a tiered segment's bytes held in memory
 * ({@link RemoteSegmentCache.CachedLog#channel}) are walked by the same batch iterator and checks as a local file.
 * Kafka takes a caller's channel only through a package-private constructor ({@code FileRecords(File, FileChannel,
 * int end)}), so it is reached once, here, by reflection (kafka-clients is on the class path, not a named module);
 * the constructor reads only the channel's {@code size()} and sets its {@code position}.
 */
final class ChannelRecords {
    private static final MethodHandle NEW;

    static {
        try {
            Constructor<FileRecords> c = FileRecords.class.getDeclaredConstructor(File.class, FileChannel.class, int.class);
            c.setAccessible(true);
            NEW = MethodHandles.lookup().unreflectConstructor(c)
                .asType(MethodType.methodType(FileRecords.class, File.class, FileChannel.class, int.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new ExceptionInInitializerError("kafka-clients' FileRecords(File, FileChannel, int) is not reachable: " + e);
        }
    }

    private ChannelRecords() {
    }

    /** The records of {@code channel}, all {@code size} bytes; {@code name} is what Kafka's own messages call it. */
    static FileRecords of(String name, FileChannel channel, int size) throws IOException {
        try {
            return (FileRecords) NEW.invokeExact(new File(name), channel, size);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
