"""What a sweep task asks the Ray scheduler for, estimated from the model's files (no weights loaded).

    estimate("minilm", device="cpu")   ->  Resources(cpus=1, gpus=0, memory=…)
    estimate("hf:EleutherAI/pythia-12b", device=None)   ->  Resources(gpus=1, …, note=None)

- **GPUs come from the model and ``--device``**, never from what the cluster has when the sweep starts
  (an autoscaling cluster starts its GPU nodes only for tasks that ask for GPUs): ``--device cpu``
  asks for none, ``--device cuda`` for enough; by default a model that runs on torch (every family
  but static vectors) asks for them. ``wants_gpu`` decides; the caller may force none (``gpu=False``:
  a fixed-size cluster without GPUs). A task that asks for none runs with ``device="cpu"``
  (``cluster.executors``), so it never uses a GPU it did not reserve.
- **Host memory** = a probe process's base (Python, torch, the probe's data: ``BASE_BYTES``) + one forward
  pass's hidden states (the embedder's default token budget × width × layers × 4 bytes, twice) + on a CPU the
  weights (parameters × 4 bytes, fp32, as the transformer loader chooses; on a GPU they live in its memory).
  Parameters come from the config / weight-file headers (``models.listing.describe``); without them,
  the files' size on disk.
- **Hub checkpoints not downloaded yet** are sized from their ``config.json`` alone (``hf_hub_download``
  of that one file, a few KB): layers, width, feed-forward width, vocabulary. Offline, the size is a
  guess (13 × 1024, no weights) and ``Resources.note`` says so.
- **GPUs**: enough GPUs of ``gpu_memory`` bytes for the weights plus 30 % (a model larger than one GPU
  is spread with ``device="auto"``).
- Ray's ``memory`` is a scheduling reservation, not a limit: a task that outgrows it dies (OOM) and
  is retried with a smaller batch budget (``cluster.executors``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cluster.identity import hub_config
from models.options import CPU_TOKENS, GPU_TOKENS

GiB = 1 << 30
BASE_BYTES = 3 * GiB // 2


@dataclass(frozen=True)
class Resources:
    cpus: float = 1
    gpus: float = 0
    memory: int = BASE_BYTES
    note: str | None = None  # how the size was found when not from the model's files (a guess, the hub's config)

    def ray_options(self) -> dict:
        return {"num_cpus": self.cpus, "num_gpus": self.gpus, "memory": self.memory}


def wants_gpu(family_contextual: bool, device: str | None) -> bool:
    """Whether a task asks for GPUs: ``--device`` decides when given ("auto", spread over the GPUs, asks for them
    as a torch model does), else whether the model runs on torch."""
    if device is not None and device != "auto":
        return device.startswith("cuda")
    return family_contextual


def config_shape(config: dict) -> tuple[int | None, int | None, int | None]:
    """(layers incl. layer 0, width, parameters) of a transformer ``config.json`` (GPT-NeoX, GPT-2, BERT, Llama)."""
    n = config.get("num_hidden_layers", config.get("n_layer"))
    h = config.get("hidden_size", config.get("n_embd"))
    if n is None or h is None:
        return None, None, None
    n, h = int(n), int(h)
    inner = int(config.get("intermediate_size") or config.get("n_inner") or 4 * h)
    vocab = int(config.get("vocab_size") or 0)
    tied = config.get("tie_word_embeddings", True)
    params = n * (4 * h * h + 2 * h * inner) + vocab * h * (1 if tied else 2)
    return n + 1, h, params


def estimate(
    model: str | None, gpu: bool | None = None, cpus: float = 1, gpu_memory: int = 80 * GiB, device: str | None = None
) -> Resources:
    """Resources of one task on ``model`` (None: a probe's baselines, no model).

    gpu: True/False forces it; None decides from the model and ``device`` (``wants_gpu``).
    """
    if model is None:
        return Resources(cpus=cpus, gpus=0, memory=BASE_BYTES)
    from models import listing, registry  # lazy: torch (models.listing); python -m probes and a plan stay light

    spec = registry.get_spec(model)
    gpu = wants_gpu(spec.contextual, device) if gpu is None else gpu
    row = listing.describe(spec, device="cuda" if gpu else "cpu")
    layers, dim, params, note = row.layers, row.dim, row.params, None
    assert spec.source is not None
    if params is None and not row.size_bytes and spec.source.kind == "hub":
        config, note = hub_config(spec.source.location, spec.source.subdir or None)
        if config is not None:
            layers, dim, params = config_shape(config)
    layers, dim = layers or 13, dim or 1024
    weights = params * (2 if gpu else 4) if params else (row.size_bytes or 0)
    hidden = (GPU_TOKENS if gpu else CPU_TOKENS) * dim * layers * 4 * 2
    memory = BASE_BYTES + (hidden if gpu else weights + hidden)  # on a GPU the weights live in its memory
    gpus = max(1, math.ceil(weights * 1.3 / gpu_memory)) if gpu else 0
    return Resources(cpus=cpus, gpus=gpus, memory=int(memory), note=note)
