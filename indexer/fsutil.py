"""Small file-system helpers that keep the crash-safety rules in one place, and the one rule for the
permissions of what seglog creates.

Shared roots (README, "Running on a cluster"): Spark (uid 185 in Spark's image, umask 022) and the
sidecar (the chart's uid 10001) are two users of one volume who share a group (the chart's fsGroup
10001; the volume's root belongs to it and is setgid, so the kernel gives every file and folder
created under it that group). The rule: **whatever seglog creates under a group-writable folder is
group-writable too** (folders also keep the setgid bit, which Linux copies by itself). It mirrors
the folder it is created in, so by induction everything under a root follows the root: a root made
2775 for a shared group is shared throughout, a private 0755 root (one user, the default on a
laptop) stays exactly as before. A process umask of 022 would strip the group's write bit, and
`os.open(path, flags, mode)` is masked by it too, so the bit is added explicitly with (f)chmod right
after creation, by the creator (only an owner may chmod). Files renamed into place keep their mode,
so a file is made group-writable when it is created, under its temporary name. The JVM's staged
segments and the driver's commit files follow the same rule in their own home (jvm/.../format/GroupShared.java).

Why mirror the folder instead of a setting: the volume's owner decides once (chgrp + chmod 2775 of
the root, or Kubernetes' fsGroup), every writer and the sidecar then agree without configuration,
and nothing becomes group-writable where the operator did not ask for it.
"""
from __future__ import annotations

import errno
import itertools
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

_GROUP_RW = stat.S_IRGRP | stat.S_IWGRP
_GROUP_RWX = stat.S_IRWXG
LOCK_FILE_MODE = 0o600      # a lock file's mode in a private folder (open_lock_file); 0660 in a shared one


_temp_seq = itertools.count(1)


def temp_suffix() -> str:
    """The unique part of a temporary name (`<pid>-<counter>-<random>`): unique among this process's
    threads (a counter: two threads can read one clock tick), and among processes on a shared volume
    (the pid, and a random part: two hosts can share a pid). AtomicFile.tempSuffix is the JVM's twin."""
    return f"{os.getpid()}-{next(_temp_seq)}-{secrets.token_hex(6)}"


def temp_path(path: str | os.PathLike) -> Path:
    """A unique temporary name beside `path`, short whatever `path`'s name is (a long topic's file
    name plus a suffix would pass NAME_MAX); a leading dot keeps it out of every listing."""
    path = Path(path)
    return path.with_name(f".tmp-{temp_suffix()}")


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a rename or create in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def group_shared(folder: str | os.PathLike) -> bool:
    """True when `folder` is group-writable: what seglog creates in it is made group-writable too."""
    try:
        return bool(os.stat(folder).st_mode & stat.S_IWGRP)
    except FileNotFoundError:
        return False


def share_created(fd: int, folder: str | os.PathLike) -> None:
    """Apply the rule to the file open as `fd` that this process just created in `folder`: group
    read and write when `folder` is group-writable. A file of another user (an O_CREAT that found
    it) is left as it is: only its owner may change its mode, and its creator already did."""
    st = os.fstat(fd)
    mode = stat.S_IMODE(st.st_mode)
    if mode & _GROUP_RW != _GROUP_RW and st.st_uid == os.geteuid() and group_shared(folder):
        os.fchmod(fd, mode | _GROUP_RW)


def create_file(path: str | os.PathLike, flags: int = os.O_RDWR | os.O_CREAT, mode: int = 0o644) -> int:
    """`os.open(path, flags, mode)`, and with O_CREAT the rule above: the descriptor of a file that
    is group-writable when its folder is. Never through a symbolic link (O_NOFOLLOW): a link where seglog
    opens a file of a root (a segment, a lock, metadata) is SymlinkInRootError naming it."""
    from seglog.errors import SymlinkInRootError

    try:
        fd = os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and os.path.islink(path)):
            raise SymlinkInRootError(f"{path}: a symbolic link inside the log root; seglog never follows one "
                                     f"(it could lead outside the root): replace it with the file itself",
                                     os.fspath(path)) from None
        raise
    if flags & os.O_CREAT:
        try:
            share_created(fd, os.path.dirname(os.fspath(path)) or ".")
        except BaseException:
            os.close(fd)
            raise
    return fd


def open_in_root(path: str | os.PathLike, flags: int, mode: int = 0o644) -> int:
    """The one way seglog opens a segment or index file inside a root (`create_file` otherwise). Two rules:
    - never through a symbolic link (O_NOFOLLOW): a link found is SymlinkInRootError naming it, and nothing
      is read, written or truncated through it (a link could lead to any file outside the root);
    - a file opened for writing is never shared with another name (st_nlink > 1: `seglog import --link`
      hard-links a broker's files): it becomes a private copy first (`break_hard_link`), so an append,
      truncation, index rebuild or seal never changes the other name's bytes."""
    trunc = flags & os.O_TRUNC          # applied after the link check: O_TRUNC would cut the shared inode
    flags = (flags & ~os.O_TRUNC) | os.O_CLOEXEC
    fd = create_file(path, flags, mode)     # O_NOFOLLOW: a link is SymlinkInRootError
    if flags & (os.O_WRONLY | os.O_RDWR) and os.fstat(fd).st_nlink > 1:
        os.close(fd)
        break_hard_link(path)
        fd = create_file(path, flags & ~(os.O_CREAT | os.O_EXCL), mode)
    if trunc:
        os.ftruncate(fd, 0)
    return fd


