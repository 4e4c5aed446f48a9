"""Issue 36, items 3, 5, 6 and 8 through `format("seglog")` (the connector jar): a root given as a file URI is
the folder it names, for the write, the read, the CLI and the storage API alike; a symlinked partition folder
is refused by the read and the write; a write appending to a `seglog import --link`ed partition never changes
the broker's files; a segment named past int64 is refused by the read, naming the file."""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from seglog.indexer.log import Log
from tests.cli.helpers import seglog

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
BROKER = REPO / "tests" / "conformance" / "corpus" / "broker-codecs" / "t-0"
T0 = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def _df(spark, n: int, t0=T0):
    rows = [(f"k{i}".encode(), f"value-{i}".encode(), t0 + dt.timedelta(milliseconds=i)) for i in range(n)]
    return spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp").repartition(2)


def _write(df, root: str, **options):
    w = df.write.format("seglog").mode("append")
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(root)


def _read(spark, root: str, topic: str):
    return spark.read.format("seglog").option("subscribe", topic).load(root)


def sha256s(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_file_uri_root_is_the_folder_it_names(spark, tmp_path):
    root = tmp_path / "log"
    cwd_before = set(os.listdir(os.getcwd()))
    _write(_df(spark, 50), f"file://{root}", topic="events", partitions=2)
    _write(_df(spark, 10), f"file:{root}", topic="events")
    assert set(os.listdir(os.getcwd())) == cwd_before          # no `file:` folder under the driver's cwd
    assert _read(spark, f"file://{root}", "events").count() == 60
    assert _read(spark, str(root), "events").count() == 60
    records = 0
    for p in (0, 1):
        with Log.open(root / f"events-{p}", readonly=True) as log:
            records += log.log_end_offset
    assert records == 60
    res = seglog("describe", root)
    assert res.returncode == 0 and "events" in res.stdout, res.stdout + res.stderr
    with pytest.raises(Exception, match="seglog write: option 'path' = 's3://bucket/log': scheme 's3'"):
        _write(_df(spark, 1), "s3://bucket/log", topic="events")
    with pytest.raises(Exception, match="seglog source: option 'path' = 'file:log': a file URI names an absolute path"):
        _read(spark, "file:log", "events").count()


def test_a_symlinked_partition_folder_is_refused_by_the_read_and_the_write(spark, tmp_path):
    other = tmp_path / "other"
    _write(_df(spark, 20), str(other), topic="events", partitions=1)
    before = sha256s(other / "events-0")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(other / "_seglog", root / "_seglog", ignore=shutil.ignore_patterns("locks"))
    (root / "events-0").symlink_to(other / "events-0")
    with pytest.raises(Exception, match="events-0: a symbolic link inside the log root"):
        _read(spark, str(root), "events").count()
    with pytest.raises(Exception, match="events-0: a symbolic link inside the log root"):
        _write(_df(spark, 5), str(root), topic="events")
    assert sha256s(other / "events-0") == before


def test_a_symlinked_segment_file_is_refused_by_the_read(spark, tmp_path):
    """Issue 36 item 5, the JVM reader's side: a sealed segment's .log (or index) linked to another root's
    file showed that root's records as this partition's; the read now refuses the link by name."""
    other = tmp_path / "other"
    _write(_df(spark, 20), str(other), topic="events", partitions=1, **{"segment.bytes": 1024})
    root = tmp_path / "root"
    _write(_df(spark, 20), str(root), topic="events", partitions=1, **{"segment.bytes": 1024})
    for suffix in (".log", ".index"):
        first = sorted((root / "events-0").glob("*" + suffix))[0]
        saved = first.read_bytes()
        first.unlink()
        first.symlink_to(sorted((other / "events-0").glob("*" + suffix))[0])
        with pytest.raises(Exception, match=f"{first.name}: a symbolic link inside the log root"):
            _read(spark, str(root), "events").count()
        first.unlink()
        first.write_bytes(saved)
    assert _read(spark, str(root), "events").count() == 20


@pytest.mark.parametrize("linked", ["_seglog", "_seglog/commits"])
def test_a_symlinked_metadata_folder_is_refused_by_the_write_and_nothing_written_through_it(spark, tmp_path, linked):
    """`_seglog` (or its commits folder) linked elsewhere: the write's commit, topic file and locks would land
    outside the root. Refused by name; the target is unchanged."""
    root = tmp_path / "root"
    _write(_df(spark, 10), str(root), topic="events", partitions=1)
    real, target = root / linked, tmp_path / "elsewhere"
    shutil.move(str(real), str(target))
    real.symlink_to(target)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    with pytest.raises(Exception, match=f"{real.name}: a symbolic link inside the log root"):
        _write(_df(spark, 5), str(root), topic="events")
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before


def test_a_write_after_import_link_never_changes_the_broker_files(spark, tmp_path):
    src = tmp_path / "broker" / "t-0"
    shutil.copytree(BROKER, src)
    before = sha256s(src)
    root = tmp_path / "root"
    res = seglog("import", src, root, "--link")
    assert res.returncode == 0, res.stderr
    with Log.open(root / "t-0", readonly=True) as log:
        last = log.segment(log.segment_bases()[-1]).largest_timestamp()
        end = log.log_end_offset
    # The broker's own time, so the write appends to the active segment's files (a later one would roll).
    t0 = dt.datetime.fromtimestamp(last / 1000, tz=dt.timezone.utc)
    _write(_df(spark, 3, t0), str(root), topic="t")
    assert sha256s(src) == before
    assert _read(spark, str(root), "t").count() == end + 3


def test_a_segment_named_past_int64_is_refused_by_the_read(spark, tmp_path):
    root = tmp_path / "log"
    _write(_df(spark, 20), str(root), topic="events", partitions=1)
    shutil.copyfile(root / "events-0" / "00000000000000000000.log", root / "events-0" / "99999999999999999999.log")
    with pytest.raises(Exception, match="99999999999999999999.log"):
        _read(spark, str(root), "events").count()


def test_the_storage_api_refuses_a_topic_the_sink_writes_and_appends_elsewhere(spark, tmp_path):
    """Issue 36 item 4: records the storage API appended to a sink-written topic sat past the committed end
    (invisible) and the next write cut them; refused now, naming the topic. A root no sink writes appends."""
    from seglog.errors import CommittedTopicError
    from seglog.indexer.codec.records import Record

    root = tmp_path / "log"
    _write(_df(spark, 20), str(root), topic="events", partitions=1)
    with Log.open(root / "events-0") as log:
        with pytest.raises(CommittedTopicError, match="topic 'events' is written through the commit log"):
            log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
        assert log.log_end_offset == 20
    _write(_df(spark, 5), str(root), topic="events")
    assert _read(spark, str(root), "events").count() == 25
    with Log.open(root / "events-0", outside_commit_log=True) as log:   # a caller that commits itself
        log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
    plain = tmp_path / "plain"
    with Log.open(plain / "events-0") as log:
        log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
        assert log.log_end_offset == 1
