"""Where a cluster keeps shared files: a local or shared-filesystem path, or object storage via fsspec.

    store = Store("s3://bucket/embprobe")          # or gs://…, file:///nfs/embprobe, /nfs/embprobe, memory://x
    push_entry(store, local_entry_dir)             # publish a committed feature-cache entry
    pull_entry(store, fingerprint, key, root)      # fetch one into a local cache, checksums verified

Design notes:

- **Feature entries stay local.** The feature cache memory-maps its layer files, which needs a local
  disk. A remote root is a second tier: a worker pulls the entries of its model before a task and pushes
  the ones it wrote after it, so each (model, dataset) is extracted once per cluster, not once per node.
  A shared filesystem (NFS, Lustre) needs no tier at all: point ``EMBPROBE_CACHE`` at it.
- **Atomic publication.** Object stores have no rename, but one object's upload is atomic. Every file
  is uploaded to a temporary name and moved (``fs.mv``: a rename on file systems, copy-then-delete on
  object stores, so the final name appears whole); an entry is published layer files first and
  ``meta.json`` last, so a reader that sees ``meta.json`` sees a complete entry.
- **The cache says what an entry is.** Remote paths mirror the local cache (``features.entry_rel``);
  a push uploads the layer files ``features.entry_files`` lists (each checked first: a broken entry
  is never published), then ``meta.json``; a pull hands the store's files to
  ``features.install_entry``, which verifies each layer's size and checksum against ``meta.json``
  and installs them under the entry's lock (a mismatch is an error naming the remote file, nothing
  is installed). The bytes are the same in every cache and store.
"""

from __future__ import annotations

import json
import os
import posixpath
import tempfile
import uuid
from pathlib import Path

import fsspec

from features import (
    META_FILE,
    FeatureCacheError,
    entry_files,
    entry_rel,
    install_entry,
    local_entries,
    meta_text,
    read_meta,
)

# local_entries (the committed local entries of a model, from features) completes the push/pull interface.
__all__ = ["Store", "local_entries", "pull_entry", "push_entry", "remote_keys"]


class Store:
    """A root directory on any fsspec filesystem; paths below it are '/'-separated relative names."""

    def __init__(self, url: str | os.PathLike) -> None:
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


def push_entry(store: Store, directory: Path) -> bool:
    """Publish the local feature-cache entry ``directory``; False when the store already holds it.

    Raises FeatureCacheError when the local entry is incomplete or fails its checks.
    """
    meta = read_meta(directory)
    if meta is None:
        raise FeatureCacheError(f"{directory}: no readable {META_FILE}; nothing to publish.")
    rel = entry_rel(meta["fingerprint"], meta["dataset_key"])
    if store.read_json(f"{rel}/{META_FILE}") == meta:
        return False
    for name in entry_files(directory, meta):
        store.put_file(directory / name, f"{rel}/{name}")
    store.put_text(f"{rel}/{META_FILE}", meta_text(meta))  # last: the entry is now visible
    return True


def remote_keys(store: Store, fingerprint: str) -> list[str]:
    """Dataset keys the store holds complete entries for (those with a meta.json)."""
    return [
        k for k in store.listdir(entry_rel(fingerprint)) if store.exists(f"{entry_rel(fingerprint, k)}/{META_FILE}")
    ]


def pull_entry(store: Store, fingerprint: str, key: str, root: Path | None = None) -> bool:
    """Install the store's entry (fingerprint, key) into the local cache ``root``; False when the store
    has none. A local entry with the same ``meta.json`` whose layers pass their checks is kept as it is.

    Raises FeatureCacheError when a remote layer's size or checksum differs from its meta.json.
    """
    rel = entry_rel(fingerprint, key)
    meta = store.read_json(f"{rel}/{META_FILE}")
    if meta is None:
        return False
    install_entry(
        fingerprint, key, meta, lambda name, path: store.get_file(f"{rel}/{name}", path), root, source=store.path(rel)
    )
    return True
