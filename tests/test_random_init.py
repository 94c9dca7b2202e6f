"""Random-weight baselines (models/random_init.py): ``random:NAME[@SEED]`` on the real models of the zoo."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from models.base import ModelLoadError, UnknownModelError
from models.random_init import load_random, parse_random, randomize
from models.registry import get_spec, load_embedder

SENTENCES = [["The", "bank", "closed", "early", "."], ["We", "walked", "along", "the", "river", "bank"]]


def vectors(emb) -> np.ndarray:
    return np.concatenate([o.vectors for o in emb.embed(SENTENCES)], axis=1)


@pytest.mark.parametrize("base", ["minilm", "elmo-small", "gpt-small"])
def test_random_weights_are_seeded_shaped_like_the_model_and_differ_from_it(base):
    trained = load_embedder(base)
    one, again = load_random(base, 1), load_random(base, 1)
    spec = get_spec(base)
    two = spec.resolve_loader()(**spec.kwargs)
    rng_before = torch.random.get_rng_state()
    randomize(two, 2)
    assert torch.equal(torch.random.get_rng_state(), rng_before)   # the caller's random state is untouched
    t, a, b, c = vectors(trained), vectors(one), vectors(again), vectors(two)
    assert a.shape == t.shape == (trained.num_layers, 11, trained.dim)
    assert (one.num_layers, one.dim, one.info.family) == (trained.num_layers, trained.dim, trained.info.family)
    np.testing.assert_array_equal(a, b)                           # same seed, same weights
    for layer in range(t.shape[0]):                               # every layer is re-drawn, layer 0 too
        assert not np.allclose(a[layer], t[layer], atol=1e-3), layer
        assert not np.allclose(a[layer], c[layer], atol=1e-3), layer
    assert np.isfinite(a).all()
    fps = {trained.fingerprint(), one.fingerprint(), two.fingerprint()}
    assert len(fps) == 3 and one.fingerprint() == again.fingerprint()
    assert one.info.card["random_init"] == 1 and "random_init" not in trained.info.card
    # the trained instance shared by the registry is not touched
    np.testing.assert_array_equal(vectors(trained), t)


def test_reference_form_works_wherever_a_name_does():
    spec = get_spec("random:minilm@3")
    assert (spec.family, spec.layers, spec.dim) == ("bert", 7, 384)
    assert spec.kwargs == {"base": "minilm", "seed": 3, "name": "random:minilm@3"}
    emb = load_embedder("random:minilm@3")
    assert emb.name == "random:minilm@3" and emb is load_embedder("random:minilm@3")
    assert get_spec("random:minilm").kwargs["seed"] == 0


@pytest.mark.parametrize("text, fragment", [
    ("random:glove-6b-50d", "static model"),
    ("random:", "name the model"),
    ("random:random:minilm", "same thing"),
    ("random:minilm@-1", "whole number"),
])
def test_bad_random_references_give_one_clear_error(text, fragment):
    with pytest.raises(ModelLoadError, match=fragment):
        get_spec(text)


def test_unknown_base_model_is_named():
    with pytest.raises(UnknownModelError, match="no-such-model"):
        get_spec("random:no-such-model@1")


def test_parse_random_keeps_a_hub_revision():
    assert parse_random("random:hf:org/name@main") == ("hf:org/name@main", 0)
    assert parse_random("random:hf:org/name@main@7") == ("hf:org/name@main", 7)
    assert parse_random("random:minilm@12") == ("minilm", 12)
