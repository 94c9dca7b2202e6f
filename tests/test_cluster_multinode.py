"""A sweep on a multi-node Ray cluster simulated on this machine (``ray.cluster_utils.Cluster``): a head
without GPUs, one node declaring ``num_gpus=1`` and one CPU node.

The shape of issue 29's "done when": 6 tiny checkpoints (``models.tiny``: BERT, GPT-2, RoBERTa, Llama,
ELECTRA, OPT families) × 2 probes (POS, and ``tag`` on the CoNLL-2000 chunks of the same sentences,
BIO-scored) × 2 seeds, plus a static-vectors model registered only in the driver's ``embprobe.toml`` (the
nodes were started without it). Asserted from Ray's own records (its task events and actor table, read
from the GCS: ``ray.util.state`` needs the dashboard, which the minimal ``ray`` package lacks): every
task of a transformer ran on a GPU-declared node, in an actor that reserved a GPU (Ray put it there only
because it asked), the vectors model's actor reserved none; one actor per model, every one dead and its
process gone after its tasks (no worker keeps a model); the rows equal the in-process sweep's. Then the
GPU node is removed mid-sweep (a preempted spot node): the sweep finishes on its replacement with the
same rows, and a resumed sweep has nothing left to do. Skipped without ray (requirements-cluster.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="ray is an optional extra: pip install -r requirements-cluster.txt")

from ray.cluster_utils import Cluster  # noqa: E402

from cluster.executors import InProcess, OnRay  # noqa: E402
from cluster.identity import model_content  # noqa: E402
from cluster.plan import plan_sweep  # noqa: E402
from cluster.sweep import run_sweep  # noqa: E402
from cluster.tasks import TaskEnv  # noqa: E402
from corpora.paths import REPO_ROOT  # noqa: E402
from models.registry import get_spec  # noqa: E402
from models.tiny import make_tiny_checkpoint  # noqa: E402
from models.user_registry import add_user_model  # noqa: E402
from probes.tasks.conll import conll_slice  # noqa: E402

QUIET = {"say": lambda message: None}
LIMIT = 12
KINDS = ("bert", "gpt2", "roberta", "llama", "electra", "opt")
TRANSFORMERS = {f"tiny-{kind}" for kind in KINDS}
PROBES = ["pos", "tag"]
SEEDS = [0, 1]
NORMAL_TASK, ACTOR_CREATION_TASK, ACTOR_TASK = 0, 1, 2  # ray's TaskType


@pytest.fixture(scope="module")
def cluster():
    paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    before = dict(os.environ)
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))  # the nodes' workers import the repo
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.pop("EMBPROBE_MODELS", None)  # the nodes never see the driver's model registry
    sim = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    gpu_node = sim.add_node(num_cpus=1, num_gpus=1)
    sim.add_node(num_cpus=1)
    ray.init(address=sim.address, log_to_driver=False, configure_logging=False)
    yield sim, gpu_node.node_id
    ray.shutdown()
    sim.shutdown()
    os.environ.clear()
    os.environ.update(before)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The sweep's tasks (6 checkpoints + the driver-only vectors model × pos, tag × 2 seeds, and each
    probe's baselines), the driver's registry file, and the in-process sweep's results (the reference)."""
    root = tmp_path_factory.mktemp("multinode-models")
    models = [make_tiny_checkpoint(kind, root / f"tiny-{kind}", layers=2, hidden=32, heads=2) for kind in KINDS]
    files = {}
    for split in ("train", "test"):  # the CoNLL-2000 chunks of POS's sentences, as a column file: word POS chunk
        lines = [
            "".join(f"{w} {p} {c}\n" for w, p, c in zip(s.words, s.pos, s.chunks)) for s in conll_slice(split, LIMIT)
        ]
        files[split] = root / f"chunks-{split}.txt"
        files[split].write_text("\n".join(lines) + "\n", encoding="utf-8")
    words = sorted({w for split in ("train", "test") for s in conll_slice(split, LIMIT) for w in s.words})
    vectors = np.random.default_rng(0).normal(size=(len(words), 8))
    lines = [f"{len(words)} 8"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
    (root / "vecs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    registry_file = root / "embprobe.toml"
    add_user_model("my-vecs", str(root / "vecs.txt"), file=registry_file)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBPROBE_MODELS", str(registry_file))  # the driver's registry only
        names = [*map(str, models), "my-vecs"]
        specs = {m: get_spec(m) for m in names}
        contents = {m: model_content(s)[0] for m, s in specs.items()}
        tag = {"train": str(files["train"]), "test": str(files["test"]), "column": "-1", "scheme": "bio"}
        tasks = plan_sweep(names, PROBES, SEEDS, LIMIT, {"tag": tag}, contents, specs)
        env = TaskEnv(str(root / "feat-local"), device="cpu")
        local = run_sweep(tasks, InProcess(), env, root / "local", **QUIET)
    assert local.ok and local.run.done == len(tasks) == 2 + 7 * 2 * 2
    return tasks, registry_file, rows(root / "local")


def results(directory):
    out = {}
    for path in [*directory.glob("*.json"), *directory.glob("seed-runs/*.json")]:  # each seed's run: seed-runs/
        data = json.loads(path.read_text())
        if "sweep_seeds" in data["extra"]:  # a model's seeds merged (cluster.sweep.merge_seed_runs): no task's own
            continue
        sweep = data["extra"]["sweep"]
        out[(data["model"], data["probe"], sweep["task"], sweep["part"])] = data
    return out


def rows(directory) -> dict:
    return {k: r["rows"] for k, r in results(directory).items()}


def task_records() -> dict[tuple[str, int], dict]:
    """Ray's records of every task so far (GCS task events, merged per attempt): name, type, the
    resources it reserved, its actor and the node it ran on."""
    out: dict[tuple[str, int], dict] = {}
    for event in ray._private.state.state._get_all_task_events():
        rec = out.setdefault((event.task_id.hex(), event.attempt_number), {"node": None})
        if event.HasField("task_info"):
            info = event.task_info
            rec.update(
                name=info.name, type=info.type, resources=dict(info.required_resources), actor=info.actor_id.hex()
            )
        if event.HasField("state_updates") and event.state_updates.node_id:
            rec["node"] = event.state_updates.node_id.hex()
    return out


def records_of(labels: set[str], before: set, timeout_s: float = 60) -> dict[str, list[dict]]:
    """The records, new since ``before``, of the calls named ``labels`` (each with its node) and of the
    actors that ran them ("actor:ID" -> its creation task); Ray reports task events every second or so."""
    deadline = time.monotonic() + timeout_s
    while True:
        new = [r for k, r in task_records().items() if k not in before and "type" in r]
        calls = [r for r in new if r["name"] in labels]
        if ({r["name"] for r in calls if r["node"]} >= labels) or time.monotonic() > deadline:
            break
        time.sleep(1)
    out: dict[str, list[dict]] = {}
    for r in calls:
        out.setdefault(r["name"], []).append(r)
    for r in new:
        if r["type"] == ACTOR_CREATION_TASK:
            out["actor:" + r["actor"]] = [r]
    return out


def gpu_nodes() -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n.get("Resources", {}).get("GPU")}


def assert_gpu_tasks_on_gpu_nodes(records: dict[str, list[dict]], tasks, gpus: set[str]) -> set[str]:
    """Every attempt of a transformer's task that started ran on a GPU-declared node in an actor that
    reserved a GPU; the vectors model's and the baselines' reserved none. Returns the actors that ran them."""
    actors = set()
    for task in tasks:
        started = [rec for rec in records[task.label] if rec["node"]]  # not: calls queued on an actor that died
        assert started, f"{task.label}: Ray recorded no node"
        for rec in started:
            if task.model is None:
                assert rec["type"] == NORMAL_TASK and not rec["resources"].get("GPU"), rec
                continue
            assert rec["type"] == ACTOR_TASK, rec
            (created,) = records["actor:" + rec["actor"]]
            actors.add(rec["actor"])
            if Path(task.model).name in TRANSFORMERS:
                assert created["resources"].get("GPU") == 1 and rec["node"] in gpus, (task.label, created, rec)
            else:
                assert not created["resources"].get("GPU"), (task.label, created)
    return actors


def assert_released(actors: set[str], timeout_s: float = 30) -> None:
    """Each actor is dead in Ray's actor table and its worker process has exited (so no model is held)."""
    deadline = time.monotonic() + timeout_s
    while True:
        table = ray._private.state.actors()
        states = {a: table[a]["State"] for a in actors}
        alive = [table[a]["Pid"] for a in actors if table[a]["Pid"] and _running(table[a]["Pid"])]
        if (set(states.values()) == {"DEAD"} and not alive) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(states.values()) == {"DEAD"}, states
    assert not alive, f"actor processes still running: {alive}"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_a_sweep_on_a_simulated_gpu_cluster(cluster, sweep, tmp_path, monkeypatch):
    sim, gpu_node = cluster
    tasks, registry_file, local = sweep
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry_file))  # the driver's registry only
    before = set(task_records())
    env = TaskEnv(str(tmp_path / "feat-ray"), threads=1)
    on_ray = run_sweep(tasks, OnRay(ray, retries=1), env, tmp_path / "b", **QUIET)
    assert on_ray.ok and on_ray.run.done == len(tasks) and on_ray.run.retried == 0
    assert rows(tmp_path / "b") == local
    records = records_of({t.label for t in tasks}, before)
    assert all(len(records[t.label]) == 1 for t in tasks)  # each ran once
    actors = assert_gpu_tasks_on_gpu_nodes(records, tasks, gpu_nodes())
    assert len(actors) == 7 == len({t.model for t in tasks if t.model})  # one actor per model
    assert_released(actors)
    nodes = {k: r["extra"]["sweep"]["node"] for k, r in results(tmp_path / "b").items()}
    assert {nodes[k] for k in nodes if k[0] in TRANSFORMERS} == {gpu_node}  # the result's own note agrees


