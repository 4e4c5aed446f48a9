"""`seglog dump FILE... [--deep-iteration] [--print-data]`: like Kafka's DumpLogSegments.

- `.log`: one line per batch (offsets, count, position, timestamp type and max timestamp, size,
  crc, isvalid); with `--deep-iteration` one line per record; `--print-data` adds keys, values and
  headers (and implies deep iteration, as in Kafka). A batch whose CRC fails is shown with
  `isvalid: false` and the walk goes on; bytes that do not make a batch end the walk with
  `Found N invalid bytes at the end of FILE`.
- `.index`: `offset: O position: P`; each entry is checked against the `.log` beside it (it must
  point at the start of the batch whose last offset is O), mismatches are listed at the end.
- `.timeindex`: `timestamp: T offset: O`, then what the index's own sanity check finds.

Exit 1 when any file holds a fault, 0 otherwise. Never writes.
"""
from __future__ import annotations

import mmap
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from seglog.commands.common import EXIT_FAULT, EXIT_OK, UsageError

_TS_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_KINDS = (".log", ".index", ".timeindex")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "dump", help="print the batches, records or index entries of segment files",
        description="Print record batches (.log) or index entries (.index, .timeindex), "
                    "like Kafka's DumpLogSegments. Exit 1 if a file holds a fault.")
    p.add_argument("files", nargs="+", metavar="FILE", help="a .log, .index or .timeindex file")
    p.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    p.add_argument("--print-data", "--print-data-log", dest="print_data", action="store_true",
                   help="print keys, values and headers (implies --deep-iteration)")
    p.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help="stop after N bytes of each .log file")
    p.set_defaults(run=run)


def run(args) -> int:
    files = [Path(f) for f in args.files]
    for f in files:       # refuse bad arguments before printing anything
        if not f.exists():
            raise UsageError(f"{f}: no such file")
        if not f.is_file():
            raise UsageError(f"{f}: not a file")
        if f.suffix not in _KINDS:
            raise UsageError(f"{f}: cannot dump a {f.suffix or 'suffix-less'} file; expected .log, .index or .timeindex")
        from seglog.indexer.names import parse_segment_file
        parsed = parse_segment_file(f.name)   # a stem of digits that is no base offset: SegmentNameError, by name
        if f.suffix != ".log" and parsed is None:
            raise UsageError(f"{f}: an index file is named <20-digit base offset>{f.suffix}")
    out = sys.stdout
    faults = 0
    for f in files:
        print(f"Dumping {f}", file=out)
        if f.suffix == ".log":
            faults += dump_log(f, out, deep=args.deep_iteration or args.print_data,
                               data=args.print_data, max_bytes=args.max_bytes)
        elif f.suffix == ".index":
            faults += dump_offset_index(f, out)
        else:
            faults += dump_time_index(f, out)
    return EXIT_FAULT if faults else EXIT_OK


@contextmanager
def _mapped(path: Path):
    """The file's bytes, memory mapped (never read whole into the heap); b'' when empty."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mm
        finally:
            mm.close()


def _render(b: bytes | None) -> str:
    """A key or value for a terminal: UTF-8 text when it is printable, else hex."""
    if b is None:
        return "null"
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + b.hex()
    return text if text.isprintable() else "0x" + b.hex()


def _base_offset(path: Path) -> int | None:
    from seglog.indexer.names import parse_segment_file
    parsed = parse_segment_file(path.name)
    return parsed[0] if parsed else None


def dump_log(path: Path, out, *, deep: bool, data: bool, max_bytes: int | None = None) -> int:
    """Print the batches of a .log; returns the number of faults (bad CRCs, invalid bytes)."""
    from seglog.errors import CorruptRecordError
    from seglog.indexer.codec.records import check_crc, decode_batch, header_problem, BATCH_HEADER_SIZE, HEADER_STRUCT, BatchHeader

    faults = 0
    base = _base_offset(path)
    if base is not None:
        print(f"Log starting offset: {base}", file=out)
    with _mapped(path) as buf:
        end = len(buf) if max_bytes is None else min(len(buf), max_bytes)
        pos = 0
        prev_last = None
        while pos < end:
            problem = None
            header = None
            if pos + BATCH_HEADER_SIZE > len(buf):
                problem = f"torn batch header ({len(buf) - pos} bytes left)"
            else:
                header = BatchHeader._make(HEADER_STRUCT.unpack_from(buf, pos))
                problem = header_problem(header)
                if problem is None and pos + header.size > len(buf):
                    problem = f"batch of {header.size} bytes runs past the end of the file"
            if problem is not None:
                print(f"Found {len(buf) - pos} invalid bytes at the end of {path.name} "
                      f"(position {pos}: {problem})", file=out)
                faults += 1
                break
            valid = check_crc(buf, pos, header)
            ts_type = _TS_TYPES[header.timestamp_type]
            print(f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
                  f"count: {header.record_count} {_producer_fields(header)} "
                  f"position: {pos} {ts_type}: {header.max_timestamp} "
                  f"size: {header.size} magic: {header.magic} "
                  f"compresscodec: {_CODECS.get(header.compression_codec, header.compression_codec)} "
                  f"crc: {header.crc} isvalid: {'true' if valid else 'false'}", file=out)
            if not valid:
                faults += 1
            if prev_last is not None and header.base_offset <= prev_last:
                print(f"Non-consecutive offsets in {path.name}: batch at position {pos} starts at "
                      f"{header.base_offset}, after {prev_last}", file=out)
                faults += 1
            prev_last = header.last_offset
            if deep:
                try:
                    records = decode_batch(buf, pos, header)
                except CorruptRecordError as exc:
                    print(f"| cannot decode the records of the batch at position {pos}: {exc}", file=out)
                    faults += 1
                    records = []
                for r in records:
                    line = (f"| offset: {r.offset} {_TS_TYPES[r.timestamp_type]}: {r.timestamp} "
                            f"keySize: {-1 if r.key is None else len(r.key)} "
                            f"valueSize: {-1 if r.value is None else len(r.value)} "
                            f"sequence: {_sequence(header, r.offset)} "
                            f"headerKeys: [{','.join(k for k, _ in r.headers)}]")
                    if header.is_control:
                        line += _control_fields(r)
                    elif data:
                        line += f" key: {_render(r.key)} payload: {_render(r.value)}"
                        if r.headers:
                            line += " headers: " + ",".join(f"{k}={_render(v)}" for k, v in r.headers)
                    print(line, file=out)
            pos += header.size
    return faults


def _producer_fields(header) -> str:
    """The producer and transaction fields of a batch, as Kafka's DumpLogSegments prints them."""
    from seglog.indexer.codec.batch_layout import DELETE_HORIZON_FLAG_MASK

    last_seq = -1 if header.base_sequence < 0 else (header.base_sequence + header.last_offset_delta) % (1 << 31)
    horizon = (f"OptionalLong[{header.base_timestamp}]" if header.attributes & DELETE_HORIZON_FLAG_MASK
               else "OptionalLong.empty")
    return (f"baseSequence: {header.base_sequence} lastSequence: {last_seq} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {str(header.is_transactional).lower()} isControl: {str(header.is_control).lower()} "
            f"deleteHorizonMs: {horizon}")


