"""A sweep's plan: which tasks, in which order, and which of them a results folder already holds.

    tasks = plan_sweep(["minilm", "gpt-small"], ["wsd", "pos"], seeds=[0, 1], limit=None, options={...})

One task = one probe's run on one model with one seed (its datasets are the probe's own: WSD reads
SemCor→ALL, POS CoNLL-2000), or one probe's baselines (no model: once per probe, with the first seed).
A task's ``task_id`` hashes everything that decides its result (kind, probe, model, the model's
content key, seed, slice, options, the data's content key); the sweep stores it in each result's
``extra["sweep"]["task"]``, so ``finished`` finds the tasks a folder already holds, whoever wrote it, and a
resumed sweep skips them. The content key (``cluster.identity.model_content``: the digest of the model's files, or the
resolved hub commit) makes a changed vectors file, a retrained asset or a moved ``@main`` a new task:
its old results are not reused.
A task also carries its model's resolved ``ModelSpec`` (``spec``, not part of the id), so a worker
whose directory lacks the user's ``embprobe.toml`` loads the model the driver meant.

A model's features are extracted once and shared by all its probes and seeds: its tasks run one after
another in one process (in-process, or its model's Ray actor: ``cluster.executors``), the first
extracting into the local cache, the others reading it there.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probes.results import saved_order

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepTask:
    """One unit of work. ``model`` is None for a probe's baselines."""

    probe: str
    model: str | None
    seed: int
    limit: int | None = None
    options: tuple[tuple[str, Any], ...] = ()
    content: str | None = None  # the model's content key (None: not known, or a baselines task)
    data: str | None = None  # the content key of the probe's data (``cluster.identity.data_content``)
    spec: Any = field(default=None, compare=False)  # the model's resolved ModelSpec, shipped to the worker

    @property
    def kind(self) -> str:
        return "baselines" if self.model is None else "probe"

    @property
    def task_id(self) -> str:
        fields = [self.kind, self.probe, self.model, self.seed, self.limit, list(self.options)]
        keys = [self.content] if self.content else []
        keys += [f"data:{self.data}"] if self.data else []
        blob = json.dumps(fields + keys, sort_keys=True, default=str)
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
    contents: dict[str, str] | None = None,
    specs: dict[str, Any] | None = None,
    data: dict[str, str] | None = None,
) -> list[SweepTask]:
    """Baselines of every probe, then every (model, probe, seed), model by model.

    options: probe name -> its runner keywords (``ProbeSpec.options_from``); contents / specs: model ->
    its content key / resolved ModelSpec (``cluster.identity``), carried by each of its tasks; data: probe
    name -> the content key of its data (``cluster.identity.data_content``).
    """
    contents, specs, data = contents or {}, specs or {}, data or {}
    if not models or not probes or not seeds:
        raise ValueError("A sweep needs at least one model, one probe and one seed.")
    tasks = [
        SweepTask(p, None, seeds[0], limit, tuple(sorted(options.get(p, {}).items())), data=data.get(p)) for p in probes
    ]
    for model in models:
        for p in probes:
            opts = tuple(sorted(options.get(p, {}).items()))
            content, spec = contents.get(model), specs.get(model)
            tasks += [SweepTask(p, model, s, limit, opts, content, data.get(p), spec) for s in seeds]
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("The sweep names the same model, probe or seed twice.")
    return tasks


#: The subfolder of a results folder that holds each seed's run of a (model, probe) swept with several seeds: they
#: reach the tables only as their merge (``cluster.sweep.merge_seed_runs``), so an interrupted sweep's single seed
#: never stands in for a finished run of several.
SEED_RUNS = "seed-runs"


def finished(results_dir: Path) -> dict[str, Path]:
    """task_id -> its newest result file (by the result's timestamp: a rerun's, after ``--no-resume``), for every
    task whose results are all in ``results_dir`` or its ``SEED_RUNS`` (a task with several results, e.g. two
    baselines, records ``parts``; unreadable files are skipped)."""
    seen: dict[str, set[int]] = {}
    parts: dict[str, int] = {}
    done: dict[str, tuple[tuple, Path]] = {}
    folder = Path(results_dir)
    for path in sorted([*folder.glob("*.json"), *(folder / SEED_RUNS).glob("*.json")]) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            extra = data.get("extra") or {}
        except (OSError, ValueError, AttributeError):
            log.warning("Skipping unreadable result file %s.", path)
            continue
        sweep = (extra.get("sweep") or {}) if isinstance(extra, dict) else {}
        task = sweep.get("task")
        if isinstance(task, str):
            seen.setdefault(task, set()).add(int(sweep.get("part", 0)))
            parts[task] = int(sweep.get("parts", 1))
            order = saved_order(data, path)  # as the tables order runs
            if task not in done or order > done[task][0]:
                done[task] = (order, path)
    return {t: p for t, (_, p) in done.items() if len(seen[t]) >= parts[t]}
