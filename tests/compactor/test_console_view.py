"""The console's pages are served from the sidecar's in-memory view at a cost of the rows they show
(compactor/console_view.py): with 10,000 partitions (one topic of 5,000, and 5,000 topics of one) every
page reads at most a page of rows (the view counts them: work, not time), never a file (the root does not
exist), and its paging reaches the last row."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from seglog.compactor.config import ConsoleConfig
from seglog.compactor.console_app import Console
from seglog.compactor.console_view import ConsoleView, PartitionView, SegmentRow
from seglog.compactor.jobs import JobResult
from seglog.compactor.lag import ConsumerLag
from seglog.compactor.metrics import PartitionStats

PAGE = 100


def stats(topic: str, p: int) -> PartitionStats:
    return PartitionStats(topic=topic, partition=p, segments=2, size_bytes=1000 + p, log_start_offset=10,
                          log_end_offset=110 + p, largest_timestamp=5_000 + p, oldest_segment_timestamp=4_000,
                          retention_ms=-1, retention_blocked=False, unsealed_segments=0, observed_ms=9_000)


def view_of_10000() -> ConsoleView:
    view = ConsoleView(samples_max=5, sample_interval_ms=0)
    segs = (SegmentRow(10, 60, 500, "sealed", 4_000, 4_500, 16, 24), SegmentRow(60, 110, 500, "active", 4_600, 5_000, 0, 0))
    names = [("wide", p) for p in range(5000)] + [(f"t{i:05d}", 0) for i in range(5000)]
    for topic, p in names:
        view.observe(PartitionView(stats(topic, p), segs, "delete", -1))
    view.observe_lag([ConsumerLag(f"q{q:04d}", None, "wide", p, 5, 110 + p, 105 + p, 1.5, 9_000)
                      for q in range(3) for p in range(1000)], [("bad.json", "not JSON")])
    for i in range(30):
        view.job_finished(JobResult("seal", partitions=10_000, failed=[(f"wide-{k}", "E") for k in range(50)]), i)
    view.pass_done(10_000)
    return view


def render(console: Console, handler: str, query: str = "", **path_params) -> str:
    from starlette.requests import Request

    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query.encode(), "headers": [],
             "path_params": path_params}
    response = asyncio.run(getattr(console, handler)(Request(scope)))
    assert response.status_code == 200, response.body[:500]
    return response.body.decode()


@pytest.fixture(scope="module")
def console():
    view = view_of_10000()
    return Console(view, ConsoleConfig(page_size=PAGE), Path("/nonexistent/root"), topic_config=lambda t: None)


@pytest.mark.parametrize("handler, query, params, rows, shown", [
    ("topics", "", {}, "tr data-topic", PAGE),
    ("topics", "page=51", {}, "tr data-topic", 1),                # 5,001 topics: the last page holds one
    ("topic", "", {"topic": "wide"}, "tr data-partition", PAGE),
    ("topic", "page=50", {"topic": "wide"}, "tr data-partition", PAGE),
    ("segments", "", {"topic": "wide", "partition": 4999}, "tr data-base", 2),
    ("writers", "", {}, "tr data-writer", 0),
    ("jobs", "", {}, "<tr><td>", 20),                              # the ring keeps JOB_RUNS_KEPT runs
    ("consumers", "", {}, "tr data-query", PAGE),
    ("consumers", "page=31", {}, "tr data-query", 0),            # 3,000 rows: 30 pages
    ("charts", "", {}, "<polyline", 12),     # 2 + the 8 largest topics + records + lag
])
def test_a_page_of_10000_partitions_reads_a_page_of_rows(console, handler, query, params, rows, shown):
    console.view.rows_read = 0
    body = render(console, handler, query, **params)
    assert body.count(f"<{rows}" if not rows.startswith("<") else rows) == shown
    assert console.view.rows_read <= PAGE + 2, console.view.rows_read       # a scan would read 10,000


def test_the_topic_summary_sums_every_partition_once_per_pass(console):
    body = render(console, "topics", "page=51")
    assert 'data-topic="wide"' in body
    wide = console.view.topic("wide")
    assert wide.partitions == 5000 and wide.records == sum(100 + p for p in range(5000))
    assert wide.local_bytes == sum(1000 + p for p in range(5000)) and wide.newest_timestamp == 5_000 + 4999
    assert re.search(r"page 51 of 51 \(5001 rows\)", body)


def test_a_partition_the_view_does_not_hold_is_404_without_touching_the_root(console):
    from starlette.requests import Request

    for handler, params in (("topic", {"topic": "nope"}), ("segments", {"topic": "wide", "partition": 5000})):
        scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"", "headers": [], "path_params": params}
        assert asyncio.run(getattr(console, handler)(Request(scope))).status_code == 404
