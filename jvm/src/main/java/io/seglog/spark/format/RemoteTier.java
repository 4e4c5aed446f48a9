package io.seglog.spark.format;

import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/**
 * A root's remote tier through Hadoop's FileSystem, with the session's Hadoop configuration (the driver's,
 * or the one shipped to executors): {@code file://} through Hadoop's local filesystem, {@code s3://} and
 * {@code s3a://} through S3A (hadoop-aws, the user's to add as for any s3a use). The recorded endpoint and
 * region apply to the location's bucket only ({@code fs.s3a.bucket.<bucket>.*}), unless the configuration
 * sets them for it already; a loopback endpoint is addressed path-style. Credentials are the
 * configuration's and the environment's, never recorded.
 *
 * <p>One FileSystem per filesystem (scheme and authority: an S3 bucket) and JVM (S3A's clients are costly to
 * build): the first configuration that reaches it in this JVM is the one its reads use.
 */
public final class RemoteTier {
    private static final Map<String, FileSystem> FILESYSTEMS = new ConcurrentHashMap<>();

    public final RemoteLocation location;
    private final java.util.function.Supplier<Configuration> conf;
    private Configuration sessionConf;                      // guarded by this: conf's value, taken once per tier

    public RemoteTier(RemoteLocation location, java.util.function.Supplier<Configuration> conf) {
        this.location = location;
        this.conf = conf;
    }

    /** The session's Hadoop configuration as this read was given it (seglog's own read settings are taken from it:
     *  the shared FileSystem's configuration is the first reader's). */
    public synchronized Configuration sessionConf() {
        // once per tier (a read's): on the driver each get() copies the session's whole configuration
        if (sessionConf == null) sessionConf = conf.get();
        return sessionConf;
    }

    /** The Hadoop configuration for this location: the session's, with the recorded endpoint and region for its bucket. */
    public static Configuration configure(RemoteLocation location, Configuration base) {
        Configuration c = new Configuration(base);
        if (!location.isS3()) return c;
        String b = "fs.s3a.bucket." + location.bucket() + ".";
        if (location.endpoint() != null) {
            setUnlessSet(c, b + "endpoint", location.endpoint());
            if (location.endpoint().startsWith("http://")) setUnlessSet(c, b + "connection.ssl.enabled", "false");
            if (location.loopbackEndpoint()) setUnlessSet(c, b + "path.style.access", "true");
        }
        String region = location.region() != null ? location.region() : location.endpoint() != null ? "us-east-1" : null;
        if (region != null) setUnlessSet(c, b + "endpoint.region", region);
        return c;
    }

    private static void setUnlessSet(Configuration c, String key, String value) {
        if (c.get(key) == null) c.set(key, value);
    }

    /** The location's FileSystem; a scheme this process has no FileSystem for is a {@link RemoteTierNotReadableException}. */
    public FileSystem fileSystem() {
        // One per filesystem, not per prefix (as Hadoop's own cache keys by scheme and authority): roots tiered to
        // prefixes of one bucket share its client.
        URI at = URI.create(location.hadoopUri());
        String key = at.getScheme() + "://" + at.getAuthority() + "|" + location.endpoint() + "|" + location.region();
        FileSystem fs = FILESYSTEMS.get(key);
        if (fs != null) return fs;
        synchronized (FILESYSTEMS) {
            fs = FILESYSTEMS.get(key);
            if (fs == null) {
                try {
                    fs = FileSystem.newInstance(at, configure(location, sessionConf()));
                } catch (IOException | RuntimeException | LinkageError e) {
                    throw new RemoteTierNotReadableException("the remote tier " + location.uri() + " cannot be reached "
                        + "through Hadoop's FileSystem: " + e
                        + (location.isS3() ? " (s3:// and s3a:// need hadoop-aws and its AWS SDK on spark.jars, as any s3a use does)" : ""), e);
                }
                FILESYSTEMS.put(key, fs);
            }
            return fs;
        }
    }
}
