"""What every trainer shares: what model cards record about the run (date, machine), argparse checks
(positive counts, an available device) and safe resumable checkpoints (``weights_only`` loading)."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import pickle
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import torch

from corpora.errors import LabError, RequestError
from models.base import check_device

T = TypeVar("T")


def machine_description() -> str:
    """E.g. '2-core CPU (x86_64), no GPU, 2 torch threads' — every model card's ``machine``."""
    gpu = f"GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no GPU"
    return f"{os.cpu_count()}-core CPU ({platform.machine()}), {gpu}, {torch.get_num_threads()} torch threads"


def utc_now() -> str:
    """Every model card's ``date``: '2026-12-06T13:45:00Z'."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ----------------------------------------------------------------------------- argument checks
# argparse ``type=`` functions: a bad value is an argparse error (usage, exit 2), never a traceback.
def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _at_least(convert, low: float, strict: bool, what: str):
    """An argparse type: ``convert(text)`` that must be > ``low`` (``strict``) or >= ``low``."""

    def check(text: str):
        value = convert(text)
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return check


positive_int = _at_least(_int, 1, False, "a positive integer")
nonnegative_int = _at_least(_int, 0, False, "0 or more")
positive_float = _at_least(_float, 0, True, "a positive number")
nonnegative_float = _at_least(_float, 0, False, "0 or more")


def device_arg(text: str) -> str:
    """``--device``'s argparse type: ``cpu``, ``cuda``, ``cuda:N``… (``models.base.check_device``)."""
    try:
        check_device(text)
    except RequestError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# ----------------------------------------------------------------------------- resumable checkpoints
class CheckpointError(LabError, RuntimeError):
    """A training checkpoint that cannot be loaded safely; the message names the file and why."""


def save_checkpoint(path: Path, state: dict) -> None:
    """Write ``state`` atomically (a kill mid-write never leaves a broken checkpoint).

    Only plain types go in (tensors, dicts, lists, tuples, str, int, float, bool, None), so
    ``load_checkpoint`` can read it with ``weights_only=True``.
    """
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:  # a full disk: torch says "unexpected pos 420736 vs 420628"
        tmp.unlink(missing_ok=True)
        raise RequestError(
            f"Could not write the training checkpoint {path} ({exc}): the training stopped; a checkpoint there "
            "before is as it was (--resume goes on from it). Free some space and run again."
        ) from None


def load_checkpoint(path: Path, map_location=None) -> dict:
    """``torch.load(..., weights_only=True)``: a checkpoint holding anything but plain data and
    tensors (e.g. a planted pickle that would run code) is refused with ``CheckpointError``."""
    path = Path(path)
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        # torch's message advises weights_only=False; keep only its diagnosis line, never that advice.
        lines = [
            ln.strip() for ln in str(exc).splitlines() if "GLOBAL" in ln or "Unsupported" in ln or "Unpickler" in ln
        ]
        detail = lines[-1] if lines else type(exc).__name__
        if "GLOBAL" not in detail:  # not a forbidden object: a damaged or foreign file
            raise CheckpointError(
                f"cannot read checkpoint {path}: not a torch checkpoint, or damaged "
                f"({detail}); delete it and start again without --resume"
            ) from None
        raise CheckpointError(
            f"refusing to load {path}: it holds objects other than tensors and plain data, which could run "
            f"code when unpickled (only checkpoints written by this trainer are accepted; delete it and start "
            f"again without --resume). {detail}"
        ) from None
    except Exception as exc:  # noqa: BLE001 — truncated, not a torch file, unreadable
        raise CheckpointError(f"cannot read checkpoint {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} is not a training checkpoint (a {type(state).__name__}, not a dict)")
    return state


#: Options that change nothing a checkpoint holds: how long and how often, where, on what. Every other option shapes
#: the corpus, its split, the vocabulary or the model, and a resumed run must have the checkpoint's.
RUN_ONLY = frozenset(
    {
        "resume",
        "steps",
        "max_minutes",
        "checkpoint_every",
        "checkpoint_minutes",
        "log_every",
        "threads",
        "device",
        "out",
        "run_dir",
        "name",
        "eval_max_tokens",
        "eval_sentences",
        "no_asset_softmax",
    }
)


