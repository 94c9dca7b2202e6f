"""Random-weight baselines: a contextual model's architecture with its weights re-drawn under a seed.

    load_embedder("random:minilm")        # MiniLM's architecture and tokenizer, untrained (seed 0)
    load_embedder("random:elmo-small@3")  # ELMo-small's biLM re-initialised with seed 3

A probe on such a model says how much of a score the architecture and the input alone give, before
any training (e.g. Conneau et al. 2018, Hewitt & Manning 2019 use them as controls). ``random:NAME[@SEED]``
works wherever a model name does (``--model``, ``reproduce --models``, ``load_embedder``), because
``models.registry.get_spec`` hands the prefix to :func:`spec_for_random`.

How the weights are drawn, per family, always inside ``torch.random.fork_rng`` (the caller's RNG
state is untouched) after ``torch.manual_seed(seed)``:

- Hugging Face models (``bert``/``gpt`` families: MiniLM, GPT-small, any checkpoint): the base model
  class built with ``_from_config`` (transformers' own initialisation, as before pre-training), its
  state copied into the loaded model, so tokenizer, windows, pooling and dtype stay the trained one's.
- ELMo: a fresh ``ElmoBiLm`` from the same options (the initialisation training starts from:
  orthogonal LSTM blocks, forget-gate bias 1, highway gate bias 1), its state copied in.
- Static models have no architecture to re-draw: refused with a message.

Tokenizer and vocabulary (subword pieces, ELMo's characters) are the trained model's. The fingerprint
is the trained model's plus ``|random_init=SEED``, so the feature cache and the results never mix them.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from models.base import Embedder, ModelLoadError

PREFIX = "random:"
DEFAULT_SEED = 0


def parse_random(text: str) -> tuple[str, int]:
    """``random:NAME[@SEED]`` → (NAME, SEED). An ``@`` followed by digits at the end is the seed (a hub
    revision that is all digits therefore needs an explicit seed: ``random:hf:ORG/NAME@123@0``)."""
    if not text.startswith(PREFIX):
        raise ModelLoadError(f"{text!r} is not a random-weight reference (random:NAME[@SEED]).")
    rest = text[len(PREFIX):].strip()
    base, at, seed = rest.rpartition("@")
    if at and seed.isdigit() and base:
        name, value = base, int(seed)
    elif at and base and seed.lstrip("-").isdigit():
        raise ModelLoadError(f"{text!r}: the seed must be a whole number ≥ 0.")
    else:
        name, value = rest, DEFAULT_SEED
    if not name:
        raise ModelLoadError(f"{text!r}: name the model whose architecture to use: random:NAME[@SEED], "
                             "e.g. random:minilm@0.")
    if name.startswith(PREFIX):
        raise ModelLoadError(f"{text!r}: a random-weight model of a random-weight model is the same thing; "
                             f"write {PREFIX}{name[len(PREFIX):]}.")
    return name, value


def spec_for_random(text: str):
    """The ModelSpec of ``random:NAME[@SEED]``: the base model's spec with the loader :func:`load_random`."""
    from models.registry import ModelSpec, get_spec   # imported here: the registry imports this module lazily

    base, seed = parse_random(text)
    spec = get_spec(base)
    if spec.family == "static":
        raise ModelLoadError(f"{text!r}: {base} is a static model (one vector per word type): it has no "
                             "layers to re-initialise. Random-weight baselines are for contextual models "
                             "(ELMo, BERT- and GPT-family).")
    return ModelSpec(text, spec.family, "models.random_init:load_random", {"base": base, "seed": seed, "name": text},
                     description=f"{base}'s architecture with random weights (seed {seed}); {base}'s tokenizer",
                     source=spec.source, layers=spec.layers, dim=spec.dim, files=spec.files)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Draw under ``seed`` without touching the caller's CPU random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _reinit_transformer(emb, seed: int) -> None:
    from models.transformer.loading import init_kwargs, model_class

    config = emb.config
    cls = model_class(config)
    with seeded(seed):
        fresh = cls._from_config(config, attn_implementation="eager", **init_kwargs(cls))
    kept = fresh.get_encoder() if getattr(config, "is_encoder_decoder", False) else fresh
    emb.model.load_state_dict(kept.state_dict())


def _reinit_elmo(emb, seed: int) -> None:
    from models.elmo.bilm import ElmoBiLm

    with seeded(seed):
        fresh = ElmoBiLm(emb.bilm.options)
    emb.bilm.load_state_dict(fresh.state_dict())
    emb.bilm.reset_states()


def randomize(emb: Embedder, seed: int) -> Embedder:
    """Re-draw ``emb``'s weights in place under ``seed`` (see the module doc); returns it."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
    if hasattr(emb, "bilm"):
        _reinit_elmo(emb, seed)
    elif hasattr(emb, "model") and hasattr(emb, "config"):
        _reinit_transformer(emb, seed)
    else:
        raise ModelLoadError(f"{emb.name}: no layers to re-initialise (family {emb.info.family}).")
    trained = emb._fingerprint_extra
    emb._fingerprint_extra = lambda: f"{trained()}|random_init={seed}"   # type: ignore[method-assign]
    emb.info.card = {**emb.info.card, "random_init": seed}
    return emb


def load_random(base: str, seed: int = DEFAULT_SEED, name: str | None = None) -> Embedder:
    """A fresh instance of model ``base`` (never the shared loaded one) with its weights re-drawn."""
    from models.registry import get_spec

    spec = get_spec(base)
    emb = randomize(spec.resolve_loader()(**spec.kwargs), seed)
    emb.info.name = name or f"{PREFIX}{base}@{seed}"
    emb.info.description = f"{base}'s architecture with random weights (seed {seed}); {base}'s tokenizer/vocabulary"
    return emb