def _sequence(header, offset: int) -> int:
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + offset - header.base_offset) % (1 << 31)


def _control_fields(record) -> str:
    """A transaction marker's type and coordinator epoch (key: version, type; value: version, epoch)."""
    import struct

    from seglog.indexer.transactions import ABORT, COMMIT

    key, value = record.key or b"", record.value or b""
    if len(key) < 4:
        return " controlType: unknown"
    kind = struct.unpack_from(">h", key, 2)[0]
    if kind not in (ABORT, COMMIT):
        return f" controlType: {kind}"
    epoch = struct.unpack_from(">i", value, 2)[0] if len(value) >= 6 else -1
    return f" endTxnMarker: {'COMMIT' if kind == COMMIT else 'ABORT'} coordinatorEpoch: {epoch}"


def _log_batches(log_path: Path):
    """(positions, last offsets) of the good batches of a .log, or None when there is no .log."""
    if not log_path.exists():
        return None
    from seglog.indexer.codec.records import scan_batches

    with _mapped(log_path) as buf:
        scan = scan_batches(buf, 0, len(buf), check_crc=False)
        return scan.positions, scan.last_offsets


def dump_offset_index(path: Path, out) -> int:
    import numpy as np

    from seglog.indexer.indexes.offset_index import OffsetIndex

    base = _base_offset(path)
    size = path.stat().st_size
    with OffsetIndex(path, base, max(size, 8), writable=False, preallocate=True) as index:
        offsets, positions = index.offsets_and_positions()
        positions = np.asarray(positions, dtype=np.int64)
        for o, p in zip(offsets.tolist(), positions.tolist()):
            print(f"offset: {o} position: {p}", file=out)
        problems = list(index.sanity_check())
    batches = _log_batches(path.with_suffix(".log"))
    if batches is not None and len(offsets):
        batch_pos, batch_last = batches
        i = np.searchsorted(batch_pos, positions)
        ok = i < len(batch_pos)
        ok[ok] &= batch_pos[i[ok]] == positions[ok]
        ok[ok] &= batch_last[i[ok]] == offsets[ok]
        bad = np.flatnonzero(~ok)
        if bad.size:
            problems.append(f"Mismatches in :{path}")
            for k in bad[:20].tolist():
                j = int(i[k])
                at = (f"log offset: {int(batch_last[j])}" if j < len(batch_pos) and batch_pos[j] == positions[k]
                      else "no batch starts at that position")
                problems.append(f"  Index offset: {int(offsets[k])}, position: {int(positions[k])}, {at}")
            if bad.size > 20:
                problems.append(f"  ... {bad.size - 20} more")
    for p in problems:
        print(p, file=out)
    return len(problems)


def dump_time_index(path: Path, out) -> int:
    from seglog.indexer.indexes.time_index import TimeIndex

    base = _base_offset(path)
    size = path.stat().st_size
    with TimeIndex(path, base, max(size, 12), writable=False, preallocate=True) as index:
        timestamps, offsets = index.timestamps_and_offsets()
        for t, o in zip(timestamps.tolist(), offsets.tolist()):
            print(f"timestamp: {t} offset: {o}", file=out)
        problems = list(index.sanity_check())
    for p in problems:
        print(p, file=out)
    return len(problems)
