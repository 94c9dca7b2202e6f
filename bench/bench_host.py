"""The host side of feature extraction, measured without a model: ``python bench/run_all.py --parts host``.

Issue 33: on a GPU the lab's extraction ran at ~4 % of the model's forward speed; the time went to the
host (tokenizing, pooling, copies, checks, writing). This part measures exactly that path, from word
lists to float16 rows in the feature cache (``features.get_features`` into a temporary cache root:
tokenize, window, batch, pool pieces into words, copy, check, write, checksum, commit), with the
model's forward replaced by preallocated hidden states of the right shape (:class:`PreallocatedForward`),
so the figure is the host's ceiling: the words/s the lab could reach with an infinitely fast model.

Shapes (``SHAPES``): MiniLM's (7 hidden states × 384, its own WordPiece tokenizer) and a Llama-1B's
(17 × 2048, with gpt-small's byte-level BPE tokenizer: a decoder's). Reports per shape host words/s,
µs/word, feature MB/s written, the tokenizer's own µs/word on the same sentences, and peak RSS. Then
(``real-*``) MiniLM's and gpt-small's real forwards (500 sentences) through the streamed path against the
generic one (``embed``, a block per chunk: the lab's path before issue 33 and every non-transformer family's),
interleaved in one process.
"""

from __future__ import annotations

import gc
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import torch

#: name -> (model whose tokenizer and family are used, hidden states incl. layer 0, width)
SHAPES = {"minilm": ("minilm", 7, 384), "llama-1b": ("gpt-small", 17, 2048)}
REAL, REAL_SENTENCES = ("minilm", "gpt-small"), 500  # real forwards: streamed against generic path


class PreallocatedForward(torch.nn.Module):
    """A stand-in forward: returns views of ``num_states`` preallocated (max_tokens, dim) buffers as (B, T, dim).

    Costs nothing on the device, so what is timed around it is the host's work alone.
    """

    def __init__(self, num_states: int, dim: int, max_tokens: int, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        base = torch.randn(max_tokens, dim, generator=gen).to(device=device, dtype=dtype)
        self.states = [base.roll(k, 0) for k in range(num_states)]  # distinct layers, allocated once

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_) -> SimpleNamespace:
        B, T = input_ids.shape
        hidden = tuple(s[: B * T].view(B, T, -1) for s in self.states)
        return SimpleNamespace(hidden_states=hidden, attentions=None)


def host_only(embedder, num_states: int, dim: int):
    """``embedder`` (a TransformerEmbedder) with its forward replaced: ``num_states`` × ``dim`` outputs."""
    emb = embedder
    emb.model = PreallocatedForward(num_states, dim, emb.max_tokens, emb.device, emb.dtype)
    emb.info = replace(emb.info, num_layers=num_states, dim=dim, name=f"host-{num_states}x{dim}")
    emb.layer_ids = None
    emb._fp = f"{emb._fp}|host-only-{num_states}x{dim}"  # never a real model's cache entry
    return emb


def stand_in(model: str):
    """A one-layer random checkpoint of ``model``'s kind with a tokenizer of 8,000 pieces trained on the Penn
    Treebank sample (``bench.scale_ladder.VOCAB``): where the model's own files are not installed."""
    from bench.scale_ladder import VOCAB
    from models.tiny import make_tiny_checkpoint
    from models.transformer.auto import load_hf_checkpoint

    folder = Path(tempfile.mkdtemp(prefix="embprobe-host-")) / model
    kind = "bert" if model == "minilm" else "gpt2"
    return load_hf_checkpoint(make_tiny_checkpoint(kind, folder, layers=1, hidden=32, heads=2, vocab_size=VOCAB))


def tokenize_us_per_word(emb, sentences: list[list[str]]) -> float:
    """The tokenizer alone on the same sentences (µs/word), as the embedder calls it."""
    t0 = time.perf_counter()
    emb._pieces(sentences)
    return (time.perf_counter() - t0) * 1e6 / max(1, sum(map(len, sentences)))


