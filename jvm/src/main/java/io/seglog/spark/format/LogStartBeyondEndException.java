package io.seglog.spark.format;

/** The checkpointed log start offset lies beyond the log end: it would hide every record. A truncation that
 *  restarts a log below its start passes through this state for milliseconds (the segments and the checkpoint
 *  change in two steps), so readers list again a few times; one that stays is damage, reported as the Python
 *  core reports it (indexer/log.py {@code _bounds}). */
public class LogStartBeyondEndException extends CorruptLogException {
    public LogStartBeyondEndException(String message) {
        super(message);
    }
}
