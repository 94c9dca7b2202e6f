"""Held-out perplexity of a language-model asset, as its trainer reports it.

    python bench/lm_heldout.py elmo-small           # forward and backward, pieces ≤ 50 (models.train.elmo_loop)
    python bench/lm_heldout.py gpt-small            # 128-token windows over the stream (models.train.gpt_lm)
    python bench/lm_heldout.py path/to/asset        # either, told apart by its files

The LM corpus's held-out 1 % (``corpora.lm_corpus``), split as training split it. Used to re-evaluate elmo-small
after its backward loss was fixed (2026-12-06) and gpt-small after its score stopped counting the ``<s>`` that
always follows ``</s>`` (2026-12-07; both definitions printed): docs/models.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import LabError, run_command
from corpora.lm_corpus import load_lm_corpus
from models.assets import ASSETS


def elmo(asset: Path, max_len: int, batch_tokens: int) -> None:
    from models.elmo.checkpoint import load_language_model  # lazy: one family's modules
    from models.train.elmo_data import BatchEncoder, chop
    from models.train.elmo_loop import evaluate

    lm, vocab = load_language_model(asset)
    heldout = chop(load_lm_corpus().heldout, max_len)
    metrics = evaluate(lm, BatchEncoder(vocab), heldout, batch_tokens, torch.device("cpu"))
    print({k: round(v, 2) if isinstance(v, float) else v for k, v in metrics.items()})


def gpt(asset: Path) -> None:
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast  # lazy: transformers (seconds)

    from models.train.gpt_lm import encode_stream, evaluate  # lazy: one family's modules

    card = json.loads((asset / "model_card.json").read_text())
    model, tokenizer = GPT2LMHeadModel.from_pretrained(asset), PreTrainedTokenizerFast.from_pretrained(asset)
    # the split of the card's run: seed 0 since 2026-12-07, the run's --seed before
    corpus = load_lm_corpus(lowercase=False, seed=int(card.get("heldout_split_seed", card.get("seed", 0))))
    heldout = encode_stream(corpus.heldout, tokenizer, bool(card.get("lowercase", True)))
    bos = tokenizer.get_vocab()["<s>"]
    for label, skip in (("words and </s> (as training now reports)", bos), ("every token, <s> too (before)", None)):
        nll, count = evaluate(model, heldout, int(card["context"]), torch.device("cpu"), skip=skip)
        print(f"{label}: mean NLL {nll:.4f} over {count:,} targets, perplexity {math.exp(nll):.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("asset", help="an asset's name in assets/ (elmo-small, gpt-small) or its folder")
    p.add_argument("--max-len", type=int, default=50, help="ELMo: held-out pieces of at most this many tokens")
    p.add_argument("--batch-tokens", type=int, default=3200, help="ELMo: tokens per batch")
    args = p.parse_args(argv)
    asset = Path(args.asset) if Path(args.asset).is_dir() else ASSETS / args.asset
    try:
        if (asset / "options.json").is_file():
            elmo(asset, args.max_len, args.batch_tokens)
        elif (asset / "config.json").is_file() and (asset / "model_card.json").is_file():
            gpt(asset)
        else:
            raise LabError(f"{asset}: neither an ELMo asset (options.json) nor a GPT asset (config.json, model card)")
    except (OSError, ValueError, KeyError) as exc:
        raise LabError(f"{asset}: cannot evaluate it ({exc})") from exc
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
