"""Train the ELMo bidirectional LM on the project's LM corpus.

    python -m models train elmo                                   # elmo-small → assets/elmo-small
    python -m models train elmo --config original-like --out assets/elmo-big   # GPU-sized
    python -m models train elmo --config my_options.json ...      # any options.json (original format)
    python -m models train elmo --resume                          # continue runs/<name>/checkpoint.pt

Loss = mean forward NLL + mean backward NLL over every target of the batch (the forward LM
predicts w_1 … w_n, </S>; the backward LM predicts <S>, w_1 … w_n), with one adaptive softmax
(``torch.nn.AdaptiveLogSoftmaxWithLoss``) shared by both directions over the ``--vocab-size`` most
frequent training words (+ </S>, <S>, <UNK>). Sentences longer than ``--max-len`` tokens are cut
into pieces; batches hold sentences of similar length up to ``--batch-tokens`` tokens.
Adam, linear warm-up then cosine decay over ``--steps``, gradient-norm clipping, dropout.
A resumable checkpoint (model, optimizer, step, data position, RNG) goes to
``<run-dir>/checkpoint.pt`` every ``--checkpoint-minutes``; ``--max-minutes`` stops early with a
usable model. At the end: held-out forward/backward perplexity, the asset (options.json +
model.safetensors + softmax) and ``model_card.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from corpora.cli_help import state_defaults
from corpora.errors import RequestError
from corpora.lm_corpus import corpus_stats, load_lm_corpus
from corpora.paths import REPO_ROOT
from models.assets import ASSETS, CARD_FILE, check_replaceable, writing_folder
from models.base import default_device
from models.elmo.checkpoint import save_language_model
from models.elmo.lm import BiLMLanguageModel
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
    save_checkpoint,
    training_setup,
    utc_now,
)
from models.train.elmo_config import resolve_config
from models.train.elmo_data import BatchEncoder, build_vocab, chop
from models.train.elmo_loop import TrainState, checkpoint_state, evaluate, train_steps


# ----------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m models train elmo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", default="small", help="small | original-like | path to an options.json")
    p.add_argument("--name", default=None, help="model name (default: elmo-<config>)")
    p.add_argument("--out", default=None, help="asset directory (default: assets/<name>)")
    p.add_argument("--run-dir", default=None, help="checkpoints + softmax (default: runs/<name>)")
    p.add_argument("--steps", type=positive_int, default=4000, help="optimizer steps (cosine schedule length)")
    p.add_argument("--max-minutes", type=positive_float, default=None, help="stop early after this wall time")
    p.add_argument("--batch-tokens", type=positive_int, default=None, help="padded tokens per batch")
    p.add_argument("--max-len", type=positive_int, default=50, help="longer sentences are cut into pieces")
    p.add_argument("--vocab-size", type=positive_int, default=None, help="softmax vocabulary incl. 3 specials")
    p.add_argument("--lr", type=positive_float, default=None)
    p.add_argument("--warmup", type=nonnegative_int, default=200)
    p.add_argument("--dropout", type=nonnegative_float, default=None)
    p.add_argument("--clip-norm", type=positive_float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sentences", type=positive_int, default=None, help="use only the first N corpus sentences")
    p.add_argument("--eval-sentences", type=positive_int, default=None, help="cap on held-out sentences evaluated")
    p.add_argument("--log-every", type=positive_int, default=20)
    p.add_argument("--checkpoint-minutes", type=positive_float, default=5.0)
    p.add_argument("--resume", action="store_true", help="continue from <run-dir>/checkpoint.pt")
    p.add_argument(
        "--threads", type=positive_int, default=None, help="torch CPU threads (1 is fastest on a busy 2-core box)"
    )
    p.add_argument("--device", type=device_arg, default=None, help="cpu | cuda (default: cuda when available)")
    p.add_argument("--no-asset-softmax", action="store_true", help="leave the softmax out of the asset dir")
    args = state_defaults(p).parse_args(list(argv))
    if args.dropout is not None and args.dropout >= 1:
        p.error(f"--dropout must be below 1, got {args.dropout}")
    return args


def model_card(
    name: str,
    argv: list[str],
    args: argparse.Namespace,
    cfg: dict,
    corpus,
    stats: dict,
    lm: BiLMLanguageModel,
    vocab_size: int,
    params: tuple[int, int],
    state: TrainState,
    wall: float,
    metrics: dict,
    run_dir: Path,
    device: torch.device,
) -> dict:
    """The asset's model card: what was trained on what, how long, its held-out perplexity, the command."""
    n_bilm, n_softmax = params
    return {
        "name": name,
        "family": "elmo",
        "architecture": "char-CNN + highway + 2-layer LSTMP biLM (Peters et al. 2018), PyTorch, models/elmo",
        "corpus": "corpora.lm_corpus.load_lm_corpus(): "
        + ", ".join(corpus.sources)
        + (f" (first {args.max_sentences} sentences)" if args.max_sentences else ""),
        "corpus_tokens": stats["train_tokens"],
        "heldout_tokens": stats["heldout_tokens"],
        "tokens_seen": state.tokens_seen,
        "epochs": round(state.tokens_seen / max(1, stats["train_tokens"]), 3),
        "vocab_size": vocab_size,
        "params": n_bilm,
        "softmax_params": n_softmax,
        "dim": 2 * lm.bilm.projection_dim,
        "layers": lm.bilm.num_layers,
        "options": lm.bilm.options,
        "steps": state.step,
        "batch_tokens": cfg["batch_tokens"],
        "lr": cfg["lr"],
        "dropout": cfg["dropout"],
        "max_len": args.max_len,
        "clip_norm": args.clip_norm,
        "stopped_early": state.stopped_early,
        "wall_time_s": round(wall, 1),
        "final_loss": round(metrics["nll_forward"] + metrics["nll_backward"], 4),
        "perplexity": {
            "forward": round(metrics["ppl_forward"], 2),
            "backward": round(metrics["ppl_backward"], 2),
            "heldout_targets_per_direction": metrics["targets"],
            "definition": "exp(mean NLL) over held-out pieces (≤ max_len tokens), targets include "
            "</S> (forward) / <S> (backward) and <UNK> for words outside the softmax vocab",
        },
        "softmax_in_asset": not args.no_asset_softmax,
        "checkpoint": str(run_dir / "checkpoint.pt"),
        "command": "python -m models train elmo " + shlex.join(argv),
        "date": utc_now(),
        "machine": machine_description() + f", trained on {device}",
    }


