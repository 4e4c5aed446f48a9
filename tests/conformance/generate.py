"""Writes the conformance corpus, tests/conformance/corpus/<case>/ (docs/internals.md, "Conformance corpus").

    python -m tests.conformance.generate                 # every case (a Kafka broker and Spark are started)
    python -m tests.conformance.generate --skip broker,spark    # leave those cases as they are
    python -m tests.conformance.generate --only torn-tail-active,python-segments

Each case is a log root: one partition folder `t-0/`, the sink's commit log
(`_seglog/commits/t/00000000000000000000.json`), maybe `_seglog/topics/t.json`, a
`log-start-offset-checkpoint` or a `cleaner-offset-checkpoint`, and `expected.json`: the answers.

The answers come from the construction, never from running seglog: the records the generator sent
(their offsets assigned in order, transaction markers taking one offset each), the segments it rolled,
the damage it did; then each answer by brute force over that model (tests/conformance/model.py). Where
a writer decides something the generator cannot (a Kafka broker's segment rolls and its markers'
timestamps), the generator reads it from the files with its own header parser (model.walk), and a
broker case is checked against the broker's own consumer and ListOffsets before it is written.

Deterministic, byte for byte, except the broker's cases (producer ids, marker timestamps, rolls).
Fault kinds and how the runners recognise them: tests/conformance/fault_kinds.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):                      # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conformance.model import Model, Rec, expected, fault, files_fault, planning, walk  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
TOPIC, PART = "t", "t-0"
T0 = 1_700_000_000_000              # 2023-11-14: CreateTime of the seglog-written cases
FIXED_NOW = T0 + 10 * 86_400_000    # the cleaner's "now" (its delete horizon), pinned
INDEX = {"index.interval.bytes": 128}
PREALLOCATED = 4096                 # a live writer's zero-filled index tail, kept small for the corpus


def name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


# ------------------------------------------------------------------------------------- metadata
def write_commit(root: Path, end: int) -> None:
    """The sink's commit log with one state (indexer/commit_log.py's format, its time pinned)."""
    d = root / "_seglog" / "commits" / TOPIC
    d.mkdir(parents=True, exist_ok=True)
    doc = {"batch_id": 0, "end_offsets": {"0": end}, "seq": 0, "time": 0, "writer_id": "conformance",
           "writers": {"conformance": 0}}
    (d / name(0, ".json")).write_text(json.dumps(doc, sort_keys=True))


def write_topic(root: Path, config: dict) -> None:
    d = root / "_seglog" / "topics"
    d.mkdir(parents=True, exist_ok=True)
    doc = {"config": dict(config), "created_ms": 0, "name": TOPIC, "partitions": 1}
    (d / f"{TOPIC}.json").write_text(json.dumps(doc, sort_keys=True, indent=1))


def write_offsets_file(path: Path, offset: int) -> None:
    """Kafka's offset checkpoint text format: version 0, a count, `topic partition offset` lines."""
    path.write_text(f"0\n1\n{TOPIC} 0 {offset}\n")


def copy_partition(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(src.iterdir()):
        if p.is_file():
            shutil.copyfile(p, dst / p.name)


# ------------------------------------------------------------------------------------- data
def batches_of(seed: int, sizes: list[list[int]], *, t0: int = T0, keys: int = 12, no_ts: set[int] = frozenset(),
               headers: bool = True, low_last_batch: bool = False) -> list[list[list[tuple]]]:
    """Per segment, per batch, records (timestamp, key, value, headers): null keys and values, a few
    headers, CreateTime going back and forth (within hours: no roll by time). Segments in `no_ts`
    hold records without a timestamp (-1)."""
    rng = random.Random(seed)
    t = t0
    out = []
    for si, seg in enumerate(sizes):
        segment = []
        for n in seg:
            batch = []
            for _ in range(n):
                t = max(t0 - 3_600_000, t + rng.choice([-4000, -1, 0, 1, 7, 1000, 60_000]))
                key = None if (keys == 0 or rng.random() < 0.15) else b"k%d" % rng.randrange(keys)
                value = None if rng.random() < 0.08 else rng.randbytes(rng.randrange(0, 18))
                hdrs = ()
                if headers and rng.random() < 0.25:
                    hdrs = tuple((f"h{j}", None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 5)))
                                 for j in range(rng.randrange(1, 3)))
                ts = -1 if si in no_ts else t
                batch.append((ts, key, value, hdrs))
            segment.append(batch)
        out.append(segment)
    if low_last_batch:
        out[-1][-1] = [(t0 - 3_600_000, k, v, h) for _, k, v, h in out[-1][-1]]
    return out


