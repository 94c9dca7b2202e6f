"""ELMo extraction speed: batched (``ElmoEmbedder.embed``) vs one sentence at a time.

    python bench/bench_elmo.py [--model elmo-small] [--sentences 2000] [--max-tokens 4096]
    python bench/bench_elmo.py --char-ids [--sentences 8000]     # character ids only (no model run)

Both paths run the same model on the same SemCor sentences; the naive loop calls the biLM once
per sentence (what a plain "for sentence in corpus" extraction does). Prints words/s of each, the
ratio, the largest difference between the two paths' vectors, and peak RSS. Not a test.
``--char-ids`` times the character ids of the same sentences in the embedder's batches: the old
per-word Python loop (the embedder's, with its per-word cache) against ``batch_to_ids``.
``bench_elmo()`` is importable for the project-wide benchmark.
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


def bench_elmo(emb, sentences: list[list[str]], repeats: int = 1) -> dict[str, float]:
    """words/s of batched vs one-at-a-time extraction, their max abs difference, peak RSS of each path."""
    from bench.measure import PeakRSS, process_peak_mb

    n_words = sum(len(s) for s in sentences)
    emb.embed(sentences[:200])  # warm-up: lazy init, and the first large batches grow the heap
    for sentence in sentences[:20]:
        emb.layers([sentence])
    t_batched = t_naive = 0.0
    for _ in range(repeats):  # interleaved, so a busy machine slows both alike
        with PeakRSS() as m_batched:
            t0 = time.perf_counter()
            batched = emb.embed(sentences)
            t_batched += time.perf_counter() - t0
        with PeakRSS() as m_naive:
            t0 = time.perf_counter()
            naive = []
            for s in sentences:
                layers, _ = emb.layers([s])  # (L+1, 1, T, 2D)
                naive.append(layers[:, 0].numpy())
            t_naive += time.perf_counter() - t0
    t_batched, t_naive = t_batched / repeats, t_naive / repeats
    diff = max(float(np.abs(b.vectors - v).max()) for b, v in zip(batched, naive))
    return {
        "words": n_words,
        "sentences": len(sentences),
        "naive_words_per_s": n_words / t_naive,
        "batched_words_per_s": n_words / t_batched,
        "naive_s": t_naive,
        "batched_s": t_batched,
        "speedup": t_naive / t_batched,
        "max_abs_diff": diff,
        **m_batched.as_dict("batched"),
        **m_naive.as_dict("naive"),
        "peak_rss_mb": process_peak_mb(),
    }


def bench_char_ids(sentences: list[list[str]], max_tokens: int = 4096, repeats: int = 3) -> dict[str, float]:
    """Seconds to build the char ids of ``sentences`` in the embedder's batches: per-word loop vs vectorised.

    The loop is the code before issue 33 (``convert_word_to_char_ids`` per word, a cache of distinct
    words kept across calls, as the embedder had it); both must give identical ids. Best of ``repeats``.
    """
    from models.elmo.characters import ElmoCharacterMapper, batch_to_ids
    from models.elmo.embedder import pack_by_length

    batches = [[sentences[i] for i in b] for b in pack_by_length(list(map(len, sentences)), max_tokens)]

    def per_word_loop(batch: list[list[str]], cache: dict[str, list[int]]) -> np.ndarray:
        ids = np.zeros((len(batch), max(map(len, batch)), 50), dtype=np.int64)
        for b, s in enumerate(batch):
            for t, w in enumerate(s):
                if w not in cache:
                    cache[w] = ElmoCharacterMapper.convert_word_to_char_ids(w)
                ids[b, t] = cache[w]
        return ids

    t_loop = t_vec = float("inf")
    for _ in range(repeats):  # interleaved; the loop's cache starts empty each time, as in a fresh process
        cache: dict[str, list[int]] = {}
        t0 = time.perf_counter()
        old = [per_word_loop(b, cache) for b in batches]
        t_loop = min(t_loop, time.perf_counter() - t0)
        t0 = time.perf_counter()
        new = [batch_to_ids(b) for b in batches]
        t_vec = min(t_vec, time.perf_counter() - t0)
    if not all(np.array_equal(o, n.numpy()) for o, n in zip(old, new)):
        raise AssertionError("vectorised character ids differ from the per-word loop")
    return {"batches": len(batches), "loop_s": t_loop, "vectorised_s": t_vec, "speedup": t_loop / t_vec}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="elmo-small", help="registry name or an ELMo asset directory")
    p.add_argument("--sentences", type=int, default=2000)
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--char-ids", action="store_true", help="time only the character ids (old loop vs vectorised)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.char_ids:
        sentences = semcor_sentences(args.sentences)
        r = bench_char_ids(sentences, args.max_tokens)
        words = sum(map(len, sentences))
        print(f"character ids of {len(sentences)} SemCor sentences, {words} words, {r['batches']} batches")
        print(f"per-word loop (before): {r['loop_s']:.3f} s; batch_to_ids (after): {r['vectorised_s']:.3f} s")
        print(f"speedup {r['speedup']:.1f}x; identical ids")
        return 0
    from models.allocator import reuse_freed_memory
    from models.registry import load_embedder

    reuse_freed_memory()

    if Path(args.model).is_dir():  # an asset directory outside assets/
        from models.elmo.embedder import load_elmo_asset

        model = Path(args.model)
        emb = load_elmo_asset(model.name, assets_dir=model.parent)
    else:
        emb = load_embedder(args.model)
    emb.max_tokens = args.max_tokens
    sentences = semcor_sentences(args.sentences)
    r = bench_elmo(emb, sentences)
    print(
        f"{args.model} on {emb.device} ({torch.get_num_threads()} threads), {r['sentences']} SemCor sentences, "
        f"{r['words']} words"
    )
    print(f"naive one-at-a-time: {r['naive_words_per_s']:.0f} words/s")
    print(f"batched (max_tokens={args.max_tokens}): {r['batched_words_per_s']:.0f} words/s")
    print(f"max |batched - naive| = {r['max_abs_diff']:.2e}; peak RSS {r['peak_rss_mb']:.0f} MB")
    print(f"speedup {r['speedup']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
