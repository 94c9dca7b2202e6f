"""``--cache-url s3://…`` against an S3 server the tests start (moto's ``ThreadedMotoServer`` on
127.0.0.1, reached by s3fs over HTTP as a real bucket would be): push, pull, a corrupted object
found by its ETag and repaired, and the URL checked before any model loads (a missing bucket, a
missing s3fs). Skipped when s3fs (requirements-cluster.txt) or moto (requirements-dev.txt) is not installed."""

from __future__ import annotations

import json
import sys
import uuid

import pytest
from fsspec.registry import _registry

pytest.importorskip("s3fs", reason="s3fs is in requirements-cluster.txt")
moto_server = pytest.importorskip("moto.server", reason="moto[server] is in requirements-dev.txt")

from cluster.executors import InProcess  # noqa: E402
from cluster.plan import plan_sweep  # noqa: E402
from cluster.storage import POINTER, check_store, entry_problems, pull_entry, push_entry, remote_keys  # noqa: E402
from cluster.sweep import run_sweep  # noqa: E402
from cluster.tasks import TaskEnv  # noqa: E402
from features import entry_rel, local_entries  # noqa: E402
from features.extract import get_features  # noqa: E402
from models.tiny import make_tiny_checkpoint  # noqa: E402
from probes.__main__ import main  # noqa: E402
from probes.errors import ProbeInputError  # noqa: E402
from tests.probe_helpers import RandomEmbedder  # noqa: E402

SENTS = [["The", "bank", "closed", "."], ["A", "river", "bank"]] * 30


@pytest.fixture(scope="module")
def s3_server():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_server, monkeypatch):
    """A fresh bucket; s3fs (botocore) finds the server through AWS_ENDPOINT_URL, as on a cluster node."""
    import s3fs

    for name, value in {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    s3fs.S3FileSystem.clear_instance_cache()
    name = f"embprobe-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem().mkdir(name)
    return name


def test_push_pull_and_a_corrupted_object_detected_and_repaired(bucket, tmp_path):
    store = check_store(f"s3://{bucket}/cache")
    emb = RandomEmbedder(num_layers=2, dim=8)
    feats = get_features(emb, "toy", SENTS, root=tmp_path / "a", show_progress=False)
    fp, rel = emb.fingerprint(), entry_rel(emb.fingerprint(), "toy")
    assert push_entry(store, feats.directory) and not push_entry(store, feats.directory)
    assert remote_keys(store, fp) == ["toy"] and pull_entry(store, fp, "toy", tmp_path / "b")
    pointer = store.read_json(f"{rel}/{POINTER}")
    assert all(o["etag"] for o in pointer["objects"].values())  # S3 gives ETags: a skip costs no download
    victim = store.path(f"{rel}/{pointer['version']}/layer_1.npy")
    data = bytearray(store.fs.cat_file(victim))
    data[-3] ^= 0xFF
    store.fs.pipe_file(victim, bytes(data))  # same size, other bytes: another ETag
    assert "changed since it was published" in " ".join(entry_problems(store, fp, "toy"))
    assert entry_problems(store, fp, "toy", full=True)
    with pytest.raises(Exception, match="does not match"):
        pull_entry(store, fp, "toy", tmp_path / "c")
    assert push_entry(store, feats.directory)  # repaired: a new version, the damaged one deleted
    assert entry_problems(store, fp, "toy", full=True) == [] and not store.fs.exists(victim)
    assert pull_entry(store, fp, "toy", tmp_path / "c")
    assert (local_entries(fp, tmp_path / "c")[0] / "meta.json").read_bytes() == (
        feats.directory / "meta.json"
    ).read_bytes()


def test_a_sweep_repairs_a_corrupted_entry_it_pulls(bucket, tmp_path):
    model = str(make_tiny_checkpoint("bert", tmp_path / "tiny-bert", layers=2, hidden=32, heads=2))
    url = f"s3://{bucket}/sweep"
    tasks = [t for t in plan_sweep([model], ["pos"], [0], 12, {}) if t.model]
    quiet = {"say": lambda m: None}
    assert run_sweep(tasks, InProcess(), TaskEnv(str(tmp_path / "n1"), url), tmp_path / "r1", **quiet).ok
    store = check_store(url)
    (fp,) = store.listdir("features")
    for key in remote_keys(store, fp):  # damage every published entry
        pointer = store.read_json(f"{entry_rel(fp, key)}/{POINTER}")
        name = sorted(pointer["objects"])[-1]
        path = store.path(f"{entry_rel(fp, key)}/{pointer['version']}/{name}")
        store.fs.pipe_file(path, bytes(len(store.fs.cat_file(path))))
        assert entry_problems(store, fp, key)
    second = run_sweep(tasks, InProcess(), TaskEnv(str(tmp_path / "n2"), url), tmp_path / "r2", **quiet)
    assert second.ok and second.run.done == 1  # extracted on "node 2" instead of failing
    assert all(entry_problems(store, fp, key, full=True) == [] for key in remote_keys(store, fp))
    rows = [json.loads(next((tmp_path / d).glob("*.json")).read_text())["rows"] for d in ("r1", "r2")]
    assert rows[0] == rows[1]


def test_the_cache_url_is_checked_before_any_model_loads(bucket, tmp_path, monkeypatch, capsys):
    import models.registry

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded before --cache-url was checked")

    monkeypatch.setattr(models.registry, "load_spec", no_load)
    argv = ["sweep", "--models", "minilm", "--probes", "pos", "--results", str(tmp_path / "r"), "--cache-url"]
    assert main([*argv, f"s3://{bucket}-missing/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --cache-url s3://") and "cannot write there" in err and "Traceback" not in err
    monkeypatch.setitem(sys.modules, "s3fs", None)  # as if s3fs were not installed (and never imported)
    monkeypatch.delitem(_registry, "s3", raising=False)  # fsspec's table of imported backends
    with pytest.raises(ProbeInputError, match="s3fs"):
        check_store(f"s3://{bucket}/x")
    assert main([*argv, f"s3://{bucket}/x"]) == 2 and "requirements-cluster.txt" in capsys.readouterr().err
    assert not list((tmp_path / "r").glob("*.json"))