def write_python_log(root: Path, segments: list[list[list[tuple]]], config: dict, *, roll_last: bool = False) -> list[Rec]:
    """Appends through the Python core's `Log`, one `append` per batch, `roll()` between segments; a clean
    close. Returns the records with the offsets the construction gives them (0, 1, 2, ...)."""
    from seglog.indexer.log import Log, Record

    recs: list[Rec] = []
    with Log.open(root / PART, config, outside_commit_log=True) as log:
        for si, seg in enumerate(segments):
            if si:
                log.roll()
            for batch in seg:
                info = log.append([Record(key=k, value=v, timestamp=ts, headers=h) for ts, k, v, h in batch])
                assert info.batches == 1 and info.first_offset == len(recs), info   # the construction's offsets
                recs += [Rec(len(recs) + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(batch)]
        if roll_last:
            log.roll()
    return recs


def seglog_case(case: str, seed: int, sizes: list[list[int]], *, config: dict | None = None, **data) -> tuple[Path, Model]:
    """A partition the Python core wrote (rolled segments sealed, the last active), committed to its end:
    corpus/<case>/ with `t-0/` and the commit log. Returns (the case root, the model)."""
    cfg = dict(INDEX, **(config or {}))
    root = CORPUS / case
    with tempfile.TemporaryDirectory() as tmp:
        recs = write_python_log(Path(tmp), batches_of(seed, sizes, **data), cfg)
        copy_partition(Path(tmp) / PART, root / PART)
    bases, n = [], 0
    for seg in sizes:
        bases.append(n)
        n += sum(seg)
    model = Model(recs, bases, [True] * (len(bases) - 1) + [False], n, n)
    write_commit(root, n)
    check_files(root, model)
    return root, model


def check_files(root: Path, model: Model) -> None:
    """The construction holds: segment files at the model's bases, batches back to back at its offsets."""
    logs = sorted((root / PART).glob("*.log"))
    assert [int(p.stem) for p in logs] == model.bases, (root, logs, model.bases)


def heads(root: Path, base: int):
    return walk(root / PART / name(base, ".log"))


def log_file(base: int) -> str:
    return f"{PART}/{name(base, '.log')}"


# ------------------------------------------------------------------------------------- damage
def flip(path: Path, pos: int, mask: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)[0]
        fh.seek(pos)
        fh.write(bytes([b ^ mask]))


def cut(path: Path, size: int) -> None:
    os.truncate(path, size)


def extend_zeros(path: Path, size: int) -> None:
    if path.stat().st_size < size:
        os.truncate(path, size)


# ------------------------------------------------------------------------------------- seglog-written cases
SEGMENTS = [[4, 6, 3, 5], [7, 2, 5], [3, 4, 2]]   # three segments: two rolled (sealed), the active one


def case_python_segments():
    root, m = seglog_case("python-segments", 1, SEGMENTS)
    return expected(m, "python-segments", "python",
                    "The Python core's Log: three segments (two rolled and sealed, the active one), index entries, "
                    "null keys and values, headers, CreateTime going back and forth.")


def case_python_no_timestamps():
    # The middle segment's records carry no timestamp (-1): an empty time index, largest timestamp -1;
    # the roll still seals it (both indexes trimmed).
    root, m = seglog_case("python-no-timestamps", 2, [[3, 4], [5, 2], [4, 3]], no_ts={1})
    return expected(m, "python-no-timestamps", "python",
                    "A rolled segment whose records have no timestamp (-1): sealed with an empty time index; "
                    "lookups pass over it.")


def case_python_compacted():
    """Log.clean on a compacted topic: the cleaned segments become one, the latest record per key in
    [0, active base) survives (a tombstone too, on a first clean), offsets keep their numbers (gaps)."""
    from seglog.indexer.log import Log

    case = "python-compacted"
    cfg = dict(INDEX, **{"cleanup.policy": "compact"})
    rng = random.Random(3)
    sizes = [[5, 4, 6], [4, 5], [6, 3], [4, 4]]
    segs, t = [], T0
    for si, seg in enumerate(sizes):
        segment = []
        for n in seg:
            batch = []
            for _ in range(n):
                t += rng.choice([1, 5, 1000])             # rising: the group's last record holds its largest
                key = b"key-%d" % rng.randrange(6)
                value = None if rng.random() < 0.12 else rng.randbytes(rng.randrange(1, 10))
                batch.append((t, key, value, ()))
            segment.append(batch)
        segs.append(segment)
    # The last record below the active segment has a key of its own: it survives and holds the largest
    # timestamp of the cleaned group (so the group's largest timestamp is a survivor's).
    last_seg = segs[-2][-1]
    ts, _, v, h = last_seg[-1]
    last_seg[-1] = (ts, b"only-once", v or b"x", h)
    root = CORPUS / case
    with tempfile.TemporaryDirectory() as tmp:
        recs = write_python_log(Path(tmp), segs, cfg)
        end = len(recs)
        write_commit(Path(tmp), end)
        with Log.open(Path(tmp) / PART, cfg, outside_commit_log=True) as log:
            res = log.clean(FIXED_NOW, force=True)
            assert res.cleaned, res
        for p in (Path(tmp) / PART).glob("*.deleted"):
            p.unlink()                              # the replaced segments, as the purge leaves it
        copy_partition(Path(tmp) / PART, root / PART)
        shutil.copyfile(Path(tmp) / "cleaner-offset-checkpoint", root / "cleaner-offset-checkpoint")
    active = sum(sum(s) for s in sizes[:-1])
    latest = {}
    for r in recs:
        if r.offset < active:
            latest[r.key] = r.offset
    kept = [r for r in recs if r.offset >= active or latest[r.key] == r.offset]
    model = Model(kept, [0, active], [True, False], end, end)
    write_commit(root, end)
    write_topic(root, {"cleanup.policy": "compact"})
    check_files(root, model)
    return expected(model, case, "compaction",
                    "After Log.clean (forced, pinned now) of a compacted topic: one cleaned segment with the "
                    "latest record of each key below the active segment (tombstones kept on a first clean), "
                    "offset gaps, the cleaner checkpoint; the active segment untouched.")


def case_python_merged():
    """segment_merge.merge_log: small sealed segments below the committed end become one; every batch
    and offset unchanged, indexes rebuilt."""
    from seglog.indexer.log import Log
    from seglog.indexer.compaction.segment_merge import merge_log

    case = "python-merged"
    sizes = [[3, 4], [2, 5], [4], [3, 3], [2, 4]]
    segs = batches_of(5, sizes)
    root = CORPUS / case
    with tempfile.TemporaryDirectory() as tmp:
        recs = write_python_log(Path(tmp), segs, INDEX)
        write_commit(Path(tmp), len(recs))
        with Log.open(Path(tmp) / PART, INDEX, outside_commit_log=True) as log:
            res = merge_log(log)
            assert res.segments_merged == 4, res
        copy_partition(Path(tmp) / PART, root / PART)
    active = sum(sum(s) for s in sizes[:-1])
    model = Model(recs, [0, active], [True, False], len(recs), len(recs))
    write_commit(root, len(recs))
    check_files(root, model)
    return expected(model, case, "merge",
                    "After segment_merge.merge_log: four small sealed segments merged into one (batches, offsets "
                    "and CRCs unchanged, both indexes rebuilt), the active segment untouched.")


# ------------------------------------------------------------------------------------- damaged cases
def case_torn_tail_uncommitted():
    """A writer killed inside an append: its last batch half written, past the committed end. Readers
    never judge bytes past the committed end; a full check of the files reports the torn tail."""
    case = "torn-tail-uncommitted"
    # The torn batch's records hold the smallest timestamps: the largest of the log is committed (-3 is then
    # the same answer whether taken over the committed records or, as Kafka's ListOffsets, over the log).
    root, m = seglog_case(case, 7, SEGMENTS, low_last_batch=True)
    last = heads(root, m.bases[-1])[-1]
    d = root / PART
    cut(d / name(m.bases[-1], ".log"), last.position + last.length - 9)
    # The writer died before it wrote index entries for that batch: entries naming it are not there.
    idx = d / name(m.bases[-1], ".index")
    raw = idx.read_bytes()
    keep = [raw[i:i + 8] for i in range(0, len(raw), 8) if int.from_bytes(raw[i + 4:i + 8], "big") < last.position]
    idx.write_bytes(b"".join(keep))
    tidx = d / name(m.bases[-1], ".timeindex")
    raw = tidx.read_bytes()
    keep = [raw[i:i + 12] for i in range(0, len(raw), 12)
            if m.bases[-1] + int.from_bytes(raw[i + 8:i + 12], "big") < last.base_offset]
    tidx.write_bytes(b"".join(keep))
    m.records = [r for r in m.records if r.offset < last.base_offset]
    m.committed_end = m.file_end = last.base_offset
    write_commit(root, m.committed_end)
    return expected(m, case, "damaged",
                    "The active segment's last batch is torn (9 bytes short) past the committed end: every "
                    "committed record reads; only a full check of the files reports the torn tail.",
                    files=files_fault(["torn-tail"], log_file(m.bases[-1]), last.position))


def case_torn_tail_active():
    case = "torn-tail-active"
    root, m = seglog_case(case, 8, SEGMENTS)
    last = heads(root, m.bases[-1])[-1]
    cut(root / PART / name(m.bases[-1], ".log"), last.position + 70)          # the header whole, the body not
    return expected(m, case, "damaged",
                    "The active segment's last batch is torn (header whole, body cut) below the committed end: "
                    "committed records are lost, which a read must report, never return fewer rows.",
                    read=fault("torn-tail", log_file(m.bases[-1]), last.position),
                    files=files_fault(["torn-tail"], log_file(m.bases[-1]), last.position))


def case_torn_tail_sealed():
    case = "torn-tail-sealed"
    root, m = seglog_case(case, 9, SEGMENTS)
    last = heads(root, 0)[-1]
    cut(root / PART / name(0, ".log"), last.position + 30)                    # inside the batch header
    return expected(m, case, "damaged",
                    "A sealed segment's .log ends inside its last batch's header (a lost tail).",
                    read=fault("torn-tail", log_file(0), last.position),
                    files=files_fault(["torn-tail"], log_file(0), last.position))


def case_flipped_body_byte():
    case = "flipped-body-byte"
    root, m = seglog_case(case, 10, SEGMENTS)
    b = heads(root, m.bases[1])[1]
    flip(root / PART / name(m.bases[1], ".log"), b.position + b.length - 5, 0x10)
    return expected(m, case, "damaged",
                    "A flipped bit in the records of a sealed segment's second batch: its CRC fails.",
                    read=fault("corrupt-batch", log_file(m.bases[1]), b.position),
                    files=files_fault(["corrupt-batch"], log_file(m.bases[1]), b.position))


def case_flipped_base_offset():
    case = "flipped-base-offset"
    root, m = seglog_case(case, 11, SEGMENTS)
    b = heads(root, 0)[2]
    flip(root / PART / name(0, ".log"), b.position + 7, 0x40)                # base offset's low byte: not in the CRC
    return expected(m, case, "damaged",
                    "A flipped bit in a batch's base offset (a header field the CRC does not cover): offsets no "
                    "longer run on from the previous batch.",
                    read=fault("corrupt-batch", log_file(0), b.position),
                    files=files_fault(["corrupt-batch"], log_file(0), b.position))


def case_flipped_length():
    case = "flipped-length"
    root, m = seglog_case(case, 12, SEGMENTS)
    b = heads(root, m.bases[1])[1]
    flip(root / PART / name(m.bases[1], ".log"), b.position + 9, 0x01)       # length += 65536: past the file's end
    return expected(m, case, "damaged",
                    "A flipped bit in a middle batch's length field of a sealed segment: the batch runs past "
                    "the end of the file (a reader cannot tell it from a lost tail).",
                    read=fault("torn-tail", log_file(m.bases[1]), b.position),
                    files=files_fault(["torn-tail"], log_file(m.bases[1]), b.position))


def case_flipped_leader_epoch():
    case = "flipped-leader-epoch"
    root, m = seglog_case(case, 13, SEGMENTS)
    b = heads(root, 0)[1]
    flip(root / PART / name(0, ".log"), b.position + 15, 0x04)               # partitionLeaderEpoch: not in the CRC
    return expected(m, case, "damaged",
                    "A flipped bit in a batch's partition leader epoch in a folder seglog wrote (no "
                    "leader-epoch-checkpoint: every epoch is 0, docs/kafka.md \"Leader epochs\").",
                    read=fault("corrupt-batch", log_file(0), b.position),
                    files=files_fault(["corrupt-batch"], log_file(0), b.position))


def case_missing_offset_index():
    case = "missing-offset-index"
    root, m = seglog_case(case, 14, SEGMENTS)
    (root / PART / name(m.bases[1], ".index")).unlink()
    f = f"{PART}/{name(m.bases[1], '.index')}"
    return expected(m, case, "damaged", "A sealed segment's .index is gone while its .log is there.",
                    read=fault("missing-index", f), files=files_fault(["missing-index"], f))


def case_missing_time_index():
    case = "missing-time-index"
    root, m = seglog_case(case, 15, SEGMENTS)
    (root / PART / name(0, ".timeindex")).unlink()
    f = f"{PART}/{name(0, '.timeindex')}"
    return expected(m, case, "damaged", "The first segment's .timeindex is gone while its .log is there.",
                    read=fault("missing-index", f), files=files_fault(["missing-index"], f))


def case_odd_length_index():
    case = "odd-length-index"
    root, m = seglog_case(case, 16, SEGMENTS)
    idx = root / PART / name(0, ".index")
    with open(idx, "ab") as fh:
        fh.write(b"\x00\x00\x00\x2a")                                          # half an entry
    m.sealed[0] = False          # not trimmed to whole entries: not sealed (docs/format.md "Segment states")
    return expected(m, case, "damaged",
                    "A sealed segment's .index has half an entry after its entries (size not a multiple of 8): "
                    "no longer sealed by the files' rule, its records all read; a full check reports the index.",
                    files=files_fault(["corrupt-index"], f"{PART}/{name(0, '.index')}"))


def case_zeroed_index_tails():
    case = "zeroed-index-tails"
    root, m = seglog_case(case, 17, SEGMENTS)
    d = root / PART
    # segment 0: a writer killed inside the roll after the seal entry, before the trim (crash_states.py)
    extend_zeros(d / name(0, ".index"), PREALLOCATED)
    extend_zeros(d / name(0, ".timeindex"), PREALLOCATED - PREALLOCATED % 12)
    # segment 1: its last offset index entry zeroed (a truncation zeroes entries from the last one backwards)
    p = d / name(m.bases[1], ".index")
    size = p.stat().st_size
    assert size >= 8, (p, size)
    with open(p, "r+b") as fh:
        fh.seek(size - 8)
        fh.write(bytes(8))
    # the active segment: a live writer's preallocated indexes
    extend_zeros(d / name(m.bases[2], ".index"), PREALLOCATED)
    extend_zeros(d / name(m.bases[2], ".timeindex"), PREALLOCATED - PREALLOCATED % 12)
    m.sealed[0] = m.sealed[1] = False
    return expected(m, case, "damaged",
                    "Zero-filled index tails: segment 0 left inactive inside a roll (preallocated tails), segment "
                    "1's last offset index entry zeroed, the active segment preallocated. Nothing is lost: both rolled "
                    "segments are inactive, not sealed, and every record reads.")


def case_garbage_checkpoint():
    case = "garbage-checkpoint"
    root, m = seglog_case(case, 18, SEGMENTS)
    (root / "log-start-offset-checkpoint").write_bytes(b"0\n1\nt 0 five\n\x00\x01garbage\n")
    return expected(m, case, "damaged",
                    "A malformed log-start-offset-checkpoint: read as empty (Kafka's log manager does the same: "
                    "each log starts at its first segment), reported by a full check.",
                    files=files_fault(["malformed-checkpoint"], "log-start-offset-checkpoint"))


def case_log_start_beyond_end():
    case = "log-start-beyond-end"
    root, m = seglog_case(case, 19, SEGMENTS)
    write_offsets_file(root / "log-start-offset-checkpoint", m.file_end + 100)
    return expected(m, case, "damaged",
                    "The checkpointed log start is beyond the log end: it would hide every record; reported, never "
                    "read as an empty log.",
                    read=fault("log-start-beyond-end", PART), files=files_fault(["log-start-beyond-end"], PART))


def case_leftovers_deleted_cleaned():
    """Retention renamed the first segment to .deleted (not yet purged) and moved the log start inside
    the second; a cleaner died before its swap, leaving a .cleaned segment. Readers skip both."""
    case = "leftovers-deleted-cleaned"
    root, m = seglog_case(case, 20, SEGMENTS)
    d = root / PART
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(d / name(0, suffix), d / name(0, suffix + ".deleted"))
        shutil.copyfile(d / name(m.bases[1], suffix), d / name(m.bases[1], suffix + ".cleaned"))
    start = m.bases[1] + 3
    write_offsets_file(root / "log-start-offset-checkpoint", start)
    m.records = [r for r in m.records if r.offset >= m.bases[1]]
    m.bases, m.sealed, m.log_start = m.bases[1:], m.sealed[1:], start
    return expected(m, case, "damaged",
                    "`.deleted` files of a segment retention removed, `.cleaned` files of a clean that died before "
                    "its swap, and a log start inside the first remaining segment: readers skip the leftovers "
                    "and start at the log start.")


def case_leftover_swap():
    case = "leftover-swap"
    root, m = seglog_case(case, 21, SEGMENTS)
    d = root / PART
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(d / name(0, suffix), d / name(0, suffix + ".swap"))
    f = PART           # both readers name the partition and the swapped segment's base
    return expected(m, case, "damaged",
                    "A `.log.swap` left by a clean or merge that died inside its swap: the listing may lack the "
                    "group, so readers report it (a writable open finishes the swap) rather than read a shorter log.",
                    read=fault("swap-in-progress", f), files=files_fault(["swap-in-progress"], f))


def case_log_cut_below_index():
    case = "log-cut-below-index"
    root, m = seglog_case(case, 22, SEGMENTS)
    hs = heads(root, 0)
    at = hs[2].position                         # below the positions its index entries name
    idx = (root / PART / name(0, ".index")).read_bytes()
    assert idx and int.from_bytes(idx[-4:], "big") >= at, "the index must name a position past the cut"
    cut(root / PART / name(0, ".log"), at)
    return expected(m, case, "damaged",
                    "A sealed segment's .log cut at a batch boundary below the positions its offset index names: "
                    "the offsets from the cut to the next segment's base are lost.",
                    read=fault("lost-records", log_file(0)),
                    files=files_fault(["lost-records", "corrupt-index"], name(0, "")))


def case_empty_sealed_log():
    case = "empty-sealed-log"
    root, m = seglog_case(case, 23, SEGMENTS)
    cut(root / PART / name(m.bases[1], ".log"), 0)
    return expected(m, case, "damaged",
                    "A sealed segment's .log is empty under its sealed indexes (power loss): its offsets are lost.",
                    read=fault("lost-records", log_file(m.bases[1])),
                    files=files_fault(["lost-records"], log_file(m.bases[1])))


SEGLOG_CASES = [case_python_segments, case_python_no_timestamps, case_python_compacted, case_python_merged,
                case_torn_tail_uncommitted, case_torn_tail_active, case_torn_tail_sealed, case_flipped_body_byte,
                case_flipped_base_offset, case_flipped_length, case_flipped_leader_epoch, case_missing_offset_index,
                case_missing_time_index, case_odd_length_index, case_zeroed_index_tails, case_garbage_checkpoint,
                case_log_start_beyond_end, case_leftovers_deleted_cleaned, case_leftover_swap, case_log_cut_below_index,
                case_empty_sealed_log]


# ------------------------------------------------------------------------------------- main
def case_name(fn) -> str:
    return fn.__name__.removeprefix("case_").replace("_", "-")


def dump(doc: dict) -> str:
    """expected.json's text: one line per record, probe and segment, so a diff reads as one."""
    def rows(items: list, indent: str) -> list[str]:
        return [indent + json.dumps(x) + ("," if i < len(items) - 1 else "") for i, x in enumerate(items)]

    lines, keys = ["{"], list(doc)
    for i, k in enumerate(keys):
        comma, v = ("," if i < len(keys) - 1 else ""), doc[k]
        if k == "records":
            lines.append(' "records": {')
            for j, (iso, recs) in enumerate(v.items()):
                lines += [f'  "{iso}": [', *rows(recs, "   "), "  ]" + ("," if j < len(v) - 1 else "")]
            lines.append(" }" + comma)
        elif k in ("offset_for_timestamp", "segments"):
            lines += [f' "{k}": [', *rows(v, "  "), " ]" + comma]
        elif k == "planning":
            lines.append(' "planning": {')
            for j, (rule, probes) in enumerate(v.items()):
                lines += [f'  "{rule}": [', *rows(probes, "   "), "  ]" + ("," if j < len(v) - 1 else "")]
            lines.append(" }" + comma)
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}{comma}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == doc
    return text


