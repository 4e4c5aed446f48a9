"""Test oracles: Python implementations that no production path calls, kept as the reference the JVM's twins are
held to byte for byte (docs/internals.md, "Test oracles"). Writes moved to the connector jar; these stayed as
the core's answer to the same question:

- `staged`: publishing staged segments at a partition's end (the JVM's format.StagedPublisher), with
  `adopt_segments`, the rename of finished segments into a Log;
- `committed_end`: rolling a partition back to its committed end (format.CommittedEndRollBack);
- `partitioner`: Kafka's default partitioner, murmur2 (write.Murmur2Partition).
"""
