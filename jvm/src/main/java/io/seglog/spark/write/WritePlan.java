package io.seglog.spark.write;

import java.io.Serializable;

/** What every write task needs, decided once on the driver before the job runs. */
final class WritePlan implements Serializable {
    private static final long serialVersionUID = 1L;
    final String root;
    final String staging;          // this run's staging folder (DriverCommit.stagingDir)
    final TopicTarget target;      // the topic option's topic; null: each row's topic column
    final TopicRequest topics;     // how a row's (or a quarantine) topic is found or planned
    final InputColumns columns;
    final long now;                // the driver's time for the write (ms): one append time for every task
    final String sessionTimeZone;  // a timestamp_ntz is a wall time here
    final boolean skip;            // the txnVersion is committed already: tasks write nothing
    final long renameMinBytes;     // staged segments this large are renamed in (forced by their task), smaller copied

    WritePlan(String root, String staging, TopicTarget target, TopicRequest topics, InputColumns columns, long now,
              String sessionTimeZone, boolean skip, long renameMinBytes) {
        this.root = root;
        this.staging = staging;
        this.target = target;
        this.topics = topics;
        this.columns = columns;
        this.now = now;
        this.sessionTimeZone = sessionTimeZone;
        this.skip = skip;
        this.renameMinBytes = renameMinBytes;
    }
}
