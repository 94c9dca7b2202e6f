"""The ELMo biLM trainer's loop: the steps from a ``TrainState`` (warm-up and cosine learning rate, clipping,
a log line and a checkpoint now and then, ``--max-minutes``), what a checkpoint holds, and the held-out
perplexity. ``models/train/elmo.py`` is its command line.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from models.elmo.lm import BiLMLanguageModel, perplexity
from models.train.common import rng_states, warn_short_schedule
from models.train.elmo_data import BatchEncoder, make_batches


@torch.inference_mode()
def evaluate(
    lm: BiLMLanguageModel,
    encoder: BatchEncoder,
    sentences: Sequence[Sequence[str]],
    batch_tokens: int,
    device: torch.device,
) -> dict[str, float]:
    """Held-out perplexity of each direction: exp(total NLL / number of targets)."""
    was_training = lm.training
    lm.eval()
    fwd = bwd = n = 0.0
    for batch in make_batches(sentences, batch_tokens, seed=None):
        chars, words = encoder([sentences[i] for i in batch])
        out = lm(chars.to(device), words.to(device))
        fwd += float(out["forward_nll"])
        bwd += float(out["backward_nll"])
        n += float(out["num_targets"])
    lm.train(was_training)
    return {
        "ppl_forward": perplexity(fwd, n),
        "ppl_backward": perplexity(bwd, n),
        "nll_forward": fwd / max(n, 1),
        "nll_backward": bwd / max(n, 1),
        "targets": int(n),
    }


def checkpoint_state(
    lm,
    optimizer,
    *,
    step: int,
    epoch: int,
    position: int,
    tokens_seen: int,
    wall_time_s: float,
    config: dict,
    vocab: list[str],
    setup: dict | None = None,
) -> dict:
    """What ``--resume`` needs, as tensors and plain data only (it loads with ``weights_only=True``); ``setup``: the
    options and vocabulary it was trained with (``models.train.common.training_setup``)."""
    return {
        "setup": setup,
        "model": lm.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "epoch": int(epoch),
        "position": int(position),
        "tokens_seen": int(tokens_seen),
        "wall_time_s": float(wall_time_s),
        **rng_states(),
        "config": json.loads(json.dumps(config)),
        "vocab": list(vocab),
    }


@dataclass
class TrainState:
    """Where a run is: steps and epochs done, the next batch of the epoch, tokens seen, the wall time of the
    processes before this one (a resumed run), and whether ``--max-minutes`` stopped it."""

    step: int = 0
    epoch: int = 0
    position: int = 0
    tokens_seen: int = 0
    elapsed_before: float = 0.0
    stopped_early: bool = False


def lr_schedule(cfg: dict, args: argparse.Namespace) -> Callable[[int], float]:
    """The learning rate at a step: linear warm-up over ``--warmup`` steps, then a cosine down to 5 %."""
    warn_short_schedule(args.steps, args.warmup)

    def lr_at(step: int) -> float:
        if step < args.warmup:
            return cfg["lr"] * (step + 1) / args.warmup
        progress = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
        return cfg["lr"] * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))

    return lr_at


def train_steps(
    lm: BiLMLanguageModel,
    optimizer: torch.optim.Optimizer,
    encoder: BatchEncoder,
    train: list,
    cfg: dict,
    args: argparse.Namespace,
    state: TrainState,
    device: torch.device,
    write_checkpoint: Callable[[float], None],
) -> float:
    """Train from ``state`` (updated in place) to ``--steps`` or ``--max-minutes``, a checkpoint every
    ``--checkpoint-minutes``, a log line every ``--log-every`` steps; returns the run's wall time (s)."""
    lr_at = lr_schedule(cfg, args)
    t_start = last_ckpt = time.time()
    window_loss = window_fwd = window_bwd = window_n = 0.0
    window_tokens, window_t0 = 0, time.time()
    lm.train()
    while state.step < args.steps:
        batches = make_batches(train, cfg["batch_tokens"], seed=args.seed * 1000 + state.epoch)
        while state.position < len(batches) and state.step < args.steps:
            sents = [train[i] for i in batches[state.position]]
            chars, words = encoder(sents)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(state.step)
            out = lm(chars.to(device, non_blocking=True), words.to(device, non_blocking=True))
            optimizer.zero_grad(set_to_none=True)
            out["loss"].backward()
            torch.nn.utils.clip_grad_norm_(lm.parameters(), args.clip_norm)
            optimizer.step()
            state.step += 1
            state.position += 1
            n_tok = sum(len(s) for s in sents)
            state.tokens_seen += n_tok
            window_tokens += n_tok
            window_loss += out["loss"].item()
            window_fwd += float(out["forward_nll"])
            window_bwd += float(out["backward_nll"])
            window_n += float(out["num_targets"])
            if state.step % args.log_every == 0:
                dt = time.time() - window_t0
                print(
                    f"step {state.step}/{args.steps} epoch {state.epoch} loss {window_loss / args.log_every:.3f} "
                    f"ppl fwd {perplexity(window_fwd, window_n):.1f} bwd {perplexity(window_bwd, window_n):.1f} "
                    f"lr {lr_at(state.step - 1):.2e} {window_tokens / dt:.0f} tok/s "
                    f"elapsed {(state.elapsed_before + time.time() - t_start) / 60:.1f} min",
                    flush=True,
                )
                window_loss = window_fwd = window_bwd = window_n = 0.0
                window_tokens, window_t0 = 0, time.time()
            if time.time() - last_ckpt > args.checkpoint_minutes * 60:
                write_checkpoint(state.elapsed_before + time.time() - t_start)
                last_ckpt = time.time()
            if args.max_minutes is not None and state.elapsed_before + time.time() - t_start > args.max_minutes * 60:
                state.stopped_early = True
                break
        if state.stopped_early:
            break
        if state.position >= len(batches):
            state.epoch, state.position = state.epoch + 1, 0
    return state.elapsed_before + time.time() - t_start
