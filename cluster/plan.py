"""A sweep's plan: which tasks, in which order, and which of them a results folder already holds.

    tasks = plan_sweep(["minilm", "gpt2-small"], ["wsd", "pos"], seeds=[0, 1], limit=None, options={...})

One task = one probe's run on one model with one seed (its datasets are the probe's own: WSD reads
SemCor→ALL, POS CoNLL-2000), or one probe's baselines (no model: once per probe, with the first seed).
A task's ``task_id`` hashes everything that decides its result (kind, probe, model, seed, slice,
options); the sweep stores it in each result's ``extra["sweep"]["task"]``, so ``finished`` finds the
tasks a folder already holds, whoever wrote it, and a resumed sweep skips them.

A model's features are extracted once and shared by all its probes and seeds: every task of a model
waits for the model's first task (``after``), and on Ray runs on the node that ran it
(``cluster.executors``), where the features its datasets need are then in the local cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepTask:
    """One unit of work. ``model`` is None for a probe's baselines."""

    probe: str
    model: str | None
    seed: int
    limit: int | None = None
    options: tuple[tuple[str, Any], ...] = ()
    after: str | None = field(default=None, compare=False)  # task_id this one waits for (its model's first)

    @property
    def kind(self) -> str:
        return "baselines" if self.model is None else "probe"

    @property
    def task_id(self) -> str:
        blob = json.dumps(
            [self.kind, self.probe, self.model, self.seed, self.limit, list(self.options)], sort_keys=True, default=str
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        return f"{self.model or 'baselines'}/{self.probe} seed {self.seed}"

    def options_dict(self) -> dict[str, Any]:
        return dict(self.options)


def plan_sweep(
    models: Sequence[str],
    probes: Sequence[str],
    seeds: Sequence[int],
    limit: int | None,
    options: dict[str, dict[str, Any]],
) -> list[SweepTask]:
    """Baselines of every probe, then every (model, probe, seed), model by model.

    options: probe name -> its runner keywords (``ProbeSpec.options_from``).
    """
    if not models or not probes or not seeds:
        raise ValueError("A sweep needs at least one model, one probe and one seed.")
    tasks = [SweepTask(p, None, seeds[0], limit, tuple(sorted(options.get(p, {}).items()))) for p in probes]
    for model in models:
        first = None
        for p in probes:
            opts = tuple(sorted(options.get(p, {}).items()))
            for s in seeds:
                task = SweepTask(p, model, s, limit, opts, after=first.task_id if first else None)
                first = first or task
                tasks.append(task)
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("The sweep names the same model, probe or seed twice.")
    return tasks


def finished(results_dir: Path) -> dict[str, Path]:
    """task_id -> a result file, for every task whose results are all in ``results_dir`` (a task with
    several results, e.g. two baselines, records ``parts``; unreadable files are skipped)."""
    seen: dict[str, set[int]] = {}
    parts: dict[str, int] = {}
    done: dict[str, Path] = {}
    for path in sorted(Path(results_dir).glob("*.json")) if Path(results_dir).is_dir() else []:
        try:
            extra = json.loads(path.read_text(encoding="utf-8")).get("extra") or {}
        except (OSError, ValueError, AttributeError):
            log.warning("Skipping unreadable result file %s.", path)
            continue
        sweep = (extra.get("sweep") or {}) if isinstance(extra, dict) else {}
        task = sweep.get("task")
        if isinstance(task, str):
            seen.setdefault(task, set()).add(int(sweep.get("part", 0)))
            parts[task] = int(sweep.get("parts", 1))
            done.setdefault(task, path)
    return {t: p for t, p in done.items() if len(seen[t]) >= parts[t]}
