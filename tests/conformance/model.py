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
