"""Two users on one volume, as the Helm chart deploys it (README, "Running on a cluster"; helm/values.yaml):
Spark's image runs as uid 185 (gid 185, umask 022), the chart's sidecar as uid 10001 (gid 10001), and they
share the group 10001 (the pods' fsGroup: Spark's processes get it as a supplementary group, the volume's
root belongs to it and is setgid, mode 2775). Everything seglog creates under such a root must be
group-writable, or the sidecar fails at once (`_seglog/locks/compactor.leader: Permission denied`) and
never seals or deletes anything, and the writer cannot append to a segment the sidecar rolled.

Real processes under those users, no mocks: a local Spark session whose driver and JVM run as uid 185
writes through `SegmentLogSink` (the JVM's staged segments renamed into the partition folders); a Python
writer as uid 185 writes and rolls segments with `Log` and the commit log; the real sidecar
(`seglog compactor run --config F --once`) as uid 10001 seals, retains and deletes; then both writers
append again onto what the sidecar created, and the sidecar runs again. Finally every folder and file
under the root is in the shared group and group-writable.

Needs root (CI runs as root) to switch users: anything else fails, it never skips. Each child process
starts as root and drops to its user (setgroups, setgid, setuid, umask 022) before it does any work
(as root it only opens the interpreter's library folders, which may be out of the users' reach).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPARK_UID = SPARK_GID = 185            # apache/spark's image: user and group `spark`
SIDECAR_UID = SIDECAR_GID = 10001      # the chart's podSecurityContext.runAsUser / runAsGroup
SHARED_GID = 10001                     # the chart's podSecurityContext.fsGroup
SPARK_USER = (SPARK_UID, SPARK_GID, (SPARK_GID, SHARED_GID))
SIDECAR_USER = (SIDECAR_UID, SIDECAR_GID, (SIDECAR_GID,))
DAY = 86_400_000
OLD, RECENT = 20, 6                    # per partition, one record per segment
EVENTS_CFG = {"segment.bytes": 1024, "index.interval.bytes": 64, "segment.ms": 1000, "retention.ms": DAY}
CLICKS_CFG = {"segment.bytes": 4096, "index.interval.bytes": 256, "segment.ms": 1000, "retention.ms": DAY}

pytestmark = [pytest.mark.spark, pytest.mark.slow]


# ---------------------------------------------------------------------------------------- child roles
def _writer(root: str, phase: str) -> None:
    """The Python writer (uid 185): phase 1 writes OLD old and RECENT fresh one-record segments per
    partition and leaves the rolled ones unsealed (as a writer killed inside its rolls does); phase 2
    appends onto the segments the sidecar rolled, and commits."""
    from seglog.indexer import Log, Record
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.topics import create_topic
    from tests.crash_states import unseal_rolled_segments

    root_p = Path(root)
    create_topic(root_p, "events", 2, EVENTS_CFG)
    now = int(time.time() * 1000)
    ends = {}
    for p in range(2):
        with Log.open(root_p / f"events-{p}", EVENTS_CFG, lock_timeout=60, outside_commit_log=True) as log:
            if phase == "1":
                for i in range(OLD + RECENT):
                    ts = now - 10 * DAY + i if i < OLD else now + i
                    log.append([Record(key=b"%d" % i, value=b"v" * 800, timestamp=ts)])
            else:
                log.append([Record(key=b"after", value=b"w" * 100, timestamp=now)])
            log.flush()
            ends[p] = log.log_end_offset
        if phase == "1":
            unseal_rolled_segments(root_p / f"events-{p}")
    CommitLog(root_p, "events").commit("python-writer", int(phase), ends)
    print(json.dumps({"ends": ends}), flush=True)


def _sidecar(config: str) -> None:
    """The real sidecar's command line: `seglog compactor run --config F --once`."""
    from seglog.cli import main

    sys.exit(main(["compactor", "run", "--config", config, "--once"]))


