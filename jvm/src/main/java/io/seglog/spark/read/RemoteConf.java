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
 */
final class RemoteConf implements Serializable, Supplier<Configuration> {
    private static final long serialVersionUID = 1L;
    /** No configuration shipped: the driver's session's (or Hadoop's defaults in a JVM without a session). */
    static final RemoteConf SESSION = new RemoteConf(null);

    private final Broadcast<SerializableConfiguration> shipped;

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
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(session.sparkContext());
        return new RemoteConf(jsc.broadcast(new SerializableConfiguration(sessionConf(session))));
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
