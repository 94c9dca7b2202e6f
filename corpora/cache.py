"""A small versioned pickle cache under ``corpora.paths.cache_dir()``.

Readers key an entry by a name, a format version and a fingerprint of their inputs (arguments,
file sizes and mtimes). A missing, stale or corrupt entry is rebuilt silently; the cache never
decides a result, it only saves time.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from corpora.paths import cache_dir

T = TypeVar("T")


def files_fingerprint(paths: Iterable[Path]) -> list[tuple[str, int, int]]:
    """(name, size, mtime_ns) of every file, so an edited data file invalidates the cache."""
    out = []
    for p in paths:
        st = Path(p).stat()
        out.append((str(p), st.st_size, st.st_mtime_ns))
    return out


def cache_key(name: str, version: int, params: Any) -> Path:
    blob = json.dumps({"name": name, "version": version, "params": params}, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:20]
    return cache_dir() / f"{name}-v{version}-{digest}.pkl"


def cached(name: str, version: int, params: Any, build: Callable[[], T]) -> T:
    """Return the cached value for (name, version, params), building and storing it if needed."""
    path = cache_key(name, version, params)
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                stored_version, value = pickle.load(fh)
            if stored_version == version:
                return value
        except Exception:  # corrupt/truncated/old pickle: rebuild below
            pass
    value = build()
    # Write atomically so a killed process never leaves a half-written entry behind.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((version, value), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        for stale in path.parent.glob(f"{name}-v*.pkl"):  # entries of older format versions
            if not stale.name.startswith(f"{name}-v{version}-"):
                stale.unlink(missing_ok=True)
    except OSError:
        Path(tmp).unlink(missing_ok=True)  # read-only cache dir: still return the value
    return value
