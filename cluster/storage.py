"""Where a cluster keeps shared files: a local or shared-filesystem path, or object storage via fsspec.

    store = check_store("s3://bucket/embprobe")    # or gs://…, file:///nfs/embprobe, /nfs/embprobe, memory://x
    push_entry(store, local_entry_dir)             # publish a committed feature-cache entry (or repair it)
    pull_entry(store, fingerprint, key, root)      # fetch one into a local cache, checksums verified
    entry_problems(store, fingerprint, key, full=True); drop_entry(store, fingerprint, key)

Design notes:

- **Feature entries stay local.** The feature cache memory-maps its layer files, which needs a local
  disk. A remote root is a second tier: a worker pulls the entries of its model before a task and pushes
  the ones it wrote after it, so each (model, dataset) is extracted once per cluster, not once per node.
  A shared filesystem (NFS, Lustre) needs no tier at all: point ``EMBPROBE_CACHE`` at it.
- **Atomic publication: a unique prefix, then one pointer.** An entry's files are uploaded under a
  prefix no other publisher uses (``features/<fp>/<key>/v-<random>/``), then one small object,
  ``features/<fp>/<key>/CURRENT.json``, names that prefix and carries the entry's ``meta.json`` and
  each uploaded object's size and ETag. One object's upload is atomic on every store, so a reader
  sees the old entry or the new one, never a mix; two publishers of one entry each write whole
  prefixes, and the last pointer wins. A replaced version's prefix is deleted after the new pointer.
- **Verified before skipped, repaired when broken.** ``push_entry`` skips an entry only when the
  store's pointer has the same ``meta.json`` and every object is still what was published
  (``entry_problems``: its size, and its ETag where the store gives one, else its bytes against the
  checksums); otherwise it publishes the entry again. A task whose pull finds a corrupt entry
  extracts the features itself and its push then repairs the store (``cluster.tasks``).
  ``python -m cluster store URL verify|push|drop`` checks (all bytes), re-publishes or drops entries.
- **Eviction.** ``evict_local`` deletes a model's local entries the store holds intact; a sweep with
  ``--cache-url`` calls it on the node of each model's actor after the model's last task.
- **The cache says what an entry is.** Remote paths mirror the local cache (``features.entry_rel``);
  a push uploads the layer files ``features.entry_files`` lists (each checked first: a broken entry
  is never published); a pull hands the store's files to ``features.install_entry``, which verifies
  each layer's size and checksum against ``meta.json`` and installs them under the entry's lock (a
  mismatch is an error naming the remote file, nothing is installed). The bytes are the same in
  every cache and store. An entry another node computed under other library releases (or an older cache
  format) is not pulled: this node computes its own (``features.store.foreign``; ``store verify`` says so).
- **Checked up front.** ``check_store`` (the sweep's ``--cache-url``) imports the URL's fsspec backend
  (``s3fs`` for s3://, ``gcsfs`` for gs://) and writes, reads and deletes one small object, so a missing
  package, bucket or permission is one error before any model loads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import shutil
import tempfile
import uuid
from pathlib import Path

from features import FeatureCacheError, entry_files, entry_rel, install_entry, local_entries, read_meta
from features.store import foreign
from probes.errors import ProbeInputError

log = logging.getLogger(__name__)

# local_entries (the committed local entries of a model, from features) completes the push/pull interface.
__all__ = [
    "Store",
    "check_store",
    "drop_entry",
    "entry_problems",
    "evict_local",
    "local_entries",
    "pull_entry",
    "push_entry",
    "remote_keys",
]

POINTER = "CURRENT.json"  # the one object that makes an entry's version visible


class Store:
    """A root directory on any fsspec filesystem; paths below it are '/'-separated relative names."""

    def __init__(self, url: str | os.PathLike) -> None:
        import fsspec  # lazy: fsspec is optional (requirements-cluster.txt); only a shared cache needs it

        self.url = str(url)
        self.fs, root = fsspec.core.url_to_fs(self.url)
        self.root = root.rstrip("/") or "/"

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    def path(self, rel: str) -> str:
        return posixpath.join(self.root, rel)

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        """Names directly under ``rel`` ([] when it does not exist)."""
        try:
            entries = self.fs.ls(self.path(rel), detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def drop_empty_folders(self, rel: str) -> None:
        """``rel`` and the folders above it, up to the root, while each is empty (the shard folders an extraction
        leaves: ``shards/<fingerprint>/<key>``). An object store has no folders: nothing there to drop."""
        while rel not in ("", ".", "/") and self.fs.isdir(self.path(rel)) and not self.listdir(rel):
            self.fs.rmdir(self.path(rel))
            rel = posixpath.dirname(rel)

    def put_file(self, local: str | Path, rel: str) -> None:
        """Upload ``local`` to ``rel`` atomically (temporary name, then moved into place)."""
        final = self.path(rel)
        tmp = f"{final}.{uuid.uuid4().hex[:12]}.tmp"
        self.fs.makedirs(posixpath.dirname(final), exist_ok=True)
        try:
            self.fs.put_file(str(local), tmp)
            self.fs.mv(tmp, final)
        except BaseException:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)
            raise

    def put_text(self, rel: str, text: str) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "f"
            p.write_text(text, encoding="utf-8")
            self.put_file(p, rel)

    def get_file(self, rel: str, local: str | Path) -> None:
        self.fs.get_file(self.path(rel), str(local))

    def read_text(self, rel: str) -> str | None:
        """The file's text, None when it does not exist."""
        try:
            with self.fs.open(self.path(rel), "rb") as fh:
                return fh.read().decode("utf-8")
        except FileNotFoundError:
            return None

    def read_json(self, rel: str) -> dict | None:
        text = self.read_text(rel)
        try:
            data = None if text is None else json.loads(text)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None


