"""Adding a model family is its embedder module plus its ``Family`` and ``ModelSpec`` entries.

A toy family (the embedder below and two registry entries, put in place with ``monkeypatch``) is listed
with its capabilities, loads by name, gets random weights as ``random:toy@SEED`` because its family says
it can, is refused as ``random:`` when its family says it cannot, and runs a probe on a small slice —
without a line changed anywhere else.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from models.base import Embedder, ModelInfo, ModelLoadError, SentenceEmbedding, seeded
from models.listing import OK, describe, zoo_frame
from models.registry import REGISTRY, available_models, get_spec, load_embedder, unload_embedder
from models.spec import FAMILIES, Family, ModelSpec, Source

TOY = Family("toy", "Toy (mixes left neighbours)", has_attention=False, contextual=True, reinitialisable=True)
TOY_FROZEN = Family("toy-frozen", "Toy, frozen", contextual=True, reinitialisable=False)
DIM, LAYERS = 16, 3


class ToyEmbedder(Embedder):
    """Layer 0: a word's hashed features through E; layer l: layer l-1 plus its left neighbour through W_l."""

    def __init__(self, name: str, family: str = TOY.name, seed: int = 0) -> None:
        self.info = ModelInfo(name=name, family=family, num_layers=LAYERS, dim=DIM, source="tests/test_model_family.py")
        self.device = torch.device("cpu")
        self._draw(seed)

    def _draw(self, seed: int) -> None:
        with seeded(seed):
            self.E = torch.randn(DIM, DIM)
            self.W = torch.randn(LAYERS - 1, DIM, DIM) / DIM**0.5

    def _redraw_weights(self, seed: int) -> None:
        self._draw(1000 + seed)

    def _fingerprint_extra(self) -> str:
        return hashlib.sha1(self.E.numpy().tobytes() + self.W.numpy().tobytes()).hexdigest()

    def _embed_batch(self, sentences: list[list[str]], with_attention: bool) -> list[SentenceEmbedding]:
        out = []
        for words in sentences:
            feats = torch.tensor(np.stack([_features(w) for w in words]))
            x = torch.tanh(feats @ self.E)
            layers = [x]
            for w in self.W:
                left = torch.cat([torch.zeros(1, DIM), x[:-1]])
                x = torch.tanh((x + left) @ w)
                layers.append(x)
            out.append(
                SentenceEmbedding(
                    words=list(words), vectors=torch.stack(layers).numpy(), oov=np.zeros(len(words), bool)
                )
            )
        return out


def _features(word: str) -> np.ndarray:
    h = int.from_bytes(hashlib.sha1(word.lower().encode()).digest()[:8], "little")
    return np.random.default_rng(h).standard_normal(DIM).astype(np.float32)


def load_toy(directory: str, name: str = "toy", family: str = TOY.name) -> ToyEmbedder:
    """The toy family's loader: refuses a folder without its one file, as a real loader would."""
    if not Path(directory, "toy.json").is_file():
        raise ModelLoadError(f"No toy checkpoint in {directory}.")
    return ToyEmbedder(name, family)


@pytest.fixture
def toy_zoo(tmp_path, monkeypatch):
    (tmp_path / "toy.json").write_text("{}")
    common = dict(source=Source.path(tmp_path), layers=LAYERS, dim=DIM, files=("toy.json",))
    monkeypatch.setitem(FAMILIES, TOY.name, TOY)
    monkeypatch.setitem(FAMILIES, TOY_FROZEN.name, TOY_FROZEN)
    monkeypatch.setitem(
        REGISTRY,
        "toy",
        ModelSpec(
            "toy", TOY.name, f"{__name__}:load_toy", {"directory": str(tmp_path)}, description="a toy family", **common
        ),
    )
    monkeypatch.setitem(
        REGISTRY,
        "toy-frozen",
        ModelSpec(
            "toy-frozen",
            TOY_FROZEN.name,
            f"{__name__}:load_toy",
            {"directory": str(tmp_path), "name": "toy-frozen", "family": TOY_FROZEN.name},
            description="frozen",
            **common,
        ),
    )
    yield tmp_path
    for name in ("toy", "toy-frozen", "random:toy@1"):
        unload_embedder(name)


def test_a_new_family_is_listed_with_its_capabilities(toy_zoo):
    spec = get_spec("toy")
    assert spec in available_models()
    assert (spec.has_attention, spec.contextual, spec.reinitialisable) == (False, True, True)
    row = describe(spec)
    assert row.state == OK and (row.layers, row.dim) == (LAYERS, DIM)
    frame = zoo_frame().set_index("model")
    assert frame.loc["toy", "family"] == TOY.label and frame.loc["toy", "status"] == "ready"


def test_a_new_family_loads_and_gets_random_weights_when_it_says_it_can(toy_zoo):
    sentence = [["The", "bank", "closed", "."]]
    emb = load_embedder("toy")
    assert isinstance(emb, ToyEmbedder) and emb.name == "toy" and emb.info.family == "toy"
    rand = load_embedder("random:toy@1")
    assert rand is not emb and rand.name == "random:toy@1" and rand.random_init == 1
    assert rand.fingerprint() != emb.fingerprint()
    trained, drawn = emb.embed(sentence)[0].vectors, rand.embed(sentence)[0].vectors
    assert trained.shape == drawn.shape == (LAYERS, 4, DIM)
    assert all(not np.allclose(trained[j], drawn[j]) for j in range(LAYERS))
    np.testing.assert_array_equal(emb.embed(sentence)[0].vectors, trained)  # the shared instance is untouched
    with pytest.raises(ModelLoadError, match="toy-frozen is a toy-frozen model: it has no layers to re-initialise"):
        get_spec("random:toy-frozen")


def test_a_load_error_of_a_new_family_is_one_clear_error(toy_zoo):
    (toy_zoo / "toy.json").unlink()
    with pytest.raises(ModelLoadError, match="No toy checkpoint"):
        load_embedder("toy")
    assert describe(get_spec("toy")).state != OK


def test_a_probe_runs_on_a_new_family(toy_zoo, tmp_path_factory):
    from probes.run import run_probe

    run = run_probe(
        "pos", "toy", limit=20, baselines=False, show_progress=False, feature_root=tmp_path_factory.mktemp("features")
    )
    frame = run.to_frame()
    assert set(frame["model"]) == {"toy"} and run.baselines == [] and run.saved == []
    accuracy = frame[frame["metric"] == "accuracy"]
    assert {str(j) for j in range(LAYERS)} <= set(accuracy["layer"])
    assert accuracy["value"].between(0, 100).all() and accuracy["value"].max() > 0
