"""Random-weight baselines (models/random_init.py): ``random:NAME[@SEED]`` on the real models of the zoo."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.base import ModelLoadError, UnknownModelError
from models.random_init import PREFIX, parse_random, random_name
from models.registry import get_spec, load_embedder, load_spec

SENTENCES = [["The", "bank", "closed", "early", "."], ["We", "walked", "along", "the", "river", "bank"]]


def vectors(emb) -> np.ndarray:
    return np.concatenate([o.vectors for o in emb.embed(SENTENCES)], axis=1)


@pytest.mark.parametrize("base", ["minilm", "elmo-small", "gpt-small"])
def test_random_weights_are_seeded_shaped_like_the_model_and_differ_from_it(base):
    trained = load_embedder(base)
    one, again = load_spec(get_spec(random_name(base, 1))), load_spec(get_spec(f"{PREFIX}{base}@1"))
    two = load_spec(get_spec(base))
    rng_before = torch.random.get_rng_state()
    two.reinitialise(2)
    assert torch.equal(torch.random.get_rng_state(), rng_before)  # the caller's random state is untouched
    t, a, b, c = vectors(trained), vectors(one), vectors(again), vectors(two)
    assert a.shape == t.shape == (trained.num_layers, 11, trained.dim)
    assert (one.num_layers, one.dim, one.info.family) == (trained.num_layers, trained.dim, trained.info.family)
    np.testing.assert_array_equal(a, b)  # same seed, same weights
    for layer in range(t.shape[0]):  # every layer is re-drawn, layer 0 too
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
    base = get_spec("minilm")
    assert (spec.family, spec.layers, spec.dim, spec.loader) == ("bert", 7, 384, base.loader)
    assert (spec.random_seed, base.random_seed, spec.name) == (3, None, "random:minilm@3")
    emb = load_embedder("random:minilm@3")
    assert emb.name == "random:minilm@3" and emb is load_embedder("random:minilm@3")
    assert emb.random_init == 3 and load_embedder("minilm").random_init is None
    assert get_spec("random:minilm").random_seed == 0 and random_name("minilm") == "random:minilm@0"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("random:glove-6b-50d", "static model"),
        ("random:", "name the model"),
        ("random:random:minilm", "same thing"),
        ("random:minilm@-1", "whole number"),
    ],
)
def test_bad_random_references_give_one_clear_error(text, fragment):
    with pytest.raises(ModelLoadError, match=fragment):
        get_spec(text)


def test_only_a_reinitialisable_embedder_is_re_drawn():
    static = load_embedder("glove-6b-50d")
    with pytest.raises(ModelLoadError, match="no layers to re-initialise"):
        load_spec(get_spec("glove-6b-50d")).reinitialise(0)
    with pytest.raises(ValueError, match="whole number"):
        load_spec(get_spec("glove-6b-50d")).reinitialise(-1)
    assert static.random_init is None and not get_spec("glove-6b-50d").reinitialisable


def test_unknown_base_model_is_named():
    with pytest.raises(UnknownModelError, match="no-such-model"):
        get_spec("random:no-such-model@1")


def test_parse_random_keeps_a_hub_revision():
    assert parse_random("random:hf:org/name@main") == ("hf:org/name@main", 0)
    # a plain name's @ is its seed: "minilm@x" was looked up as a model ("Unknown model 'minilm@x'")
    for bad in ("random:minilm@x", "random:minilm@1.5", "random:minilm@-1"):
        with pytest.raises(ModelLoadError, match=r"the seed must be a whole number ≥ 0 \(random:NAME@SEED\)"):
            parse_random(bad)
    assert parse_random("random:hf:org/name@main@7") == ("hf:org/name@main", 7)
    assert parse_random("random:minilm@12") == ("minilm", 12)
