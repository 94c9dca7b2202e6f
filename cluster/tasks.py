"""The body of one sweep task, the same in the sweep's own process and in a Ray worker.

    payload = run_task(task, env, attempt=0, budget_scale=1.0, command="python -m probes sweep …")
    payload["results"]   # ProbeResult JSON, each with extra["sweep"] = {task, part, parts, attempt, …}

Design notes:

- **Same as a probe command.** A task is ``probes.run.run_probe`` (its baselines, or the model's run
  with ``--layers all``), as ``python -m probes <probe>``, so a sweep's numbers are the single runs' numbers.
- **Model loads.** ``models.registry.load_embedder`` keeps loaded models per process; all the tasks
  of a model run in one process (its Ray actor, ``cluster.executors``), so they load it once. The task
  carries the model's spec as the driver resolved it (``SweepTask.spec``): a worker whose registry
  (``embprobe.toml``, not shipped to a remote cluster) lacks the name or reads it differently registers
  the driver's spec; a model whose content key (``SweepTask.content``) changed since this process
  loaded it is loaded again. A process holds one model at a time: a task of another model releases
  the ones it held (host and GPU memory); on Ray the model's actor is killed after its last task.
- **Out of GPU memory** (torch's, cuBLAS's or cuDNN's: ``models.errors.is_out_of_memory``) frees torch's cached
  blocks and is raised: the executor retries the task with half the budget.
- **Batch budget.** A retried task (its worker died: out of memory, node lost) runs with
  ``budget_scale`` < 1: the transformer's token budget per forward pass (``max_tokens``) scaled down
  for this task and restored after it. The scale is recorded in the result.
- **Shared cache tier.** With ``env.remote`` (an fsspec URL, ``cluster.storage``) the model's entries
  there are pulled before the run and the ones it wrote pushed after it; an entry that fails its
  checks is extracted here instead, and the push re-publishes it (the store is repaired).
- **Fault hook (tests only).** ``env.fault`` (from ``$EMBPROBE_SWEEP_FAULT``, passed only to Ray
  workers) kills the worker with ``os._exit`` after the first block of rows (``embed_rows``) of the first attempt of
  every task whose label contains it: a task dying mid-extraction, as an OOM kill or preemption would.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cluster.identity import data_content
from cluster.plan import SweepTask
from cluster.storage import Store, local_entries, pull_entry, push_entry, remote_keys
from corpora.errors import LabError
from corpora.paths import data_dir_or_none
from features import FeatureCacheError
from models.allocator import reuse_freed_memory
from models.errors import is_out_of_memory
from probes.errors import ProbeInputError
from probes.registry import get_probe
from probes.run import load_model, run_probe

log = logging.getLogger(__name__)

FAULT_ENV = "EMBPROBE_SWEEP_FAULT"
_LOADED_CONTENT: dict[str, str] = {}  # model -> the content key it was last loaded for in this process
FAULT_EXIT = 77


@dataclass(frozen=True)
class TaskEnv:
    """What every task of a sweep shares.

    feature_root: local feature-cache root (None: the project cache, ``$EMBPROBE_CACHE``).
    remote:       fsspec URL of the shared cache tier (None: the local cache is the shared one).
    device:       torch device (None: cuda when present, else cpu).
    threads:      torch CPU threads per task (None: torch's default).
    fault:        test-only fault hook (module notes).
    """

    feature_root: str | None = None
    remote: str | None = None
    device: str | None = None
    threads: int | None = None
    fault: str | None = None


@contextmanager
def scaled_budget(emb, scale: float) -> Iterator[int | None]:
    """The embedder's token budget times ``scale`` for the duration (None: it has no budget)."""
    before = getattr(emb, "max_tokens", None)
    if before is None or scale >= 1:
        yield before
        return
    emb.max_tokens = max(1, int(before * scale))
    try:
        yield emb.max_tokens
    finally:
        emb.max_tokens = before


@contextmanager
def fault_hook(emb, armed: bool) -> Iterator[None]:
    if not armed:
        yield
        return
    real = emb.embed_rows  # the feature cache's path

    def dying(*args, **kwargs):
        for block in real(*args, **kwargs):
            yield block  # the first block reaches the cache, then the worker dies mid-extraction
            os._exit(FAULT_EXIT)

    emb.embed_rows = dying
    try:
        yield
    finally:
        del emb.embed_rows


def _sync(emb, env: TaskEnv, root: Path | None, direction: str) -> None:
    if env.remote is None:
        return
    store, fp = Store(env.remote), emb.fingerprint()
    if direction == "pull":
        for key in remote_keys(store, fp):
            try:
                pull_entry(store, fp, key, root)
            except FeatureCacheError as exc:  # extracted here instead; the push after the task repairs it
                log.warning("%s; extracting it here, the push after this task re-publishes it.", exc)
    else:
        for entry in local_entries(fp, root):
            try:
                push_entry(store, entry)
            except FeatureCacheError as exc:  # publishing saves other nodes time; the task's result stands
                log.warning("%s; the task's result is kept.", exc)


def prepare_model(task: SweepTask) -> list[str]:
    """Make ``task.model`` load what the driver meant in this process: its spec as the driver resolved it
    (registered when this process reads the name otherwise), loaded afresh when its content key changed
    since this process loaded it (a vectors file rewritten between two sweeps of one process). Every
    other model this process holds is released (returned): one model per worker at a time."""
    from models import registry  # lazy: torch (the model zoo); the sweep's driver imports this module

    name = str(task.model)
    released = [m for m in registry.loaded_models() if m != name and registry.unload_embedder(m)]
    if task.spec is not None:
        try:
            current = registry.get_spec(name)
        except LabError:
            current = None
        if current != task.spec:
            registry.register(task.spec)
            registry.unload_embedder(name)
    if task.content is not None and _LOADED_CONTENT.get(name) != task.content:
        registry.unload_embedder(name)
        _LOADED_CONTENT[name] = task.content
    return released


def check_data(task: SweepTask, inputs) -> None:
    """A ProbeInputError when the data this process reads is not the data the driver keyed the task on: a node
    started with another ``EMBPROBE_DATA``, or with a stale or partial copy, would file its numbers under the
    driver's data key, and every later sweep would take them as done."""
    if task.data is None:
        return
    here = data_content(task.options_dict(), inputs)
    if here != task.data:
        raise ProbeInputError(
            f"{task.label}: this node's data ({data_dir_or_none() or 'no data folder'}) is not the driver's "
            f"(content key {here} here, {task.data} on the driver; the key covers every file under the data folder, "
            "one this probe does not read included); give every node the same EMBPROBE_DATA (docs/scaling.md)."
        )


def run_task(task: SweepTask, env: TaskEnv, attempt: int = 0, budget_scale: float = 1.0, command: str = "") -> dict:
    """Run one task; returns {"results": [ProbeResult JSON], "skipped": reason | None, "seconds", "host", "pid"}."""
    import torch  # lazy: torch (the plan and the driver need none of it)

    t0 = time.perf_counter()
    if env.threads:
        torch.set_num_threads(env.threads)
    reuse_freed_memory()
    spec = get_probe(task.probe)
    check_data(task, spec.inputs)
    root = Path(env.feature_root) if env.feature_root else None
    request = dict(
        limit=task.limit,
        options=task.options_dict(),
        seed=task.seed,
        device=env.device,
        show_progress=False,
        feature_root=root,
        command=command,
    )
    budget = None
    if task.model is None:
        results = run_probe(spec, None, **request).baselines
    else:
        if prepare_model(task):  # another model was released: give its memory back now, GPU memory too
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        emb = load_model(task.model, env.device)
        try:
            spec.check_model(emb, task.options_dict())
        except ProbeInputError as exc:
            return {
                "results": [],
                "skipped": str(exc),
                "seconds": time.perf_counter() - t0,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "node": _ray_node(),
            }
        armed = bool(env.fault) and attempt == 0 and env.fault in task.label
        _sync(emb, env, root, "pull")
        try:
            with scaled_budget(emb, budget_scale) as budget, fault_hook(emb, armed):
                results = [run_probe(spec, emb, baselines=False, **request).result]
        except RuntimeError as exc:
            if is_out_of_memory(exc):
                torch.cuda.empty_cache()  # the retry (cluster.executors) may run in this process
            raise
        _sync(emb, env, root, "push")
    out = []
    for k, res in enumerate(results):
        res.extra = {
            **res.extra,
            "sweep": {
                "task": task.task_id,
                "part": k,
                "parts": len(results),
                "attempt": attempt,
                "budget_scale": budget_scale,
                "max_tokens": budget,
                "host": socket.gethostname(),
                "node": _ray_node(),
            },
        }
        out.append(res.to_json())
    return {
        "results": out,
        "skipped": None,
        "seconds": time.perf_counter() - t0,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "node": _ray_node(),
    }


def _ray_node() -> str | None:
    """The Ray node this runs on (None outside Ray), recorded in each result."""
    try:
        import ray  # lazy: ray is optional
    except ImportError:
        return None
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
