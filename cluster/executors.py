"""Running a sweep's tasks: one after another in this process, or on Ray, one actor per model, with retries.

    InProcess().run(tasks, env, command, on_done, say)
    OnRay(ray, retries=2).run(tasks, env, command, on_done, say)

Both call ``cluster.tasks.run_task``; ``on_done(task, payload)`` sees every finished task (the sweep
saves its results there, on the driver, as they arrive).

**One actor per model on Ray.** All the tasks of a model (its probes × seeds) go to one Ray actor
(``ModelWorker``), which runs them one after another in one process: the model is loaded once, its
features are extracted by the first task into that node's local cache and read from there by the
others, and when the model's last task has settled the actor is killed, so no worker keeps the model
(host or GPU memory) after its tasks; with ``--cache-url`` the actor first deletes the model's local
feature entries that the store holds intact (``cluster.storage.evict_local``), so a node's disk does
not fill up over a sweep of many checkpoints. Baselines (no model) are plain Ray tasks. Parallelism is across
models: each actor holds its own resources.

Resources on Ray: each actor asks for its model's CPUs, memory and GPUs (``cluster.resources``: GPUs
from the model and ``--device``, not from what the cluster has at start, so an autoscaler starts GPU
nodes for them); one that asks for no GPU runs its tasks with ``device="cpu"`` (Ray does not hide the
GPUs of a node from a process that reserved none). On a fixed-size cluster (``--ray local``) without
GPUs nothing asks for one, and a request larger than the cluster is capped to it.

Failure handling on Ray: nothing is retried by Ray itself (``max_retries=0``, ``max_restarts=0``).
When a process dies (``WorkerCrashedError``: killed, out of memory; ``OutOfMemoryError`` from Ray's
memory monitor; ``NodeDiedError``: preempted node; ``RayActorError``: the model's actor died) the task
it was running is submitted again with half the batch budget, up to ``retries`` times, to a new actor
that also takes the model's tasks still queued (at their own budget). A task that runs out of GPU
memory (torch's, cuBLAS's or cuDNN's: ``models.errors.is_out_of_memory``) is retried the same way on its
actor. Any other exception inside a task (bad data, a model that fails to load) is not
retried: it would fail the same way; it is reported and the sweep goes on with the others.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cluster.plan import SweepTask
from cluster.resources import Resources, estimate
from cluster.storage import Store, evict_local
from cluster.tasks import TaskEnv, run_task
from models.errors import is_out_of_memory

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


class ModelWorker:
    """One model's Ray actor: runs that model's tasks one after another in its process (one model load)."""

    def __init__(self) -> None:
        self.fingerprints: set[str] = set()

    def run(self, task: SweepTask, env: TaskEnv, attempt: int, budget_scale: float, command: str) -> dict:
        payload = run_task(task, env, attempt, budget_scale, command)
        self.fingerprints.update(r["fingerprint"] for r in payload["results"] if r.get("fingerprint"))
        return payload

    def evict(self, env: TaskEnv) -> list[str]:
        """Delete this node's entries of the model that the store of ``env.remote`` holds intact."""
        if env.remote is None:
            return []
        store, root = Store(env.remote), Path(env.feature_root) if env.feature_root else None
        return [k for fp in sorted(self.fingerprints) for k in evict_local(store, fp, root)]


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
    """One actor per model (baselines: plain tasks), each with its model's resources; a task whose process
    died or that ran out of GPU memory is retried with half the budget."""

    def __init__(
        self,
        ray,
        retries: int = 2,
        gpu: bool | None = None,
        cpus_per_task: float = 1,
        fixed_size: bool = False,
        gpu_memory: int = 80 * 2**30,
    ) -> None:
        """gpu: None decides per model (``cluster.resources.wants_gpu``), False asks for none, True for all.
        fixed_size: the cluster never grows (``--ray local``): a request larger than it is capped to
        it rather than left waiting for a node that never comes (an OOM is then retried as any other),
        and without GPUs nothing asks for one. gpu_memory: bytes of one GPU of the cluster (``--gpu-memory``)."""
        self.ray, self.retries, self.cpus, self.gpu_memory = ray, retries, cpus_per_task, gpu_memory
        self.total = ray.cluster_resources()
        self.gpu = False if fixed_size and not self.total.get("GPU") and gpu is None else gpu
        self.fixed_size = fixed_size
        self.needs: dict[str | None, Resources] = {}  # model -> its resources (estimated once)
        self.name = f"Ray ({int(self.total.get('CPU', 0))} CPUs" + (", GPUs" if self.total.get("GPU") else "") + ")"

    def resources(self, model: str | None, device: str | None) -> Resources:
        if model not in self.needs:
            self.needs[model] = estimate(model, self.gpu, self.cpus, gpu_memory=self.gpu_memory, device=device)
        return self.needs[model]

    def _options(self, model: str | None, env: TaskEnv) -> tuple[dict, TaskEnv]:
        """Ray options of the model's actor (or a baselines task) and the env its tasks run with."""
        options = self.resources(model, env.device).ray_options()
        if self.fixed_size:
            options = {
                k: min(v, self.total.get({"num_cpus": "CPU", "num_gpus": "GPU"}.get(k, k), 0))
                for k, v in options.items()
            }
            options["memory"] = int(options["memory"])
        if not options["num_gpus"]:  # a GPU it did not reserve is not its to use
            env = dataclasses.replace(env, device="cpu")
        return options, env

    def _release(self, actor, model: str, env: TaskEnv, say: Say) -> None:
        """A model's actor after its last task: its local entries evicted (with a store), then killed."""
        if env.remote is not None:
            try:
                evicted = self.ray.get(actor.evict.remote(env))
                say(f"   {model}: {len(evicted)} local feature entries evicted (the store holds them)")
            except Exception as exc:  # noqa: BLE001 - a dead actor or a store error: the entries stay, nothing lost
                say(f"   {model}: local feature entries kept ({type(exc).__name__})")
        self.ray.kill(actor)

    def run(self, tasks: list[SweepTask], env: TaskEnv, command: str, on_done: OnDone, say: Say) -> RunReport:
        ray, report, rex = self.ray, RunReport(), self.ray.exceptions
        died = (rex.WorkerCrashedError, rex.OutOfMemoryError, rex.NodeDiedError, rex.RayActorError)
        plain, actor_class = ray.remote(run_task), ray.remote(ModelWorker)
        attempts = {t.task_id: 0 for t in tasks}
        left = Counter(t.model for t in tasks if t.model is not None)  # a model's tasks not settled yet
        actors: dict[str, object] = {}  # model -> its live actor
        running: dict = {}  # ref -> (task, the actor running it or None, submission number)
        submitted = iter(range(1 << 62))

        def submit(task: SweepTask) -> None:
            options, task_env = self._options(task.model, env)
            args = (task, task_env, attempts[task.task_id], 0.5 ** attempts[task.task_id], command)
            if task.model is None:
                ref = plain.options(max_retries=0, name=task.label, **options).remote(*args)
                running[ref] = (task, None, next(submitted))
                return
            if task.model not in actors:
                actors[task.model] = actor_class.options(max_restarts=0, **options).remote()
            actor = actors[task.model]
            running[actor.run.options(name=task.label).remote(*args)] = (task, actor, next(submitted))

        def settle(task: SweepTask, error: str | None, payload: dict | None = None) -> None:
            if error is None:
                on_done(task, payload or {})
                report.done += 1
            else:
                report.failures.append(Failure(task, error, attempts[task.task_id] + 1))
                say(f"   FAILED {task.label}: {error.splitlines()[0] if error else ''}")
            if task.model is not None:
                left[task.model] -= 1
                if not left[task.model] and task.model in actors:  # its last task: free the node's disk, the process
                    self._release(actors.pop(task.model), task.model, env, say)

        def retry(task: SweepTask, why: str) -> None:
            """Once more with half the budget, or a failure when its retries are spent."""
            if attempts[task.task_id] >= self.retries:
                settle(task, f"{why}, {attempts[task.task_id] + 1} times")
                return
            attempts[task.task_id] += 1
            report.retried += 1
            say(
                f"   {task.label}: {why}; retry {attempts[task.task_id]} of {self.retries} "
                f"with {0.5 ** attempts[task.task_id]:g} of the batch budget"
            )
            submit(task)

        def outcome(ref) -> tuple[dict | None, BaseException | None]:
            try:
                return ray.get(ref), None
            except (*died, rex.RayTaskError) as exc:
                return None, exc

        def failed(task: SweepTask, exc: BaseException) -> None:
            """A task's error when its actor lives on: a dead worker or an OOM is retried, the rest reported."""
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            if isinstance(exc, died):
                retry(task, f"worker died ({type(exc).__name__})")
            elif is_out_of_memory(cause):
                retry(task, f"out of memory ({type(cause).__name__})")
            else:
                settle(task, f"{type(cause).__name__}: {cause}")

        for task in tasks:
            submit(task)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            task, actor, number = running.pop(ready[0])
            payload, exc = outcome(ready[0])
            if exc is None:
                settle(task, None, payload)
            elif not (isinstance(exc, died) and actor is not None):
                failed(task, exc)
            else:  # the model's actor is gone, and the calls queued on it with it
                if actors.get(task.model) is actor:
                    del actors[task.model]
                queued = sorted((n, r) for r, (_t, a, n) in running.items() if a is actor)
                results = [(number, task, (payload, exc))]
                results += [(n, running[r][0], outcome(r)) for n, r in queued]
                for _n, r in queued:
                    running.pop(r)
                blamed = False  # the actor ran its calls in order: the first that did not finish killed it
                for _n, t, (p, e) in sorted(results, key=lambda item: item[0]):
                    if e is None:
                        settle(t, None, p)
                    elif not isinstance(e, died) or not blamed:
                        blamed = blamed or isinstance(e, died)
                        failed(t, e)
                    else:
                        submit(t)  # never started: same budget, on the model's new actor
        return report
