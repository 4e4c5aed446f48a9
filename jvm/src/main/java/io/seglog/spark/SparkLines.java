package io.seglog.spark;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;

/**
 * The one home of what differs between the Spark lines the connector serves (seglog.jvm.JARS, docs/spark-notes.md):
 * Spark 3.5 (Scala 2.12, Hadoop 3.3.4) and 4.0 to 4.3 (Scala 2.13, Hadoop 3.4.1 to 3.5.0). The same source compiles
 * against each line's own jars (jvm/pom.xml, profile spark-3.5: Spark 3.5.0, Hadoop 3.3.4), so nothing here names a
 * class or method one line lacks: those are reached by reflection, where the running line has them.
 */
public final class SparkLines {
    private SparkLines() {}

    /** Hadoop 3.3.5 added vectored reads (FileRange); Spark 3.5 ships 3.3.4. */
    public static final boolean VECTORED_READS = present("org.apache.hadoop.fs.FileRange");

    private static boolean present(String className) {
        try {
            Class.forName(className, false, SparkLines.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** A session's SQL settings as a Java map: Scala's collection converters differ between 2.12 and 2.13, a
     *  Scala iterator does not. */
    public static Map<String, String> sessionConf(SparkSession session) {
        Map<String, String> out = new LinkedHashMap<>();
        scala.collection.Iterator<scala.Tuple2<String, String>> it = session.conf().getAll().iterator();
        while (it.hasNext()) {
            scala.Tuple2<String, String> kv = it.next();
            out.put(kv._1(), kv._2());
        }
        return out;
    }

    /** A classic Dataset's QueryExecution: Spark 4 moved `queryExecution()` to org.apache.spark.sql.classic.Dataset
     *  (3.5 has it on org.apache.spark.sql.Dataset); QueryExecution itself is the same class on every line. */
    public static QueryExecution queryExecution(Object dataset) {
        try {
            return (QueryExecution) dataset.getClass().getMethod("queryExecution").invoke(dataset);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) throw (RuntimeException) cause;
            throw new IllegalStateException("queryExecution() of " + dataset.getClass().getName() + " failed", cause);
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IllegalArgumentException("not a classic Spark Dataset (no queryExecution()): "
                + (dataset == null ? "null" : dataset.getClass().getName()), e);
        }
    }

    /**
     * Read each range {@code [offsets[i], offsets[i] + lengths[i])} of {@code in} into a buffer from {@code allocate}
     * (called with the range's length; the buffer's position 0 to its limit is filled): one vectored read where Hadoop
     * has it (S3A issues the ranges as parallel ranged GETs), else positioned reads one after another. The caller
     * holds the stream's lock. Returned: each range's buffer, flipped to its bytes. Thrown: a range's failure, and
     * then a buffer {@code allocate} gave may still be written by a read in flight: the caller must not reuse any.
     */
    public static List<ByteBuffer> readRanges(FSDataInputStream in, long[] offsets, int[] lengths,
                                              IntFunction<ByteBuffer> allocate) throws Exception {
        List<ByteBuffer> out = new ArrayList<>(offsets.length);
        if (VECTORED_READS) {
            Vectored.read(in, offsets, lengths, allocate, out);
            return out;
        }
        for (int i = 0; i < offsets.length; i++) {
            ByteBuffer buf = allocate.apply(lengths[i]);
            buf.limit(buf.position() + lengths[i]);
            readFully(in, offsets[i], buf);
            buf.flip();
            out.add(buf);
        }
        return out;
    }

    /** Fills {@code buf} from its position to its limit with the bytes at {@code pos} on of {@code in}: a heap
     *  buffer's array directly, a direct one through a small array (S3A's stream reads into arrays only: Hadoop's
     *  positioned ByteBuffer read is not S3A's). */
    public static void readFully(FSDataInputStream in, long pos, ByteBuffer buf) throws IOException {
        int len = buf.remaining();
        if (buf.hasArray()) {
            in.readFully(pos, buf.array(), buf.arrayOffset() + buf.position(), len);
            buf.position(buf.limit());
            return;
        }
        byte[] bounce = new byte[Math.min(len, BOUNCE)];
        for (int done = 0; done < len; ) {
            int n = Math.min(bounce.length, len - done);
            in.readFully(pos + done, bounce, 0, n);
            buf.put(bounce, 0, n);
            done += n;
        }
    }

    /** Bytes copied at a time into a direct buffer (as Hadoop's own VectoredReadUtils does it). */
    public static final int BOUNCE = 64 << 10;

    /** Hadoop's vectored read, reached by reflection: the 3.5 build compiles against Hadoop 3.3.4, which lacks it. */
    private static final class Vectored {
        private static final Method CREATE, GET_DATA, READ_VECTORED;
        static {
            try {
                Class<?> range = Class.forName("org.apache.hadoop.fs.FileRange");
                CREATE = range.getMethod("createFileRange", long.class, int.class);
                GET_DATA = range.getMethod("getData");
                READ_VECTORED = FSDataInputStream.class.getMethod("readVectored", List.class, IntFunction.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);     // VECTORED_READS said FileRange is here
            }
        }

        static void read(FSDataInputStream in, long[] offsets, int[] lengths, IntFunction<ByteBuffer> allocate,
                         List<ByteBuffer> out) throws Exception {
            List<Object> ranges = new ArrayList<>(offsets.length);
            for (int i = 0; i < offsets.length; i++) ranges.add(CREATE.invoke(null, offsets[i], lengths[i]));
            try {
                READ_VECTORED.invoke(in, ranges, allocate);
                for (Object r : ranges) out.add(((CompletableFuture<?>) GET_DATA.invoke(r)).thenApply(ByteBuffer.class::cast).get());
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                throw cause instanceof Exception ? (Exception) cause : new IOException(cause);
            }
        }
    }
}
