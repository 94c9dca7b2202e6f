"""A sweep on a multi-node Ray cluster simulated on this machine (``ray.cluster_utils.Cluster``): a head
without GPUs, one node declaring ``num_gpus=1`` and one CPU node. Transformer models' actors must land on
the GPU node (Ray schedules them there only because they ask for a GPU), a static-vectors model's must
not ask for one; a model registered only in the driver's ``embprobe.toml`` (the nodes were started
without it) still runs; no actor outlives its model's tasks; the rows equal the in-process sweep's.
Skipped without ray (requirements-cluster.txt)."""

from __future__ import annotations

import json
import os

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
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("multinode-models")
    transformers = [
        str(make_tiny_checkpoint(kind, root / f"tiny-{kind}", layers=2, hidden=32, heads=2))
        for kind in ("bert", "gpt2")
    ]
    words = sorted({w for split in ("train", "test") for s in conll_slice(split, LIMIT) for w in s.words})
    vectors = np.random.default_rng(0).normal(size=(len(words), 8))
    lines = [f"{len(words)} 8"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
    (root / "vecs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    add_user_model("my-vecs", str(root / "vecs.txt"), file=root / "embprobe.toml")
    return transformers, root / "embprobe.toml"


def results(directory):
    out = {}
    for path in directory.glob("*.json"):
        data = json.loads(path.read_text())
        sweep = data["extra"]["sweep"]
        out[(data["model"], data["probe"], sweep["task"], sweep["part"])] = data
    return out


@pytest.mark.slow
def test_a_sweep_on_a_simulated_gpu_cluster(cluster, models, tmp_path, monkeypatch):
    sim, gpu_node = cluster
    transformers, registry_file = models
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry_file))  # the driver's registry only
    names = [*transformers, "my-vecs"]
    specs = {m: get_spec(m) for m in names}
    contents = {m: model_content(s)[0] for m, s in specs.items()}
    tasks = plan_sweep(names, ["pos"], [0, 1], LIMIT, {}, contents, specs)
    local = run_sweep(tasks, InProcess(), TaskEnv(str(tmp_path / "feat-local"), device="cpu"), tmp_path / "a", **QUIET)
    env = TaskEnv(str(tmp_path / "feat-ray"), threads=1)
    on_ray = run_sweep(tasks, OnRay(ray, retries=1), env, tmp_path / "b", **QUIET)
    assert local.ok and on_ray.ok and on_ray.run.done == len(tasks) == 7
    a, b = results(tmp_path / "a"), results(tmp_path / "b")
    assert {k: r["rows"] for k, r in a.items()} == {k: r["rows"] for k, r in b.items()}
    nodes = {k: r["extra"]["sweep"]["node"] for k, r in b.items()}
    assert all(nodes[k] == gpu_node for k in nodes if k[0] in ("tiny-bert", "tiny-gpt2"))  # they asked for a GPU
    states = [a["State"] for a in ray._private.state.actors().values()]
    assert len(states) == 3 and set(states) == {"DEAD"}  # one actor per model, none left holding one


@pytest.mark.slow
def test_a_gpu_node_lost_mid_sweep_is_replaced_and_the_rows_are_the_same(cluster, models, tmp_path):
    """The GPU node is removed (a preempted spot node) as soon as tiny-bert's first result arrives; its
    queued tasks go to a new actor on the node that replaces it, then a resumed sweep has nothing to do."""
    sim, gpu_node = cluster
    transformers, _ = models
    tasks = plan_sweep(transformers, ["pos"], [0, 1, 2], LIMIT, {})
    local = run_sweep(tasks, InProcess(), TaskEnv(str(tmp_path / "feat-local"), device="cpu"), tmp_path / "a", **QUIET)
    replaced = []

    def preempt(res) -> None:
        if not replaced and res.model == "tiny-bert":
            (node,) = [n for n in sim.list_all_nodes() if n.node_id == res.extra["sweep"]["node"]]
            sim.remove_node(node)
            replaced.append(sim.add_node(num_cpus=1, num_gpus=1).node_id)  # what the autoscaler would start

    env = TaskEnv(str(tmp_path / "feat-ray"), threads=1)
    on_ray = run_sweep(tasks, OnRay(ray, retries=2), env, tmp_path / "b", report=preempt, **QUIET)
    assert replaced and local.ok and on_ray.ok and on_ray.run.done == len(tasks) == 7
    assert on_ray.run.retried >= 1  # the task running on the lost node, at half the budget
    a, b = results(tmp_path / "a"), results(tmp_path / "b")
    assert {k: r["rows"] for k, r in a.items()} == {k: r["rows"] for k, r in b.items()}
    assert {r["extra"]["sweep"]["node"] for k, r in b.items() if k[0] != "majority-tag"} <= {gpu_node, *replaced}
    again = run_sweep(tasks, OnRay(ray), env, tmp_path / "b", **QUIET)
    assert again.skipped == len(tasks) and again.run.done == 0