def training_setup(args: argparse.Namespace, vocab: Sequence[str], resolved: dict | None = None) -> dict:
    """What a checkpoint was trained with (kept in it): every option but ``RUN_ONLY`` and a digest of the vocabulary.
    ``resolved``: the trainer's own reading of some options (the ELMo trainer's config: ``--lr`` left out is the
    config's rate), compared in their place, so an option written out at its default, or a config named by another
    path, is no change."""
    options = {k: v for k, v in sorted(vars(args).items()) if k not in RUN_ONLY}
    if resolved is not None:
        options = {k: v for k, v in options.items() if k not in resolved and k != "config"}
        options |= {f"config.{k}": v for k, v in resolved.items()}
    digest = hashlib.sha256("\n".join(vocab).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return {"options": json.loads(json.dumps(options, default=str)), "vocab": digest}


def check_setup(path: Path, saved: dict | None, now: dict) -> None:
    """Refuse to resume a checkpoint with other data, vocabulary or model options: its weights would be read with
    another tokenizer (286 of 300 token ids meant other words) and its held-out text partly trained on, exit 0.
    A checkpoint written before setups were kept (``saved`` None) is refused too: nothing in it can tell this run's
    options from others (an audit resumed one with another corpus and casing, and wrote that model, exit 0)."""
    if saved is None:
        raise CheckpointError(
            f"checkpoint {path} was written by an earlier version of the lab (before 2026-12-06), which did not keep "
            "its options, so this run's cannot be checked against them: finish it with the version that started it, "
            "or start again without --resume."
        )
    before, after = saved.get("options", {}), now["options"]
    keys = sorted(set(before) | set(after))
    differ = [
        f"--{k.replace('_', '-')} {before.get(k)!r} → {after.get(k)!r}" for k in keys if before.get(k) != after.get(k)
    ]
    if saved.get("vocab") != now["vocab"] and not differ:
        differ = ["the vocabulary built from the corpus"]
    if differ:
        raise CheckpointError(
            f"checkpoint {path} was trained with other options than this run's ({'; '.join(differ)}): resume with "
            "the checkpoint's options, or start again without --resume."
        )


def note_earlier_checkpoint(path: Path, resume: bool) -> None:
    """Say that a run started without ``--resume`` will replace ``path``'s checkpoint (it did so silently)."""
    if not resume and path.is_file():
        print(
            f"note: {path} holds an earlier run's checkpoint; this run starts over and replaces it at its first "
            "save (--resume goes on from it instead).",
            flush=True,
        )


def check_steps_left(steps: int, done: int, *, finished_ok: bool = False) -> None:
    """Refuse a resumed run with no steps left (``--steps`` at or below the checkpoint's): it trained 0 steps and
    wrote the model again as if it had. ``finished_ok``: a trainer that checkpoints its last step before it
    evaluates and saves (ELMo) resumes one at exactly ``--steps`` to do those (an interrupted evaluation or save)."""
    if steps < done or (steps == done and not finished_ok):
        raise CheckpointError(f"--steps {steps}: the checkpoint is at step {done} already; give more steps.")


def resume_checkpoint(path: Path, restore: Callable[[dict], T], map_location=None) -> T:
    """Load the checkpoint at ``path`` and ``restore(state)`` it (model, optimizer, RNGs); returns what
    ``restore`` returns (the trainer's counters).

    Raises:
        CheckpointError: no checkpoint, one ``load_checkpoint`` refuses, or one that does not fit this
            model and these options (a missing key, other tensor shapes); the message says which.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"--resume: no checkpoint at {path}")
    state = load_checkpoint(path, map_location=map_location)
    try:
        return restore(state)
    except CheckpointError:  # the trainer's own checks (``check_setup``, ``check_steps_left``) say it themselves
        raise
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(
            f"checkpoint {path} does not fit this model and options: {type(exc).__name__}: {exc}"
        ) from None


def rng_states() -> dict:
    """torch's generator states for a checkpoint: the CPU's and, once CUDA is in use, each GPU's (dropout on a GPU
    draws from the GPU's generator, so a run resumed without it differed from an uninterrupted one)."""
    states = {"torch_rng": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda_rng"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(checkpoint: dict) -> None:
    """The generators ``rng_states`` saved (loaded onto any device: each state goes back as a CPU byte tensor). A
    checkpoint with GPU states resumed without those GPUs goes on, said: its dropout draws differ from then on."""
    torch.set_rng_state(checkpoint["torch_rng"].cpu())
    cuda = checkpoint.get("cuda_rng")
    if not cuda:
        return
    if torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all([state.cpu() for state in cuda])
    else:
        print(
            f"note: the checkpoint holds {len(cuda)} GPU generator state(s) this machine cannot take; the resumed "
            "run's GPU draws (dropout) differ from an uninterrupted run's"
        )


def warn_short_schedule(steps: int, warmup: int) -> None:
    """Say so when the warm-up is not shorter than the run: the learning rate never reaches its peak or decays."""
    if warmup >= steps:
        print(
            f"warning: --warmup {warmup} is not below the run's {steps} steps: the learning rate never reaches its "
            "peak and never decays (give --warmup a tenth of --steps or less)",
            file=sys.stderr,
            flush=True,
        )


def check_heldout(targets: int, flag: str = "--max-sentences") -> None:
    """RequestError before training when the held-out split leaves nothing to score: its perplexity would be 1.0 over
    no targets (ELMo's card said so), or the evaluation would fail after the training."""
    if targets < 1:
        raise RequestError(
            f"The held-out split has no targets to score (a {flag} this small leaves it empty), so the model's "
            "perplexity could not be given: give more sentences."
        )


def check_vocabulary(words: int, pairs: int | None = None) -> None:
    """RequestError before training when the corpus leaves nothing to train on: no word seen ``--min-count`` times
    (gensim's "you must first build vocabulary" traceback), or, for GloVe, no two such words within a window
    (``pairs``: the co-occurrence non-zeros)."""
    if words < 1 or pairs == 0:
        what = "no word of it occurs --min-count times" if words < 1 else f"its {words} word(s) never co-occur"
        raise RequestError(
            f"The corpus is too small to train on: {what}. Give more sentences (--max-sentences) or a lower "
            "--min-count; no model was written."
        )


def check_trained(model: torch.nn.Module, held_out_nll: Sequence[float]) -> None:
    """RequestError before anything is written when the training diverged: a non-finite held-out loss or weight
    (the card had said "perplexity NaN", and the loader returned NaN vectors at every layer)."""
    bad = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad or not all(math.isfinite(x) for x in held_out_nll):
        where = f"; non-finite weights in {', '.join(bad[:3])}{' …' if len(bad) > 3 else ''}" if bad else ""
        raise RequestError(
            f"The training diverged (held-out loss {', '.join(f'{x:.4g}' for x in held_out_nll)}{where}): no model "
            "was written. A lower learning rate (--lr) or a longer warm-up usually helps."
        )
