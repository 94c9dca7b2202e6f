"""Transformer extraction speed: batched (``BertEmbedder.embed``) vs a naive one-sentence loop.

    python bench/bench_transformer.py [--model minilm] [--sentences 500] [--max-tokens N]

The naive loop is what a plain extraction does: for each sentence, the tokenizer, one
``transformers`` forward pass with ``output_hidden_states``, then word vectors pooled with a Python
loop over ``word_ids()``. The batched path sorts by length, packs padded batches by token budget
and pools with one ``index_add_`` per layer and batch. Both run the same fp32 weights on the same
SemCor sentences; prints words/s and pieces/s of each, the ratio, the largest vector difference and peak RSS.
``bench_transformer()`` is importable for the project-wide benchmark. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import run_command


def semcor_sentences(n: int) -> list[list[str]]:
    from corpora.semcor import load_semcor

    sentences, _ = load_semcor(("brown1",))
    return [s.words for s in sentences[:n] if s.words]


def _naive_inputs(emb, words: list[str]) -> tuple[dict, list[int | None]]:
    """Plain tokenizer call (special tokens included); GPT gets the BOS our embedder prepends."""
    enc = emb.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    wids = enc.word_ids()
    if emb.family == "gpt" and emb._bos() is not None:
        enc = {"input_ids": torch.cat([torch.tensor([[emb._bos()]]), enc["input_ids"]], 1)}
        wids = [None] + wids
    return {k: v.to(emb.device) for k, v in dict(enc).items()}, wids


def _pool_loop(hs: np.ndarray, wids: list[int | None], n_words: int) -> np.ndarray:
    """(L+1, T, D) piece vectors -> (L+1, W, D) word vectors, mean over each word's pieces (Python loop)."""
    out = np.zeros((hs.shape[0], n_words, hs.shape[-1]), np.float32)
    for w in range(n_words):
        idx = [i for i, x in enumerate(wids) if x == w]
        if idx:
            out[:, w] = hs[:, idx].mean(1)
    return out


def naive_embed(emb, words: list[str]) -> np.ndarray:
    """(L+1, W, D) for one sentence: plain transformers forward + per-word mean pooling loop."""
    enc, wids = _naive_inputs(emb, words)
    with torch.inference_mode():
        hs = torch.stack(emb.model(**enc, output_hidden_states=True).hidden_states)[:, 0].float().cpu().numpy()
    return _pool_loop(hs, wids, len(words))