@pytest.mark.slow
def test_a_gpu_node_lost_mid_sweep_is_replaced_and_the_rows_are_the_same(cluster, sweep, tmp_path, monkeypatch):
    """The GPU node is removed (a preempted spot node) as soon as tiny-bert's first result arrives; the
    task it was running is retried at half the budget and its queued tasks go to a new actor on the node
    that replaces it; the rows equal the in-process sweep's; a resumed sweep has nothing to do."""
    sim, gpu_node = cluster
    tasks, registry_file, local = sweep
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry_file))
    replaced = []

    def preempt(res) -> None:
        if not replaced and res.model == "tiny-bert":
            (node,) = [n for n in sim.list_all_nodes() if n.node_id == res.extra["sweep"]["node"]]
            sim.remove_node(node)
            replaced.append(sim.add_node(num_cpus=1, num_gpus=1).node_id)  # what the autoscaler would start

    before = set(task_records())
    env = TaskEnv(str(tmp_path / "feat-ray"), threads=1)
    on_ray = run_sweep(tasks, OnRay(ray, retries=2), env, tmp_path / "b", report=preempt, **QUIET)
    assert replaced and on_ray.ok and on_ray.run.done == len(tasks)
    assert on_ray.run.retried >= 1  # the task running on the lost node, at half the budget
    assert rows(tmp_path / "b") == local
    records = records_of({t.label for t in tasks}, before)
    assert any(
        len(records[t.label]) > 1 for t in tasks if t.model and Path(t.model).name == "tiny-bert"
    )  # ran again, elsewhere
    actors = assert_gpu_tasks_on_gpu_nodes(records, tasks, {gpu_node, *replaced})
    assert len(actors) >= 8  # tiny-bert's second actor on the new node
    assert_released(actors)
    again = run_sweep(tasks, OnRay(ray), env, tmp_path / "b", **QUIET)
    assert again.skipped == len(tasks) and again.run.done == 0


@pytest.mark.slow
def test_ray_local_starts_its_own_instance_beside_a_running_cluster(cluster):
    """``--ray local`` where another Ray instance runs (the simulated cluster, named by ``RAY_ADDRESS`` as
    on a cluster's node): a new single-machine instance of its own, not a join (``ray.init()``'s default),
    which refused ``num_cpus`` (and would have run the sweep on someone else's cluster)."""
    sim, _ = cluster
    code = (
        "from cluster.ray_session import connect; ray = connect('local', num_cpus=1); "
        "print(ray.get_runtime_context().gcs_address, len(ray.nodes()), ray.cluster_resources()['CPU'])"
    )
    env = {**os.environ, "RAY_ADDRESS": sim.address}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    address, nodes, cpus = done.stdout.split()[-3:]
    assert address != sim.address and (nodes, cpus) == ("1", "1.0")
