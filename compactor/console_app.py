"""The read-only web console's pages (docs/spec.md §9a): server-rendered HTML, no script at all.

- ``/console/topics``: topics, paged: partitions, records, bytes local and remote, oldest and newest
  timestamps, retention and what the next retention pass deletes, cleanup policy, dirty ratio;
- ``/console/topics/{topic}``: its partitions, paged, and its size over time;
- ``/console/topics/{topic}/{partition}``: its segments (base offset, size, state, time range, index sizes);
- ``/console/topics/{topic}/{partition}/records``: the record browser (``console.records.enable``);
- ``/console/consumers``: each streaming query's lag per partition, as the lag job measured it (compactor/lag.py);
- ``/console/writers``: each writer's last committed batch, from the commit log;
- ``/console/jobs``: the sidecar's jobs, last runs, durations, failures;
- ``/console/charts``: size over time, from the sidecar's own samples.

Every page but the record browser renders from the in-memory view (compactor/console_view.py) and costs
O(rows shown); the browser reads one partition, on a worker pool of `_RECORD_READERS` threads. Page
numbers, offsets and sizes are parsed and bounded here: a bad one is a 400 naming it; a topic or
partition the view does not hold is a 404 (nothing outside the view's names is ever opened).
Jinja2 escapes everything a page shows (autoescape): names, keys, values and headers are untrusted.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from seglog.compactor.config import ConsoleConfig
from seglog.compactor.console_records import FORMATS, read_page
from seglog.compactor.console_view import ConsoleView, Sample
from seglog.errors import SeglogError

_RECORD_READERS = 2                 # record pages read files: at most this many at once
_MAX_PAGE = 1_000_000_000
_INT64 = (1 << 63) - 1
# No script, no frames, no outside requests: a page is HTML and inline CSS/SVG only.
_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                                       "frame-ancestors 'none'; form-action 'self'",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


class BadParameter(ValueError):
    pass


def _int(request: Request, name: str, default: int | None, low: int, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if len(raw) > 20 or not raw.lstrip("-").isdigit():
        raise BadParameter(f"'{name}' must be an integer from {low} to {high}")
    value = int(raw)
    if not low <= value <= high:
        raise BadParameter(f"'{name}' = {value} is out of range; allowed: {low} to {high}")
    return value


def _ms(value: int) -> str:
    if value is None or value < 0:
        return "–"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value / 1000)) + f".{value % 1000:03d}Z"
    except (OverflowError, OSError, ValueError):
        return str(value)


def _bytes(value: int) -> str:
    if value is None or value < 0:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(value)


def _seconds(value: float) -> str:
    return "unknown" if value is None or math.isnan(value) else f"{value:.1f} s"


def _ratio(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.3f}"


def _duration_ms(value: int) -> str:
    if value < 0:
        return "none"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if value >= size and value % size == 0:
            return f"{value // size} {unit}"
    return f"{value} ms"


def chart(samples: list[Sample], series: list[tuple[str, Callable[[Sample], int]]], width: int = 720,
          height: int = 200) -> dict:
    """Polylines for an inline SVG: one per series, scaled to the samples' range."""
    if not samples:
        return {"width": width, "height": height, "lines": [], "top": 0, "first": -1, "last": -1}
    t0, t1 = samples[0].at_ms, samples[-1].at_ms
    top = max([1] + [get(s) for _, get in series for s in samples])
    lines = []
    for name, get in series:
        points = []
        for s in samples:
            x = 0 if t1 == t0 else (s.at_ms - t0) * (width - 1) / (t1 - t0)
            y = height - 1 - get(s) * (height - 1) / top
            points.append(f"{x:.1f},{y:.1f}")
        lines.append({"name": name, "points": " ".join(points), "last": get(samples[-1])})
    return {"width": width, "height": height, "lines": lines, "top": top, "first": t0, "last": t1}