def sorted_batch_embed(emb, sentences: list[list[str]], batch_size: int = 32) -> list[np.ndarray]:
    """The plain reference: sentences sorted by length, tokenizer padding, ``batch_size`` per forward,
    the same per-word pooling loop as ``naive_embed`` (BERT family; results in input order)."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out: list[np.ndarray | None] = [None] * len(sentences)
    for k in range(0, len(order), batch_size):
        idx = order[k : k + batch_size]
        enc = emb.tokenizer([sentences[i] for i in idx], is_split_into_words=True, padding=True, return_tensors="pt")
        with torch.inference_mode():
            hs = (
                torch.stack(
                    emb.model(
                        **{k2: v.to(emb.device) for k2, v in enc.items()}, output_hidden_states=True
                    ).hidden_states
                )
                .float()
                .cpu()
                .numpy()
            )
        for b, i in enumerate(idx):
            out[i] = _pool_loop(hs[:, b], enc.word_ids(b), len(sentences[i]))
    return out  # type: ignore[return-value]


def bench_transformer(
    emb, sentences: list[list[str]], repeats: int = 1, reference_batch: int | None = None, keep_outputs: bool = False
) -> dict:
    """words/s of batched vs naive extraction and the max abs difference of their vectors.

    ``reference_batch``: also time ``sorted_batch_embed`` with that batch size (BERT family only).
    ``keep_outputs``: put the batched ``SentenceEmbedding`` list under the key "outputs".
    Peak RSS (and CUDA memory) is measured per path with ``bench.measure.PeakRSS``.
    """
    from bench.measure import PeakRSS, process_peak_mb

    n_words = sum(len(s) for s in sentences)
    n_pieces = sum(len(ids) for ids in emb.tokenizer(sentences, is_split_into_words=True)["input_ids"])
    # Warm-up: the first large batches of a process pay for growing its heap.
    emb.embed(sentences[:200])
    for sentence in sentences[:20]:
        naive_embed(emb, sentence)
    t_batched = t_naive = t_ref = 0.0
    mem: dict = {}
    for _ in range(repeats):  # interleaved, so a busy machine slows both alike
        with PeakRSS() as m:
            t0 = time.perf_counter()
            batched = emb.embed(sentences)
            t_batched += time.perf_counter() - t0
        mem.update(m.as_dict("batched"))
        with PeakRSS() as m:
            t0 = time.perf_counter()
            naive = [naive_embed(emb, s) for s in sentences]
            t_naive += time.perf_counter() - t0
        mem.update(m.as_dict("naive"))
        if reference_batch:
            with PeakRSS() as m:
                t0 = time.perf_counter()
                ref = sorted_batch_embed(emb, sentences, reference_batch)
                t_ref += time.perf_counter() - t0
            mem.update(m.as_dict(f"sorted{reference_batch}"))
    diff = max(float(np.abs(b.vectors - v).max()) for b, v in zip(batched, naive))
    out = {
        "sentences": len(sentences),
        "words": n_words,
        "pieces_with_specials": n_pieces,
        "naive_words_per_s": repeats * n_words / t_naive,
        "batched_words_per_s": repeats * n_words / t_batched,
        "naive_pieces_per_s": repeats * n_pieces / t_naive,
        "batched_pieces_per_s": repeats * n_pieces / t_batched,
        "naive_s": t_naive / repeats,
        "batched_s": t_batched / repeats,
        "speedup": t_naive / t_batched,
        "max_abs_diff": diff,
        **mem,
        "peak_rss_mb": process_peak_mb(),
    }
    if reference_batch:
        r = f"sorted{reference_batch}"
        out.update(
            {
                f"{r}_words_per_s": repeats * n_words / t_ref,
                f"{r}_s": t_ref / repeats,
                f"{r}_speedup": t_naive / t_ref,
                f"{r}_max_abs_diff": max(float(np.abs(x - v).max()) for x, v in zip(ref, naive)),
            }
        )
    if keep_outputs:
        out["outputs"] = batched
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="minilm", help="registry name (bert/gpt family)")
    p.add_argument("--sentences", type=int, default=500)
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default: the embedder's)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reference-batch", type=int, default=0, help="also time a plain sorted batch of this size")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from models.allocator import reuse_freed_memory
    from models.registry import load_embedder

    reuse_freed_memory()

    emb = load_embedder(args.model)
    if args.max_tokens:
        emb.max_tokens = args.max_tokens
    sents = semcor_sentences(args.sentences)
    r = bench_transformer(emb, sents, args.repeats, reference_batch=args.reference_batch or None)
    print(
        f"{args.model} on {emb.device}, {r['sentences']} SemCor sentences, {r['words']} words, "
        f"{r['pieces_with_specials']} pieces; torch threads {torch.get_num_threads()}"
    )
    print(
        f"naive   (one sentence a forward): {r['naive_words_per_s']:8.0f} words/s  "
        f"{r['naive_pieces_per_s']:8.0f} pieces/s"
    )
    print(
        f"batched (max_tokens={emb.max_tokens}):     {r['batched_words_per_s']:8.0f} words/s  "
        f"{r['batched_pieces_per_s']:8.0f} pieces/s"
    )
    if args.reference_batch:
        k = f"sorted{args.reference_batch}"
        print(
            f"plain sorted batches of {args.reference_batch}:     {r[k + '_words_per_s']:8.0f} words/s  "
            f"({r[k + '_speedup']:.2f}x naive, max diff {r[k + '_max_abs_diff']:.2e})"
        )
    print(
        f"speed-up {r['speedup']:.2f}x, max |batched - naive| = {r['max_abs_diff']:.2e}, "
        f"peak RSS {r['peak_rss_mb']:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
