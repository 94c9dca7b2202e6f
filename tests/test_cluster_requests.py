"""What the sweep asks a Ray cluster for, with a stand-in for the ``ray`` module (no Ray process started):
GPUs from the model and ``--device`` (not from the cluster at start), out-of-GPU-memory retried with
half the budget, each task carrying its model's resolved spec, hub checkpoints sized from their
config.json, model content keys (hub commits), and Ray's log prefixes without colour codes.
The real scheduler: tests/test_cluster_ray.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import models.registry
from cluster import ray_session
from cluster.executors import OnRay
from cluster.identity import model_content
from cluster.plan import plan_sweep
from cluster.resources import GiB, estimate
from cluster.tasks import TaskEnv, run_task
from corpora.paths import REPO_ROOT
from models.tiny import make_tiny_checkpoint
from models.user_registry import add_user_model

ray = pytest.importorskip("ray", reason="ray is an optional extra: pip install -r requirements-cluster.txt")
rex = ray.exceptions


class TaskFailed(rex.RayTaskError):
    """What ``ray.get`` raises for an exception inside a task (``cause``: the exception)."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause


class FakeRay:
    """Records every submission (the options of its actor or task, its arguments, its actor); ``outcome(task,
    attempt)`` is what ``get`` returns or raises (an actor-died error kills the actor: its queued calls fail
    too). A cluster with ``resources`` (an autoscaling one has no GPU before it is asked for one)."""

    exceptions = rex

    def __init__(self, resources: dict, outcome=None) -> None:
        self.resources, self.submitted, self.actors, self.killed, self.dead = resources, [], [], [], set()
        self.log: list[tuple[str, int]] = []  # ("evict" | "kill", actor number) in order
        self.outcome = outcome or (lambda task, attempt: {"results": [], "skipped": None, "seconds": 0.0})

    def cluster_resources(self) -> dict:
        return dict(self.resources)

    def remote(self, fn):
        fake = self

        def caller(options, actor=None):
            return types.SimpleNamespace(remote=lambda *args: fake._submit(options, args, actor))

        if not isinstance(fn, type):  # a task
            return types.SimpleNamespace(options=lambda **options: caller(options))

        def create(options):  # an actor of the class fn: its method run
            actor = types.SimpleNamespace(number=len(fake.actors))
            actor.run = types.SimpleNamespace(options=lambda **kw: caller(options, actor))
            actor.evict = types.SimpleNamespace(remote=lambda env: fake.log.append(("evict", actor.number)) or "evict")
            fake.actors.append(actor)
            return actor

        return types.SimpleNamespace(options=lambda **options: types.SimpleNamespace(remote=lambda: create(options)))

    def kill(self, actor) -> None:
        self.killed.append(actor.number)
        self.log.append(("kill", actor.number))

    def _submit(self, options, args, actor) -> int:
        self.submitted.append((options, args, actor))
        return len(self.submitted) - 1

    def wait(self, refs, num_returns=1):
        return [refs[0]], refs[1:]

    def get(self, ref):
        if ref == "evict":
            return ["some-key"]
        _options, (task, _env, attempt, _scale, _command), actor = self.submitted[ref]
        result = (
            rex.ActorDiedError() if actor is not None and actor.number in self.dead else self.outcome(task, attempt)
        )
        if isinstance(result, rex.RayActorError) and actor is not None:
            self.dead.add(actor.number)
        if isinstance(result, BaseException):
            raise result
        return {**result, "node": "node-1", "host": "h"}

    def requests(self) -> dict:
        """task label -> (num_gpus, the device its env says) of its first submission."""
        out = {}
        for options, (task, env, *_rest), _actor in self.submitted:
            out.setdefault(task.label, (options["num_gpus"], env.device))
        return out


QUIET = {"say": lambda m: None}


def run(fake: FakeRay, tasks, env: TaskEnv | None = None, **kwargs):
    done = []
    report = OnRay(fake, **kwargs).run(tasks, env or TaskEnv(), "", lambda t, p: done.append(t.label), **QUIET)
    return report, done


def test_gpus_come_from_the_model_and_the_device_not_from_the_cluster_at_start():
    tasks = plan_sweep(["minilm", "glove-6b-50d"], ["pos"], [0], 10, {})
    fake = FakeRay({"CPU": 4})  # an autoscaling cluster whose GPU workers start on demand
    report, _ = run(fake, tasks)
    assert report.done == 3 and fake.requests() == {
        "baselines/pos seed 0": (0, "cpu"),  # no model: no GPU, and none used unreserved
        "minilm/pos seed 0": (1, None),  # a transformer asks for its GPU: the autoscaler starts one
        "glove-6b-50d/pos seed 0": (0, "cpu"),  # static vectors need none
    }
    fake = FakeRay({"CPU": 4, "GPU": 8})
    run(fake, tasks, TaskEnv(device="cpu"))
    assert {gpus for gpus, _ in fake.requests().values()} == {0}  # --device cpu: no GPU anywhere
    fake = FakeRay({"CPU": 2})
    run(fake, tasks, fixed_size=True)  # --ray local on a machine without GPUs: none asked for
    assert fake.requests()["minilm/pos seed 0"] == (0, "cpu")
    fake = FakeRay({"CPU": 4, "GPU": 8})
    run(fake, tasks, TaskEnv(device="auto"))  # spread over the GPUs: it asked for none and was put on the CPU
    assert fake.requests()["minilm/pos seed 0"] == (1, "auto") and fake.requests()["glove-6b-50d/pos seed 0"][0] == 0