def _spark(root: str) -> None:
    """A local Spark session (driver and JVM as uid 185) writing through SegmentLogSink: batch 0 with
    every staged segment renamed in (the JVM's files become the partition's segments), then, after a
    line on stdin (the sidecar ran), batch 1 copied onto the segments the sidecar rolled."""
    from seglog.sink.segment_log_sink import SegmentLogSink
    from seglog.sink.session import local_session

    spark = local_session("seglog-shared-volume", cores=1, driver_memory="1g")
    try:
        sink = SegmentLogSink(root, writer_id="w0", topic="clicks", partitions=2, config=CLICKS_CFG, rename_min_bytes=1)
        old = int(time.time() * 1000) - 10 * DAY

        def batch(t0: int, n: int):
            return spark.range(n).selectExpr(
                "CAST(id % 2 AS INT) AS partition", "CAST(CAST(id AS STRING) AS BINARY) AS key",
                "CAST(repeat('x', 300) AS BINARY) AS value", f"timestamp_millis({t0} + id) AS timestamp")

        sink(batch(old, 200), 0)
        print(json.dumps({"batch": 0}), flush=True)
        sys.stdin.readline()
        sink.rename_min_bytes = 1 << 30            # small staged segments: copied onto the active one
        sink(batch(int(time.time() * 1000), 10), 1)
        print(json.dumps({"batch": 1}), flush=True)
    finally:
        spark.stop()


ROLES = {"writer": _writer, "sidecar": _sidecar, "spark": _spark}


def _keep_the_stdlib_in_reach() -> None:
    """The interpreter's own library may sit where only root can look (pyenv under /root, mode 0700):
    open its folders while root and import from them through /proc/self/fd after the switch (a process
    may always follow its own descriptors), so every import, lazy ones included, still works."""
    moved = {}
    for i, entry in enumerate(sys.path):
        if entry.startswith(sys.base_prefix) and os.path.isdir(entry):
            moved[entry + os.sep] = sys.path[i] = f"/proc/self/fd/{os.open(entry, os.O_RDONLY | os.O_DIRECTORY)}/"
    for module in list(sys.modules.values()):          # packages imported already (their submodules)
        path = getattr(module, "__path__", None)
        if isinstance(path, list):
            for i, entry in enumerate(path):
                old = max((o for o in moved if entry.startswith(o)), key=len, default=None)
                if old is not None:
                    path[i] = moved[old] + entry[len(old):]
    sys.path_importer_cache.clear()


def _private_ancestors(path: Path) -> list[Path]:
    """The folders above `path` that other users cannot search (mode without o+x), outermost first."""
    return [a for a in reversed(path.parents) if not os.stat(a).st_mode & stat.S_IXOTH]


def _make_the_checkout_reachable() -> None:
    """A checkout (and its .venv) may sit under a folder private to root (`mktemp -d` makes them 0700): the other
    uids could not import seglog or start Spark from it. In a mount namespace of this child's own, each such
    folder is covered by a searchable tmpfs holding only the way down to the checkout and the virtualenv, bound
    in at their own paths: nothing outside this process tree sees it, no mode on disk changes."""
    import ctypes

    needed = sorted({Path(REPO), Path(sys.prefix).resolve()}, key=lambda p: len(p.parts))
    covers = sorted({a for p in needed for a in _private_ancestors(p)[:1]}, key=lambda a: len(a.parts))
    if not covers:
        return
    base = Path(sys.base_prefix).resolve()               # the interpreter's own library, if a cover would hide it
    if any(c == base or c in base.parents for c in covers):
        needed.append(base)
    libc = ctypes.CDLL(None, use_errno=True)

    def call(what, *args):
        if getattr(libc, what)(*args) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}{args}: {os.strerror(err)}")

    CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x20000, 0x1000, 0x4000, 0x40000
    call("unshare", CLONE_NEWNS)
    call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)     # our mounts stay ours
    held = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in needed}   # reachable after the cover hides them
    for cover in covers:
        call("mount", b"tmpfs", str(cover).encode(), b"tmpfs", 0, b"mode=0755,size=1m")
    for p, fd in held.items():
        if any(q != p and q in p.parents for q in held):
            continue                                 # inside another bound path already (a .venv in the checkout)
        p.mkdir(parents=True, exist_ok=True)
        call("mount", f"/proc/self/fd/{fd}".encode(), str(p).encode(), None, MS_BIND | MS_REC, None)


def _child(argv: list[str]) -> None:
    role, uid, gid, groups, *args = argv
    _make_the_checkout_reachable()
    sys.path.insert(0, str(REPO))
    _keep_the_stdlib_in_reach()
    os.setgroups([int(g) for g in groups.split(",")])
    os.setgid(int(gid))
    os.setuid(int(uid))
    os.umask(0o022)                    # Spark's image's umask, and the sidecar image's
    ROLES[role](*args)


if __name__ == "__main__":
    _child(sys.argv[1:])
    sys.exit(0)