def measure_shape(name: str, sentences: list[list[str]], repeats: int = 1) -> dict:
    """Host words/s of ``get_features`` for one shape of ``SHAPES`` (best of ``repeats``, fresh cache each)."""
    from bench.measure import PeakRSS
    from features import get_features
    from models.base import ModelLoadError
    from models.registry import get_spec, load_spec

    model, states, dim = SHAPES[name]
    try:
        emb = load_spec(get_spec(model))  # its own instance: the registry's stays real
    except ModelLoadError:  # MiniLM's package is often missing on a rented GPU: a tokenizer of its kind
        emb, model = stand_in(model), f"{model} (missing; a stand-in tokenizer of its kind)"
    emb = host_only(emb, states, dim)
    words = sum(map(len, sentences))
    out: dict = {"shape": f"{states} x {dim}", "tokenizer_of": model, "device": str(emb.device)}
    out["sentences"], out["words"] = len(sentences), words
    out["tokenize_us_per_word"] = tokenize_us_per_word(emb, sentences)
    times = []
    for _ in range(max(1, repeats)):
        gc.collect()  # not a collection of the corpus just loaded, timed as extraction
        root = Path(tempfile.mkdtemp(prefix="embprobe-host-"))
        try:
            with PeakRSS() as m:
                t0 = time.perf_counter()
                feats = get_features(emb, "host-bench", sentences, root=root, show_progress=False)
                if emb.device.type == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            nbytes = sum(a.nbytes for a in feats.layers.values())
            del feats
        finally:
            shutil.rmtree(root, ignore_errors=True)
    best = min(times)
    out.update(m.as_dict("host"))
    out |= {
        "runs_s": times,
        "s": best,
        "host_words_per_s": words / best,
        "us_per_word": best * 1e6 / words,
        "feature_bytes": nbytes,
        "feature_mb_per_s": nbytes / 1e6 / best,
    }
    return out


def streamed_vs_generic(model: str, sentences: list[list[str]], repeats: int = 2) -> dict:
    """The real model through ``get_features``: the streamed path against the generic one (``embed`` then a
    block per chunk, as every other family and the lab before issue 33), interleaved, fresh cache each run."""
    from features import get_features
    from models.base import Embedder
    from models.registry import load_embedder

    emb = load_embedder(model)
    words, times = sum(map(len, sentences)), {"streamed": [], "generic": []}
    streamed = emb.embed_rows
    for _ in range(max(1, repeats)):
        for path in times:
            emb.embed_rows = streamed if path == "streamed" else Embedder.embed_rows.__get__(emb)
            root = Path(tempfile.mkdtemp(prefix="embprobe-host-"))
            gc.collect()
            try:
                t0 = time.perf_counter()
                get_features(emb, "host-bench-real", sentences, root=root, show_progress=False)
                if emb.device.type == "cuda":
                    torch.cuda.synchronize()
                times[path].append(time.perf_counter() - t0)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    del emb.embed_rows
    best = {k: min(v) for k, v in times.items()}
    out = {f"{k}_words_per_s": words / v for k, v in best.items()}
    return out | {"model": model, "device": str(emb.device), "words": words, "runs_s": times,
                  "ratio": best["generic"] / best["streamed"]}  # fmt: skip


def part_host(args) -> dict:
    """run_all's ``host`` part: every shape on ``args.sentences`` SemCor sentences (Llama-1B on half of them),
    then MiniLM's real forward through the streamed and the generic path on the same sentences."""
    from bench.bench_transformer import semcor_sentences

    sents = semcor_sentences(args.sentences)
    out = {
        "minilm": measure_shape("minilm", sents, args.repeats),
        "llama-1b": measure_shape("llama-1b", sents[: max(1, len(sents) // 2)], args.repeats),
    }
    for model in REAL:
        try:
            out[f"real-{model}"] = streamed_vs_generic(model, sents[:REAL_SENTENCES], args.repeats)
        except Exception as exc:  # noqa: BLE001 - MiniLM's package missing (a GPU box): the rest still counts
            out[f"real-{model}"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def print_host(host: dict) -> None:
    """One line per shape of the ``host`` part."""
    for name in SHAPES:
        r = host.get(name, {})
        if "host_words_per_s" not in r:
            print(f"host {name}: not measured ({host.get('error') or r.get('error', 'no result')})")
            continue
        print(
            f"host {name} ({r['shape']}, {r['device']}): {r['host_words_per_s']:,.0f} words/s "
            f"({r['us_per_word']:.1f} µs/word, tokenizer {r['tokenize_us_per_word']:.1f}), "
            f"{r['feature_mb_per_s']:,.0f} MB/s of features, {r['words']:,} words, "
            f"peak RSS {r['host_peak_rss_mb']:,.0f} MB"
        )
    for model in REAL:
        real = host.get(f"real-{model}", {})
        if "ratio" in real:
            print(
                f"{model} real forward ({real['device']}, {real['words']:,} words): streamed "
                f"{real['streamed_words_per_s']:,.0f} words/s, generic {real['generic_words_per_s']:,.0f}: "
                f"{real['ratio']:.2f}x"
            )
        elif real:
            print(f"{model} real forward: not measured ({real.get('error')})")
