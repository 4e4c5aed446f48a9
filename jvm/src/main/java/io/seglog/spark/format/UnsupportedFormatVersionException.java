package io.seglog.spark.format;

/**
 * A seglog JSON file (a commit file, topic metadata) carries a format version newer than this jar reads: a newer
 * seglog wrote it. Refused, never read in part (docs/format.md, "Format versions"); Python's
 * UnsupportedFormatVersionError.
 */
public final class UnsupportedFormatVersionException extends RuntimeException {
    private final long version;
    private final int supported;

    public UnsupportedFormatVersionException(String message, long version, int supported) {
        super(message);
        this.version = version;
        this.supported = supported;
    }

    /** The file's version. */
    public long version() {
        return version;
    }

    /** The newest version this jar reads. */
    public int supported() {
        return supported;
    }
}
