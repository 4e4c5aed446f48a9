"""Who owns a remote tier's prefix (docs/tiered-storage.md §2): one root per prefix, as KIP-405 keys remote
segments by a topic id and a unique segment id so that two clusters never share an object.

A root's id is a UUID made once, the first time the root tiers (`<root>/_seglog/root-id`); the owner object
`<uri>/_seglog-owner.json` records it at the prefix: `{"version": 1, "root_id": ..., "root": <the root's path
when it claimed>}`. Its name has no `/`, so it never collides with a `<topic>-<partition>/` prefix.

Invariants kept here:
- Every remote write or delete of a root (the tier pass: sweep, copy, remote retention) is preceded by
  `claim`, which refuses (RemotePrefixOwnedError naming both roots, nothing written or deleted) a prefix whose
  owner object names another root id.
- An unowned prefix (a root tiered before owner objects existed, or a new one) is claimed only when every
  object under it is this root's: under a partition this root records, at a base it recorded or at or past its
  remote end (a crashed copy's). Another root's objects are never taken over.
- The owner object is written create-only where the store allows it (file://: O_EXCL), else written and read
  back: of two roots claiming one unowned prefix at the same instant, at most the one whose write lands last
  reads its own id back (object stores without a conditional put leave that instant open; documented).
- Readers (`check`) refuse a prefix owned by another root: a foreign object is never read as this root's rows.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from seglog.errors import RemotePrefixOwnedError, StorageError
from seglog.indexer.fsutil import atomic_write, make_dirs, meta_path
from seglog.indexer.names import parse_partition_dir

OWNER_KEY = "_seglog-owner.json"
ROOT_ID_FILE = "root-id"


def root_id_path(root: str | os.PathLike) -> Path:
    return meta_path(root, ROOT_ID_FILE)


def root_id(root: str | os.PathLike, create: bool = False) -> str | None:
    """The root's id; made (once, atomically) when `create` and there is none yet."""
    path = root_id_path(root)
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            return None
        make_dirs(path.parent)
        atomic_write(path, (uuid.uuid4().hex + "\n").encode())
        return root_id(root)
    except (OSError, ValueError) as exc:
        raise StorageError(f"{path}: the root's id cannot be read: {exc}") from None
    try:
        return uuid.UUID(hex=text).hex
    except ValueError:
        raise StorageError(f"{path}: not a root id (a UUID): {text[:40]!r}") from None


def read_owner(store) -> dict | None:
    """The prefix's owner record, None when it has none."""
    try:
        raw = store.read(OWNER_KEY)
    except FileNotFoundError:
        return None
    try:
        rec = json.loads(raw)
        if not isinstance(rec, dict) or rec.get("version") != 1 or not isinstance(rec.get("root_id"), str):
            raise ValueError("not a version 1 owner record")
    except ValueError as exc:
        raise RemotePrefixOwnedError(f"remote tier {store.location.uri}: {OWNER_KEY} is not an owner record "
                                     f"({exc}): the prefix cannot be judged this root's") from None
    return rec


def _refuse(store, root, rid: str | None, owner: dict) -> RemotePrefixOwnedError:
    return RemotePrefixOwnedError(
        f"remote tier {store.location.uri} is owned by the root {owner.get('root')!r} (root id {owner['root_id']}), "
        f"not by {str(root)!r} (root id {rid or 'none: it never tiered'}): two roots sharing one prefix would "
        f"overwrite and delete each other's segments; give each root its own URI")


def check(root: str | os.PathLike, store) -> None:
    """Readers: refuse a prefix another root owns. An unowned prefix is read as before (a root tiered before
    owner objects existed; its next tier pass claims it)."""
    owner = read_owner(store)
    if owner is None:
        return
    rid = root_id(root)
    if owner["root_id"] != rid:
        raise _refuse(store, root, rid, owner)


def foreign_objects(root: str | os.PathLike, store) -> list[str]:
    """Keys under the prefix that are not this root's (see the module doc), at most 5."""
    from seglog.indexer.remote import metadata
    from seglog.indexer.remote.tier import base_of

    out: list[str] = []
    for name in store.list_dirs(""):
        parsed = parse_partition_dir(name)
        files = store.list(name)
        if not files:
            continue
        if parsed is None or not metadata.metadata_path(root, *parsed).exists():
            out.append(f"{name}/{files[0]}")
        else:
            state = metadata.read_state(root, *parsed)
            known = set(state.live) | set(state.deleting) | state.deleted | state.copying
            for f in files:
                base = base_of(f)
                if base is None or not (base in known or (state.end is not None and base >= state.end)):
                    out.append(f"{name}/{f}")
        if len(out) >= 5:
            break
    return out[:5]


def _write_create_only(store, data: bytes) -> None:
    """Writes the owner object unless one is there: create-only on a local filesystem, else a plain write (the
    caller reads it back)."""
    if store.location.scheme == "file":
        path = Path(store.path(OWNER_KEY))
        make_dirs(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return
    store.put_bytes(OWNER_KEY, data)


def claim(root: str | os.PathLike, store) -> str:
    """Before any remote write or delete: this root's id, the prefix's owner; RemotePrefixOwnedError (nothing
    written or deleted) when another root owns it or an unowned one holds objects this root never recorded."""
    rid = root_id(root, create=True)
    owner = read_owner(store)
    if owner is None:
        foreign = foreign_objects(root, store)
        if foreign:
            raise RemotePrefixOwnedError(
                f"remote tier {store.location.uri} holds objects the root {str(root)!r} (root id {rid}) never "
                f"recorded ({', '.join(foreign)}): another root tiers there; give each root its own URI")
        record = {"version": 1, "root_id": rid, "root": str(Path(root).resolve())}
        _write_create_only(store, json.dumps(record, sort_keys=True).encode())
        owner = read_owner(store)                   # read back: whoever's write landed owns it
        if owner is None:
            raise StorageError(f"remote tier {store.location.uri}: {OWNER_KEY} was written but cannot be read back")
    if owner["root_id"] != rid:
        raise _refuse(store, root, rid, owner)
    return rid
