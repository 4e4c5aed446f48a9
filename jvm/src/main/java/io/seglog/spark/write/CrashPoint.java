package io.seglog.spark.write;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A place in the driver's commit where the crash tests SIGKILL the driver (tests/sink/test_dsv2_write_crash.py):
 * with the system property {@code seglog.test.crashPoint=<marker file>@<txnVersion>}, the commit of that
 * version creates the marker and waits there to be killed. Unset (always, outside those tests), it does nothing.
 */
final class CrashPoint {
    static final String PROPERTY = "seglog.test.crashPoint";

    private CrashPoint() {}

    static void reached(Long version) {
        String spec = System.getProperty(PROPERTY);
        if (spec == null || version == null) return;
        int at = spec.lastIndexOf('@');
        if (at < 0 || !spec.substring(at + 1).equals(version.toString())) return;
        try {
            Files.writeString(Path.of(spec.substring(0, at)), "waiting to be killed\n");
            Thread.sleep(600_000L);
        } catch (IOException | InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
