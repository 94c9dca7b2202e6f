"""A small versioned on-disk cache under ``corpora.paths.cache_dir()``, data only (no pickle).

Readers key an entry by a name, a format version and a fingerprint of their inputs (arguments,
file sizes, times and inodes: ``files_fingerprint``). Each entry is one ``.npz`` file read with
``np.load(allow_pickle=False)``: numeric arrays plus a ``spec`` member, a UTF-8 JSON structure describing the value
(:mod:`corpora.codec`). Loading an entry therefore never runs code from the cache folder; a
dataclass is rebuilt only if its type is in the ``types`` the caller passes.

A missing or stale entry is rebuilt silently; a corrupt, truncated or unknown-format one is
rebuilt with a log warning. A write goes to a temporary named after its writer (``corpora.temps``);
those of writers that are gone (``kill -9``) are removed once per process, when the cache is first
used. Entries of the old pickle format (``*.pkl``) are never loaded: they are removed when the entry
is written anew. The cache never decides a result, it only saves time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from corpora.codec import decode, encode, whitelist
from corpora.paths import cache_dir
from corpora.temps import remove_stale_temps, temp_path

T = TypeVar("T")
FORMAT = "embprobe-cache"
FORMAT_VERSION = 1
log = logging.getLogger(__name__)


def files_fingerprint(paths: Iterable[Path]) -> list[tuple[str, int, int, int, int]]:
    """(name, size, mtime_ns, inode, ctime_ns) of every file, so an edited data file invalidates the cache: the
    inode and ctime catch an edit that keeps the size and the times (`cp -p`, `rsync -a`, tar), as for models'
    digests (``corpora.digests``)."""
    out = []
    for p in paths:
        st = Path(p).stat()
        out.append((str(p), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns))
    return out


def cache_key(name: str, version: int, params: Any) -> Path:
    """The entry's file: ``<cache>/<name>-v<version>-<digest of name, version, params>.npz``."""
    blob = json.dumps({"name": name, "version": version, "params": params}, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:20]
    return cache_dir() / f"{name}-v{version}-{digest}.npz"


def cached(name: str, version: int, params: Any, build: Callable[[], T], *, types: Iterable[type] = ()) -> T:
    """Return the cached value for (name, version, params), building and storing it if needed.

    Args:
        types: the dataclass types the value may contain (nested ones included). Storing a
            dataclass of another type raises TypeError; an entry naming one is rebuilt.

    The value may hold None, bool, int, float, str, lists, tuples, dicts, numpy arrays (not of
    object dtype) and dataclasses of ``types``; anything else raises TypeError when it is stored.
    """
    allowed = whitelist(types)
    path = cache_key(name, version, params)
    _sweep_once(path.parent)
    with contextlib.suppress(OSError):  # an unusable cache directory (cache_dir warned): nothing to remove
        path.with_suffix(".pkl").unlink(missing_ok=True)  # this entry in the old pickle format: never loaded
    if path.is_file():
        try:
            return read_entry(path, name, version, allowed)
        except Exception as exc:  # noqa: BLE001 — corrupt, truncated, foreign or unknown-format entry: rebuild below
            log.warning("cache entry %s is unreadable (%s: %s); rebuilding it", path.name, type(exc).__name__, exc)
    value = build()
    write_entry(path, name, version, value, allowed)
    return value


@functools.cache
def _sweep_once(directory: Path) -> None:
    """Remove, once per process and cache folder, the temporaries of writers that are gone (``corpora.temps``)."""
    with contextlib.suppress(OSError):
        remove_stale_temps(directory, log)


def read_entry(path: Path, name: str, version: int, types: dict[str, type]) -> Any:
    """The value stored at ``path``; raises on anything but an entry :func:`write_entry` wrote."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":
            raise ValueError("not an npz (zip) file")
        fh.seek(0)
        with np.load(fh, allow_pickle=False) as npz:
            head = json.loads(npz["spec"].tobytes().decode("utf-8"))
            if (
                type(head) is not dict
                or head.get("format") != FORMAT
                or head.get("format_version") != FORMAT_VERSION
                or head.get("name") != name
                or head.get("version") != version
            ):
                raise ValueError("unknown format or another entry's header")
            n = head["arrays"]
            if type(n) is not int or set(npz.files) != {"spec", *(f"a{i}" for i in range(n))}:
                raise ValueError("unexpected members")
            arrays = [npz[f"a{i}"] for i in range(n)]
    return decode(head["value"], arrays, types)


def write_entry(path: Path, name: str, version: int, value: Any, types: dict[str, type]) -> None:
    """Store ``value`` atomically (a killed process never leaves a half-written entry behind) and
    remove this name's entries of other versions and of the old pickle format."""
    spec, arrays = encode(value, types)  # TypeError here is a caller's bug: not swallowed
    head = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "version": version,
        "arrays": len(arrays),
        "value": spec,
    }
    members = {f"a{i}": a for i, a in enumerate(arrays)}
    members["spec"] = np.frombuffer(json.dumps(head, separators=(",", ":")).encode("utf-8"), dtype=np.uint8)
    try:
        tmp = temp_path(path)  # named after this writer: a killed one's is removed later (_sweep_once)
    except OSError:
        return  # read-only cache dir: the caller still gets its value
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)
    except OSError as exc:  # disk full, cache dir gone: the caller still gets its value, and hears why it is slow
        Path(tmp).unlink(missing_ok=True)
        log.warning("Could not cache %s in %s (%s): it is parsed again on each run.", name, path.parent, exc.strerror)
        return
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for stale in path.parent.glob(f"{name}-v*"):
        if stale.suffix == ".pkl" or (stale.suffix == ".npz" and not stale.name.startswith(f"{name}-v{version}-")):
            stale.unlink(missing_ok=True)
