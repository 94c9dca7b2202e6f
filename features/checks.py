"""The feature cache's integrity guards: layer checksums, finiteness, the per-entry lock, crash leftovers.

- ``file_checksum``: a digest of a layer file's bytes, stored in ``meta.json`` when the file is
  written and compared on the first open of that file in a process (``verify_layer_file``, memoised
  by path, size, mtime, inode and expected digest, so warm calls in one process do not re-read it).
  It is BLAKE2b over one 64-bit wrap-around *weighted* sum per 4 KiB page, sum(word_i * W_i), W_i fixed
  odd 64-bit constants (``np.einsum``, one pass at memory speed: 4-7 ms per 27 MB layer file warm, the same as
  the plain page sums before it; BLAKE2b over all bytes 40-80 ms; docs/reliability.md). The
  pages are hashed in order and each word's weight depends on its place in the page, so moved pages,
  words moved inside a page (issue 27: a shuffled page turned POS 66.09 into 7.82 under the plain
  sums), any changed bit and any random overwrite change the digest (but for a ~2^-64 chance; the one
  blind spot of a mod-2^64 weighted sum: two words swapped that differ in bit 63 alone).
  Entries written before (``blake2b-pagesum64:``, the unweighted sums) are verified with the algorithm
  their ``meta.json`` names, so no cached entry is rebuilt; new entries get the weighted sums.
- ``all_finite``: no NaN or inf (checked on the exponent bits, fast for float16/float32);
  ``check_vectors``: what an embedder returned is finite and fits the storage dtype.
- ``entry_lock``: ``filelock.FileLock`` on ``<entry>/.lock``; a second process waits, then re-checks.
- ``temp_path`` / ``remove_stale_temps`` (``corpora.temps``, shared with the reader cache): temporaries are
  named after their writer (``layer_3.npy.<host>-<pid>-<start>.<random>.tmp``, mode 0666 & ~umask); those of dead
  writers (or, where the writer cannot be told, older than ``STALE_AFTER_S``) are removed: in an entry with its lock
  held, and in every entry once per process when the cache is first opened (``features.store.feature_dir``).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from corpora.errors import LabError
from corpora.temps import (
    HOST as _HOST,  # noqa: F401 - the writer id in temporaries' names (tests)
    STALE_AFTER_S,  # noqa: F401
    remove_stale_temps as remove_temps,
    temp_path,  # noqa: F401 - features' writers import it from here
)

log = logging.getLogger("features.extract")

CHECKSUM_ALGO = "blake2b-pagewsum64"  # weighted page sums (issue 27)
LEGACY_ALGO = "blake2b-pagesum64"  # plain page sums, entries written before: verified as written
PAGE = 4096
BLOCK = 1 << 22  # bytes per numpy pass (a multiple of PAGE)
_VERIFIED: set[tuple] = set()  # (path, size, mtime_ns, inode, checksum) verified in this process


def _odd_weights(n: int, seed: int = 27) -> np.ndarray:
    """``n`` fixed odd 64-bit weights (splitmix64: the same on every machine and numpy version)."""
    out, x, mask = [], seed, (1 << 64) - 1
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append((z ^ (z >> 31)) | 1)
    return np.array(out, dtype=np.uint64)


_WEIGHTS = _odd_weights(PAGE // 8)


class FeatureCacheError(LabError, RuntimeError):
    """The feature cache cannot serve a request (e.g. the embedder returned NaN); the CLI exits 2."""


class NonFiniteFeaturesError(FeatureCacheError):
    """The embedder returned NaN or inf (or values the storage dtype cannot hold)."""


def file_checksum(path: Path, like: str | None = None) -> str:
    """``"blake2b-pagewsum64:<hex>"`` of the file's bytes (size, per-4-KiB-page weighted uint64 sums, tail);
    with ``like`` (a recorded checksum) by that checksum's algorithm, so an older entry can be verified."""
    algo = like.split(":", 1)[0] if like and like.startswith(f"{LEGACY_ALGO}:") else CHECKSUM_ALGO
    size = os.path.getsize(path)
    h = hashlib.blake2b(size.to_bytes(8, "little"), digest_size=16)
    if size:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        full = size // PAGE * PAGE
        for lo in range(0, full, BLOCK):
            pages = data[lo : min(lo + BLOCK, full)].view("<u8").reshape(-1, PAGE // 8)
            legacy = algo == LEGACY_ALGO  # einsum: the weighted sums (mod 2^64) in one pass, no temporary
            sums = pages.sum(axis=1, dtype=np.uint64) if legacy else np.einsum("ij,j->i", pages, _WEIGHTS)
            h.update(sums.astype("<u8").tobytes())
        h.update(bytes(data[full:]))
        del data
    return f"{algo}:{h.hexdigest()}"


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
        what = f"values beyond the {dtype} range of the feature cache (|x| > {np.finfo(dtype).max:g}; scale them down)"
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
    got = file_checksum(path, like=expected)
    if got != expected:
        return f"{path.name} checksum mismatch (on disk {got}, meta.json {expected}): changed after it was written"
    if not all_finite(np.load(path, mmap_mode="r")):
        return f"{path.name} holds NaN or inf values"
    _VERIFIED.add(key)
    return None


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


def remove_stale_temps(directory: Path, pattern: str = "*.tmp") -> list[Path]:
    """Remove temporaries of writers that are gone (``corpora.temps``); in one entry, call with its lock held."""
    return remove_temps(directory, log, pattern)


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
