"""The feature cache's integrity guards: layer checksums, finiteness, the per-entry lock, crash leftovers.

- ``file_checksum``: a digest of a layer file's bytes, stored in ``meta.json`` when the file is
  written and compared on the first open of that file in a process (``verify_layer_file``, memoised
  by path, size, mtime, inode and expected digest, so warm calls in one process do not re-read it).
  It is BLAKE2b over the 64-bit wrap-around sums of every 4 KiB page (numpy sums the pages at memory
  speed; BLAKE2b over all bytes costs 15-30 warm reads of the file, see docs/reliability.md). Any
  changed bit, and any random overwrite of a page (but for a 2^-64 chance), changes the digest.
- ``all_finite``: no NaN or inf (checked on the exponent bits, fast for float16/float32);
  ``check_vectors``: what an embedder returned is finite and fits the storage dtype.
- ``entry_lock``: ``filelock.FileLock`` on ``<entry>/.lock``; a second process waits, then re-checks.
- ``temp_path`` / ``remove_stale_temps``: temporaries are named after their writer
  (``layer_3.npy.<host>-<pid>.<random>.tmp``); with the lock held, those of dead writers (or older
  than ``STALE_AFTER_S``) are removed.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from corpora.errors import LabError

log = logging.getLogger("features.extract")

CHECKSUM_ALGO = "blake2b-pagesum64"
PAGE = 4096
BLOCK = 1 << 22  # bytes per numpy pass (a multiple of PAGE)
STALE_AFTER_S = 6 * 3600  # a temporary this old is a leftover whoever wrote it
_HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40] or "host"
_TEMP = re.compile(r"\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)\.[^.]+\.tmp$")
_VERIFIED: set[tuple] = set()  # (path, size, mtime_ns, inode, checksum) verified in this process


class FeatureCacheError(LabError, RuntimeError):
    """The feature cache cannot serve a request (e.g. the embedder returned NaN); the CLI exits 2."""


class NonFiniteFeaturesError(FeatureCacheError):
    """The embedder returned NaN or inf (or values the storage dtype cannot hold)."""


def file_checksum(path: Path) -> str:
    """``"blake2b-pagesum64:<hex>"`` of the file's bytes (size, per-4-KiB-page uint64 sums, tail)."""
    size = os.path.getsize(path)
    h = hashlib.blake2b(size.to_bytes(8, "little"), digest_size=16)
    if size:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        full = size // PAGE * PAGE
        for lo in range(0, full, BLOCK):
            pages = data[lo : min(lo + BLOCK, full)].view("<u8").reshape(-1, PAGE // 8)
            h.update(pages.sum(axis=1, dtype=np.uint64).astype("<u8").tobytes())
        h.update(bytes(data[full:]))
        del data
    return f"{CHECKSUM_ALGO}:{h.hexdigest()}"


def all_finite(arr: np.ndarray) -> bool:
    """True when ``arr`` holds no NaN or inf (any shape; a float16/float32 memmap is read in blocks)."""
    masks = {np.dtype(np.float16): (np.uint16, 0x7C00), np.dtype(np.float32): (np.uint32, 0x7F800000)}
    if arr.dtype not in masks or not arr.flags.c_contiguous:
        return bool(np.isfinite(arr).all())
    utype, mask = masks[arr.dtype]
    bits = arr.reshape(-1).view(utype)
    step = BLOCK // arr.dtype.itemsize
    # an all-ones exponent is inf or NaN
    return all(int(np.bitwise_and(bits[lo : lo + step], mask).max()) != mask for lo in range(0, len(bits), step))


def _storable(vectors: np.ndarray, dtype: str) -> bool:
    limit = float(np.finfo(dtype).max)  # NaN fails both comparisons
    return bool(vectors.max() <= limit and vectors.min() >= -limit)


def check_vectors(vectors: np.ndarray, dtype: str, model: str, dataset_key: str, i: int, words) -> None:
    """Raise NonFiniteFeaturesError unless sentence ``i``'s (layers, words, dim) ``vectors`` are finite
    and fit ``dtype`` (float16 turns |x| > 65504 into inf)."""
    if _storable(vectors, dtype):
        return
    j = next(j for j in range(vectors.shape[0]) if not _storable(vectors[j], dtype))
    where = f"at layer {j} for dataset '{dataset_key}' (sentence {i}: {' '.join(words)[:60]!r})"
    if np.isfinite(vectors[j]).all():
        what = f"values beyond the {dtype} range (|x| > {np.finfo(dtype).max:g}; use dtype='float32')"
    else:
        what = "NaN or inf values"
    raise NonFiniteFeaturesError(f"{model} returned {what} {where}; nothing was cached.")


def _key(path: Path, expected: str | None) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, expected)


def remember_verified(path: Path, checksum: str) -> None:
    """``path`` was just written by this process with ``checksum``: no need to re-read it."""
    _VERIFIED.add(_key(path, checksum))


def verify_layer_file(path: Path, expected: str | None) -> str | None:
    """Why the bytes of layer file ``path`` cannot be used (checksum, NaN/inf), or None. Once per file state."""
    key = _key(path, expected)
    if key in _VERIFIED:
        return None
    if not expected:
        return f"{path.name} has no checksum in meta.json"
    got = file_checksum(path)
    if got != expected:
        return f"{path.name} checksum mismatch (on disk {got}, meta.json {expected}): changed after it was written"
    if not all_finite(np.load(path, mmap_mode="r")):
        return f"{path.name} holds NaN or inf values"
    _VERIFIED.add(key)
    return None


def temp_path(final: Path) -> Path:
    """A new empty temporary beside ``final``, named after this writer (host and PID)."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f"{final.name}.{_HOST}-{os.getpid()}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def reserve(path: Path) -> None:
    """Allocate a (sparse) file's blocks now: a full disk fails here with OSError, not later with SIGBUS."""
    with open(path, "r+b") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size:
            try:
                os.posix_fallocate(fh.fileno(), 0, size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, under another user
        return True
    return True


def remove_stale_temps(directory: Path) -> list[Path]:
    """Remove temporaries of writers that are gone. Call with the entry's lock held. Returns those removed."""
    removed, now = [], time.time()
    for path in directory.glob("*.tmp"):
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        m = _TEMP.search(path.name)
        if m and m["host"] == _HOST:
            pid = int(m["pid"])
            alive = _pid_alive(pid)
            stale = pid != os.getpid() and (not alive or age > STALE_AFTER_S)
            writer = f"writer process {pid} " + (f"still runs, file {age / 3600:.0f} h old" if alive else "is gone")
        else:  # another host, or named before writers were recorded
            stale, writer = age > STALE_AFTER_S, f"{age / 3600:.0f} h old"
        if not stale:
            continue
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError as exc:
            log.warning("Cannot remove stale temporary %s: %s", path, exc)
            continue
        removed.append(path)
        log.warning("Removed %s (%.1f MB), left by an extraction that did not finish (%s).", path, size / 1e6, writer)
    return removed


@contextmanager
def entry_lock(directory: Path) -> Iterator[bool]:
    """Hold ``<directory>/.lock`` (waiting for another process); yields False when it cannot be
    created (a read-only cache), in which case the caller goes on without it."""
    lock = FileLock(str(directory / ".lock"))
    try:
        try:
            lock.acquire(blocking=False)
        except Timeout:
            log.warning("Feature cache %s is locked by another process or thread (extracting it?); waiting.", directory)
            lock.acquire()
    except OSError as exc:
        log.info("Cannot lock %s (%s); going on without the lock.", directory, exc)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
