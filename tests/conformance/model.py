"""The conformance corpus's model (tests/conformance/generate.py): what a case's construction wrote, and
the answers derived from it by brute force. Nothing here calls seglog; the runners hold both
implementations to these answers (docs/internals.md, "Conformance corpus").

A model is the partition's records in offset order (data records, and the control records of
transaction markers, which occupy an offset and carry a timestamp), its segments' bases, which of
them the writer sealed, its log start and its committed end. The answers:

- records per isolation level: what a Kafka consumer returns from [log start, committed end):
  never control records; read_committed also skips the records of aborted transactions and stops at
  the first record of a transaction with no marker below the committed end (Kafka's last stable
  offset);
- offset_for_timestamp(T): the smallest offset in [log start, committed end) whose record (data or
  control: Kafka's ListOffsets sees every batch) has a timestamp >= T, else None; -1 the committed
  end, -2 the log start, -3 the first offset holding the largest timestamp (None when no record has
  one);
- each segment's base, next offset (the next segment's base; for the last, the offset after its last
  whole batch), largest timestamp (-1 when none of its records has one) and whether it is sealed.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

ISOLATIONS = ("read_uncommitted", "read_committed")
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3

# The record batch header, magic 2 (docs/format.md "Record batches"), parsed here on its own so that
# the generator can find batch positions in the files it damages without asking seglog.
HEADER = struct.Struct(">qiibIhiqqqhii")
assert HEADER.size == 61
TRANSACTIONAL, CONTROL = 0x10, 0x20


@dataclass(frozen=True)
class BatchHead:
    position: int
    base_offset: int
    length: int            # batchLength + 12: the whole batch's bytes
    leader_epoch: int
    attributes: int
    last_offset: int
    max_timestamp: int
    producer_id: int

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL)


def walk(path: Path) -> list[BatchHead]:
    """The batch headers of a whole, undamaged `.log` (asserts it ends on a batch)."""
    data = Path(path).read_bytes()
    out, pos = [], 0
    while pos < len(data):
        (base, blen, epoch, magic, _crc, attrs, lod, _first_ts, max_ts, pid, _pe, _seq, _n) = HEADER.unpack_from(data, pos)
        assert magic == 2, (path, pos)
        out.append(BatchHead(pos, base, blen + 12, epoch, attrs, base + lod, max_ts, pid))
        pos += blen + 12
    assert pos == len(data), (path, pos, len(data))
    return out


@dataclass(frozen=True)
class Rec:
    offset: int
    timestamp: int                    # -1: no timestamp
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple = ()               # ((str, bytes | None), ...)
    producer: str | None = None       # a transactional producer's name; None: not transactional
    control: str | None = None        # "COMMIT" / "ABORT": a transaction marker (its control record)

    def to_json(self) -> dict:
        out = {"offset": self.offset, "timestamp": self.timestamp,
               "key": None if self.key is None else self.key.hex(),
               "value": None if self.value is None else self.value.hex()}
        if self.headers:
            out["headers"] = [[k, None if v is None else v.hex()] for k, v in self.headers]
        return out


@dataclass
class Model:
    records: list[Rec]                     # every record in the files, offset order (controls included)
    bases: list[int]                       # segment bases
    sealed: list[bool]                     # per segment, as the writer left it
    file_end: int                          # offset after the last whole batch of the last segment
    committed_end: int
    log_start: int = 0
    # Per segment: the largest batch max timestamp the files hold beyond `records` (a batch the cleaner
    # emptied keeps its header); None when only the records count.
    extra_largest: dict = field(default_factory=dict)

    # ---- reads
    def _committed(self) -> list[Rec]:
        return [r for r in self.records if self.log_start <= r.offset < self.committed_end]

    def fate(self, rec: Rec) -> str | None:
        """COMMIT / ABORT from the producer's next marker after `rec` below the committed end; None: open."""
        for m in self.records:
            if m.offset > rec.offset and m.offset < self.committed_end and m.control and m.producer == rec.producer:
                return m.control
        return None

    def visible(self, isolation: str) -> list[Rec]:
        out = []
        for r in self._committed():
            if r.control:
                continue
            if isolation == "read_committed" and r.producer is not None:
                fate = self.fate(r)
                if fate is None:
                    break                   # the last stable offset: nothing from here on
                if fate == "ABORT":
                    continue
            out.append(r)
        return out

    # ---- lookups
    def offset_for_timestamp(self, t: int) -> int | None:
        recs = self._committed()
        if t == LATEST:
            return self.committed_end
        if t == EARLIEST:
            return self.log_start
        if t == MAX_TIMESTAMP:
            stamped = [r for r in recs if r.timestamp >= 0]
            if not stamped:
                return None
            top = max(r.timestamp for r in stamped)
            return min(r.offset for r in stamped if r.timestamp == top)
        hits = [r.offset for r in recs if r.timestamp >= t]
        return min(hits) if hits else None

    def probes(self, limit: int = 240) -> list[int]:
        """Each distinct timestamp and its neighbours, 0, past the largest; then -1, -2, -3."""
        ts = sorted({r.timestamp for r in self._committed() if r.timestamp >= 0})
        cand = sorted({max(0, t + d) for t in ts for d in (-1, 0, 1)} | {0} | ({ts[-1] + 1000} if ts else set()))
        if len(cand) > limit:
            step = len(cand) / limit
            cand = sorted({cand[int(i * step)] for i in range(limit)} | {cand[0], cand[-1]})
        return cand + [LATEST, EARLIEST, MAX_TIMESTAMP]

    # ---- segments
    def segment_facts(self) -> list[dict]:
        out = []
        for i, base in enumerate(self.bases):
            nxt = self.bases[i + 1] if i + 1 < len(self.bases) else self.file_end
            stamps = [r.timestamp for r in self.records if base <= r.offset < nxt]
            largest = max(stamps, default=-1)
            if self.extra_largest.get(i) is not None:
                largest = max(largest, self.extra_largest[i])
            out.append({"base": base, "next_offset": nxt, "largest_timestamp": max(largest, -1),
                        "sealed": self.sealed[i]})
        return out


