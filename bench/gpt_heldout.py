"""Held-out perplexity of a GPT asset, as training reports it (``models.train.gpt_lm.evaluate``).

    python bench/gpt_heldout.py                     # assets/gpt-small, the LM corpus's held-out 1 % (its card's seed)

Used to re-evaluate gpt-small after the held-out score stopped counting the ``<s>`` that always follows ``</s>``
(docs/models.md, "GPT-small"). Prints the perplexity with and without those targets.
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
from models.train.gpt_lm import encode_stream, evaluate


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--asset",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "assets" / "gpt-small",
        help="folder with the weights, tokenizer and model_card.json (default: assets/gpt-small)",
    )
    args = p.parse_args(argv)
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast  # lazy: transformers (seconds)

    try:
        card = json.loads((args.asset / "model_card.json").read_text())
        model = GPT2LMHeadModel.from_pretrained(args.asset)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(args.asset)
    except (OSError, ValueError) as exc:
        raise LabError(f"{args.asset}: not a GPT asset of models train gpt ({exc})") from exc
    # the split of the card's run: seed 0 since 2026-12-07, the run's --seed before
    corpus = load_lm_corpus(lowercase=False, seed=int(card.get("heldout_split_seed", card.get("seed", 0))))
    heldout = encode_stream(corpus.heldout, tokenizer, bool(card.get("lowercase", True)))
    context, device = int(card["context"]), torch.device("cpu")
    bos = tokenizer.get_vocab()["<s>"]
    for label, skip in (("words and </s> (as training now reports)", bos), ("every token, <s> too (before)", None)):
        nll, count = evaluate(model, heldout, context, device, skip=skip)
        print(f"{label}: mean NLL {nll:.4f} over {count:,} targets, perplexity {math.exp(nll):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