# ---------------------------------------------------------------------------------------- the test
def _env(home: Path) -> dict[str, str]:
    import pyspark

    return dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                NUMBA_CACHE_DIR=str(home / "numba"), SPARK_HOME=os.path.dirname(pyspark.__file__),
                PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                # the uids have no passwd entry here (Spark's image has one): the JVM's user.home
                SPARK_SUBMIT_OPTS=f"-Duser.home={home}")


def _argv(role: str, user: tuple, *args: str) -> list[str]:
    uid, gid, groups = user
    return [sys.executable, str(Path(__file__).resolve()), role, str(uid), str(gid),
            ",".join(map(str, groups)), *args]


def _run(role: str, user: tuple, home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(_argv(role, user, *args), cwd=REPO, env=_env(home), capture_output=True, text=True,
                          timeout=timeout)


def _ok(proc: subprocess.CompletedProcess, what: str) -> None:
    out = f"{what}: exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, out
    assert "Permission denied" not in proc.stdout + proc.stderr, out


def _await_batch(spark: subprocess.Popen, batch_id: int, stderr: Path) -> None:
    """Until the Spark child reports `batch_id` written (its other output skipped), or fails."""
    for line in spark.stdout:
        if line.strip() == json.dumps({"batch": batch_id}):
            return
    raise AssertionError(f"spark (uid {SPARK_UID}) exit {spark.wait()} before batch {batch_id}: "
                         f"{stderr.read_text()[-6000:]}")


def _files(d: Path, suffix: str) -> list[Path]:
    return sorted(d.glob(f"*{suffix}"))


def _unshared(root: Path) -> list[str]:
    """What under `root` is not in the shared group or not group-writable (folders: not rwx+setgid)."""
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st = p.lstat()
            want = (stat.S_IRWXG | stat.S_ISGID) if stat.S_ISDIR(st.st_mode) else (stat.S_IRGRP | stat.S_IWGRP)
            if st.st_gid != SHARED_GID or st.st_mode & want != want:
                bad.append(f"{p.relative_to(root)} uid {st.st_uid} gid {st.st_gid} mode {stat.filemode(st.st_mode)}")
    return bad


def _sidecar_config(base: Path, root: Path) -> Path:
    import yaml

    cfg = base / "compactor.yaml"
    cfg.write_text(yaml.safe_dump({
        "root": str(root),
        "log": {"retention.ms": DAY, "file.delete.delay.ms": 0},
        "schedule": {"partition.lock.timeout.ms": 5000},
        "http": {"host": "127.0.0.1", "port": 9400},
    }))
    cfg.chmod(0o644)
    return cfg


def _sealed_all_but_active(part: Path) -> bool:
    from seglog.indexer.segment import sealed_summary

    bases = [int(p.stem) for p in _files(part, ".log")]
    return all(sealed_summary(part, b, n) is not None for b, n in zip(bases, bases[1:]))


def _ensure_user(name: str, uid: int, gid: int) -> None:
    """A passwd entry for `uid`, as the images have one (Hadoop's login in Spark's JVM needs a user
    name); added with the system's tools when missing, left in place (another run may use it)."""
    import grp
    import pwd

    try:
        pwd.getpwuid(uid)
        return
    except KeyError:
        pass
    try:
        grp.getgrgid(gid)
    except KeyError:
        subprocess.run(["groupadd", "--system", "--gid", str(gid), f"{name}-{gid}"], capture_output=True)
    subprocess.run(["useradd", "--system", "--uid", str(uid), "--gid", str(gid), "--no-create-home",
                    "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", f"{name}-{uid}"],
                   capture_output=True)
    pwd.getpwuid(uid)                  # a concurrent run may have added it: either way it is there now


@pytest.fixture
def shared_volume(tmp_path_factory):
    """`<base>/data`: the volume's root as Kubernetes' fsGroup leaves it (root:10001, 2775); homes for
    the two users. `<base>` is searchable by everyone (pytest's own temp root is private to root)."""
    if os.geteuid() != 0:
        pytest.fail("test_shared_volume_users switches between uid 185 and uid 10001: it must run as root "
                    "(CI runs as root); it does not skip")
    import tempfile

    _ensure_user("spark", SPARK_UID, SPARK_GID)         # as in Spark's image
    _ensure_user("seglog", SIDECAR_UID, SIDECAR_GID)    # as in seglog's Dockerfile
    base = Path(tempfile.mkdtemp(prefix="seglog-shared-volume-"))
    base.chmod(0o755)
    volume = base / "data"
    volume.mkdir()
    os.chown(volume, 0, SHARED_GID)
    volume.chmod(0o2775)
    homes = {}
    for uid, gid in ((SPARK_UID, SPARK_GID), (SIDECAR_UID, SIDECAR_GID)):
        home = base / f"home-{uid}"
        home.mkdir(mode=0o700)
        os.chown(home, uid, gid)
        homes[uid] = home
    yield base, volume, homes
    import shutil

    shutil.rmtree(base, ignore_errors=True)


def test_spark_writer_and_sidecar_as_two_users_of_one_group(shared_volume):
    base, volume, homes = shared_volume
    root = volume / "log"               # created by the first writer, under the setgid volume root
    config = _sidecar_config(base, root)
    spark_home, sidecar_home = homes[SPARK_UID], homes[SIDECAR_UID]

    # 1. Spark (uid 185): batch 0, every staged segment of the JVM renamed into the partition folders.
    spark_err = base / "spark.stderr"
    with open(spark_err, "w") as err:
        spark = subprocess.Popen(_argv("spark", SPARK_USER, str(root)), cwd=REPO, env=_env(spark_home),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        _await_batch(spark, 0, spark_err)
        clicks = [root / f"clicks-{p}" for p in range(2)]
        staged_in = [f for d in clicks for f in _files(d, ".log")]
        assert len(staged_in) >= 4
        jvm_files = [f for d in clicks for f in d.iterdir()]
        assert all(f.stat().st_uid == SPARK_UID for f in jvm_files)
        bad = [f"{f.name} {stat.filemode(f.stat().st_mode)} gid {f.stat().st_gid}" for f in jvm_files
               if f.stat().st_mode & 0o060 != 0o060 or f.stat().st_gid != SHARED_GID]
        assert not bad, f"the JVM's staged segments, renamed in, are not group-writable: {bad}"

        # 2. The Python writer (uid 185): Log + commit log, rolled segments left unsealed.
        _ok(_run("writer", SPARK_USER, spark_home, str(root), "1"), "writer, phase 1")
        events = [root / f"events-{p}" for p in range(2)]
        before = {d.name: len(_files(d, ".log")) for d in events + clicks}
        assert all(before[d.name] == OLD + RECENT for d in events), before
        assert not any(_sealed_all_but_active(d) for d in events)
        time.sleep(1.5)                     # segment.ms: the active segments are idle, the sidecar rolls them

        # 3. The real sidecar (uid 10001): roll, seal, retention, purge. Before the fix it stopped at its
        #    leader lock, and could neither seal nor delete the writer's files.
        _ok(_run("sidecar", SIDECAR_USER, sidecar_home, str(config)), "sidecar --once")
        after = {d.name: len(_files(d, ".log")) for d in events + clicks}
        for d in events:
            assert after[d.name] == RECENT + 1, (before, after)      # the old ones deleted, one rolled
            assert not _files(d, ".deleted")
            assert _sealed_all_but_active(d)
            active = _files(d, ".log")[-1]
            assert active.stat().st_uid == SIDECAR_UID and active.stat().st_size == 0   # the sidecar's roll
        for d in clicks:
            assert after[d.name] == 1, (before, after)               # old batch: all gone but the new active
            assert _files(d, ".log")[-1].stat().st_uid == SIDECAR_UID
        assert (root / "log-start-offset-checkpoint").stat().st_uid == SIDECAR_UID
        assert not _unshared(root), _unshared(root)

        # 4. The writers again (uid 185), onto the segments the sidecar created.
        _ok(_run("writer", SPARK_USER, spark_home, str(root), "2"), "writer, phase 2")
        for d in events:
            assert _files(d, ".log")[-1].stat().st_size > 0
        spark.stdin.write("go\n")
        spark.stdin.flush()
        _await_batch(spark, 1, spark_err)
        assert spark.wait(timeout=120) == 0, spark_err.read_text()[-6000:]
    finally:
        if spark.poll() is None:
            spark.kill()
            spark.wait()
    for d in clicks:
        assert sum(f.stat().st_size for f in _files(d, ".log")) > 0
    from seglog.indexer.commit_log import CommitLog

    assert CommitLog(root, "clicks").latest().end_offsets and CommitLog(root, "events").latest().batch_id == 2

    # 5. The sidecar again, over what the writers wrote onto its files; everything stays shared.
    _ok(_run("sidecar", SIDECAR_USER, sidecar_home, str(config)), "sidecar --once, second pass")
    assert not _unshared(root), _unshared(root)