OK = {"status": "ok"}


def fault(kind: str, file: str, position: int | None = None) -> dict:
    out = {"status": "fault", "kind": kind, "file": file}
    if position is not None:
        out["position"] = position
    return out


def files_fault(kinds: list[str], file: str, position: int | None = None) -> dict:
    out = {"status": "fault", "kinds": kinds, "file": file}
    if position is not None:
        out["position"] = position
    return out


def expected(model: Model, case: str, source: str, description: str, *, read: dict = OK, files: dict = OK,
             facts: bool = True) -> dict:
    """expected.json: the answers of `model`. A read verdict that is a fault has no records, probes or
    segment facts: the read must report the fault, whatever rows it returned before."""
    doc = {"case": case, "source": source, "description": description, "topic": "t", "partition": 0,
           "committed_end": model.committed_end,
           "verdict": {"read": read, "files": files}}
    if read["status"] == "ok":
        doc["log_start"] = model.log_start
        doc["records"] = {iso: [r.to_json() for r in model.visible(iso)] for iso in ISOLATIONS}
        doc["offset_for_timestamp"] = [[t, model.offset_for_timestamp(t)] for t in model.probes()]
        if facts:
            doc["segments"] = model.segment_facts()
    return doc


# ------------------------------------------------------------------------------------- planning
# The task-cut rule both planners keep (Python `Log.byte_size` / `Log.split_offset`, JVM
# `PartitionLog.byteSize` / `splitOffset`): sizes and cuts from the offset indexes (a cut reads only the
# 8-byte base offset of the batch an entry points at), no log scan.
# The answers come from the files' own bytes (segment sizes, index entries as the writer placed them),
# by brute force over every entry, never from either implementation.
INDEX_ENTRY = struct.Struct(">ii")       # relative offset, position (docs/format.md "Offset index")


@dataclass(frozen=True)
class IndexedSegment:
    base: int
    next_offset: int
    size: int                          # the .log's bytes
    entries: tuple                     # ((offset, position), ...): the index's entries, oldest first


