"""Train a small GPT-2-architecture causal LM on the project's LM corpus.

    python -m models train gpt --out assets/gpt-small            # the default asset
    python -m models train gpt --out runs/gpt-tiny --steps 50 --d-model 64 --max-sentences 5000

The tokenizer is word-level (the LM corpus is already tokenized): a ``tokenizers`` WordLevel model
over the ``--vocab-size`` most frequent corpus words plus ``<pad> <unk> <s> </s>``, a whitespace
pre-tokenizer and (optionally) a lowercasing normalizer, wrapped as ``PreTrainedTokenizerFast`` and
saved beside the weights so ``AutoTokenizer.from_pretrained(out)`` loads it.

Training text is the stream ``<s> w1 … wn </s> <s> …`` cut into random ``--context``-token blocks
(GPT-2 style, blocks cross sentence boundaries). AdamW, linear warm-up then cosine decay, gradient
clipping; a resumable checkpoint (model + optimizer + schedule + RNG) is written to
``<out>/checkpoint.pt`` every ``--checkpoint-every`` steps and removed at the end. The held-out
perplexity is exp(mean NLL) over every predicted token of the held-out split (``<unk>`` and ``</s>``
are targets too, as in word-level WikiText perplexities).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


# ----------------------------------------------------------------------------- tokenizer
def build_word_tokenizer(vocab: dict[str, int], max_size: int = 20_000, lowercase: bool = True):
    """Word-level fast tokenizer over the ``max_size`` most frequent words (specials included).

    vocab: word -> count. With ``lowercase`` the counts of case variants are merged and a
    Lowercase normalizer is part of the saved tokenizer, so callers may feed raw words.
    """
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    counts: dict[str, int] = {}
    for word, c in vocab.items():
        key = word.lower() if lowercase else word
        if key in SPECIALS or not key.strip():
            continue
        counts[key] = counts.get(key, 0) + int(c)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: max(0, max_size - len(SPECIALS))]
    ids = {tok: i for i, tok in enumerate(SPECIALS)}
    for word, _ in ranked:
        ids[word] = len(ids)
    tok = Tokenizer(WordLevel(vocab=ids, unk_token="<unk>"))
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    # Whitespace*Split*: the corpus is tokenized already; "don't"-style tokens stay one word.
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        model_max_length=1_000_000,
    )


def encode_stream(sentences: Iterable[Sequence[str]], tokenizer, lowercase: bool = True) -> np.ndarray:
    """``<s> w1 … wn </s>`` for every sentence, concatenated: (num_tokens,) int32.

    A dict lookup per word (not the tokenizer's batch API) because the corpus is pre-tokenized:
    identical to what the WordLevel model does, and fast for millions of words.
    """
    vocab = tokenizer.get_vocab()
    unk, bos, eos = vocab["<unk>"], vocab["<s>"], vocab["</s>"]
    out: list[int] = []
    for sent in sentences:
        out.append(bos)
        out.extend(vocab.get(w.lower() if lowercase else w, unk) for w in sent)
        out.append(eos)
    return np.asarray(out, dtype=np.int32)


# ----------------------------------------------------------------------------- model
def build_model(vocab_size: int, d_model: int = 128, n_layer: int = 4, n_head: int = 4, context: int = 128,
                dropout: float = 0.1, tokenizer=None):
    from transformers import GPT2Config, GPT2LMHeadModel

    ids = tokenizer.get_vocab() if tokenizer is not None else {}
    config = GPT2Config(
        vocab_size=vocab_size, n_positions=context, n_embd=d_model, n_layer=n_layer, n_head=n_head,
        n_inner=4 * d_model, resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
        bos_token_id=ids.get("<s>", 2), eos_token_id=ids.get("</s>", 3), pad_token_id=ids.get("<pad>", 0),
        tie_word_embeddings=True,
    )
    return GPT2LMHeadModel(config)


def lr_at(step: int, total: int, warmup: int, peak: float, floor_ratio: float = 0.1) -> float:
    """Linear warm-up to ``peak`` then cosine decay to ``floor_ratio * peak`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor_ratio + (1 - floor_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def sample_blocks(stream: np.ndarray, batch_size: int, context: int, rng: np.random.Generator) -> torch.Tensor:
    """(batch_size, context) random contiguous blocks of the token stream."""
    starts = rng.integers(0, len(stream) - context, size=batch_size)
    return torch.from_numpy(np.stack([stream[s:s + context] for s in starts]).astype(np.int64))


@torch.inference_mode()
def evaluate(model, stream: np.ndarray, context: int, device: torch.device, batch_size: int = 32,
             max_tokens: int | None = None) -> tuple[float, int]:
    """Mean NLL (nats) over the held-out stream cut into consecutive non-overlapping blocks.

    Returns (mean_nll, predicted_tokens). Every token but each block's first is a target.
    """
    model.eval()
    n_blocks = len(stream) // context
    if max_tokens is not None:
        n_blocks = min(n_blocks, max(1, max_tokens // context))
    if n_blocks == 0:  # held-out shorter than one block: one short block
        blocks = torch.from_numpy(stream.astype(np.int64))[None]
    else:
        blocks = torch.from_numpy(stream[: n_blocks * context].astype(np.int64)).view(n_blocks, context)
    total, count = 0.0, 0
    for i in range(0, len(blocks), batch_size):
        x = blocks[i:i + batch_size].to(device)
        logits = model(input_ids=x).logits.float()
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1), reduction="sum")
        total += nll.item()
        count += x[:, 1:].numel()
    model.train()
    return total / max(1, count), count


def train_steps(model, stream: np.ndarray, steps: int, *, batch_size: int, context: int, lr: float,
                warmup: int, weight_decay: float = 0.01, clip: float = 1.0, seed: int = 0,
                device: torch.device | None = None, start_step: int = 0, optimizer=None,
                rng: np.random.Generator | None = None, log_every: int = 50, on_step=None,
                total_steps: int | None = None, max_seconds: float | None = None) -> list[float]:
    """Run up to ``steps`` optimisation steps from ``start_step``; returns the per-step training losses.

    ``on_step(step, loss, optimizer, rng)`` is called after every step (checkpointing, logging).
    With ``max_seconds`` the schedule's progress is max(step fraction, time fraction) and training
    stops when the time is spent, so the cosine decay still completes on a slow or busy machine.
    """
    device = device or next(model.parameters()).device
    total_steps = total_steps or (start_step + steps)
    if optimizer is None:
        optimizer = make_optimizer(model, lr, weight_decay)
    rng = rng or np.random.default_rng(seed)
    model.train()
    losses: list[float] = []
    t0 = time.time()
    for step in range(start_step, start_step + steps):
        sched_step = step
        if max_seconds is not None:
            elapsed = time.time() - t0
            if elapsed >= max_seconds:
                print(f"time budget of {max_seconds:.0f}s spent after {step} steps", flush=True)
                break
            sched_step = max(step, int(total_steps * elapsed / max_seconds))
        for group in optimizer.param_groups:
            group["lr"] = lr_at(sched_step, total_steps, warmup, lr)
        x = sample_blocks(stream, batch_size, context, rng)
        if device.type == "cuda":
            x = x.pin_memory().to(device, non_blocking=True)
        else:
            x = x.to(device)
        # fp16/bf16 autocast only on CUDA: CPU half precision is slow and inexact.
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if log_every and (step + 1) % log_every == 0:
            recent = float(np.mean(losses[-log_every:]))
            rate = (step + 1 - start_step) * batch_size * context / (time.time() - t0)
            print(f"step {step + 1}/{total_steps}  loss {recent:.3f}  ppl {math.exp(recent):.1f}  "
                  f"lr {optimizer.param_groups[0]['lr']:.2e}  {rate:,.0f} tok/s", flush=True)
        if on_step is not None:
            on_step(step + 1, losses[-1], optimizer, rng)
    return losses


def make_optimizer(model, lr: float, weight_decay: float):
    # No decay on biases, LayerNorm weights and embeddings (the usual GPT-2 recipe).
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and "wte" not in name and "wpe" not in name else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


# ----------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m models train gpt", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="assets/gpt-small", help="output dir (weights, tokenizer, model_card.json)")
    p.add_argument("--name", default=None, help="model name in the card (default: out dir name)")
    p.add_argument("--vocab-size", type=int, default=20_000)
    p.add_argument("--cased", action="store_true", help="keep case (default: lowercase words)")
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--max-sentences", type=int, default=None, help="use only the first N corpus sentences")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--device", default=None, help="cuda / cpu (default: cuda when present)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="wall-time budget: the LR schedule follows elapsed time and training stops when spent "
                        "(for an exactly reproducible run give --steps only)")
    p.add_argument("--checkpoint-every", type=int, default=250)
    p.add_argument("--resume", action="store_true", help="continue from <out>/checkpoint.pt")
    p.add_argument("--eval-max-tokens", type=int, default=None, help="cap held-out tokens (default: all)")
    p.add_argument("--log-every", type=int, default=50)
    return p.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from safetensors.torch import load_file

    from models.base import default_device
    from corpora.lm_corpus import load_lm_corpus
    from corpora.paths import DataMissingError

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device) if args.device else default_device()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or out.name
    command = "python -m models train gpt " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    t_start = time.time()

    try:
        corpus = load_lm_corpus(lowercase=False, min_count=args.min_count, seed=args.seed,
                                max_sentences=args.max_sentences)
    except DataMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lowercase = not args.cased
    tokenizer = build_word_tokenizer(corpus.vocab, args.vocab_size, lowercase=lowercase)
    train = encode_stream(corpus.train, tokenizer, lowercase)
    heldout = encode_stream(corpus.heldout, tokenizer, lowercase)
    unk = tokenizer.get_vocab()["<unk>"]
    print(f"corpus: {len(corpus.train):,} train sentences ({len(train):,} tokens incl. <s> </s>), "
          f"{len(corpus.heldout):,} held-out ({len(heldout):,} tokens); vocab {len(tokenizer):,}; "
          f"<unk> rate train {np.mean(train == unk):.2%} held-out {np.mean(heldout == unk):.2%}", flush=True)
    if len(train) <= args.context:
        print(f"error: training stream ({len(train)} tokens) shorter than the context {args.context}", file=sys.stderr)
        return 2

    model = build_model(len(tokenizer), args.d_model, args.layers, args.heads, args.context, args.dropout,
                        tokenizer).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: GPT-2 {args.layers} layers, {args.heads} heads, d={args.d_model}, context {args.context}, "
          f"{n_params:,} parameters, device {device}", flush=True)
    optimizer = make_optimizer(model, args.lr, args.weight_decay)
    rng = np.random.default_rng(args.seed)
    start_step, prior_time = 0, 0.0
    ckpt_path = out / "checkpoint.pt"
    if args.resume:
        if not ckpt_path.exists():
            print(f"error: --resume but no checkpoint at {ckpt_path}", file=sys.stderr)
            return 2
        state = torch.load(ckpt_path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        start_step, prior_time = state["step"], state["wall_time_s"]
        print(f"resumed from {ckpt_path} at step {start_step}", flush=True)

    def on_step(step: int, loss: float, opt, gen) -> None:
        if args.checkpoint_every and step % args.checkpoint_every == 0 and step < args.steps:
            tmp = ckpt_path.with_suffix(".tmp")
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "rng": gen.bit_generator.state,
                        "torch_rng": torch.get_rng_state(), "step": step,
                        "wall_time_s": prior_time + time.time() - t_start}, tmp)
            tmp.replace(ckpt_path)  # atomic: a kill mid-write never leaves a broken checkpoint

    losses = train_steps(model, train, args.steps - start_step, batch_size=args.batch_size, context=args.context,
                         lr=args.lr, warmup=args.warmup, weight_decay=args.weight_decay, clip=args.clip,
                         device=device, start_step=start_step, optimizer=optimizer, rng=rng,
                         log_every=args.log_every, on_step=on_step, total_steps=args.steps,
                         max_seconds=None if args.max_minutes is None else args.max_minutes * 60 - prior_time)
    steps_done = start_step + len(losses)
    nll, n_eval = evaluate(model, heldout, args.context, device, max_tokens=args.eval_max_tokens)
    ppl = math.exp(nll)
    print(f"held-out: {n_eval:,} predicted tokens, mean NLL {nll:.4f}, perplexity {ppl:.2f}", flush=True)

    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    load_file(str(out / "model.safetensors"))  # fail loudly now, not in the app, if the write was bad
    wall = prior_time + time.time() - t_start
    final_loss = float(np.mean(losses[-min(len(losses), 100):])) if losses else float("nan")
    card = {
        "name": name, "family": "gpt",
        "corpus": "corpora.lm_corpus DEFAULT_SOURCES (NLTK text corpora + WikiText-103 valid/test)"
                  + (f", first {args.max_sentences} sentences" if args.max_sentences else ""),
        "corpus_tokens": int(len(train)), "heldout_tokens": int(len(heldout)),
        "vocab_size": len(tokenizer), "lowercase": lowercase,
        "unk_rate_heldout": float(np.mean(heldout == unk)) if len(heldout) else None,
        "params": int(n_params), "dim": args.d_model, "layers": args.layers + 1, "transformer_layers": args.layers,
        "heads": args.heads, "context": args.context, "steps": steps_done, "planned_steps": args.steps,
        "batch_size": args.batch_size, "tokens_seen": int(steps_done * args.batch_size * args.context),
        "wall_time_s": round(wall, 1), "final_loss": round(final_loss, 4),
        "heldout_nll": round(nll, 4), "perplexity": round(ppl, 2), "seed": args.seed,
        "command": command, "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": (f"{torch.cuda.get_device_name(0)}" if device.type == "cuda"
                    else f"{os.cpu_count()}-core CPU ({platform.machine()}), no GPU; {torch.get_num_threads()} torch "
                         f"thread(s); load average at the end {os.getloadavg()[0]:.1f}"),
    }
    (out / "model_card.json").write_text(json.dumps(card, indent=2) + "\n")
    if ckpt_path.exists():
        ckpt_path.unlink()
    print(f"wrote {out}/ (model.safetensors, tokenizer, model_card.json) in {wall:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
