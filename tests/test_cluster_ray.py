"""cluster/ on a local Ray instance (``ray.init(num_cpus=2)``, no network), one session for the module:
a sweep over two small models and two probes gives the in-process sweep's results, a task killed
mid-extraction is retried with half the batch budget, resume skips finished work, and extraction in
shards by actors is byte-identical to a local extraction. Skipped only when ray (the optional extra,
requirements-cluster.txt) is not installed; `make test` installs it."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray", reason="ray is an optional extra: pip install -r requirements-cluster.txt")

from cluster.datasets import dataset_request  # noqa: E402
from cluster.executors import InProcess, OnRay  # noqa: E402
from cluster.extract import extract_sharded  # noqa: E402
from cluster.plan import plan_sweep  # noqa: E402
from cluster.ray_session import connect  # noqa: E402
from cluster.sweep import run_sweep  # noqa: E402
from cluster.tasks import FAULT_ENV, TaskEnv  # noqa: E402
from features.extract import get_features  # noqa: E402
from models.registry import load_embedder  # noqa: E402
from models.tiny import make_tiny_checkpoint  # noqa: E402

OPTIONS = {"wsd": {"semcor_limit": 100}}
QUIET = {"say": lambda message: None}


@pytest.fixture(scope="module")
def session():
    connect("local", num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-models")
    return [
        str(make_tiny_checkpoint(kind, root / f"tiny-{kind}", layers=2, hidden=32, heads=2))
        for kind in ("bert", "gpt2")
    ]


@pytest.fixture(scope="module")
def sweeps(session, models, tmp_path_factory):
    """The same sweep in-process and on Ray (separate feature caches; on Ray tiny-gpt2's POS task is
    killed after its first batch)."""
    root = tmp_path_factory.mktemp("sweeps")
    tasks = plan_sweep(models, ["pos", "wsd"], [0], 20, OPTIONS)
    local = run_sweep(tasks, InProcess(), TaskEnv(feature_root=str(root / "feat-local")), root / "local", **QUIET)
    env = TaskEnv(feature_root=str(root / "feat-ray"), threads=1, fault="tiny-gpt2/pos")
    on_ray = run_sweep(tasks, OnRay(session, retries=2, fixed_size=True), env, root / "ray", **QUIET)
    return tasks, env, root, local, on_ray


def rows_by_task(results_dir):
    out = {}
    for path in results_dir.glob("*.json"):
        data = json.loads(path.read_text())
        out[(data["model"], data["probe"], data["extra"]["sweep"]["part"])] = (data["rows"], data["extra"]["sweep"])
    return out


@pytest.mark.slow
def test_a_sweep_on_ray_gives_the_in_process_results(sweeps):
    tasks, _env, root, local, on_ray = sweeps
    assert local.ok and on_ray.ok and local.run.done == on_ray.run.done == len(tasks) == 6
    a, b = rows_by_task(root / "local"), rows_by_task(root / "ray")
    assert sorted(a) == sorted(b) and len(a) == 7  # the WSD baselines task saves two results
    assert {k: rows for k, (rows, _) in a.items()} == {k: rows for k, (rows, _) in b.items()}
    assert {s["node"] for _rows, s in b.values()} == {ray.get_runtime_context().get_node_id()}
    assert {(m, p) for m, p, _ in a} >= {
        ("tiny-bert", "pos"),
        ("tiny-bert", "wsd"),
        ("tiny-gpt2", "pos"),
        ("tiny-gpt2", "wsd"),
    }


@pytest.mark.slow
def test_a_task_killed_mid_extraction_is_retried_with_half_the_batch_budget(sweeps):
    *_, root, _local, on_ray = sweeps
    assert on_ray.run.retried == 1 and not on_ray.run.failures
    sweep = rows_by_task(root / "ray")[("tiny-gpt2", "pos", 0)][1]
    assert sweep["attempt"] == 1 and sweep["budget_scale"] == 0.5
    assert sweep["max_tokens"] == load_embedder(sweeps[0][2].model).max_tokens // 2
    others = [s for (m, p, _), (_, s) in rows_by_task(root / "ray").items() if (m, p) != ("tiny-gpt2", "pos")]
    assert all(s["attempt"] == 0 for s in others)
    # the killed writer left no temporaries the retry did not clean up
    assert not list((root / "feat-ray").rglob("*.tmp"))


@pytest.mark.slow
def test_resume_skips_finished_tasks_and_reruns_a_missing_one(session, sweeps):
    tasks, env, root, *_ = sweeps
    again = run_sweep(tasks, OnRay(session, fixed_size=True), env, root / "ray", **QUIET)
    assert again.skipped == 6 and again.run.done == 0 and len(list((root / "ray").glob("*.json"))) == 7
    victim = next(p for p in (root / "ray").glob("tiny-bert__pos__*.json"))
    victim.unlink()
    partial = run_sweep(tasks, OnRay(session, fixed_size=True), env, root / "ray", **QUIET)
    assert partial.skipped == 5 and partial.run.done == 1
    assert len(list((root / "ray").glob("tiny-bert__pos__*.json"))) == 1


@pytest.mark.slow
def test_sharded_extraction_by_actors_is_byte_identical_even_when_an_actor_dies(session, models, tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1")  # the first shard's actor dies once; Ray restarts it
    sentences, keep, key = dataset_request("conll2000-train", 240)  # 3 chunks of 80 sentences
    feats, stats = extract_sharded(
        models[0],
        key,
        sentences,
        keep,
        num_shards=3,
        ray=session,
        workers=2,
        root=tmp_path / "sharded",
        threads=1,
        chunk_size=80,
        keep_shards=True,
    )
    assert stats["shards"] == 3 and stats["workers"] == stats["model_loads"] == 2
    local = get_features(
        load_embedder(models[0]), key, sentences, root=tmp_path / "local", chunk_size=80, show_progress=False
    )
    for name in ["meta.json"] + [f"layer_{j}.npy" for j in range(3)]:
        assert (feats.directory / name).read_bytes() == (local.directory / name).read_bytes(), name
    (folder,) = (tmp_path / "sharded" / "shards" / stats["fingerprint"] / key).iterdir()
    assert (folder / "fault").read_text() == "killed"  # written just before the actor's os._exit
    assert len(list(folder.glob("shard_*.npz"))) == len(list(folder.glob("shard_*.json"))) == 3


def test_the_committed_cluster_config_is_valid_for_ray_up():
    import re
    from pathlib import Path

    import jsonschema
    import yaml

    from corpora.paths import REPO_ROOT
    from models.references import parse_reference, split_references

    config = yaml.safe_load((REPO_ROOT / "cluster" / "ray-cluster.yaml").read_text())
    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    workers = config["available_node_types"]["gpu_worker"]
    assert config["head_node_type"] == "head" and workers["max_workers"] <= config["max_workers"]
    assert any("requirements-cluster.txt" in c for c in config["setup_commands"])
    # what --cache-url s3:// needs is installed; ray:// reaches the head's Ray Client port; the hub cache
    # sits on the NVMe; every model the recipe names is a valid reference (issue 29)
    assert "s3fs" in (REPO_ROOT / "requirements-cluster.txt").read_text()
    assert any("--ray-client-server-port=10001" in c for c in config["head_start_ray_commands"])
    assert all("HF_HOME=/opt/dlami/nvme" in c for c in config["worker_start_ray_commands"][1:])
    text = (REPO_ROOT / "cluster" / "ray-cluster.yaml").read_text()
    # the sweep sizes GPU requests for the GPUs the YAML starts (an 80 GB default would under-ask on an L40S)
    (gb,) = set(re.findall(r"L40S \((\d+) GB\)", text))
    assert re.findall(r"--gpu-memory (\d+)", text) == [gb]
    named = re.findall(r"--models (\S+)", text)
    assert named and all(parse_reference(m) for ref in named for m in split_references(ref))
