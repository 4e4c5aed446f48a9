package io.seglog.spark.write;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A place in the driver's commit (published, not committed) where the crash tests SIGKILL the driver
 * (tests/sink/test_dsv2_write_crash.py): with the system property {@code seglog.test.crashPoint=<marker
 * file>@<txnVersion>}, the commit of that version creates the marker and waits there to be killed. With
 * {@code seglog.test.failPoint=<marker file>@<txnVersion>} it creates the marker, waits until the test removes it
 * (the test acts on the root meanwhile, the written partitions' locks held), then fails, as a commit that failed
 * there would (tests/sink/test_dsv2_write_restore.py). Unset (always, outside those tests), it does nothing.
 */
final class CrashPoint {
    static final String PROPERTY = "seglog.test.crashPoint";
    static final String FAIL_PROPERTY = "seglog.test.failPoint";

    private CrashPoint() {}

    static void reached(Long version) {
        Path marker = marker(PROPERTY, version);
        if (marker != null) {
            try {
                Files.writeString(marker, "waiting to be killed\n");
                Thread.sleep(600_000L);
            } catch (IOException | InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        marker = marker(FAIL_PROPERTY, version);
        if (marker == null) return;
        try {
            Files.writeString(marker, "waiting for the test to remove this file\n");
            for (int i = 0; i < 30_000 && Files.exists(marker); i++) Thread.sleep(20L);   // at most 600 s
        } catch (IOException | InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new SeglogWriteException("seglog write: failed at the test fail point " + marker);
    }

    /** The marker of {@code property}'s spec when it names this version, else null. */
    private static Path marker(String property, Long version) {
        String spec = System.getProperty(property);
        if (spec == null || version == null) return null;
        int at = spec.lastIndexOf('@');
        if (at < 0 || !spec.substring(at + 1).equals(version.toString())) return null;
        return Path.of(spec.substring(0, at));
    }
}
