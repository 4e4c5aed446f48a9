"""The console in a real browser (issue 42): Debian's headless chromium, driven through its chromedriver by
selenium, against the real sidecar process over a root with several topics (one compacted, one holding
hostile bytes, one tiered to the loopback S3 server) and a running consumer (a real readStream query over one
of them, beside two position files written as the connector writes them). Every page is opened and its figures are checked
against the files (offsets, record counts, sizes, segment bases, index sizes, remote objects' sizes,
commit states), and a screenshot of each is saved: under tmp_path, or under $SEGLOG_CONSOLE_SCREENSHOTS
(README's pictures: `SEGLOG_CONSOLE_SCREENSHOTS=docs/console pytest tests/compactor/test_console_browser.py`).

The sidecar keeps working while the pages are read (tiering, cleaning), so each check reloads its page
until it agrees with the files read at that moment, and fails with both when they never agree."""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from seglog.indexer import Log
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.consumer_positions import read_consumer_positions
from seglog.indexer.remote import metadata
from tests.compactor.console_root import QUERIES, T0, TOPICS, Sidecar, build_root, free_port, write_config

pytestmark = pytest.mark.slow
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def browser():
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.fail("chromium and chromedriver are not installed: `bash scripts/debian-packages.sh` as root "
                    "(run by scripts/setup-test.sh) installs Debian's")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1000",
                "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


# -- the figures, from the files -------------------------------------------------------------------
def partition_facts(root: Path, topic: str, p: int) -> dict:
    cfg = TOPICS[topic][1]
    with Log.open(root / f"{topic}-{p}", cfg, readonly=True) as log:
        local = [(s.base_offset, s.size_bytes, s.state) for s in log.segments()]
        start, end = log.log_start_offset, log.log_end_offset
    remote = metadata.read_state(root, topic, p).segments() if metadata.metadata_path(root, topic, p).exists() else []
    tiered = {s.base for s in remote}
    rows = [(s.base, s.size, "tiered") for s in remote if s.base < start]
    rows += [(b, size, state + (", tiered" if b in tiered else "")) for b, size, state in local]
    part_dir = root / f"{topic}-{p}"
    index_sizes = {b: ((part_dir / f"{b:020d}.index").stat().st_size, (part_dir / f"{b:020d}.timeindex").stat().st_size)
                   for b, _, _ in local}
    index_sizes.update({s.base: (s.files["index"]["size"], s.files["timeindex"]["size"]) for s in remote
                        if s.base < start})
    first = min([start] + [s.base for s in remote])
    return {"start": first, "end": end, "records": end - first, "local_bytes": sum(s for _, s, _ in local),
            "remote_bytes": sum(s.size for s in remote), "segments": rows, "index_sizes": index_sizes}


def topic_facts(root: Path, topic: str) -> dict:
    parts = [partition_facts(root, topic, p) for p in range(TOPICS[topic][0])]
    return {"partitions": str(len(parts)), "records": str(sum(p["records"] for p in parts)),
            "local_bytes": str(sum(p["local_bytes"] for p in parts)),
            "remote_bytes": str(sum(p["remote_bytes"] for p in parts)),
            "cleanup_policy": TOPICS[topic][1].get("cleanup.policy", "delete")}


# -- the figures, from the pages -------------------------------------------------------------------
def cell(row, key: str, attr: str | None = None) -> str:
    from selenium.webdriver.common.by import By

    el = row.find_element(By.CSS_SELECTOR, f'td[data-k="{key}"]')
    return el.get_attribute(attr) if attr else el.text


def eventually(driver, url: str, shown, expected, what: str, timeout: float = 120):
    """Reload `url` until shown(driver) == expected() (both read anew each time)."""
    deadline = time.monotonic() + timeout
    while True:
        driver.get(url)
        got, want = shown(driver), expected()
        if got == want:
            return
        if time.monotonic() > deadline:
            assert got == want, what
        time.sleep(0.5)


