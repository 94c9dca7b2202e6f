"""Running a sweep's tasks: one after another in this process, or as Ray tasks with retries.

    InProcess().run(tasks, env, command, on_done, say)
    OnRay(ray, retries=2).run(tasks, env, command, on_done, say)

Both call ``cluster.tasks.run_task``; ``on_done(task, payload)`` sees every finished task (the sweep
saves its results there, on the driver, as they arrive). A task waits for the task named in its
``after`` (its model's first task); on Ray it then runs on the node where that one ran (soft node
affinity: elsewhere if that node is gone), so a model's features are extracted once per sweep and
read from that node's local cache by all its probes and seeds.

Failure handling on Ray: a task is submitted with ``max_retries=0`` and its own resources
(``cluster.resources``). When its worker dies (``WorkerCrashedError``: killed, out of memory,
``OutOfMemoryError`` from Ray's memory monitor, ``NodeDiedError``: preempted node) it is submitted
again with half the batch budget, up to ``retries`` times. A Python exception inside a task (bad data, a
model that fails to load) is not retried: it would fail the same way; it is reported and the sweep
goes on with the other tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cluster.plan import SweepTask
from cluster.resources import estimate
from cluster.tasks import TaskEnv, run_task

OnDone = Callable[[SweepTask, dict], None]
Say = Callable[[str], None]


@dataclass
class Failure:
    task: SweepTask
    error: str
    attempts: int


@dataclass
class RunReport:
    done: int = 0
    retried: int = 0
    failures: list[Failure] = field(default_factory=list)


def _ready(task: SweepTask, settled: set[str], pending_ids: set[str]) -> bool:
    return task.after is None or task.after in settled or task.after not in pending_ids


class InProcess:
    """One task after another in this process (no Ray needed)."""

    name = "in-process"

    def run(self, tasks: list[SweepTask], env: TaskEnv, command: str, on_done: OnDone, say: Say) -> RunReport:
        report = RunReport()
        for task in tasks:
            try:
                payload = run_task(task, env, 0, 1.0, command)
            except Exception as exc:  # noqa: BLE001 - one failed task does not stop the sweep
                report.failures.append(Failure(task, f"{type(exc).__name__}: {exc}", 1))
                say(f"   FAILED {task.label}: {type(exc).__name__}: {exc}")
                continue
            on_done(task, payload)
            report.done += 1
        return report


class OnRay:
    """Ray tasks, each with its model's resources; a dead worker's task is retried with half the budget."""

    def __init__(
        self, ray, retries: int = 2, gpu: bool | None = None, cpus_per_task: float = 1, fixed_size: bool = False
    ) -> None:
        """fixed_size: the cluster never grows (``--ray local``): a request larger than it is capped to
        it rather than left waiting for a node that never comes (an OOM is then retried as any other)."""
        self.ray, self.retries, self.cpus = ray, retries, cpus_per_task
        self.total = ray.cluster_resources()
        self.gpu = bool(self.total.get("GPU")) if gpu is None else gpu
        self.fixed_size = fixed_size
        self.node_of: dict[str, str] = {}  # model -> Ray node id of its first finished task
        self.name = f"Ray ({int(self.total.get('CPU', 0))} CPUs" + (", GPUs" if self.gpu else "") + ")"

    def _submit(self, remote, task: SweepTask, env: TaskEnv, attempt: int, command: str):
        options = estimate(task.model, self.gpu, self.cpus).ray_options()
        if self.fixed_size:
            options = {
                k: min(v, self.total.get({"num_cpus": "CPU", "num_gpus": "GPU"}.get(k, k), 0))
                for k, v in options.items()
            }
            options["memory"] = int(options["memory"])
        if task.model in self.node_of:  # where the model's first task ran: its features are cached there
            options["scheduling_strategy"] = self.ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
                self.node_of[task.model], soft=True
            )
        return remote.options(max_retries=0, name=task.label, **options).remote(
            task, env, attempt, 0.5**attempt, command
        )

    def run(self, tasks: list[SweepTask], env: TaskEnv, command: str, on_done: OnDone, say: Say) -> RunReport:
        ray, report = self.ray, RunReport()
        rex = ray.exceptions
        remote = ray.remote(run_task)
        died = (rex.WorkerCrashedError, rex.OutOfMemoryError, rex.NodeDiedError)
        waiting = list(tasks)
        pending_ids = {t.task_id for t in tasks}
        settled: set[str] = set()
        running: dict = {}
        while waiting or running:
            for task in [t for t in waiting if _ready(t, settled, pending_ids)]:
                waiting.remove(task)
                running[self._submit(remote, task, env, 0, command)] = (task, 0, time.perf_counter())
            ready, _ = ray.wait(list(running), num_returns=1)
            task, attempt, _t0 = running.pop(ready[0])
            try:
                payload = ray.get(ready[0])
            except died as exc:
                if attempt < self.retries:
                    report.retried += 1
                    say(
                        f"   {task.label}: worker died ({type(exc).__name__}); retry {attempt + 1} of "
                        f"{self.retries} with {0.5 ** (attempt + 1):g} of the batch budget"
                    )
                    running[self._submit(remote, task, env, attempt + 1, command)] = (
                        task,
                        attempt + 1,
                        time.perf_counter(),
                    )
                    continue
                report.failures.append(
                    Failure(task, f"worker died {attempt + 1} times ({type(exc).__name__})", attempt + 1)
                )
                say(f"   FAILED {task.label}: worker died {attempt + 1} times")
            except rex.RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                report.failures.append(Failure(task, f"{type(cause).__name__}: {cause}", attempt + 1))
                first_line = str(cause).splitlines()[0] if str(cause) else ""
                say(f"   FAILED {task.label}: {type(cause).__name__}: {first_line}")
            else:
                if task.model is not None and payload.get("node"):
                    self.node_of.setdefault(task.model, payload["node"])
                on_done(task, payload)
                report.done += 1
            settled.add(task.task_id)
        return report
