"""Process-wide allocator settings for CPU inference (glibc ``mallopt``)."""

from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, <malloc.h>


def reuse_freed_memory(mmap_threshold_mb: int = 32, trim_threshold_mb: int = 512) -> bool:
    """Make glibc malloc keep freed blocks of up to ``mmap_threshold_mb`` for reuse (process-wide).

    Batched CPU extraction allocates and frees 10-20 MB activation tensors in every layer. glibc
    serves blocks that size from a fresh ``mmap`` and unmaps them on free, so every forward pass
    page-faults its activations in again (~150k faults per 2,000 sentences for MiniLM). Raising
    the mmap threshold keeps such blocks in the heap, which made batched extraction 4-8 % faster
    on the 2-core VM (docs/benchmarks.md); the trim threshold bounds how much freed memory the
    process keeps. Entry points (app, CLIs, benchmarks) call this once; returns False where it
    cannot apply (not glibc).
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, mmap_threshold_mb * 2**20) == 1
    return bool(ok and mallopt(_M_TRIM_THRESHOLD, trim_threshold_mb * 2**20) == 1)
