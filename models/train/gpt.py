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
perplexity is exp(mean NLL) over every predicted token of the held-out split but the ``<s>`` that always
follows ``</s>`` (``<unk>`` and ``</s>`` are targets, as in word-level WikiText perplexities).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from corpora.cli_help import state_defaults
from corpora.lm_corpus import load_lm_corpus
from corpora.paths import DataMissingError
from models.assets import ASSETS, CARD_FILE, check_replaceable, writing_folder
from models.base import default_device
from models.train.common import (
    CheckpointError,
    check_heldout,
    check_setup,
    check_steps_left,
    check_trained,
    device_arg,
    machine_description,
    nonnegative_float,
    nonnegative_int,
    note_earlier_checkpoint,
    positive_float,
    positive_int,
    restore_rng_states,
    resume_checkpoint,
    rng_states,
    save_checkpoint,
    training_setup,
    utc_now,
    warn_short_schedule,
)
from models.train.gpt_lm import build_model, build_word_tokenizer, encode_stream, evaluate, make_optimizer, train_steps


# ----------------------------------------------------------------------------- CLI
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m models train gpt", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--out", default=None, help="output dir (weights, tokenizer, model_card.json; default: assets/gpt-small)"
    )
    p.add_argument("--name", default=None, help="model name in the card (default: out dir name)")
    p.add_argument("--vocab-size", type=positive_int, default=20_000)
    p.add_argument("--cased", action="store_true", help="keep case (default: lowercase words)")
    p.add_argument("--min-count", type=nonnegative_int, default=2)
    p.add_argument("--max-sentences", type=positive_int, default=None, help="use only the first N corpus sentences")
    p.add_argument("--d-model", type=positive_int, default=128)
    p.add_argument("--layers", type=positive_int, default=4)
    p.add_argument("--heads", type=positive_int, default=4)
    p.add_argument("--context", type=positive_int, default=128)
    p.add_argument("--dropout", type=nonnegative_float, default=0.1)
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--steps", type=positive_int, default=3000)
    p.add_argument("--lr", type=positive_float, default=2e-3)
    p.add_argument("--warmup", type=nonnegative_int, default=200)
    p.add_argument("--weight-decay", type=nonnegative_float, default=0.01)
    p.add_argument("--clip", type=positive_float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    p.add_argument("--device", type=device_arg, default=None, help="cuda / cpu (default: cuda when present)")
    p.add_argument(
        "--max-minutes",
        type=positive_float,
        default=None,
        help="wall-time budget: the LR schedule follows elapsed time and training stops when spent "
        "(for an exactly reproducible run give --steps only)",
    )
    p.add_argument("--checkpoint-every", type=nonnegative_int, default=250, help="0: never")
    p.add_argument("--resume", action="store_true", help="continue from <out>/checkpoint.pt")
    p.add_argument("--eval-max-tokens", type=positive_int, default=None, help="cap held-out tokens (default: all)")
    p.add_argument("--log-every", type=nonnegative_int, default=50)
    args = state_defaults(p).parse_args(list(argv))
    if args.d_model % args.heads:
        p.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}")
    if args.dropout >= 1:
        p.error(f"--dropout must be below 1, got {args.dropout}")
    return args


#: The training steps whose mean loss the card reports as ``final_loss`` (a checkpoint keeps them for a resume).
RECENT = 100


def checkpoint_state(
    model,
    optimizer,
    rng: np.random.Generator,
    step: int,
    wall_time_s: float,
    setup: dict | None = None,
    recent_losses: Sequence[float] = (),
) -> dict:
    """What ``--resume`` needs, as tensors and plain data only (it loads with ``weights_only=True``); ``setup``: the
    options and vocabulary it was trained with (``models.train.common.training_setup``); ``recent_losses``: the last
    ``RECENT`` steps' losses (a resumed run's card averages them as an uninterrupted run's does)."""
    return {
        "recent_losses": [float(x) for x in recent_losses[-RECENT:]],
        "setup": setup,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": json.loads(json.dumps(rng.bit_generator.state)),  # numpy's state: a dict of str/int
        **rng_states(),
        "step": int(step),
        "wall_time_s": float(wall_time_s),
    }


def model_card(
    name: str,
    args: argparse.Namespace,
    command: str,
    tokenizer,
    train: np.ndarray,
    heldout: np.ndarray,
    n_params: int,
    steps_done: int,
    losses: list[float],
    nll: float,
    wall: float,
    device: torch.device,
) -> dict:
    """The asset's model card: the corpus and vocabulary, the shape, the steps, the held-out perplexity, the command."""
    final_loss = float(np.mean(losses[-min(len(losses), RECENT) :])) if losses else float("nan")
    lowercase, unk = not args.cased, tokenizer.get_vocab()["<unk>"]
    ppl = math.exp(nll)
    return {
        "name": name,
        "family": "gpt",
        "corpus": "corpora.lm_corpus DEFAULT_SOURCES (NLTK text corpora + WikiText-103 valid/test)"
        + (f", first {args.max_sentences} sentences" if args.max_sentences else ""),
        "corpus_tokens": int(len(train)),
        "heldout_tokens": int(len(heldout)),
        "vocab_size": len(tokenizer),
        "lowercase": lowercase,
        "unk_rate_heldout": float(np.mean(heldout == unk)) if len(heldout) else None,
        "params": int(n_params),
        "dim": args.d_model,
        "layers": args.layers + 1,
        "transformer_layers": args.layers,
        "heads": args.heads,
        "context": args.context,
        "steps": steps_done,
        "planned_steps": args.steps,
        "batch_size": args.batch_size,
        "tokens_seen": int(steps_done * args.batch_size * args.context),
        "wall_time_s": round(wall, 1),
        "final_loss": round(final_loss, 4),
        "heldout_nll": round(nll, 4),
        "perplexity": round(ppl, 2),
        "seed": args.seed,
        "heldout_split_seed": 0,  # the corpus split is the same for every --seed (models.train.gpt: as ELMo's)
        "command": command,
        "date": utc_now(),
        "machine": machine_description() + f", trained on {device}; load average at the end {os.getloadavg()[0]:.1f}",
    }