def break_hard_link(path: str | os.PathLike) -> None:
    """Make `path`, a file with other hard links, a file of its own with the same bytes and mode: copied
    to a temporary name beside it, fsynced, renamed over it, the folder fsynced. The other names keep the
    old inode, untouched. The caller holds the partition's lock (no writer races the copy); a reader that
    has the old file open reads the same bytes."""
    path = Path(path)
    tmp = temp_path(path)
    src = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = stat.S_IMODE(os.fstat(src).st_mode)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), "wb") as out, \
                os.fdopen(os.dup(src), "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    finally:
        os.close(src)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def refuse_symlink(path: str | os.PathLike) -> None:
    """SymlinkInRootError when `path` (a partition folder, say) is a symbolic link: see `open_in_root`."""
    from seglog.errors import SymlinkInRootError

    if os.path.islink(path):
        raise SymlinkInRootError(f"{path}: a symbolic link inside the log root; seglog never follows one "
                                 f"(it could lead outside the root, to another root's segments): replace it "
                                 f"with the folder itself", os.fspath(path))


def meta_path(root: str | os.PathLike, *parts: str) -> Path:
    """`<root>/_seglog/<parts...>`, the one way a path under a root's metadata folder is made: no part of it
    below the root (`_seglog`, its subfolders, the file) may be a symbolic link (SymlinkInRootError naming
    it), since commits, topic files and locks written through one would land outside the root. Parts that
    do not exist yet pass (their creators use O_NOFOLLOW or mkdir, which never follow a link)."""
    from seglog.indexer.names import META_DIR

    path = Path(root) / META_DIR
    for part in (None, *parts):
        if part is not None:
            path = path / part
        refuse_symlink(path)
    return path


def open_new(path: str | os.PathLike) -> BinaryIO:
    """A new file (exclusive create) open for binary writing, under the rule above: for temporary
    files written whole, then renamed or linked into place (their mode travels with them)."""
    return os.fdopen(create_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC), "wb")


def publish_by_link(path: str | os.PathLike, tmp: str | os.PathLike, data: bytes, *, what: str) -> bool:
    """Publish `data` at `path` unless a file has that name (the one publish-by-link of the Python side: commit
    files, topic metadata; the JVM's is AtomicFile.publishByLink): written and fsynced under `tmp`, hard-linked to
    `path`, then the folder fsynced. A link fails when the name exists, so of concurrent creators exactly one
    wins, and no reader ever sees a torn file. `tmp` is removed either way. False when `path` already existed
    (left as it is: another creator's); StorageError naming `what` when the filesystem cannot make the link."""
    from seglog.errors import StorageError

    try:
        with open_new(tmp) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:  # e.g. EPERM/ENOTSUP: a filesystem without hard links (README)
            raise StorageError(f"{what} with a hard link ({exc.strerror}); seglog needs a filesystem with hard "
                               f"links (README, Running on a cluster)") from None
        fsync_dir(os.path.dirname(os.fspath(path)) or ".")
        return True
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def open_lock_file(path: str | os.PathLike) -> int:
    """A descriptor to flock `path` on, open for writing, the file created if missing. Only a user who
    may write a lock file may hold its lock: flock(2) takes any descriptor, read-only too, so a lock
    file others may read is one anyone can hold (a user who could read the root stopped every writer
    and the sidecar); Kafka's log-dir lock opens its file for writing too. So a lock file is
    LOCK_FILE_MODE (0600), with the group's read and write in a shared folder (0660, the rule above),
    and one of an older seglog (0644) is narrowed to that by its owner when opened. A user who may
    not write the file gets PermissionError (never a read-only descriptor)."""
    fd = create_file(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, LOCK_FILE_MODE)
    try:
        st = os.fstat(fd)
        want = LOCK_FILE_MODE | (_GROUP_RW if group_shared(os.path.dirname(os.fspath(path)) or ".") else 0)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != want:
            os.fchmod(fd, want)         # only its owner may; another user's file keeps its creator's mode
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs(path: str | os.PathLike) -> None:
    """`mkdir -p path` (no error when it exists), each folder it creates under the rule above: group
    read, write and search (and setgid, which Linux copies from the parent by itself) when its parent
    is group-writable. Between a folder's mkdir and its chmod another user's create in it may fail:
    a first-use window only (the writer creates the root's folders before the sidecar needs them).

    Invariant: each folder made here is durable in its parent (the parent fsynced after its mkdir) before this
    returns, so before anything is put in it: a folder's own fsync covers only its entries, not its name in its
    parent, and a crash must not lose a partition or commit-log folder a commit names (the JVM's
    GroupShared.createDirectories keeps the same rule). An fsync only when a folder is made, never per write."""
    path = Path(path)
    missing = []
    p = path
    while not os.path.isdir(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            fsync_dir(d.parent)           # a concurrent creator made it and applies the rule; its fsync may be to come
            continue
        if group_shared(d.parent):
            mode = stat.S_IMODE(os.stat(d).st_mode)
            if mode & _GROUP_RWX != _GROUP_RWX:
                os.chmod(d, mode | _GROUP_RWX)
        fsync_dir(d.parent)


def atomic_write(path: str | os.PathLike, data: bytes, *, fsync_folder: bool = True) -> None:
    """Write to a temporary name, fsync, rename over `path`, fsync the folder: old or new, never torn.
    `fsync_folder=False` where a later fsync of the folder (or a commit) makes the rename durable."""
    path = Path(path)
    tmp = temp_path(path)
    with open_new(tmp) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync_folder:
        fsync_dir(path.parent)

