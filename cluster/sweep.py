"""A probe sweep: models × probes × seeds, resumable, in-process or on Ray; results as usual.

    python -m probes sweep --models minilm,gpt-small --probes wsd,pos --seeds 0,1 --ray local

Results are the usual ``ProbeResult`` files in ``--results`` (``reproduce --tables-only`` and the app
read them as any others), saved by this process as tasks finish, each stamped with its task
(``extra["sweep"]``), so running the same command again skips every finished task (``--no-resume``
runs them all again). Every request is checked before any work: probes, models (their files, not
their weights), options, the results folder, Ray's availability. A (model, probe) run with several seeds
gets one more result once all its seeds are done: their merge (``merge_seed_runs``), as ``--seeds N`` makes
it, so the tables show the mean over the seeds; its seeds' own runs go to ``--results``/``seed-runs``
(``cluster.plan.SEED_RUNS``), which the tables do not read, so an interrupted sweep's first seed never replaces a
finished run of several seeds there (as ``probes pos --seeds N`` saves only the merge).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from cluster.executors import RunReport
from cluster.plan import SEED_RUNS, SweepTask, finished
from cluster.tasks import TaskEnv
from probes.errors import ProbeInputError, ResultsNotSavedError
from probes.progress import ProgressFn
from probes.results import ProbeResult, now_iso, save_result
from probes.stats.seeds import merge_seeds

SWEEP_LOCK = ".sweep.lock"  # held by the one sweep writing to a results folder


@dataclass
class SweepReport:
    planned: int
    skipped: int  # already in the results folder
    run: RunReport
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.run.failures


def run_sweep(
    tasks: list[SweepTask],
    executor,
    env: TaskEnv,
    results_dir: Path,
    command: str = "",
    resume: bool = True,
    say: Callable[[str], None] = print,
    report: Callable[[ProbeResult], None] = lambda res: None,
    progress: ProgressFn | None = None,
) -> SweepReport:
    """Run the tasks not yet in ``results_dir`` (all with ``resume=False``) and save their results there;
    ``progress`` is told "N done, N failed, N remaining" as each task ends (a failure: the executor's
    "FAILED" line)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(results_dir / SWEEP_LOCK))
    try:  # a second sweep into the folder would read the same "finished" and run every task again
        lock.acquire(timeout=0)
    except Timeout:
        raise ProbeInputError(
            f"another sweep is writing to {results_dir} now; wait for it to end (running this one again then skips "
            "what it ran) or give another --results."
        ) from None
    try:
        return _run_sweep(tasks, executor, env, results_dir, command, resume, say, report, progress)
    finally:
        lock.release()


def _run_sweep(tasks, executor, env, results_dir, command, resume, say, report, progress) -> SweepReport:
    t0 = time.perf_counter()
    done = finished(results_dir) if resume else {}
    todo = [t for t in tasks if t.task_id not in done]
    say(
        f"sweep: {len(tasks)} tasks, {len(tasks) - len(todo)} already in {results_dir} (same model content), "
        f"{len(todo)} to run ({executor.name})"
    )
    if todo and (unmatched := len(set(done) - {t.task_id for t in tasks})):
        say(  # "0 already in" beside a folder of a sweep's results would read as if none had run
            f"  {unmatched} finished sweep task(s) in {results_dir} match none of these (another model content, "
            "data, option or seed, or a sweep of an earlier version, which named its tasks otherwise): kept, not reused"
        )
    count, failed = [0], [0]
    seeds_of = Counter((t.model, t.probe) for t in tasks if t.model is not None)  # > 1: the seeds are merged

    def tell(last: str) -> None:
        if progress is not None:
            ended = count[0] + failed[0]
            rest = len(todo) - ended
            progress(ended / max(len(todo), 1), f"{count[0]} done, {failed[0]} failed, {rest} remaining ({last})")

    def say_and_count(line: str) -> None:
        say(line)
        if line.lstrip().startswith("FAILED "):  # the executors' line for a task that will not be retried
            failed[0] += 1
            tell(line.strip())

    def on_done(task: SweepTask, payload: dict) -> None:
        count[0] += 1
        for data in payload["results"]:
            res = ProbeResult.from_json(data)
            report(res)
            merged_later = seeds_of[(task.model, task.probe)] > 1 and "seed" in res.params  # 1-NN WSD records none
            try:
                save_result(res, results_dir / SEED_RUNS if merged_later else results_dir)
            except OSError as exc:  # a full disk: one line (the numbers were printed above); --resume goes on
                raise ResultsNotSavedError(results_dir, exc) from None
        note = f"skipped: {payload['skipped']}" if payload.get("skipped") else f"{payload['seconds']:.1f} s"
        say(f"[{count[0]}/{len(todo)}] {task.label}: done ({note}, {payload.get('host', '?')})")
        tell(f"last: {task.label}")

    tell("starting")
    run = executor.run(todo, env, command, on_done, say_and_count)
    for path in merge_seed_runs(tasks, results_dir):
        say(f"seeds merged: {path.name}")
    return SweepReport(len(tasks), len(tasks) - len(todo), run, time.perf_counter() - t0)


def merge_seed_runs(tasks: list[SweepTask], results_dir: Path) -> list[Path]:
    """For every (model, probe) the sweep ran with several seeds, all of them done: the seeds merged into one result
    as ``--seeds N`` merges them (``probes.stats.seeds.merge_seeds``: mean, sd, seed count, a seed × cluster
    interval), saved as the newest (reused when nothing changed), so the tables show the mean over the seeds rather
    than the newest seed. A probe that records no seed (1-NN WSD) does not depend on one: nothing to merge."""
    done, groups = finished(results_dir), {}
    for task in tasks:
        if task.model is not None:
            groups.setdefault((task.model, task.probe), []).append(task)
    merged = []
    for group in groups.values():
        if len(group) < 2 or any(t.task_id not in done for t in group):
            continue
        ordered = sorted(group, key=lambda t: t.seed)
        runs = [ProbeResult.from_json(json.loads(done[t.task_id].read_text())) for t in ordered]
        if all("seed" in r.params for r in runs):
            result = merge_seeds(runs)
            # newer than every seed's; no task's own result (``finished`` must not take it for the first seed's)
            extra = {k: v for k, v in result.extra.items() if k != "sweep"} | {
                "sweep_seeds": [t.task_id for t in ordered]
            }
            result = dataclasses.replace(result, timestamp=now_iso(), extra=extra)
            merged.append(save_result(result, results_dir, reuse=True))
    return merged