def shoot(driver, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def run_live_consumer(spark, root: Path, tmp_path: Path):
    """A real `readStream.format("seglog")` query over `orders` (AvailableNow, a few micro-batches): its
    position file, written by the connector when Spark commits, beside build_root's two."""
    q = (spark.readStream.format("seglog").option("topic", "orders").option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "40").load(str(root)).select("partition", "offset")
         .writeStream.queryName("orders_live").format("parquet").option("path", str(tmp_path / "live-out"))
         .option("checkpointLocation", str(tmp_path / "live-cp")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, str(q.exception())
    return q


@pytest.mark.spark
def test_every_console_page_against_the_files(tmp_path, s3_server, browser, spark):
    from selenium.webdriver.common.by import By

    root = tmp_path / "root"
    build_root(root)
    live = run_live_consumer(spark, root, tmp_path)
    uri = s3_server.make_bucket(f"console-{uuid.uuid4().hex[:10]}") + "/tier"
    port = free_port()
    config = write_config(tmp_path / "c.yaml", root, port,
                          remote={"uri": uri, "endpoint": s3_server.endpoint, "region": "us-east-1"})
    shots = Path(os.environ.get("SEGLOG_CONSOLE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    sidecar = Sidecar(tmp_path, config, port)
    try:
        # the tiered topic reaches the remote tier (local.retention.bytes 0: only the active segment stays local)
        sidecar.wait_for(lambda: partition_facts(root, "archive", 0)["remote_bytes"] > 0
                         and len(partition_facts(root, "archive", 0)["segments"]) > 2, "tiering", timeout=180)
        url = sidecar.url

        # Topics: every topic's figures
        def topics_shown(d):
            return {r.get_attribute("data-topic"): {k: cell(r, k, "data-v") if "bytes" in k else cell(r, k)
                                                    for k in ("partitions", "records", "local_bytes", "remote_bytes",
                                                              "cleanup_policy")}
                    for r in d.find_elements(By.CSS_SELECTOR, "#topics tr[data-topic]")}
        eventually(browser, url("/console/topics"), topics_shown, lambda: {t: topic_facts(root, t) for t in TOPICS},
                   "topics page")
        assert json.loads(topics_shown(browser)["archive"]["remote_bytes"]) > 0
        shoot(browser, shots, "topics")

        # A topic: its partitions' offsets and sizes
        def partitions_shown(d):
            return {int(r.get_attribute("data-partition")): (int(cell(r, "log_start")), int(cell(r, "log_end")),
                                                             int(cell(r, "records")), int(cell(r, "local_bytes", "data-v")))
                    for r in d.find_elements(By.CSS_SELECTOR, "#partitions tr[data-partition]")}

        def partitions_files():
            return {p: (f["start"], f["end"], f["records"], f["local_bytes"])
                    for p, f in ((p, partition_facts(root, "orders", p)) for p in range(3))}
        eventually(browser, url("/console/topics/orders"), partitions_shown, partitions_files, "orders page")
        assert sorted(partitions_shown(browser)) == [0, 1, 2]
        assert [r[1] for _, r in sorted(partitions_shown(browser).items())] == [40, 50, 60]
        shoot(browser, shots, "topic")

        # A partition's segments: bases, sizes, states, index sizes; the tiered one's remote segments too
        for topic, name in (("orders", "segments"), ("archive", "segments-tiered")):
            def segments_shown(d):
                return [(int(r.get_attribute("data-base")), int(cell(r, "size", "data-v")), cell(r, "state"),
                         (int(cell(r, "index", "data-v")), int(cell(r, "timeindex", "data-v"))))
                        for r in d.find_elements(By.CSS_SELECTOR, "#segments tr[data-base]")]

            def segments_files(topic=topic):
                f = partition_facts(root, topic, 0)
                return [(b, s, st, f["index_sizes"][b]) for b, s, st in f["segments"]][:10]     # page 1: page.size 10
            eventually(browser, url(f"/console/topics/{topic}/0"), segments_shown, segments_files, f"{topic}-0 segments")
            states = {st for _, _, st, _ in segments_shown(browser)}
            assert "active" in states and (topic != "archive" or "tiered" in states), states
            shoot(browser, shots, name)

        # Records: by offset (hostile bytes, escaped), by timestamp, as hex, and from the remote tier
        browser.get(url("/console/topics/hostile/0/records?offset=3&limit=5"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#records tr[data-offset]")
        assert [int(r.get_attribute("data-offset")) for r in rows] == [3, 4, 5, 6, 7]
        assert browser.title != "pwned" and not browser.find_elements(By.CSS_SELECTOR, "#records script, #records img, #records b")
        value = rows[0].find_elements(By.TAG_NAME, "pre")[1].text
        assert value == "<script>document.title='pwned'</script>\\x00\\x1b[31m\\xff\\xfe", value
        assert rows[0].find_elements(By.TAG_NAME, "pre")[0].text == "<b>k3</b>"
        assert browser.find_element(By.ID, "next").get_attribute("href").endswith("offset=8&format=text&limit=5")
        shoot(browser, shots, "records")
        assert sidecar.get("/console/topics/orders/0/records?limit=51")[0] == 400      # records.page.max: 50
        assert sidecar.get("/console/topics/orders/0/records?format=html")[0] == 400
        browser.get(url(f"/console/topics/orders/2/records?timestamp={T0 + 12_500}&limit=3&format=hex"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#records tr[data-offset]")
        with Log.open(root / "orders-2", TOPICS["orders"][1], readonly=True) as log:
            expected = [r for r in log.read(13, 16)]
        assert [int(r.get_attribute("data-offset")) for r in rows] == [r.offset for r in expected] == [13, 14, 15]
        assert rows[0].find_elements(By.TAG_NAME, "pre")[1].text == expected[0].value.hex(" ")
        browser.get(url("/console/topics/archive/0/records?offset=0&limit=2&format=json"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#records tr[data-offset]")
        assert metadata.read_state(root, "archive", 0).start == 0          # offset 0 is on the remote tier only
        assert [int(r.get_attribute("data-offset")) for r in rows] == [0, 1]
        assert json.loads(rows[1].find_elements(By.TAG_NAME, "pre")[1].text)["i"] == 1

        # Consumers: each query's position against the committed end, from the position files and the commit log
        def consumers_shown(d):
            return {(r.get_attribute("data-query"), r.get_attribute("data-topic"), int(r.get_attribute("data-partition"))):
                    (int(cell(r, "offset")), int(cell(r, "end")), int(cell(r, "behind")))
                    for r in d.find_elements(By.CSS_SELECTOR, "#consumers tr[data-query]")}

        def consumers_files():
            out = {}
            for pos in read_consumer_positions(root):     # build_root's two and the live query's
                for (topic, p), offset in pos.offsets.items():
                    end = CommitLog(root, topic).end_offsets()[p]
                    out[(pos.query_id, topic, p)] = (offset, end, max(0, end - offset))
            return out
        eventually(browser, url("/console/consumers"), consumers_shown, consumers_files, "consumers page")
        assert consumers_shown(browser)[(next(iter(QUERIES)), "orders", 0)] == (12, 40, 28)
        ends = CommitLog(root, "orders").end_offsets()
        assert {k[2]: v for k, v in consumers_shown(browser).items() if k[0] == live.id} == {
            p: (end, end, 0) for p, end in ends.items()}             # the live query read everything committed
        assert "billing" in browser.find_element(By.ID, "consumers").text
        assert "orders_live" in browser.find_element(By.ID, "consumers").text
        shoot(browser, shots, "consumers")

        # Writers: each writer's last committed batch, as the commit log holds it
        browser.get(url("/console/writers"))
        shown = {(r.get_attribute("data-topic"), r.get_attribute("data-writer")): int(cell(r, "batch"))
                 for r in browser.find_elements(By.CSS_SELECTOR, "#writers tr[data-writer]")}
        files = {(t, w): b for t in TOPICS for w, b in CommitLog(root, t).latest().writers.items()}
        assert shown == files and files[("orders", "query-orders-b")] == 7
        shoot(browser, shots, "writers")

        # Jobs: every job ran, none failed
        def jobs_shown(d):
            return {t.get_attribute("data-job") for t in d.find_elements(By.CSS_SELECTOR, "table.runs")}
        eventually(browser, url("/console/jobs"), jobs_shown,
                   lambda: {"recover", "roll", "seal", "clean", "merge", "tier", "retention", "purge", "lag"},
                   "jobs page")
        assert not browser.find_elements(By.CSS_SELECTOR, "td.bad"), browser.page_source[:3000]
        shoot(browser, shots, "jobs")

        # Charts: the sidecar's samples, drawn
        eventually(browser, url("/console/charts"), lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg polyline")) >= 4,
                   lambda: True, "charts")
        shoot(browser, shots, "charts")
    finally:
        sidecar.stop()