def _saved(out_dir: Path, checkpoint: Path, steps: int) -> bool:
    """Whether ``out_dir`` holds this checkpoint's model at ``steps``: its card names the checkpoint and the steps,
    and was written after it (an older run's card of the same steps, in the same run folder, is older)."""
    card_path = out_dir / CARD_FILE
    try:
        card = json.loads(card_path.read_text())
        newer = card_path.stat().st_mtime_ns >= checkpoint.stat().st_mtime_ns
    except (OSError, ValueError):
        return False
    same = isinstance(card, dict) and Path(str(card.get("checkpoint"))).resolve() == checkpoint.resolve()
    return same and newer and card.get("steps") == steps


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    name, cfg = resolve_config(args)
    out_dir = Path(args.out) if args.out else ASSETS / name
    out_dir = check_replaceable(out_dir)  # before the training, not after it
    run_dir = Path(args.run_dir) if args.run_dir else REPO_ROOT / "runs" / name
    if run_dir.resolve() == out_dir or out_dir in run_dir.resolve().parents:  # the swap would take the run with it
        raise RequestError(
            f"--run-dir {run_dir} is inside --out {out_dir}, which is replaced whole when the model is written: "
            "give a run folder outside it (its checkpoint is what --resume reads)."
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device) if args.device else default_device()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)

    t_load = time.time()
    corpus = load_lm_corpus(max_sentences=args.max_sentences)
    stats = corpus_stats(corpus)
    train = chop(corpus.train, args.max_len)
    heldout = chop(corpus.heldout, args.max_len)
    if args.eval_sentences is not None:
        heldout = heldout[: args.eval_sentences]
    check_heldout(sum(len(piece) for piece in heldout))
    vocab = build_vocab(corpus.vocab, cfg["vocab_size"])
    encoder = BatchEncoder(vocab)
    print(
        f"corpus: {stats} ({time.time() - t_load:.1f}s); {len(train)} training pieces, softmax vocab {len(vocab)}",
        flush=True,
    )

    lm = BiLMLanguageModel(cfg["options"], len(vocab), dropout=cfg["dropout"]).to(device)
    n_bilm = sum(p.numel() for p in lm.bilm.parameters())
    n_softmax = sum(p.numel() for p in lm.softmax.parameters())
    print(
        f"model: biLM {n_bilm:,} params, softmax {n_softmax:,}; device {device}, threads {torch.get_num_threads()}",
        flush=True,
    )
    optimizer = torch.optim.Adam(lm.parameters(), lr=cfg["lr"])

    state = TrainState()
    ckpt_path = run_dir / "checkpoint.pt"
    setup = training_setup(args, vocab, resolved=cfg)
    note_earlier_checkpoint(ckpt_path, args.resume)
    if args.resume:

        def restore(ckpt: dict) -> tuple:
            check_setup(ckpt_path, ckpt.get("setup"), setup)
            # the last step's checkpoint of a run stopped in its evaluation or save: finish it (not once it is saved)
            check_steps_left(args.steps, int(ckpt["step"]), finished_ok=not _saved(out_dir, ckpt_path, args.steps))
            lm.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            restore_rng_states(ckpt)
            return ckpt["step"], ckpt["epoch"], ckpt["position"], ckpt["tokens_seen"], ckpt["wall_time_s"]

        try:
            restored = resume_checkpoint(ckpt_path, restore, device)
        except CheckpointError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        state = TrainState(*restored)
        print(
            f"resumed from {ckpt_path} at step {state.step} (epoch {state.epoch}, batch {state.position})", flush=True
        )

    def write_checkpoint(wall_time_s: float) -> None:
        save_checkpoint(
            ckpt_path,
            checkpoint_state(
                lm,
                optimizer,
                step=state.step,
                epoch=state.epoch,
                position=state.position,
                tokens_seen=state.tokens_seen,
                wall_time_s=wall_time_s,
                config=cfg,
                vocab=vocab,
                setup=setup,
            ),
        )

    wall = train_steps(lm, optimizer, encoder, train, cfg, args, state, device, write_checkpoint)
    write_checkpoint(wall)
    print(
        f"training done: {state.step} steps, {state.tokens_seen:,} tokens, {wall / 60:.1f} min"
        + (" (stopped by --max-minutes)" if state.stopped_early else ""),
        flush=True,
    )

    t_eval = time.time()
    metrics = evaluate(lm, encoder, heldout, cfg["batch_tokens"] * 2, device)
    print(
        f"held-out: ppl forward {metrics['ppl_forward']:.2f} backward {metrics['ppl_backward']:.2f} "
        f"over {metrics['targets']:,} targets per direction ({time.time() - t_eval:.0f}s)",
        flush=True,
    )

    check_trained(lm, [math.log(metrics["ppl_forward"]), math.log(metrics["ppl_backward"])])
    card = model_card(
        name, argv, args, cfg, corpus, stats, lm, len(vocab), (n_bilm, n_softmax), state, wall, metrics, run_dir, device
    )
    save_language_model(run_dir, lm, vocab, with_softmax=True)
    (run_dir / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    with writing_folder(out_dir) as folder:  # whole or not at all: never a new biLM beside the old softmax and card
        save_language_model(folder, lm, vocab, with_softmax=not args.no_asset_softmax)
        (folder / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {out_dir} ({sum(f.stat().st_size for f in out_dir.iterdir()) / 1e6:.1f} MB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
