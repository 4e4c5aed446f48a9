package io.seglog.spark.read;

import java.io.Serializable;
import java.nio.file.Paths;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.SerializableConfiguration;

import io.seglog.spark.format.RemoteLocation;
import io.seglog.spark.format.TopicConfigException;

/**
 * The Hadoop configuration that reaches a root's remote tier (docs/tiered-storage.md §6): the session's on the
 * driver (its SparkContext's, with the session's settings over it, as Spark's own sources see it), shipped
 * to executors in a broadcast of Spark's {@link SerializableConfiguration}, as Spark's file sources ship
 * theirs. Broadcast only for a root that records a remote tier: other reads carry nothing.
 *
 * <p>One broadcast per configuration: a read (or a stream's trigger) reuses one of the last {@value #KEPT}
 * broadcasts when its SparkContext is the same and every entry is equal (a stream's session is a clone
 * with entries of its own, so batch reads and streams each keep theirs). Building a broadcast (serializing,
 * size-estimating and shipping about a thousand entries) cost a read of a tiered topic more than its planning.
 */
public final class RemoteConf implements Serializable, Supplier<Configuration> {
    private static final long serialVersionUID = 1L;
    /** No configuration shipped: the driver's session's (or Hadoop's defaults in a JVM without a session). */
    static final RemoteConf SESSION = new RemoteConf(null);

    private final Broadcast<SerializableConfiguration> shipped;

    /** The last configuration shipped: its context, its entries, its broadcast. */
    private record Shipped(org.apache.spark.SparkContext context, Map<String, String> entries,
                           Broadcast<SerializableConfiguration> broadcast) {
    }

    static final int KEPT = 8;
    private static final java.util.LinkedList<Shipped> RECENT = new java.util.LinkedList<>();   // guarded by RemoteConf.class, newest first
    private static final java.util.concurrent.atomic.LongAdder BROADCASTS = new java.util.concurrent.atomic.LongAdder();

    /** Broadcasts of a configuration made in this JVM (tests: a read with an unchanged configuration makes none). */
    public static long broadcasts() {
        return BROADCASTS.sum();
    }

    private RemoteConf(Broadcast<SerializableConfiguration> shipped) {
        this.shipped = shipped;
    }

    /** On the driver, for a reader factory: the session's configuration broadcast when {@code root} has a remote tier. */
    static RemoteConf forExecutors(String root) {
        try {
            if (RemoteLocation.load(Paths.get(root)) == null) return SESSION;
        } catch (TopicConfigException e) {
            return SESSION;      // reported by the read that needs the remote tier, not by reads of local segments
        }
        SparkSession session = active();
        if (session == null) return SESSION;
        Configuration conf = sessionConf(session);
        Map<String, String> entries = new java.util.HashMap<>();
        for (Map.Entry<String, String> e : conf) entries.put(e.getKey(), e.getValue());
        org.apache.spark.SparkContext context = session.sparkContext();
        synchronized (RemoteConf.class) {
            // Invariant: a read ships exactly its session's configuration; a changed entry, or another context, is a new broadcast.
            RECENT.removeIf(s -> s.context.isStopped());
            Shipped found = null;
            for (Shipped s : RECENT) {
                if (s.context == context && s.entries.equals(entries)) {
                    found = s;
                    break;
                }
            }
            if (found == null) {
                JavaSparkContext jsc = JavaSparkContext.fromSparkContext(context);
                found = new Shipped(context, entries, jsc.broadcast(new SerializableConfiguration(conf)));
                BROADCASTS.increment();
            }
            RECENT.remove(found);
            RECENT.addFirst(found);
            while (RECENT.size() > KEPT) RECENT.removeLast();        // dropped: Spark's cleaner removes it once unused
            return new RemoteConf(found.broadcast);
        }
    }

    @Override
    public Configuration get() {
        if (shipped != null) return shipped.value().value();
        SparkSession session = active();
        return session == null ? new Configuration() : sessionConf(session);
    }

    private static SparkSession active() {
        scala.Option<SparkSession> s = SparkSession.getActiveSession();
        if (s.isDefined()) return s.get();
        s = SparkSession.getDefaultSession();
        return s.isDefined() ? s.get() : null;
    }

    /** The SparkContext's Hadoop configuration with the session's settings over it (SessionState.newHadoopConf's rule). */
    private static Configuration sessionConf(SparkSession session) {
        Configuration c = new Configuration(session.sparkContext().hadoopConfiguration());
        for (Map.Entry<String, String> e : scala.jdk.javaapi.CollectionConverters.asJava(session.conf().getAll()).entrySet()) {
            if (e.getKey() != null && e.getValue() != null) c.set(e.getKey(), e.getValue());
        }
        return c;
    }
}
