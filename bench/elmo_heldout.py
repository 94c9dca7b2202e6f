"""Held-out perplexity of an ELMo asset's two language models, as training reports it (``models.train.elmo_loop``).

    python bench/elmo_heldout.py                    # assets/elmo-small, the LM corpus's held-out 1 %, pieces ≤ 50

Used to re-evaluate elmo-small after the backward loss was fixed (docs/models.md, "ELMo-small: how it was trained").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import run_command
from corpora.lm_corpus import load_lm_corpus
from models.elmo.checkpoint import load_language_model
from models.train.elmo_data import BatchEncoder, chop
from models.train.elmo_loop import evaluate


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--asset",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "assets" / "elmo-small",
        help="folder with options.json, model and softmax (default: the repository's assets/elmo-small)",
    )
    p.add_argument("--max-len", type=int, default=50, help="held-out pieces of at most this many tokens")
    p.add_argument("--batch-tokens", type=int, default=3200)
    args = p.parse_args(argv)
    lm, vocab = load_language_model(args.asset)
    heldout = chop(load_lm_corpus().heldout, args.max_len)
    metrics = evaluate(lm, BatchEncoder(vocab), heldout, args.batch_tokens, torch.device("cpu"))
    print({k: round(v, 2) if isinstance(v, float) else v for k, v in metrics.items()})
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