def write_case(doc: dict) -> None:
    (CORPUS / doc["case"] / "expected.json").write_text(dump(doc))


def run(builders, only: set[str] | None) -> None:
    for fn in builders:
        label = getattr(fn, "case", None) or case_name(fn)
        if only and label not in only:
            continue
        shutil.rmtree(CORPUS / label, ignore_errors=True)
        started = time.monotonic()
        doc = fn()
        assert doc["case"] == label, (doc["case"], label)
        write_case(doc)
        print(f"{label}: {time.monotonic() - started:.1f} s", file=sys.stderr)


def add_planning(case_dir: Path) -> None:
    """The planning rule's answers (model.planning) for a case whose reads are ok: from its files as they
    are, so the broker's and the sink's cases get them too, whoever wrote the files. Idempotent."""
    path = case_dir / "expected.json"
    doc = json.loads(path.read_text())
    doc.pop("planning", None)
    if doc["verdict"]["read"]["status"] == "ok" and "segments" in doc:
        segs = doc["segments"]
        answers = planning(case_dir / PART, [s["base"] for s in segs], segs[-1]["next_offset"], doc["log_start"],
                           doc["committed_end"])
        if answers is not None:
            doc["planning"] = answers
    path.write_text(dump(doc))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--skip", default="", help="comma-separated groups to leave as they are: broker, spark")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    skip = set(filter(None, args.skip.split(",")))
    CORPUS.mkdir(parents=True, exist_ok=True)
    run(SEGLOG_CASES, only)
    if "broker" not in skip:
        from tests.conformance import broker_cases
        broker_cases.generate(only)
    if "spark" not in skip:
        from tests.conformance import sink_case
        sink_case.generate(only)
    for case_dir in sorted(CORPUS.iterdir()):
        if (case_dir / "expected.json").is_file() and (not only or case_dir.name in only):
            add_planning(case_dir)
    write_record_caps()
    return 0


RECORD_CAPS = CORPUS.parent / "record_caps.json"


def write_record_caps() -> None:
    """The maxRecordsPerPartition rule's vectors (model.record_cap_cases), one case a line."""
    from tests.conformance.model import record_cap_cases

    lines = ",\n".join(" " + json.dumps(c, separators=(",", ":")) for c in record_cap_cases())
    RECORD_CAPS.write_text("[\n" + lines + "\n]\n")


if __name__ == "__main__":
    sys.exit(main())
