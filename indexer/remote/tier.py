"""The tier pass over one partition (docs/tiered-storage.md §4, Kafka's RemoteLogManager copy and
expiration tasks): sweep, copy sealed segments, remote (total) retention, local retention.

Invariants kept here:
- Objects first, record second: a `copied` record is appended only after the segment's four objects
  are complete, so a recorded segment always has its files; a crash leaves unrecorded objects only,
  which the next pass's sweep removes.
- Remote deletion records `deleting` first, objects after, `deleted` last: readers stop using a
  segment before any of its objects goes.
- A local segment is deleted by local retention only when recorded `copied` with the same range: every
  committed offset stays on at least one tier. Total retention judges both tiers as one log (remote
  segments below the local tier, then the local ones), so no hole opens between them.
- Only sealed segments below the active one and the sink's committed end are copied, in offset order,
  each at most once: nothing below the remote end is copied again. The pass holds the partition's
  maintenance lock throughout (no clean or merge swaps a segment meanwhile) and the partition's own
  lock only for the local deletions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from seglog.errors import ConfigError
from seglog.indexer import retention
from seglog.indexer.locks import maintenance_lock
from seglog.indexer.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, partition_dir_name, segment_file
from seglog.indexer.remote import metadata, owner
from seglog.indexer.remote.location import record_location
from seglog.indexer.remote.metadata import RemoteSegment, RemoteState
from seglog.indexer.remote.store import MANIFEST_SUFFIX, RemoteStore, segment_key
from seglog.indexer.segment import now_ms, sealed_summary

# The files of a tiered segment, in copy order; the manifest is written after them.
FILES = (("log", LOG_SUFFIX), ("index", INDEX_SUFFIX), ("timeindex", TIME_INDEX_SUFFIX))
SUFFIXES = tuple(s for _, s in FILES) + (MANIFEST_SUFFIX,)


@dataclass
class TierResult:
    copied: list[int] = field(default_factory=list)          # bases recorded copied
    swept: list[str] = field(default_factory=list)           # unrecorded objects removed
    finished: list[int] = field(default_factory=list)        # `deleting` records finished
    remote_deleted: list[int] = field(default_factory=list)  # bases remote retention removed
    local_deleted: list[int] = field(default_factory=list)   # local segments removed (tiered ones)
    given_up: str | None = None                              # why the copy stopped early (retried next pass)

    def summary(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v}


def base_of(name: str) -> int | None:
    for suffix in SUFFIXES:
        if name.endswith(suffix) and name[:-len(suffix)].isdigit():
            return int(name[:-len(suffix)])
    return None


def delete_objects(store: RemoteStore, topic: str, partition: int, base: int) -> None:
    for suffix in SUFFIXES:
        store.delete(segment_key(topic, partition, base, suffix))


def sweep(root, topic: str, partition: int, store: RemoteStore, state: RemoteState, result: TierResult) -> None:
    """Finish every `deleting` record, then remove the objects of every copy recorded `copying` and never
    `copied` (a crashed copy's). Only what this root's metadata log recorded is deleted, as in KIP-405: an
    object it never recorded is not its to delete (another root's, or a copy from before `copying` records,
    which the next copy of that base overwrites)."""
    for base in sorted(state.deleting):
        delete_objects(store, topic, partition, base)
        metadata.append(root, topic, partition, {"op": "deleted", "base": base, "at": now_ms()}, state)
        result.finished.append(base)
    for base in sorted(state.copying):
        there = set(store.list(partition_dir_name(topic, partition)))
        for suffix in SUFFIXES:
            name = f"{base:020d}{suffix}"
            if name in there:
                store.delete(f"{partition_dir_name(topic, partition)}/{name}")
                result.swept.append(name)
        metadata.append(root, topic, partition, {"op": "deleted", "base": base, "at": now_ms()}, state)


def copyable(view, state: RemoteState) -> list[tuple[int, int]]:
    """(base, next) of the sealed segments to copy, in order: at or past the remote end, below the
    active segment and the sink's committed end; stops at the first that is not sealed."""
    from seglog.indexer.compaction.cleaner import committed_end

    bases = view.segment_bases()
    end = bases[-1]
    committed = committed_end(view)
    if committed is not None:
        end = min(end, committed)
    floor = state.end if state.end is not None else -1
    out = []
    for i, base in enumerate(bases[:-1]):
        nxt = bases[i + 1]
        if nxt <= floor or base < floor:
            continue
        if nxt > end or sealed_summary(view.path, base, nxt) is None:
            break
        out.append((base, nxt))
    return out


def copy_segment(root, topic: str, partition: int, ppath: Path, base: int, nxt: int, store: RemoteStore,
                 state: RemoteState, before_record: Callable[[int], None] | None = None) -> bool:
    """Copy one sealed segment's files and manifest, then record it. False (nothing recorded) when the
    segment changed or went under the copy (retention beside it): the next pass sweeps and retries."""
    summary = sealed_summary(ppath, base, nxt)
    if summary is None:
        return False
    # recorded before any object is written: a crash from here leaves objects the sweep knows to be this root's
    metadata.append(root, topic, partition, {"op": "copying", "base": base, "at": now_ms()}, state)
    files = {}
    try:
        for name, suffix in FILES:
            files[name] = store.put_file(segment_file(ppath, base, suffix), segment_key(topic, partition, base, suffix))
    except FileNotFoundError:
        return False
    after = sealed_summary(ppath, base, nxt)
    if after is None or after.size != files["log"]["size"] or after.size != summary.size:
        return False
    seg = RemoteSegment(base, nxt, nxt - 1, summary.largest_timestamp, files, now_ms())
    store.put_bytes(segment_key(topic, partition, base, MANIFEST_SUFFIX),
                    json.dumps(seg.manifest(topic, partition), sort_keys=True).encode())
    if before_record is not None:
        before_record(base)          # tests: the instant between the objects and the record
    metadata.append(root, topic, partition, {"op": "copied", **seg.manifest(topic, partition), "at": seg.at}, state)
    return True


def remote_expired(state: RemoteState, local_facts: list, local_bases: list[int], cfg, now: int) -> tuple[list[int], int]:
    """Total retention (retention.*) over both tiers as one log: (the remote bases it removes, how many
    of the oldest local segments it removes)."""
    first_local = local_bases[0] if local_bases else None
    remote_only = [s for s in state.segments() if first_local is None or s.next <= first_local]
    facts = [retention.SegmentFacts(s.size, s.max_ts if s.max_ts >= 0 else s.at) for s in remote_only] + local_facts
    count = retention.plan(facts, cfg, now).count
    gone = [s.base for s in remote_only[:count]]
    local_count = max(0, count - len(remote_only))
    local_count = min(local_count, max(0, len(local_bases) - 1))     # never the active segment
    gone += [b for b in local_bases[:local_count] if b in state.live]
    return gone, local_count


def local_expired(state: RemoteState, facts: list, bases: list[int], cfg, now: int) -> int:
    """How many of the oldest local segments local.retention.* removes: only recorded ones, never the active."""
    local_cfg = {"cleanup.policy": "delete", "retention.ms": cfg.local_retention("ms"),
                 "retention.bytes": cfg.local_retention("bytes")}
    count = min(retention.plan(facts, local_cfg, now).count, len(bases) - 1)
    k = 0
    while k < count and bases[k] in state.live and state.live[bases[k]].next == bases[k + 1]:
        k += 1
    return k


# Kafka's refusal (LogConfig.validateTurningOffRemoteStorageWithDelete, Kafka 3.9+, KIP-950), in seglog's keys.
DISABLE_REFUSED = ("remote.storage.enable = false on a partition with tiered segments is refused unless the remote "
                   "data is deleted with it: set remote.log.delete.on.disable = true to delete the tiered segments "
                   "(offsets held only there are lost), or remote.storage.enable = true to keep tiering")


def disable_partition(root: str | os.PathLike, topic: str, partition: int, cfg, store: RemoteStore, *,
                      maintenance_timeout: float | None = 0) -> TierResult:
    """A partition with tiered segments on a topic whose remote.storage.enable is now false (KIP-950): with
    remote.log.delete.on.disable, every tiered segment is deleted (`deleting` first, objects, `deleted`), the log
    start moving up to the local tier's; without it, a ConfigError (Kafka's refusal) and nothing changes. Local
    retention meanwhile deletes only segments the remote tier also holds (metadata.locally_deletable): no hole."""
    if cfg.tiered:
        raise ConfigError(f"topic {topic}: remote.storage.enable is true: the tier pass keeps it")
    root = Path(root)
    state = metadata.read_state(root, topic, partition)
    if not state.live and not state.deleting and not state.copying:
        return TierResult()
    if not cfg.delete_remote_on_disable:
        raise ConfigError(f"topic {topic}, partition {partition}: {DISABLE_REFUSED}")
    owner.claim(root, store)
    result = TierResult()
    with maintenance_lock(root / partition_dir_name(topic, partition)).acquire(maintenance_timeout):
        state = metadata.read_state(root, topic, partition)
        sweep(root, topic, partition, store, state, result)
        for base in sorted(state.live):                     # record first, objects after
            metadata.append(root, topic, partition, {"op": "deleting", "base": base, "at": now_ms()}, state)
            delete_objects(store, topic, partition, base)
            metadata.append(root, topic, partition, {"op": "deleted", "base": base, "at": now_ms()}, state)
            result.remote_deleted.append(base)
    return result


def tier_partition(root: str | os.PathLike, topic: str, partition: int, cfg, store: RemoteStore, *,
                   now: int | None = None, lock_timeout: float | None = None, maintenance_timeout: float | None = 0,
                   before_record: Callable[[int], None] | None = None,
                   before_delete: Callable[[int], None] | None = None) -> TierResult:
    """One idempotent pass over a remote.storage.enable partition (see the module doc).
    MaintenanceLockedError when a cleaner or merger holds it; PartitionLockedError when the sink holds
    its lock past `lock_timeout` at the local deletions (the copy and remote retention are done then)."""
    from seglog.indexer.log import Log

    if not cfg.tiered:
        raise ConfigError(f"topic {topic}: remote.storage.enable is false: nothing to tier")
    root = Path(root)
    # Invariant: a segment is recorded as tiered only under a root that records where it went (readers find
    # the remote tier there, with no option of their own). The sidecar records it at start-up, but a root
    # made after that start, or a pass run by other means, would tier segments no reader can find. Another
    # URI recorded already is a ConfigError here, before anything changes.
    record_location(root, store.location)
    # Invariant: the prefix is this root's before anything is written or deleted there (indexer/remote/owner.py).
    owner.claim(root, store)
    ppath = root / partition_dir_name(topic, partition)
    now = now_ms() if now is None else now
    result = TierResult()
    with maintenance_lock(ppath).acquire(maintenance_timeout):
        state = metadata.read_state(root, topic, partition)
        sweep(root, topic, partition, store, state, result)
        with Log.open(ppath, cfg, readonly=True) as view:
            todo = copyable(view, state)
        for base, nxt in todo:
            if not copy_segment(root, topic, partition, ppath, base, nxt, store, state, before_record):
                result.given_up = f"segment {base} changed or went while it was copied"
                break
            result.copied.append(base)
        # Remote retention planned from a view; the remote deletions run without the partition's lock.
        with Log.open(ppath, cfg, readonly=True) as view:
            gone, total_local = remote_expired(state, view.retention_facts(), view.segment_bases(), cfg, now)
            expired_local = set(view.segment_bases()[:total_local])
        for base in gone:                                   # record first, objects after
            metadata.append(root, topic, partition, {"op": "deleting", "base": base, "at": now_ms()}, state)
            if before_delete is not None:
                before_delete(base)                         # tests: the instant between the record and the objects
            delete_objects(store, topic, partition, base)
            metadata.append(root, topic, partition, {"op": "deleted", "base": base, "at": now_ms()}, state)
            result.remote_deleted.append(base)
        with Log.open(ppath, cfg, lock_timeout=lock_timeout, create=False) as log:
            bases = log.segment_bases()
            by_total = 0
            while by_total < len(bases) - 1 and bases[by_total] in expired_local:
                by_total += 1
            # Local retention judges what total retention leaves.
            count = by_total + local_expired(state, log.retention_facts()[by_total:], bases[by_total:], cfg, now)
            count = log.below_committed_end(count)          # never past the committed end (Log.below_committed_end)
            if count:
                result.local_deleted = log.delete_oldest_segments(count)
    return result
