"""What a sweep task asks the Ray scheduler for, estimated from the model's files (no weights loaded).

    estimate("minilm", gpu=False)  ->  Resources(cpus=1, gpus=0, memory=…)

- **Host memory** = a probe process's base (Python, torch, the probe's data: ``BASE_BYTES``) + the
  weights (parameters × bytes per parameter: fp16 on a GPU, fp32 on a CPU, as the transformer
  loader chooses) + one forward pass's hidden states (token budget × width × layers × 4 bytes, twice).
  Parameters come from the config / weight-file headers (``models.listing.describe``); without them,
  the files' size on disk.
- **GPUs**: none on a CPU cluster; else enough GPUs of ``gpu_memory`` bytes for the weights plus 30 %
  (a model larger than one GPU is spread with ``device="auto"``).
- Ray's ``memory`` is a scheduling reservation, not a limit: a task that outgrows it dies (OOM) and
  is retried with a smaller batch budget (``cluster.executors``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GiB = 1 << 30
BASE_BYTES = 3 * GiB // 2
CPU_TOKENS, GPU_TOKENS = 2048, 8192  # the transformer embedder's default budgets (models/transformer/embedder.py)


@dataclass(frozen=True)
class Resources:
    cpus: float = 1
    gpus: float = 0
    memory: int = BASE_BYTES

    def ray_options(self) -> dict:
        return {"num_cpus": self.cpus, "num_gpus": self.gpus, "memory": self.memory}


def estimate(model: str | None, gpu: bool, cpus: float = 1, gpu_memory: int = 80 * GiB) -> Resources:
    """Resources of one task on ``model`` (None: a probe's baselines, no model)."""
    if model is None:
        return Resources(cpus=cpus, gpus=0, memory=BASE_BYTES)
    from models import listing, registry  # lazy: torch (models.listing); python -m probes and a plan stay light

    row = listing.describe(registry.get_spec(model), device="cuda" if gpu else "cpu")
    layers, dim = row.layers or 13, row.dim or 1024
    weights = row.params * (2 if gpu else 4) if row.params else (row.size_bytes or 0)
    hidden = (GPU_TOKENS if gpu else CPU_TOKENS) * dim * layers * 4 * 2
    memory = BASE_BYTES + (hidden if gpu else weights + hidden)  # on a GPU the weights live in its memory
    gpus = max(1, math.ceil(weights * 1.3 / gpu_memory)) if gpu else 0
    return Resources(cpus=cpus, gpus=gpus, memory=int(memory))