def check_store(url: str, flag: str = "--cache-url", must_exist: bool = False) -> Store:
    """The store at ``url``, checked: its fsspec backend importable, its root writable and readable; ``flag``: how
    the request named it (the sweep's ``--cache-url``, extract's ``--store``, ``cluster store``'s URL).
    ``must_exist``: refuse a root with nothing in it (looking after a store, not starting one: writing the check
    object would make a mistyped folder)."""
    try:
        store = Store(url)
    except ImportError as exc:
        raise ProbeInputError(
            f"{flag} {url}: {exc} (pip install -r requirements-cluster.txt installs s3fs; gcsfs for gs://)."
        ) from None
    except ValueError as exc:
        raise ProbeInputError(f"{flag} {url}: {exc}") from None
    if must_exist and not store.fs.exists(store.root):
        raise ProbeInputError(
            f"{flag} {url}: no store there ({store.root} does not exist; a sweep's --cache-url makes one)."
        )
    probe = f".embprobe-check-{uuid.uuid4().hex[:12]}"
    try:
        if hasattr(store.fs, "split_path"):  # an object store (s3fs, gcsfs): writing would create the bucket
            bucket = store.fs.split_path(store.root)[0]
            if not store.fs.exists(bucket):
                raise FileNotFoundError(f"no bucket {bucket!r} (or no permission to see it)")
        store.put_text(probe, "ok")
        ok = store.read_text(probe) == "ok"
        store.fs.rm(store.path(probe))
    except Exception as exc:  # noqa: BLE001 - no bucket, no credentials, no network: one message for all
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ProbeInputError(f"{flag} {url}: cannot write there ({type(exc).__name__}: {first}).") from None
    if not ok:
        raise ProbeInputError(f"{flag} {url}: an object written there reads back differently.")
    return store


def _etag(info: dict) -> str | None:
    tag = info.get("ETag") or info.get("etag") or info.get("md5Hash")
    return str(tag).strip('"') if tag else None


def entry_problems(store: Store, fingerprint: str, key: str, full: bool = False) -> list[str]:
    """What is wrong with the store's entry (fingerprint, key), [] when nothing is: a missing or resized
    object, an ETag other than the published one; with ``full`` (or where the store gives no ETags)
    every object's bytes against the checksums of ``meta.json`` (downloaded into a temporary cache)."""
    rel = entry_rel(fingerprint, key)
    pointer = store.read_json(f"{rel}/{POINTER}")
    if pointer is None or not isinstance(pointer.get("objects"), dict) or not pointer.get("version"):
        return [f"{store.path(rel)}: no readable {POINTER}"]
    problems, unchecked = [], full
    if isinstance(pointer.get("meta"), dict) and (why := foreign(pointer["meta"], fingerprint)):
        problems.append(f"{store.path(rel)}: {why}: not usable here")
    for name, want in pointer["objects"].items():
        path = store.path(f"{rel}/{pointer['version']}/{name}")
        try:
            info = store.fs.info(path)
        except FileNotFoundError:
            problems.append(f"{path} is missing")
            continue
        if info.get("size") != want.get("size") or (want.get("etag") and _etag(info) != want["etag"]):
            problems.append(f"{path} changed since it was published (size or ETag)")
        unchecked = unchecked or not want.get("etag")
    if problems or not unchecked:
        return problems
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pull_entry(store, fingerprint, key, Path(tmp))
        except FeatureCacheError as exc:
            return [str(exc)]
    return []


