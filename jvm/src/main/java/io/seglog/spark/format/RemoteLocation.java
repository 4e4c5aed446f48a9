package io.seglog.spark.format;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Where a root's remote tier is (docs/tiered-storage.md §1): {@code <root>/_seglog/remote.json}, recorded by
 * the sidecar, read here with the Python side's rules (indexer/remote/location.py): version 1, a
 * {@code file:///abs/path}, {@code s3://}/{@code s3a://bucket/prefix}, {@code gs://bucket/prefix},
 * {@code abfs(s)://container@account.../prefix} or {@code hdfs://namenode:port/prefix} URI, an optional http(s)
 * endpoint and region (applied to S3 locations only). Never credentials: those come from each process's Hadoop configuration and environment.
 */
public final class RemoteLocation {
    private final String uri;
    private final String endpoint;
    private final String region;

    public RemoteLocation(String uri, String endpoint, String region) {
        this.uri = uri;
        this.endpoint = endpoint;
        this.region = region;
    }

    public String uri() { return uri; }
    public String endpoint() { return endpoint; }
    public String region() { return region; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof RemoteLocation)) return false;
        RemoteLocation that = (RemoteLocation) o;
        return java.util.Objects.equals(uri, that.uri)
                && java.util.Objects.equals(endpoint, that.endpoint)
                && java.util.Objects.equals(region, that.region);
    }

    @Override public int hashCode() { return java.util.Objects.hash(uri, endpoint, region); }

    @Override public String toString() { return "RemoteLocation[uri=" + uri + ", endpoint=" + endpoint + ", region=" + region + "]"; }

    public static final String FILE = "remote.json";
    private static final Set<String> SCHEMES = Set.of("file", "s3", "s3a", "gs", "abfs", "abfss", "hdfs");
    private static final Set<String> KEYS = Set.of("version", "uri", "endpoint", "region");
    private static final ObjectMapper JSON = new ObjectMapper();

    public static Path path(Path root) {
        return RootFiles.metaPath(root, FILE);
    }

    /** The root's recorded remote tier, or null when it records none (nothing of it was ever tiered). A record
     *  that cannot be read is a {@link TopicConfigException} naming the file and what is wrong. */
    public static RemoteLocation load(Path root) {
        Path file = path(root);
        JsonNode raw;
        try {
            raw = JSON.readTree(Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new TopicConfigException(file + ": not a readable remote location record: " + e.getMessage());
        }
        if (raw == null || !raw.isObject() || !raw.path("version").isIntegralNumber() || raw.get("version").asLong() != 1) {
            throw new TopicConfigException(file + ": not a version 1 remote location record");
        }
        for (Iterator<String> it = raw.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!KEYS.contains(key)) {
                throw new TopicConfigException(file + ": unknown key '" + key + "'; known keys: uri, endpoint, region");
            }
        }
        String uri = text(raw, "uri", file, true).replaceAll("/+$", "");
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new TopicConfigException(file + ": 'uri' = '" + uri + "' is not a URI: " + e.getMessage());
        }
        String scheme = parsed.getScheme() == null ? "" : parsed.getScheme();
        if (!SCHEMES.contains(scheme)) {
            throw new TopicConfigException(file + ": 'uri' = '" + uri + "': scheme '" + scheme + "' is not supported; "
                + "allowed: file://, s3://, s3a://, gs://, abfs://, abfss://, hdfs://");
        }
        if (scheme.equals("file") && (parsed.getAuthority() != null || parsed.getPath() == null || !parsed.getPath().startsWith("/"))) {
            throw new TopicConfigException(file + ": 'uri' = '" + uri + "': a file URI names an absolute path: file:///abs/path");
        }
        if (!scheme.equals("file") && (parsed.getAuthority() == null || parsed.getAuthority().isEmpty())) {
            throw new TopicConfigException(file + ": 'uri' = '" + uri + "': a " + scheme + ":// URI names its "
                + (scheme.startsWith("abfs") ? "container and account: " + scheme + "://container@account.dfs.core.windows.net/prefix"
                   : scheme.equals("hdfs") ? "namenode: hdfs://namenode:port/prefix" : "bucket: " + scheme + "://bucket/prefix"));
        }
        String endpoint = text(raw, "endpoint", file, false);
        if (endpoint != null && !(endpoint.startsWith("http://") || endpoint.startsWith("https://"))) {
            throw new TopicConfigException(file + ": 'endpoint' = '" + endpoint + "': expected http://host:port or https://host:port");
        }
        return new RemoteLocation(uri, endpoint, text(raw, "region", file, false));
    }

    private static String text(JsonNode raw, String key, Path file, boolean required) {
        JsonNode v = raw.get(key);
        if (v == null || v.isNull()) {
            if (required) throw new TopicConfigException(file + ": '" + key + "' is required: the remote tier's URI");
            return null;
        }
        if (!v.isTextual() || v.asText().isBlank()) {
            throw new TopicConfigException(file + ": '" + key + "' = " + v + " is not allowed; allowed: a non-empty string"
                + (required ? "" : " or null"));
        }
        return v.asText().strip();
    }

    /** An S3 location (s3://, s3a://): the recorded endpoint and region apply (RemoteTier.configure). A gs://,
     *  abfs(s):// or hdfs:// location is reached with the session's Hadoop configuration alone, through the
     *  connector the user adds for that scheme (gcs-connector, hadoop-azure, HDFS's client in Spark's Hadoop). */
    public boolean isS3() {
        return uri.startsWith("s3://") || uri.startsWith("s3a://");
    }

    /** The URI Hadoop's FileSystem reads: {@code s3://} is S3A's {@code s3a://} (Hadoop maps no {@code s3} scheme). */
    public String hadoopUri() {
        return uri.startsWith("s3://") ? "s3a://" + uri.substring("s3://".length()) : uri;
    }

    /** The bucket of an S3 location. */
    public String bucket() {
        return URI.create(hadoopUri()).getAuthority();
    }

    /** A loopback endpoint (a test server, a local MinIO): addressed path-style, as virtual hosts do not resolve. */
    public boolean loopbackEndpoint() {
        if (endpoint == null) return false;
        String host = URI.create(endpoint).getHost();
        return host != null && (host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]") || host.equals("::1"));
    }

    /** The object of {@code <topic>-<partition>/<20-digit base><suffix>} (docs/tiered-storage.md §2). */
    public String objectUri(String topic, int partition, long base, String suffix) {
        return hadoopUri() + "/" + topic + "-" + partition + "/" + Segment.fileName(base, suffix);
    }
}