def output_folder(args: argparse.Namespace) -> Path:
    """``--out``, else the project's ``assets/gpt-small`` (from any working folder, not ``./assets``)."""
    return Path(args.out) if args.out else ASSETS / "gpt-small"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    warn_short_schedule(args.steps, args.warmup)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device) if args.device else default_device()
    out = check_replaceable(output_folder(args))  # before the training, not after it
    name = args.name or out.name
    command = "python -m models train gpt " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    t_start = time.time()

    try:
        corpus = load_lm_corpus(
            lowercase=False,
            min_count=args.min_count,
            max_sentences=args.max_sentences,  # held-out split: seed 0, as ELMo's
        )
    except DataMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lowercase = not args.cased
    tokenizer = build_word_tokenizer(corpus.vocab, args.vocab_size, lowercase=lowercase)
    train = encode_stream(corpus.train, tokenizer, lowercase)
    heldout = encode_stream(corpus.heldout, tokenizer, lowercase)
    check_heldout(len(heldout) - 1)  # every token but the first is a target
    out.mkdir(parents=True, exist_ok=True)  # its checkpoint.pt while training
    unk = tokenizer.get_vocab()["<unk>"]
    print(
        f"corpus: {len(corpus.train):,} train sentences ({len(train):,} tokens incl. <s> </s>), "
        f"{len(corpus.heldout):,} held-out ({len(heldout):,} tokens); vocab {len(tokenizer):,}; "
        f"<unk> rate train {np.mean(train == unk):.2%} held-out {np.mean(heldout == unk):.2%}",
        flush=True,
    )
    if len(train) <= args.context:
        print(f"error: training stream ({len(train)} tokens) shorter than the context {args.context}", file=sys.stderr)
        return 2

    model = build_model(
        len(tokenizer), args.d_model, args.layers, args.heads, args.context, args.dropout, tokenizer
    ).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model: GPT-2 {args.layers} layers, {args.heads} heads, d={args.d_model}, context {args.context}, "
        f"{n_params:,} parameters, device {device}",
        flush=True,
    )
    optimizer = make_optimizer(model, args.lr, args.weight_decay)
    rng = np.random.default_rng(args.seed)
    start_step, prior_time, recent = 0, 0.0, []  # recent: the losses of the steps before this process's
    ckpt_path = out / "checkpoint.pt"
    setup = training_setup(args, [t for t, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])])
    note_earlier_checkpoint(ckpt_path, args.resume)
    if args.resume:

        def restore(state: dict) -> tuple[int, float]:
            check_setup(ckpt_path, state.get("setup"), setup)
            check_steps_left(args.steps, int(state["step"]))
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            rng.bit_generator.state = state["rng"]
            restore_rng_states(state)
            recent.extend(state.get("recent_losses", []))
            return int(state["step"]), float(state["wall_time_s"])

        try:
            start_step, prior_time = resume_checkpoint(ckpt_path, restore, device)
        except CheckpointError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"resumed from {ckpt_path} at step {start_step}", flush=True)

    def on_step(step: int, loss: float, opt, gen) -> None:
        recent.append(loss)
        if args.checkpoint_every and step % args.checkpoint_every == 0 and step < args.steps:
            wall = prior_time + time.time() - t_start
            save_checkpoint(ckpt_path, checkpoint_state(model, opt, gen, step, wall, setup, recent))

    losses = train_steps(
        model,
        train,
        args.steps - start_step,
        batch_size=args.batch_size,
        context=args.context,
        lr=args.lr,
        warmup=args.warmup,
        weight_decay=args.weight_decay,
        clip=args.clip,
        device=device,
        start_step=start_step,
        optimizer=optimizer,
        rng=rng,
        log_every=args.log_every,
        on_step=on_step,
        total_steps=args.steps,
        max_seconds=None if args.max_minutes is None else args.max_minutes * 60,
        prior_seconds=prior_time,  # a resumed run's schedule goes on from the time already spent
    )
    steps_done = start_step + len(losses)
    bos = tokenizer.get_vocab()["<s>"]  # not a target: it always follows </s>
    nll, n_eval = evaluate(model, heldout, args.context, device, max_tokens=args.eval_max_tokens, skip=bos)
    ppl = math.exp(nll)
    print(f"held-out: {n_eval:,} predicted tokens, mean NLL {nll:.4f}, perplexity {ppl:.2f}", flush=True)

    check_trained(model, [nll])
    wall = prior_time + time.time() - t_start
    card = model_card(name, args, command, tokenizer, train, heldout, n_params, steps_done, recent, nll, wall, device)
    with writing_folder(out) as folder:  # whole, in place of the old folder and its checkpoint.pt
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
        load_file(str(folder / "model.safetensors"))  # fail loudly now, not in the app, if the write was bad
        (folder / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
    print(f"wrote {out}/ (model.safetensors, tokenizer, model_card.json) in {wall:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
