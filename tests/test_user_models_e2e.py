"""User checkpoints end to end: given by path to the real CLI, they run WSD, POS and the λ ablation.

Tiny random-weight checkpoints of six families (models.tiny: config classes + tokenizers trained on
the fly: WordPiece, byte-level BPE, SentencePiece-style) go through ``python -m probes reproduce`` on
small real slices, exactly as a user's BERT-base or Llama would. Also: the feature cache is keyed by
the checkpoint's content (a moved copy reuses it, retrained weights at the same path rebuild it), and a
registered model that keeps only some layers is probed and labelled by the model's own layer numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.tiny import make_tiny_checkpoint

REPO = Path(__file__).resolve().parent.parent
FAMILIES = ("bert", "roberta", "deberta-v2", "electra", "gpt2", "llama")
LAYERS = 2  # transformer layers of each tiny model: 3 hidden states


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("user-models")
    return {
        kind: make_tiny_checkpoint(kind, root / f"tiny-{kind}", layers=LAYERS, hidden=32, heads=2) for kind in FAMILIES
    }


def run(module: str, *args: str, cache: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "EMBPROBE_CACHE": str(cache), "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )


def test_six_families_run_wsd_pos_and_the_lambda_ablation_by_path(checkpoints, tmp_path):
    out = tmp_path / "out"
    res = run(
        "probes",
        "reproduce",
        "--models",
        ",".join(str(p) for p in checkpoints.values()),
        "--probes",
        "wsd,pos,mix",
        "--limit",
        "30",
        "--semcor-limit",
        "150",
        "--train-limit",
        "60",
        "--epochs",
        "1",
        "--threads",
        "1",
        "--out",
        str(out),
        cache=tmp_path / "cache",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    by = {(r["model"], r["probe"]): r for r in results}
    for _kind, path in checkpoints.items():
        name = path.name
        for probe in ("wsd", "pos", "mix"):
            assert (name, probe) in by, f"no {probe} result for {name}"
        pos_layers = [row["layer"] for row in by[(name, "pos")]["rows"]]
        assert pos_layers == [str(j) for j in range(LAYERS + 1)] + ["mean"]
        wsd = [row for row in by[(name, "wsd")]["rows"] if row["dataset"] == "ALL"]
        assert {row["layer"] for row in wsd} >= {"0", str(LAYERS)} and all(0 <= row["value"] <= 100 for row in wsd)
        assert all(
            np.isfinite(row["value"]) and row["n"] > 0
            for r in (by[(name, "pos")], by[(name, "mix")])
            for row in r["rows"]
        )
        assert by[(name, "pos")]["fingerprint"] == by[(name, "wsd")]["fingerprint"]
    assert len({by[(p.name, "pos")]["fingerprint"] for p in checkpoints.values()}) == len(FAMILIES)
    assert (out / "tables.md").read_text().count("tiny-") >= len(FAMILIES)


def test_feature_cache_is_keyed_by_content_not_path(checkpoints, tmp_path):
    from features.extract import get_features
    from models.references import load_reference

    sentences = [["The", "bank", "raised", "interest", "rates", "."], ["Unbelievably", ",", "it", "rained", "."]]
    first = load_reference(str(checkpoints["bert"]))
    a = get_features(first, "e2e", sentences, root=tmp_path, show_progress=False)
    moved = tmp_path / "elsewhere" / "renamed-bert"
    shutil.copytree(checkpoints["bert"], moved)
    copy = load_reference(str(moved))
    assert copy.fingerprint() == first.fingerprint()
    entries = sorted((tmp_path / "features").iterdir())
    b = get_features(copy, "e2e", sentences, root=tmp_path, show_progress=False)
    assert sorted((tmp_path / "features").iterdir()) == entries  # reused, not extracted again
    assert np.array_equal(np.asarray(a.layers[2]), np.asarray(b.layers[2]))
    # Retrained weights at the same path: another fingerprint, a new cache entry, other vectors.
    shutil.rmtree(moved)
    make_tiny_checkpoint("bert", moved, seed=1, layers=LAYERS, hidden=32, heads=2)
    retrained = load_reference(str(moved))
    assert retrained.fingerprint() != first.fingerprint()
    c = get_features(retrained, "e2e", sentences, root=tmp_path, show_progress=False)
    assert len(list((tmp_path / "features").iterdir())) == len(entries) + 1
    assert not np.allclose(np.asarray(a.layers[2]), np.asarray(c.layers[2]))


def test_registered_model_keeps_some_layers_and_is_labelled_by_them(checkpoints, tmp_path):
    registry = tmp_path / "models.toml"
    env = {"EMBPROBE_MODELS": str(registry)}
    added = run(
        "models",
        "add",
        "tiny-llama-top",
        str(checkpoints["llama"]),
        "--layers",
        "0,2",
        "--pooling",
        "last",
        cache=tmp_path / "cache",
        env=env,
    )
    assert added.returncode == 0, added.stderr
    assert "tiny-llama-top" in added.stdout and "registered" in added.stdout
    listed = run("models", "list", cache=tmp_path / "cache", env=env)
    row = next(line for line in listed.stdout.splitlines() if line.startswith("tiny-llama-top"))
    assert row.split()[1:4] == ["gpt", "2", "32"]  # family, kept layers, dim: read without loading
    res = run(
        "probes",
        "pos",
        "--model",
        "tiny-llama-top",
        "--limit",
        "30",
        "--results",
        str(tmp_path / "res"),
        "--threads",
        "1",
        cache=tmp_path / "cache",
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(next((tmp_path / "res").glob("tiny-llama-top__pos__*.json")).read_text())
    assert [row["layer"] for row in result["rows"]] == ["0", "2", "mean"]
    bad = run(
        "probes", "pos", "--model", "tiny-llama-top", "--layers", "1", "--limit", "5", cache=tmp_path / "cache", env=env
    )
    assert bad.returncode == 2 and "Layer 1 was not kept: the model keeps layers 0, 2" in bad.stderr


def test_hub_id_loads_from_the_hub_cache_offline(checkpoints, tmp_path):
    """hf:ORG/NAME resolves to the snapshot huggingface_hub keeps (its own cache layout), with no network."""
    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = cache / "models--tiny-org--tiny-gpt2" / "snapshots" / commit
    shutil.copytree(checkpoints["gpt2"], snapshot)
    (cache / "models--tiny-org--tiny-gpt2" / "refs").mkdir()
    (cache / "models--tiny-org--tiny-gpt2" / "refs" / "main").write_text(commit)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "EMBPROBE_MODELS": str(tmp_path / "m.toml")}
    added = run("models", "add", "tiny-hub", "hf:tiny-org/tiny-gpt2", cache=tmp_path / "cache", env=env)
    assert added.returncode == 0, added.stderr
    row = next(line for line in added.stdout.splitlines() if line.startswith("tiny-hub"))
    assert row.split()[1:4] == ["gpt", "3", "32"] and "hf:tiny-org/tiny-gpt2" in row
    res = run(
        "probes",
        "pos",
        "--model",
        "tiny-hub",
        "--limit",
        "20",
        "--results",
        str(tmp_path / "res"),
        "--threads",
        "1",
        cache=tmp_path / "cache",
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    direct = run(
        "probes",
        "pos",
        "--model",
        str(checkpoints["gpt2"]),
        "--limit",
        "20",
        "--results",
        str(tmp_path / "res2"),
        "--threads",
        "1",
        cache=tmp_path / "cache",
        env=env,
    )
    hub_result = json.loads(next((tmp_path / "res").glob("tiny-hub__pos__*.json")).read_text())
    path_result = json.loads(next((tmp_path / "res2").glob("tiny-gpt2__pos__*.json")).read_text())
    assert direct.returncode == 0 and hub_result["fingerprint"] == path_result["fingerprint"]
    assert hub_result["rows"] == path_result["rows"]
