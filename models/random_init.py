"""Random-weight baselines: a contextual model's architecture with its weights re-drawn under a seed.

    load_embedder("random:minilm")        # MiniLM's architecture and tokenizer, untrained (seed 0)
    load_embedder("random:elmo-small@3")  # ELMo-small's biLM re-initialised with seed 3

A probe on such a model says how much of a score the architecture and the input alone give, before
any training (e.g. Conneau et al. 2018, Hewitt & Manning 2019 use them as controls). ``random:NAME[@SEED]``
works wherever a model name does (``--model``, ``reproduce --models``, ``load_embedder``), because
``models.registry.get_spec`` turns it into NAME's spec with ``random_seed`` set (:func:`random_spec`)
and ``models.registry.load_spec`` re-draws the weights after loading (``Embedder.reinitialise``).

A spec says whether its family can (``ModelSpec.reinitialisable``); the embedder says how
(``Embedder._redraw_weights``), always inside ``models.base.seeded`` (``torch.random.fork_rng``: the
caller's RNG state is untouched) after ``torch.manual_seed(seed)``:

- Hugging Face models (``bert``/``gpt`` families: MiniLM, GPT-small, any checkpoint): the base model
  class built with ``_from_config`` (transformers' own initialisation, as before pre-training), its
  state copied into the loaded model, so tokenizer, windows, pooling and dtype stay the trained one's
  (``models.transformer.embedder``).
- ELMo: a fresh ``ElmoBiLm`` from the same options (the initialisation training starts from:
  orthogonal LSTM blocks, forget-gate bias 1, highway gate bias 1), its state copied in.
- Static models have no architecture to re-draw: refused with a message.

Tokenizer and vocabulary (subword pieces, ELMo's characters) are the trained model's. The fingerprint
is the trained model's plus ``|random_init=SEED``, so the feature cache and the results never mix them.
"""

from __future__ import annotations

from dataclasses import replace

from models.errors import ModelLoadError
from models.spec import ModelSpec

PREFIX = "random:"
DEFAULT_SEED = 0


def is_random(name: str) -> bool:
    """True for a ``random:NAME[@SEED]`` model name."""
    return str(name).startswith(PREFIX)


def twin_base(name: str) -> str | None:
    """The trained model a ``random:NAME@SEED`` name re-draws (NAME), else None: charts draw a twin beside it."""
    try:
        return parse_random(name)[0] if is_random(name) else None
    except ModelLoadError:
        return None


def random_name(base: str, seed: int = DEFAULT_SEED) -> str:
    """The model name of ``base``'s architecture with random weights drawn under ``seed``."""
    return f"{PREFIX}{base}@{seed}"


def parse_random(text: str) -> tuple[str, int]:
    """``random:NAME[@SEED]`` → (NAME, SEED). An ``@`` followed by digits at the end is the seed (a hub
    revision that is all digits therefore needs an explicit seed: ``random:hf:ORG/NAME@123@0``)."""
    if not is_random(text):
        raise ModelLoadError(f"{text!r} is not a random-weight reference (random:NAME[@SEED]).")
    rest = text[len(PREFIX) :].strip()
    base, at, seed = rest.rpartition("@")
    if at and seed.isdigit() and base:
        name, value = base, int(seed)
    elif at and base and (seed.lstrip("-").isdigit() or not any(c in base for c in "/:\\")):
        # a plain name's @ can only be its seed (a hub id's or a path's may be a revision or part of the name)
        raise ModelLoadError(f"{text!r}: the seed must be a whole number ≥ 0 (random:NAME@SEED).")
    else:
        name, value = rest, DEFAULT_SEED
    if not name:
        raise ModelLoadError(
            f"{text!r}: name the model whose architecture to use: random:NAME[@SEED], e.g. random:minilm@0."
        )
    if is_random(name):
        raise ModelLoadError(
            f"{text!r}: a random-weight model of a random-weight model is the same thing; "
            f"write {PREFIX}{name[len(PREFIX) :]}."
        )
    return name, value


def random_spec(base: ModelSpec, text: str, seed: int) -> ModelSpec:
    """The spec of ``random:NAME@SEED`` (``text``): NAME's spec (``base``), loaded then re-drawn under ``seed``."""
    if not base.reinitialisable:
        kind = "a static model (one vector per word type)" if not base.contextual else f"a {base.family} model"
        raise ModelLoadError(
            f"{text!r}: {base.name} is {kind}: it has no layers to re-initialise. "
            "Random-weight baselines are for contextual models (ELMo, BERT- and GPT-family)."
        )
    return replace(
        base,
        name=text,
        random_seed=seed,
        description=f"{base.name}'s architecture with random weights (seed {seed}); {base.name}'s tokenizer",
    )