class Console:
    def __init__(self, view: ConsoleView, config: ConsoleConfig, root_path: Path,
                 topic_config: Callable, store: Callable = lambda: None):
        self.view = view
        self.config = config
        self.root_path = root_path
        self.topic_config = topic_config
        self.store = store
        self.env = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                               autoescape=select_autoescape(default=True, default_for_string=True))
        self.env.filters.update(ms=_ms, size=_bytes, ratio=_ratio, duration=_duration_ms, seconds=_seconds)
        self._readers = anyio.CapacityLimiter(_RECORD_READERS)

    def routes(self) -> list[Route]:
        methods = ["GET", "HEAD"]
        pages = [("/console/topics", self.topics), ("/console/topics/{topic}", self.topic),
                 ("/console/topics/{topic}/{partition:int}", self.segments),
                 ("/console/topics/{topic}/{partition:int}/records", self.records),
                 ("/console/consumers", self.consumers), ("/console/writers", self.writers), ("/console/jobs", self.jobs), ("/console/charts", self.charts)]
        return [Route("/", self.home, methods=methods), Route("/console", self.home, methods=methods),
                Route("/console/", self.home, methods=methods),
                *(Route(path, self._page(handler), methods=methods) for path, handler in pages)]

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/console/topics", status_code=303)

    def _page(self, handler):
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except BadParameter as exc:
                return self.html("error.html", status=400, title="Bad request", message=str(exc))
        return endpoint

    def html(self, template: str, status: int = 200, **context) -> HTMLResponse:
        body = self.env.get_template(template).render(records_enable=self.config.records_enable, **context)
        return HTMLResponse(body, status_code=status, headers=_HEADERS)

    def _missing(self, what: str) -> HTMLResponse:
        return self.html("error.html", status=404, title="Not found",
                         message=f"{what} is not in the sidecar's view (it shows what its last pass observed)")

    def _paging(self, request: Request, total: int) -> tuple[int, dict]:
        size = self.config.page_size
        pages = max(1, -(-total // size))
        page = _int(request, "page", 1, 1, _MAX_PAGE)
        return page - 1, {"page": page, "pages": pages, "total": total, "size": size}

    # -- pages -----------------------------------------------------------------------------------
    async def topics(self, request: Request) -> Response:
        page, paging = self._paging(request, 0)
        rows, total = self.view.topics_page(page, self.config.page_size)
        _, paging = self._paging(request, total)
        return self.html("topics.html", title="Topics", rows=rows, paging=paging)

    async def topic(self, request: Request) -> Response:
        name = request.path_params["topic"]
        summary = self.view.topic(name)
        if summary is None:
            return self._missing(f"topic {name!r}")
        page, _ = self._paging(request, 0)
        rows, total = self.view.partitions_page(name, page, self.config.page_size)
        _, paging = self._paging(request, total)
        samples = self.view.samples()
        mine = [s for s in samples if any(t == name for t, _ in s.topics)]
        series = [(name, lambda s: dict(s.topics).get(name, 0))]
        return self.html("topic.html", title=f"Topic {name}", topic=summary, rows=rows, paging=paging,
                         chart=chart(mine, series))

    async def segments(self, request: Request) -> Response:
        name, partition = request.path_params["topic"], request.path_params["partition"]
        part = self.view.partition(name, partition)
        if part is None:
            return self._missing(f"partition {name}-{partition}")
        page, _ = self._paging(request, len(part.segments))
        size = self.config.page_size
        rows = part.segments[page * size:(page + 1) * size]
        self.view.rows_read += len(rows)
        _, paging = self._paging(request, len(part.segments))
        return self.html("segments.html", title=f"Partition {name}-{partition}", topic=name, partition=partition,
                         part=part, rows=rows, paging=paging)

    async def records(self, request: Request) -> Response:
        name, partition = request.path_params["topic"], request.path_params["partition"]
        if not self.config.records_enable:
            return self.html("error.html", status=403, title="Records are off",
                             message="the record browser shows data: it is off unless console.records.enable is true")
        part = self.view.partition(name, partition)
        if part is None:
            return self._missing(f"partition {name}-{partition}")
        fmt = request.query_params.get("format", "text")
        if fmt not in FORMATS:
            raise BadParameter(f"'format' must be one of {', '.join(FORMATS)}")
        offset = _int(request, "offset", None, 0, _INT64)
        timestamp = _int(request, "timestamp", None, 0, _INT64)
        limit = _int(request, "limit", min(20, self.config.records_page_max), 1, self.config.records_page_max)

        def read():     # on a worker thread: the topic's recorded configuration is a file too
            cfg = self.topic_config(name)
            return read_page(self.root_path, name, partition, cfg, offset=offset,
                             timestamp=timestamp if offset is None else None, limit=limit, fmt=fmt,
                             max_bytes=self.config.records_value_max_bytes, store=self.store())
        try:
            result = await anyio.to_thread.run_sync(read, limiter=self._readers)
        except (SeglogError, OSError) as exc:
            return self.html("error.html", status=409, title="Cannot read the partition",
                             message=f"{type(exc).__name__}: {exc}")
        return self.html("records.html", title=f"Records of {name}-{partition}", topic=name, partition=partition,
                         result=result, fmt=fmt, limit=limit, formats=FORMATS, offset=offset, timestamp=timestamp)

    async def consumers(self, request: Request) -> Response:
        page, _ = self._paging(request, 0)
        rows, total, invalid = self.view.consumers_page(page, self.config.page_size)
        _, paging = self._paging(request, total)
        return self.html("consumers.html", title="Consumers", rows=rows, paging=paging, invalid=invalid)

    async def writers(self, request: Request) -> Response:
        page, _ = self._paging(request, 0)
        rows, total = self.view.writers_page(page, self.config.page_size)
        _, paging = self._paging(request, total)
        return self.html("writers.html", title="Writers", rows=rows, paging=paging)

    async def jobs(self, request: Request) -> Response:
        return self.html("jobs.html", title="Jobs", jobs=self.view.jobs())

    async def charts(self, request: Request) -> Response:
        samples = self.view.samples()
        total = chart(samples, [("local bytes", lambda s: s.local_bytes), ("remote bytes", lambda s: s.remote_bytes)])
        names = sorted({t for s in samples for t, _ in s.topics})[:8]
        by_topic = chart(samples, [(t, lambda s, t=t: dict(s.topics).get(t, 0)) for t in names])
        records = chart(samples, [("records", lambda s: s.records)])
        lag = chart(samples, [("records behind", lambda s: s.lag_records)])
        return self.html("charts.html", title="Charts", total=total, by_topic=by_topic, records=records, lag=lag,
                         count=len(samples))