def test_out_of_gpu_memory_is_retried_with_half_the_budget_other_errors_are_not():
    tasks = [t for t in plan_sweep(["minilm"], ["pos", "wsd"], [0], 10, {}) if t.model]

    def outcome(task, attempt):
        if attempt == 0 and task.probe == "pos":
            return TaskFailed(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
        if attempt == 0 and task.probe == "wsd":
            return TaskFailed(RuntimeError("CUDA error: out of memory"))
        if attempt == 1 and task.probe == "wsd":  # cuBLAS says it its own way
            return TaskFailed(
                RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
            )
        return {"results": [], "skipped": None, "seconds": 0.0}

    fake = FakeRay({"CPU": 4, "GPU": 1}, outcome)
    report, done = run(fake, tasks, retries=1)
    assert report.retried == 2 and done == ["minilm/pos seed 0"]
    assert sorted((t.probe, attempt, scale) for _o, (t, _e, attempt, scale, _c), _a in fake.submitted) == [
        ("pos", 0, 1.0),
        ("pos", 1, 0.5),
        ("wsd", 0, 1.0),
        ("wsd", 1, 0.5),
    ]
    assert [f.error for f in report.failures] == ["out of memory (RuntimeError), 2 times"]
    fake = FakeRay({"CPU": 4}, lambda task, attempt: TaskFailed(ValueError("bad data")))
    report, _ = run(fake, tasks[:1])
    assert report.retried == 0 and report.failures[0].error == "ValueError: bad data"


def test_one_actor_per_model_killed_after_its_last_task_and_replaced_when_it_dies():
    tasks = plan_sweep(["minilm", "glove-6b-50d"], ["pos", "wsd"], [0, 1], 10, {})
    fake = FakeRay({"CPU": 4, "GPU": 1})
    report, done = run(fake, tasks)
    assert report.done == 10 and len(fake.actors) == 2 and sorted(fake.killed) == [0, 1]
    by_actor = {}
    for _o, (task, *_rest), actor in fake.submitted:
        by_actor.setdefault(None if actor is None else actor.number, set()).add(task.model)
    assert by_actor == {None: {None}, 0: {"minilm"}, 1: {"glove-6b-50d"}}  # baselines: plain tasks

    def outcome(task, attempt):  # minilm's actor dies in its first task (an OOM kill, a lost node)
        if task.model == "minilm" and task.label.endswith("pos seed 0") and attempt == 0:
            return rex.ActorDiedError()
        return {"results": [], "skipped": None, "seconds": 0.0}

    fake = FakeRay({"CPU": 4, "GPU": 1}, outcome)
    report, done = run(fake, tasks)
    assert report.done == 10 and report.retried == 1 and not report.failures
    minilm = [
        (t.label, attempt, actor.number) for _o, (t, _e, attempt, *_r), actor in fake.submitted if t.model == "minilm"
    ]
    assert minilm[:4] == [(f"minilm/{p} seed {s}", 0, 0) for p in ("pos", "wsd") for s in (0, 1)]
    assert sorted(minilm[4:]) == [  # on a new actor: the culprit at half budget, the queued at their own
        ("minilm/pos seed 0", 1, 2),
        ("minilm/pos seed 1", 0, 2),
        ("minilm/wsd seed 0", 0, 2),
        ("minilm/wsd seed 1", 0, 2),
    ]
    assert sorted(fake.killed) == [1, 2]  # the dead one needs no kill
    fake = FakeRay({"CPU": 4, "GPU": 1})
    run(fake, tasks, TaskEnv(remote="memory://shared"))  # with a store: evict the node's entries, then kill
    assert sorted(fake.log) == [("evict", 0), ("evict", 1), ("kill", 0), ("kill", 1)]
    assert all(fake.log.index(("evict", n)) + 1 == fake.log.index(("kill", n)) for n in (0, 1))


def test_a_user_registered_model_travels_with_its_tasks(tmp_path, monkeypatch):
    """A worker without the driver's embprobe.toml (a remote node: .gitignore'd files are not shipped)."""
    monkeypatch.setattr(models.registry, "REGISTRY", dict(models.registry.REGISTRY))  # use_spec registers
    checkpoint = make_tiny_checkpoint("bert", tmp_path / "ckpt", layers=2, hidden=32, heads=2)
    toml = tmp_path / "embprobe.toml"
    add_user_model("my-bert", str(checkpoint), file=toml)
    monkeypatch.setenv("EMBPROBE_MODELS", str(toml))
    spec = models.registry.get_spec("my-bert")
    tasks = plan_sweep(["my-bert"], ["pos"], [0], 10, {}, specs={"my-bert": spec})
    fake = FakeRay({"CPU": 4})
    run(fake, tasks)
    assert fake.submitted[1][1][0].spec == spec  # the spec is an argument of the Ray call itself
    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "absent.toml"))  # the worker's view
    with pytest.raises(models.registry.UnknownModelError):
        models.registry.get_spec("my-bert")
    payload = run_task(tasks[1], TaskEnv(feature_root=str(tmp_path / "cache"), device="cpu"))
    assert [json.loads(json.dumps(r))["model"] for r in payload["results"]] == ["my-bert"]
    models.registry.unload_embedder("my-bert")


