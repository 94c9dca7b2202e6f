"""Peak-memory measurement for the benchmarks (Linux RSS high-water mark, plus CUDA when present).

``tracemalloc`` only sees Python allocations, not torch's tensors, so the benchmarks read the
kernel's resident-set high-water mark instead. Writing ``5`` to ``/proc/self/clear_refs`` resets
``VmHWM`` to the current RSS (Linux ≥ 4.0), which lets one process measure the peak of each
block separately:

    with PeakRSS() as m:
        emb.embed(sentences)
    m.peak_mb, m.delta_mb      # RSS high-water mark during the block, and its rise over the start

Where the reset is not allowed, ``peak_mb`` falls back to the process's peak since start
(``resource.getrusage``) and ``resettable`` is False. RSS includes file-backed pages, so blocks
that write memory-mapped files (the feature cache) count the mapped pages they touch.
"""

from __future__ import annotations

import platform
import resource
from pathlib import Path

import torch

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_mb(field: str) -> float | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB -> MB
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """Current resident set size in MB (peak since start where /proc is unavailable)."""
    now = _status_mb("VmRSS")
    return now if now is not None else process_peak_mb()


def process_peak_mb() -> float:
    """Peak RSS of this process since it started, in MB (``ru_maxrss`` is in kB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_hwm() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


class PeakRSS:
    """Context manager: RSS high-water mark of the block (MB), and peak CUDA memory when on a GPU."""

    def __init__(self) -> None:
        self.start_mb = self.peak_mb = self.delta_mb = 0.0
        self.resettable = False
        self.cuda_peak_mb: float | None = None

    def __enter__(self) -> PeakRSS:
        self.start_mb = rss_mb()
        self.resettable = _reset_hwm()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc) -> None:
        hwm = _status_mb("VmHWM") if self.resettable else None
        self.peak_mb = hwm if hwm is not None else process_peak_mb()
        self.delta_mb = max(0.0, self.peak_mb - self.start_mb)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            self.cuda_peak_mb = torch.cuda.max_memory_allocated() / 2**20

    def as_dict(self, prefix: str) -> dict[str, float | None]:
        out = {f"{prefix}_peak_rss_mb": round(self.peak_mb, 1), f"{prefix}_rss_rise_mb": round(self.delta_mb, 1)}
        if self.cuda_peak_mb is not None:
            out[f"{prefix}_cuda_peak_mb"] = round(self.cuda_peak_mb, 1)
        return out


def cpu_name() -> str:
    """The CPU's model name for a benchmark's machine line (Linux ``/proc/cpuinfo``, else ``platform``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