def push_entry(store: Store, directory: Path, force: bool = False) -> bool:
    """Publish the local feature-cache entry ``directory``; False when the store already holds it intact
    (same ``meta.json``, ``entry_problems`` finds nothing). ``force`` publishes it again regardless.

    Raises FeatureCacheError when the local entry is incomplete or fails its checks.
    """
    meta = read_meta(directory)
    if meta is None:
        raise FeatureCacheError(f"{directory}: no readable meta.json; nothing to publish.")
    fingerprint, key = meta["fingerprint"], meta["dataset_key"]
    rel = entry_rel(fingerprint, key)
    current = store.read_json(f"{rel}/{POINTER}")
    if not force and current and current.get("meta") == meta and not entry_problems(store, fingerprint, key):
        return False
    version = f"v-{uuid.uuid4().hex[:16]}"
    try:
        store.fs.makedirs(store.path(f"{rel}/{version}"), exist_ok=True)
        objects = {}
        for name in entry_files(directory, meta):
            path = store.path(f"{rel}/{version}/{name}")
            store.fs.put_file(str(directory / name), path)  # a fresh prefix: nobody reads it before the pointer
            objects[name] = {"size": (directory / name).stat().st_size, "etag": _etag(store.fs.info(path))}
    except OSError as exc:  # a full store: its unfinished version goes (it was left, unnamed by verify)
        with contextlib.suppress(OSError):
            store.fs.rm(store.path(f"{rel}/{version}"), recursive=True)
        raise FeatureCacheError(
            f"Could not publish {directory} to {store.url} ({exc.strerror or exc}); the store's entry is as it was."
        ) from None
    pointer = {"version": version, "meta": meta, "objects": objects}
    store.put_text(f"{rel}/{POINTER}", json.dumps(pointer))  # the entry is now this version (meta in its order)
    old = (current or {}).get("version")
    if old and old != version and store.exists(f"{rel}/{old}"):
        store.fs.rm(store.path(f"{rel}/{old}"), recursive=True)
    return True


def drop_entry(store: Store, fingerprint: str, key: str) -> bool:
    """Remove the store's entry (fingerprint, key), every version of it; False when there is none."""
    rel = entry_rel(fingerprint, key)
    if not store.exists(rel):
        return False
    store.fs.rm(store.path(rel), recursive=True)
    return True


def evict_local(store: Store, fingerprint: str, root: Path | None = None) -> list[str]:
    """Delete the model's local entries that the store holds intact (same ``meta.json``, ``entry_problems``
    finds nothing): a node's disk is freed once a model's tasks are done. Returns the keys deleted."""
    gone = []
    for directory in local_entries(fingerprint, root):
        pointer = store.read_json(f"{entry_rel(fingerprint, directory.name)}/{POINTER}") or {}
        if pointer.get("meta") == read_meta(directory) and not entry_problems(store, fingerprint, directory.name):
            shutil.rmtree(directory)
            gone.append(directory.name)
    return gone


def remote_keys(store: Store, fingerprint: str) -> list[str]:
    """Dataset keys the store holds published entries for (those with a pointer)."""
    return [k for k in store.listdir(entry_rel(fingerprint)) if store.exists(f"{entry_rel(fingerprint, k)}/{POINTER}")]


def pull_entry(store: Store, fingerprint: str, key: str, root: Path | None = None) -> bool:
    """Install the store's entry (fingerprint, key) into the local cache ``root``; False when the store
    has none. A local entry with the same ``meta.json`` whose layers pass their checks is kept as it is.

    Raises FeatureCacheError when a remote layer's size or checksum differs from its meta.json.
    """
    rel = entry_rel(fingerprint, key)
    pointer = store.read_json(f"{rel}/{POINTER}")
    if pointer is None or not isinstance(pointer.get("meta"), dict) or not pointer.get("version"):
        return False
    if why := foreign(pointer["meta"], fingerprint):  # another node's releases: not this one's to serve
        log.info("%s: not pulled (%s); computed here instead.", store.path(rel), why)
        return False
    prefix = f"{rel}/{pointer['version']}"
    install_entry(
        fingerprint,
        key,
        pointer["meta"],
        lambda name, path: store.get_file(f"{prefix}/{name}", path),
        root,
        source=store.path(prefix),
    )
    return True