def _serve_configs(monkeypatch, configs: dict | None):
    import huggingface_hub

    def fake_download(repo_id, filename, revision=None, **kwargs):
        if configs is None:
            raise OSError("offline")
        assert filename == "config.json"  # never the weights
        path = os.path.join(os.environ["CONFIGS"], repo_id.replace("/", "--") + ".json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(configs[repo_id], fh)
        return path

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)


def test_hub_checkpoints_not_downloaded_are_sized_from_their_config(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFIGS", str(tmp_path))
    neox = {"tie_word_embeddings": False, "model_type": "gpt_neox"}
    _serve_configs(  # the hub's config.json of each (their sizes: 162 M and 11.8 B parameters)
        monkeypatch,
        {
            "EleutherAI/pythia-160m": {
                **neox,
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "intermediate_size": 3072,
                "vocab_size": 50304,
            },
            "EleutherAI/pythia-12b": {
                **neox,
                "hidden_size": 5120,
                "num_hidden_layers": 36,
                "intermediate_size": 20480,
                "vocab_size": 50688,
            },
        },
    )
    small = estimate("hf:EleutherAI/pythia-160m", gpu=False)
    big = estimate("hf:EleutherAI/pythia-12b", gpu=False)
    assert small.memory < 3 * GiB < 40 * GiB < big.memory  # fp32 weights: 0.65 GB against 47 GB
    assert "config.json" in big.note and not big.note.startswith("guessed")
    assert estimate("hf:EleutherAI/pythia-12b", gpu=True, gpu_memory=24 * GiB).gpus == 2
    assert estimate("hf:EleutherAI/pythia-160m", gpu=True, gpu_memory=24 * GiB).gpus == 1
    _serve_configs(monkeypatch, None)  # offline: a guess, and it says so
    assert estimate("hf:EleutherAI/pythia-12b", gpu=False).note.startswith("guessed")


def test_the_sweeps_gpu_requests_follow_the_clusters_gpu_memory(tmp_path, monkeypatch):
    """cluster/ray-cluster.yaml's nodes have 48 GB L40S GPUs: a model sized for an 80 GB GPU must ask for two."""
    import argparse

    from cluster.cli import add_sweep
    from cluster.executors import OnRay

    big = {"tie_word_embeddings": False, "model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44}
    monkeypatch.setenv("CONFIGS", str(tmp_path))
    _serve_configs(monkeypatch, {"x/big-20b": {**big, "intermediate_size": 24576, "vocab_size": 50432}})
    cluster = FakeRay({"CPU": 16, "GPU": 4})
    default = OnRay(cluster, gpu=True).resources("hf:x/big-20b", None)
    assert default.gpus == 1 and "config.json" in default.note  # ~41 GB of fp16 weights × 1.3 < 80 GiB
    assert OnRay(cluster, gpu=True, gpu_memory=48 * GiB).resources("hf:x/big-20b", None).gpus == 2
    sub = argparse.ArgumentParser().add_subparsers()
    add_sweep(sub)
    args = sub.choices["sweep"].parse_args(["--models", "m", "--probes", "pos", "--gpu-memory", "48"])
    assert args.gpu_memory == 48


def test_a_hub_models_content_key_is_its_resolved_commit(monkeypatch):
    import huggingface_hub

    spec = models.registry.get_spec("hf:EleutherAI/pythia-160m@main")
    keys = []
    for sha in ("a" * 40, "b" * 40):
        monkeypatch.setattr(
            huggingface_hub.HfApi,
            "model_info",
            lambda self, repo, revision=None, sha=sha, **kw: types.SimpleNamespace(sha=sha),
        )
        keys.append(model_content(spec))
    assert keys[0][0] != keys[1][0] and keys[0][1] is None  # main moved: another key

    def offline(self, repo, **kw):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", offline)
    key, note = model_content(spec)
    assert key not in (keys[0][0], keys[1][0]) and "a guess" in note


def test_ray_log_prefixes_come_without_colour_codes_off_a_terminal(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray_session, "import_ray", lambda: fake)
    monkeypatch.delenv("RAY_COLOR_PREFIX", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray_session.connect("local", num_cpus=1)
    assert calls and os.environ["RAY_COLOR_PREFIX"] == "0"


STRANGER = """
import os, sys
os.environ.pop("RAY_AUTH_TOKEN", None)
os.environ["RAY_AUTH_MODE"] = "disabled"
import ray
try:
    ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
except Exception as exc:
    print("refused:", type(exc).__name__)
else:
    print("joined")
"""
OWNER = """
import subprocess, sys
from cluster.ray_session import connect
ray = connect("local", num_cpus=1)
print("task:", ray.get(ray.remote(lambda: 7).remote()))
gcs = ray.get_runtime_context().gcs_address
out = subprocess.run([sys.executable, "-c", sys.argv[1], gcs], capture_output=True, text=True, timeout=120)
print(out.stdout.strip())
ray.shutdown()
"""


@pytest.mark.slow
def test_a_local_ray_instance_asks_for_a_token_a_stranger_cannot_join(tmp_path):
    """``--ray local`` set ``RAY_AUTH_MODE=disabled`` ("a private instance on this machine"), but Ray's servers
    listen on every interface: anyone who could reach the ports could attach a driver and run code as this user."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    out = subprocess.run(
        [sys.executable, "-c", OWNER, STRANGER], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert "task: 7" in out.stdout, out.stderr[-2000:]  # its own workers inherit the token
    assert "refused:" in out.stdout and "joined" not in out.stdout, out.stdout + out.stderr[-2000:]  # it joined before


def test_extract_asks_for_a_gpu_per_actor_from_the_model_not_from_the_cluster_at_start(monkeypatch, capsys, tmp_path):
    import cluster.cli
    import cluster.extract
    from probes.__main__ import main

    asked = {}

    def fake_extract(model, key, sentences, keep, **kwargs):
        asked[model] = (kwargs["gpus_per_worker"], kwargs["device"])
        raise cluster.cli.ProbeInputError("stop here")  # nothing extracted

    monkeypatch.setattr(cluster.extract, "extract_sharded", fake_extract)
    monkeypatch.setattr(cluster.cli, "_session", lambda args: FakeRay({"CPU": 4}))  # GPU workers start on demand
    for model in ("minilm", "glove-6b-50d"):
        argv = ["extract", "--model", model, "--dataset", "conll2000-test", "--limit", "5", "--ray", "auto"]
        assert main([*argv, "--store", str(tmp_path / "store")]) == 2
    assert asked == {"minilm": (1, None), "glove-6b-50d": (0, "cpu")}
    # no GPU in the cluster now: said, where the command had printed nothing and waited (for ever without an
    # autoscaler); a model that asks for none gets no note
    assert "the tasks of minilm ask for one and wait" in capsys.readouterr().out
    store = ["--store", str(tmp_path / "store")]
    assert main([*argv[:-2], "--ray", "auto", "--model", "minilm", "--device", "cpu", *store]) == 2
    assert asked["minilm"] == (0, "cpu") and "no GPU now" not in capsys.readouterr().out
    # a cluster and no --store: the shards would be written to each worker's own copy of this machine's cache (a
    # cluster of one node at the start grows: the template starts no worker until an autoscaler adds them)
    asked.clear()
    assert main(argv) == 2 and not asked
    assert "--store: on a cluster give a store every node reaches" in capsys.readouterr().err


def test_an_elmo_whose_weights_sit_in_another_folder_is_keyed_on_them_too(data_root, tmp_path):
    """``elmo:A/options.json,B/lm_weights.hdf5``: the key hashed A only, so weights edited in place kept a sweep's
    old results."""
    from models.references import spec_for_reference

    fixtures = data_root / "bilm_tf_fixtures"
    (tmp_path / "A").mkdir(), (tmp_path / "B").mkdir()
    shutil.copy(fixtures / "options.json", tmp_path / "A" / "options.json")
    weights = Path(shutil.copy(fixtures / "lm_weights.hdf5", tmp_path / "B" / "lm_weights.hdf5"))
    spec = spec_for_reference(f"elmo:{tmp_path / 'A' / 'options.json'},{weights}", name="eo")
    before, note = model_content(spec)
    assert note is None and model_content(spec)[0] == before
    with weights.open("r+b") as f:  # one byte of the weights changed in place
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert model_content(spec)[0] != before
    weights.unlink()
    assert "files not found" in model_content(spec)[1]
