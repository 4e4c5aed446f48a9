package io.seglog.spark;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.stream.Collectors;

import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs the JUnit classes named as arguments on whatever classpath this JVM was given, not Maven's:
 * tests/smoke/test_jvm_conformance.py runs the runners of tests/conformance/ with one Spark line's own jars
 * (pyspark/jars) and that line's connector jar, so each line's Spark and Scala are held to the same vectors.
 * Exit status 0 only when at least one test ran and none failed, aborted or was skipped (a skip would hide a gap).
 */
public final class LineConformance {
    private LineConformance() {}

    public static void main(String[] args) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
            .selectors(Arrays.stream(args).map(DiscoverySelectors::selectClass).collect(Collectors.toList()))
            .build();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(request, listener);
        TestExecutionSummary s = listener.getSummary();
        PrintWriter out = new PrintWriter(System.out, true);
        s.printTo(out);
        s.printFailuresTo(out, 30);
        boolean ok = s.getTestsSucceededCount() > 0 && s.getTotalFailureCount() == 0
            && s.getTestsAbortedCount() == 0 && s.getTestsSkippedCount() == 0 && s.getContainersFailedCount() == 0;
        System.exit(ok ? 0 : 1);
    }
}
