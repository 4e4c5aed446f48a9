package io.seglog.spark.format;

import java.nio.file.Path;

/**
 * An offset checkpoint file (log-start-offset-checkpoint, cleaner-offset-checkpoint, a partition's
 * recovery-point-offset-checkpoint) that is not Kafka's text format: names the file and the first bad line,
 * as indexer/checkpoint.py's CorruptCheckpointError does (tests/conformance/checkpoints.json pins both).
 */
public class CorruptCheckpointException extends CorruptLogException {
    public final Path file;
    public final int line;

    public CorruptCheckpointException(Path file, int line, String problem) {
        super(file + " line " + line + ": " + problem + " (Kafka's offset checkpoint format: a version line 0, a count "
            + "line, then one `topic partition offset` line per partition)");
        this.file = file;
        this.line = line;
    }
}
