"""Compaction by key and merging of small segments (docs/compaction.md; docs/spec.md §3.9, 3.10): the
cleaner's plan, offset map, filter and crash-safe swap, its checkpoint, and the merge that shares the swap."""
