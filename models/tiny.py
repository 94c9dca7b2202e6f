"""Tiny random Hugging Face checkpoints, one per model family: for tests, benchmarks and users' smoke tests.

    from models.tiny import make_tiny_checkpoint
    path = make_tiny_checkpoint("llama", "/tmp/tiny-llama")     # ~1 s; then load it like any checkpoint

A checkpoint is what ``save_pretrained`` writes for a real model of that family (config.json,
model.safetensors, tokenizer.json, tokenizer_config.json), so loaders meet the same files, model
classes and tokenizer classes as with a downloaded model, but with random weights and a few
hundred kilobytes instead of gigabytes, made offline in seconds.

Design notes:

- **Weights**: the family's config class at the requested size, ``AutoModel*.from_config`` under
  ``torch.manual_seed(seed)`` (in a forked RNG: the caller's random state is untouched). Decoders are
  saved as ``*ForCausalLM``, T5 as ``T5ForConditionalGeneration``, i.e. the classes real checkpoints use.
- **Tokenizer**: the family's own transformers tokenizer class (a ``PreTrainedTokenizerFast``), default
  special tokens and post-processor ([CLS] $A [SEP], <s> $A </s>, Llama's BOS, T5's $A </s>), retrained
  on a small real corpus with ``train_new_from_iterator``, so the pipeline is the family's: WordPiece
  with ## (bert, electra, distilbert), byte-level BPE (roberta, gpt2, gpt-neox, opt, qwen2), SentencePiece
  style with the ▁ Metaspace (Unigram: deberta-v2, albert, t5; BPE: llama, trained on whitespace-split
  words like SentencePiece, so no piece spans two words). Settings stay the family's defaults, as in
  released checkpoints (byte-level ones keep ``add_prefix_space=False``: marking the start of pre-split
  words is the loader's job). A small ``vocab_size`` splits most words into several pieces, which is
  what word-pooling tests need.
- **Deterministic**: the same arguments give byte-identical files. The ``tokenizers`` WordPiece and
  Unigram trainers are not: WordPiece numbers its ##-alphabet in hash order and breaks ties between
  equally frequent merges by id; Unigram's scores vary in the last digits (summation order) and it
  appends the characters it must keep 1e-4 apart in hash order. :func:`train_tokenizer` pins the
  ##-alphabet's ids, :func:`_canonical` renumbers WordPiece by text and gives Unigram pieces within
  1e-3 of each other one score (6 decimals), ordered by text, rebuilt through the family's class.
- Default corpus: the Penn Treebank sample's sentences (``corpora.wsj.load_treebank``, cached after
  the first read); any other list of sentences (word lists or strings) can be passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # before tokenizers is imported: no fork warnings

import torch
import transformers
from tokenizers import pre_tokenizers

from corpora.wsj import load_treebank
from models.base import seeded


def _standard(layers: int, hidden: int, heads: int) -> dict:
    return {
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": 4 * hidden,
        "max_position_embeddings": 512,
    }


def _with(**extra) -> Callable[[int, int, int], dict]:
    """Standard sizes plus family-specific settings (callables of (layers, hidden, heads))."""

    def sizes(layers: int, hidden: int, heads: int) -> dict:
        out = _standard(layers, hidden, heads)
        out.update({k: (v(layers, hidden, heads) if callable(v) else v) for k, v in extra.items()})
        return out

    return sizes


@dataclass(frozen=True)
class TinyKind:
    """How to build one family: its config ``model_type``, model auto-class, tokenizer class and sizes."""

    model_type: str
    auto_class: str  # transformers auto class the checkpoint is saved as
    tokenizer: str  # transformers tokenizer class (fast, tokenizers-backed)
    sizes: Callable[[int, int, int], dict]  # (layers, hidden, heads) -> config keyword arguments
    tokenizer_kwargs: dict = field(default_factory=dict)


KINDS: dict[str, TinyKind] = {
    "bert": TinyKind("bert", "AutoModel", "BertTokenizer", _standard),
    "roberta": TinyKind(
        "roberta", "AutoModel", "RobertaTokenizer", _with(max_position_embeddings=514, type_vocab_size=1)
    ),
    "deberta-v2": TinyKind(
        "deberta-v2",
        "AutoModel",
        "DebertaV2Tokenizer",  # DeBERTa-v3 layout
        _with(
            relative_attention=True,
            position_buckets=256,
            max_relative_positions=-1,
            pos_att_type=["p2c", "c2p"],
            position_biased_input=False,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            type_vocab_size=0,
        ),
    ),
    "electra": TinyKind("electra", "AutoModel", "ElectraTokenizer", _with(embedding_size=lambda _l, h, _h: h)),
    "distilbert": TinyKind(
        "distilbert",
        "AutoModel",
        "DistilBertTokenizer",
        lambda layers, hidden, heads: {
            "n_layers": layers,
            "dim": hidden,
            "n_heads": heads,
            "hidden_dim": 4 * hidden,
            "max_position_embeddings": 512,
        },
    ),
    "albert": TinyKind(
        "albert",
        "AutoModel",
        "AlbertTokenizer",  # factorised embeddings, as ALBERT's point
        _with(embedding_size=lambda _l, h, _h: max(8, h // 2)),
    ),
    "gpt2": TinyKind(
        "gpt2",
        "AutoModelForCausalLM",
        "GPT2Tokenizer",
        lambda layers, hidden, heads: {"n_layer": layers, "n_embd": hidden, "n_head": heads, "n_positions": 512},
    ),
    "llama": TinyKind(
        "llama",
        "AutoModelForCausalLM",
        "LlamaTokenizer",
        _with(num_key_value_heads=lambda *s: s[2]),
        {"add_bos_token": True},
    ),  # as Llama's tokenizer_config.json says
    "gpt-neox": TinyKind("gpt_neox", "AutoModelForCausalLM", "GPTNeoXTokenizer", _standard),
    # OPT's tokenizer is GPT-2's with </s> as BOS, prepended to every input.
    "opt": TinyKind(
        "opt",
        "AutoModelForCausalLM",
        "GPT2Tokenizer",
        lambda layers, hidden, heads: {
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "num_attention_heads": heads,
            "ffn_dim": 4 * hidden,
            "word_embed_proj_dim": hidden,
            "max_position_embeddings": 512,
        },
        {"bos_token": "</s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "add_bos_token": True},
    ),
    "qwen2": TinyKind(
        "qwen2",
        "AutoModelForCausalLM",
        "Qwen2Tokenizer",  # grouped-query attention
        _with(num_key_value_heads=lambda _l, _h, heads: max(1, heads // 2)),
    ),
    "t5": TinyKind(
        "t5",
        "AutoModelForSeq2SeqLM",
        "T5Tokenizer",
        lambda layers, hidden, heads: {
            "num_layers": layers,
            "num_decoder_layers": layers,
            "d_model": hidden,
            "num_heads": heads,
            "d_kv": hidden // heads,
            "d_ff": 4 * hidden,
        },
    ),
}


def make_tiny_checkpoint(
    kind: str,
    directory: str | Path,
    *,
    corpus: Iterable[Sequence[str] | str] | None = None,
    seed: int = 0,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 2,
    vocab_size: int = 400,
) -> Path:
    """Write a random-weight checkpoint of family ``kind`` with a freshly trained fast tokenizer.

    Args:
        kind: one of :data:`KINDS` (bert, roberta, deberta-v2, electra, distilbert, albert, gpt2,
            llama, gpt-neox, opt, qwen2, t5).
        directory: where to write it; created, and must be empty if it exists (a real model is never
            overwritten).
        corpus: sentences (lists of words, or strings) to train the tokenizer on; default the Penn
            Treebank sample (``corpora.wsj.load_treebank``; DataMissingError without the data).
        seed: weights seed; the tokenizer depends only on the corpus and ``vocab_size``.
        layers, hidden, heads: transformer layers (the checkpoint has ``layers + 1`` hidden states),
            hidden size and attention heads (``hidden`` a multiple of ``heads``); FFN = 4 × hidden.
        vocab_size: tokenizer (and embedding matrix) size, special tokens included.

    Returns the directory. Raises ValueError for an unknown kind, bad sizes, an empty corpus or a
    vocabulary too small for the family's alphabet; FileExistsError for a non-empty directory.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}")
    for arg, value in (("layers", layers), ("hidden", hidden), ("heads", heads), ("vocab_size", vocab_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg} must be a positive integer, got {value!r}")
    if hidden % heads or (hidden // heads) % 2:
        raise ValueError(
            f"hidden ({hidden}) must be a multiple of heads ({heads}) with an even head size "
            f"(rotary embeddings rotate pairs of dimensions)"
        )
    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise FileExistsError(
            f"{directory} exists and is not an empty directory; "
            f"make_tiny_checkpoint writes only into a new or empty one."
        )
    spec = KINDS[kind]
    texts = _texts(corpus)
    tokenizer = train_tokenizer(kind, texts, vocab_size)
    # The config's special ids must be the new tokenizer's (T5 starts decoding from <pad>).
    ids = {f"{name}_token_id": getattr(tokenizer, f"{name}_token_id") for name in ("pad", "bos", "eos")}
    if spec.model_type == "t5":
        ids["decoder_start_token_id"] = tokenizer.pad_token_id
    config = transformers.AutoConfig.for_model(
        spec.model_type, vocab_size=len(tokenizer), **ids, **spec.sizes(layers, hidden, heads)
    )
    with seeded(seed):
        model = getattr(transformers, spec.auto_class).from_config(config, dtype=torch.float32)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _texts(corpus: Iterable[Sequence[str] | str] | None) -> list[str]:
    if corpus is None:
        corpus = (s.words for s in load_treebank())
    texts = [s if isinstance(s, str) else " ".join(map(str, s)) for s in corpus]
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise ValueError("the corpus to train the tokenizer on is empty")
    return texts


def train_tokenizer(kind: str, texts: list[str], vocab_size: int) -> transformers.PreTrainedTokenizerFast:
    """The family's fast tokenizer, retrained on ``texts`` (strings) to ``vocab_size`` entries, deterministic."""
    spec = KINDS[kind]
    cls = getattr(transformers, spec.tokenizer)
    base = cls(**spec.tokenizer_kwargs)
    pinned: list[str] = []
    pre = json.loads(base.backend_tokenizer.to_str()).get("pre_tokenizer") or {}
    if pre.get("type") == "Metaspace" and not pre.get("split"):
        # Llama's Metaspace keeps the text whole; trained so, BPE would learn pieces across words ("▁of▁the").
        base.backend_tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=pre["prepend_scheme"])
    if json.loads(base.backend_tokenizer.to_str())["model"]["type"] == "WordPiece":
        # Pin the ##-continuation alphabet's ids (as trainer special tokens, in text order): the
        # trainer numbers them in hash order and breaks ties between equally frequent merges by id.
        first = base.train_new_from_iterator(texts, vocab_size=vocab_size, show_progress=False)
        pinned = sorted(t for t in first.get_vocab() if t.startswith("##") and len(t) == 3)
    trained = base.train_new_from_iterator(
        texts, vocab_size=vocab_size, new_special_tokens=pinned or None, show_progress=False
    )
    tokenizer = _canonical(trained, cls, spec.tokenizer_kwargs, base.all_special_tokens)
    if len(tokenizer) > vocab_size:  # byte-level BPE starts from 256 bytes; the trainer never goes below
        raise ValueError(
            f"vocab_size={vocab_size} is too small for {kind}: its tokenizer needs at least "
            f"{len(tokenizer)} entries (alphabet and special tokens)"
        )
    return tokenizer


def _canonical(trained, cls, kwargs: dict, specials: list[str]) -> transformers.PreTrainedTokenizerFast:
    """Renumber WordPiece / regroup Unigram scores so that training twice gives the same tokenizer (module notes).

    Rebuilt through the family's class from the vocabulary alone: only the family's special tokens stay special.
    """
    model = json.loads(trained.backend_tokenizer.to_str())["model"]
    if model["type"] == "WordPiece":  # ids carry no meaning for WordPiece (longest match first)
        vocab = model["vocab"]
        order = sorted(vocab, key=lambda t: (t not in specials, vocab[t] if t in specials else 0, t))
        return cls(vocab={t: i for i, t in enumerate(order)}, **kwargs)
    if model["type"] == "Unigram":
        pieces = sorted(((p, s) for p, s in model["vocab"] if p not in specials), key=lambda x: -x[1])
        regrouped, best = [], None
        for i, (piece, score) in enumerate(pieces):  # single linkage: a gap > 1e-3 starts a new group
            if i == 0 or pieces[i - 1][1] - score > 1e-3:
                best = round(score, 6)
            regrouped.append((piece, best))
        head = [(p, s) for p, s in model["vocab"] if p in specials]
        return cls(vocab=head + sorted(regrouped, key=lambda x: (-x[1], x[0])), **kwargs)
    # BPE without a continuation prefix (byte-level, Llama's) is deterministic as it is; rebuilt for the
    # family's own pre-tokenizer (Llama's was replaced for training).
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return cls(vocab=model["vocab"], merges=merges, **kwargs)
