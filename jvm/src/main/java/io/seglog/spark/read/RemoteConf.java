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

    static final int KEPT = 8;
    /** Broadcasts by (SparkContext, entries), least recently used first (access order), at most KEPT: a dropped one
     *  is removed by Spark's cleaner once no read holds it. Guarded by RemoteConf.class. */
    private static final Map<java.util.List<Object>, Broadcast<SerializableConfiguration>> RECENT =
        new java.util.LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<java.util.List<Object>, Broadcast<SerializableConfiguration>> eldest) {
                return size() > KEPT;
            }
        };
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
            RECENT.keySet().removeIf(k -> ((org.apache.spark.SparkContext) k.get(0)).isStopped());
            Broadcast<SerializableConfiguration> found = RECENT.computeIfAbsent(java.util.List.of(context, entries), k -> {
                BROADCASTS.increment();
                return JavaSparkContext.fromSparkContext(context).broadcast(new SerializableConfiguration(conf));
            });
            return new RemoteConf(found);
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
        for (Map.Entry<String, String> e : io.seglog.spark.SparkLines.sessionConf(session).entrySet()) {
            if (e.getKey() != null && e.getValue() != null) c.set(e.getKey(), e.getValue());
        }
        return c;
    }
}
