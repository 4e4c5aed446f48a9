package io.seglog.spark;

/** A statement that would change or remove records of a log (INSERT OVERWRITE, UPDATE, DELETE, MERGE): refused,
 *  since a log is append-only (records leave it only by retention, compaction or DROP TABLE ... PURGE). */
public final class AppendOnlyException extends UnsupportedOperationException {
    public AppendOnlyException(String statement, String table) {
        super(statement + " " + table + " is not supported: a log is append-only (records leave it only by retention, "
            + "compaction or DROP TABLE ... PURGE); use INSERT INTO to append");
    }
}