def index_entries(path: Path, base: int, log_size: int) -> tuple | None:
    """The entries of an offset index file: whole 8-byte entries with rising offsets and positions inside
    the .log, then nothing but a zero-filled tail (preallocated, or zeroed by a truncation). An entry is
    never at position 0 (the first batch is where a lookup without an entry starts anyway: Kafka's writer
    indexes a batch only after index.interval.bytes of others), so an all-zero entry is tail, even the
    first. None when the file is not that (missing, an odd size, garbage): how a reader then sizes a range
    is its own affair."""
    if not path.is_file():
        return None
    raw = path.read_bytes()
    if len(raw) % INDEX_ENTRY.size:
        return None
    out: list[tuple[int, int]] = []
    for k in range(len(raw) // INDEX_ENTRY.size):
        rel, pos = INDEX_ENTRY.unpack_from(raw, k * INDEX_ENTRY.size)
        if rel == 0 and pos == 0:
            return tuple(out) if not any(raw[k * INDEX_ENTRY.size:]) else None
        if rel < 0 or not 0 < pos < log_size or (out and (base + rel <= out[-1][0] or pos <= out[-1][1])):
            return None
        out.append((base + rel, pos))
    return tuple(out)


def whole_batches_size(path: Path) -> int:
    """Bytes of a .log up to the end of its last whole batch (a torn tail past it is no part of the log)."""
    data = Path(path).read_bytes()
    pos = 0
    while pos + HEADER.size <= len(data):
        length = HEADER.unpack_from(data, pos)[1] + 12
        if pos + length > len(data):
            break
        pos += length
    return pos


def indexed_segments(part: Path, bases: list[int], file_end: int) -> list[IndexedSegment] | None:
    segs = []
    for i, base in enumerate(bases):
        log = part / f"{base:020d}.log"
        last = i == len(bases) - 1
        size = whole_batches_size(log) if last else log.stat().st_size
        entries = index_entries(part / f"{base:020d}.index", base, size)
        if entries is None:
            return None
        segs.append(IndexedSegment(base, file_end if last else bases[i + 1], size, entries))
    return segs


def _holding(segs: list[IndexedSegment], offset: int) -> int:
    """The segment an offset falls in (the last whose base is at or below it; the first below them all)."""
    return max([i for i, s in enumerate(segs) if s.base <= offset], default=0)


def _bytes_before(seg: IndexedSegment, offset: int) -> int:
    """Log bytes of `seg` before `offset` as its index alone tells: all of them at or past its end, else
    the position of the last entry at or below the offset (0 when there is none)."""
    if offset >= seg.next_offset:
        return seg.size
    return max([pos for off, pos in seg.entries if off <= offset], default=0)


def byte_size(segs: list[IndexedSegment], start: int, end: int) -> int:
    if not segs or end <= start:
        return 0
    i, j = _holding(segs, start), _holding(segs, end)
    return max(0, sum(s.size for s in segs[i:j]) - _bytes_before(segs[i], start) + _bytes_before(segs[j], end))


def _batch_base(part: Path, seg: IndexedSegment, position: int, key: int) -> int:
    """The first offset of the batch an index entry points at (the entry's key is its last): the batch
    header's base offset, read from the .log; the key itself when those bytes are not a base within the
    segment up to the key (planning never judges the log)."""
    with open(part / f"{seg.base:020d}.log", "rb") as fh:
        fh.seek(position)
        head = fh.read(8)
    base = int.from_bytes(head, "big", signed=True) if len(head) == 8 else key
    return base if seg.base <= base <= key else key


def split_offset(part: Path, segs: list[IndexedSegment], start: int, end: int, target: int) -> int | None:
    """Cuts fall where a batch begins (a task never shares a batch with the next): of the index entries
    in (start, end) past start's own batch, whose batch begins after start, the last at most `target` log
    bytes past start gives the cut, its batch's first offset; when none is that close, the first past it;
    None when there is none at all."""
    if not segs or end <= start:
        return None
    first = _holding(segs, start)
    candidates = []                                   # (cut, bytes from start to the entry), offset order
    before = -_bytes_before(segs[first], start)
    for s in segs[first:]:
        if s.base >= end:
            break
        for off, pos in s.entries:
            if start < off < end and before + pos > 0:
                cut = _batch_base(part, s, pos, off)
                if cut > start:
                    candidates.append((cut, before + pos))
        before += s.size
    # only entries before the first one past the target count: the cut never jumps over a too-far entry
    first_far = next((k for k, (_, past) in enumerate(candidates) if past > target), len(candidates))
    if first_far:
        return candidates[first_far - 1][0]
    return candidates[0][0] if candidates else None


def planning(part: Path, bases: list[int], file_end: int, log_start: int, end: int) -> dict | None:
    """Probes of both rules over [log start, committed end]: byte sizes of pairs of offsets (segment
    bases, index entries and their neighbours, the range's ends), and cuts of those pairs at targets from
    0 and 1 byte to past the whole range, including targets equal to an entry's exact distance (the "at
    most" edge). None when an index is not well formed (see index_entries)."""
    segs = indexed_segments(part, bases, file_end)
    if segs is None or end <= log_start:
        return None
    points = {log_start, end} | {b for b in bases} | {o + d for s in segs for o, _ in s.entries for d in (-1, 0, 1)}
    points = sorted(p for p in points if log_start <= p <= end)
    if len(points) > 12:
        step = (len(points) - 1) / 11
        points = sorted({points[round(k * step)] for k in range(12)})
    pairs = [(a, b) for a in points for b in points if a < b]
    sizes = [[a, b, byte_size(segs, a, b)] for a, b in pairs]
    cuts = []
    for a, b in pairs[:: max(1, len(pairs) // 24)]:
        whole = byte_size(segs, a, b)
        exact = sorted({byte_size(segs, a, o) for s in segs for o, _ in s.entries if a < o < b})[:3]
        for target in sorted({0, 1, whole // 2, whole, whole + 1, *exact}):
            cuts.append([a, b, target, split_offset(part, segs, a, b, target)])
    return {"byte_size": sizes, "split_offset": cuts}


# ------------------------------------------------------------------------------- record caps
# maxRecordsPerPartition (Spark's Kafka source): both planners cut a task of more than `maximum` offsets
# into the fewest tasks of at most that many, of about equal size (the first `total % pieces` one larger),
# at exact offsets, in the task's order (Python `source.planning.cap_records`, JVM `Planner.capRecords`).
# The answers come by brute force: every offset of the task listed, dealt out in order, runs regrouped.
def cap_records(tasks: list[list[list]], maximum: int) -> list[list[list]]:
    if maximum <= 0:
        return tasks
    out = []
    for task in tasks:
        offsets = [(t, p, o) for t, p, a, b in task for o in range(a, b)]
        if len(offsets) <= maximum:
            out.append(task)
            continue
        pieces = -(-len(offsets) // maximum)
        sizes = [len(offsets) // pieces + (1 if k < len(offsets) % pieces else 0) for k in range(pieces)]
        at = 0
        for size in sizes:
            piece, run = [], None
            for t, p, o in offsets[at:at + size]:
                if run is not None and run[0] == t and run[1] == p and run[3] == o:
                    run[3] = o + 1
                else:
                    run = [t, p, o, o + 1]
                    piece.append(run)
            out.append(piece)
            at += size
    return out


def record_cap_cases(seed: int = 25, n: int = 60) -> list[dict]:
    """Tasks as the byte packing leaves them (slices of one or more partitions, some empty-adjacent), with
    caps below, at and above their sizes; each with the brute-force answer."""
    import random

    rng = random.Random(seed)
    edges = [([[["a", 0, 5, 8]]], 1), ([[["a", 0, 0, 1], ["b", 1, 3, 5]]], 1), ([[["a", 0, 0, 5]]], 2),
             ([[["a", 0, 0, 4]], [["a", 1, 0, 9]]], 4), ([[["a", 0, 0, 10]]], 10), ([[["a", 0, 0, 10]]], 9),
             ([[["a", 0, 0, 3], ["a", 1, 7, 8], ["b", 0, 2, 6]]], 3)]
    cases = [{"tasks": t, "maximum": m, "expected": cap_records(t, m)} for t, m in edges]
    for k in range(n):
        tasks = []
        for _ in range(rng.randint(1, 4)):
            task = []
            for _ in range(rng.randint(1, 3)) if k % 3 else range(rng.randint(1, 6)):
                topic, part = rng.choice(["a", "b"]), rng.randrange(3)
                start = rng.randrange(0, 10_000)
                task.append([topic, part, start, start + rng.choice([1, 2, 3, 7, 50, 333, rng.randrange(1, 2000)])])
            tasks.append(task)
        biggest = max(sum(b - a for _, _, a, b in t) for t in tasks)
        maximum = rng.choice([1, 2, 3, 7, 100, max(1, biggest // 3), biggest - 1 or 1, biggest, biggest + 1, 0])
        if maximum:
            maximum = max(maximum, -(-biggest // 12))      # at most 12 pieces a task: the file stays small
        cases.append({"tasks": tasks, "maximum": maximum, "expected": cap_records(tasks, maximum)})
    return cases
