"""Quality check for static embeddings: are WordNet synonyms closer than random word pairs?

Synonym pairs: two different single-word lemmas of the same WordNet 3.0 synset (e.g.
``car``/``automobile``), both in the model's vocabulary (exact or lower-cased; fastText n-gram
vectors are not used so every model is judged on its own vocabulary). Random pairs: the same
number of pairs of words drawn uniformly from the words that occur in those synonym pairs (so
both groups have the same word-frequency profile), excluding synonym pairs.

Reported: mean cosine of each group and the ROC AUC of cosine as a synonym-vs-random score, i.e.
the probability that a random synonym pair is more similar than a random pair (0.5 = chance).
"""

from __future__ import annotations

import argparse
import functools
import re
import sys

import numpy as np
import torch

from corpora.cli_help import state_defaults
from corpora.paths import DataMissingError, data_path
from models.registry import REGISTRY, load_embedder
from models.spec import STATIC
from models.static_embedder import StaticEmbedder

_MARKER = re.compile(r"\(\w+\)$")  # adjective position markers: galore(ip), elect(p)


@functools.lru_cache(maxsize=1)
def wordnet_synonym_pairs() -> tuple[tuple[str, str], ...]:
    """All unordered pairs of distinct alphabetic single-word lemma names sharing a synset, sorted.

    Reads the WordNet 3.0 ``data.{noun,verb,adj,adv}`` files of NLTK's ``wordnet`` corpus
    directly: the same lemma names as ``nltk.corpus.wordnet`` (syntactic markers such as
    ``(a)`` stripped), in about a second instead of the ~20 s NLTK takes to build every synset.
    """
    root = data_path("nltk_data/corpora/wordnet")  # DataMissingError with instructions if absent
    pairs: set[tuple[str, str]] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        path = root / f"data.{pos}"
        if not path.is_file():
            raise DataMissingError(f"nltk_data/corpora/wordnet/data.{pos}")
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("  "):  # license header
                    continue
                fields = line.split(" ", 4 + 2 * 100)
                n_words = int(fields[3], 16)
                names = {_MARKER.sub("", fields[4 + 2 * k]) for k in range(n_words)}
                names = sorted(n for n in names if "_" not in n and n.isalpha())
                for i, a in enumerate(names):
                    for b in names[i + 1 :]:
                        if a.lower() != b.lower():
                            pairs.add((a, b))
    return tuple(sorted(pairs))


#: Fewer synonym pairs in a vocabulary than this give no AUC (one that small would say little).
MIN_PAIRS = 10


class TooFewPairsError(ValueError):
    """The vocabulary holds too few WordNet synonym pairs for the check."""


def wordnet_similarity(
    emb: StaticEmbedder, max_pairs: int = 5000, seed: int = 0, vocab_limit: int | None = None
) -> dict:
    """Synonym-vs-random cosine check on ``emb``.

    ``vocab_limit``: use only the first N vocabulary rows (the N most frequent words for every
    model here), to compare models with different vocabulary sizes on the same footing.

    Returns a dict: n_pairs (synonym pairs used, = random pairs), n_candidate_pairs (synonym
    pairs with both words in the vocabulary), mean_cos_synonyms, mean_cos_random, auc, seed.

    Raises:
        TooFewPairsError: fewer than :data:`MIN_PAIRS` synonym pairs are in the model's vocabulary.
    """
    from sklearn.metrics import roc_auc_score  # lazy: sklearn takes seconds to import

    rng = np.random.default_rng(seed)
    cand = []
    for a, b in wordnet_synonym_pairs():
        ia, ib = emb.index(a), emb.index(b)
        if ia is not None and ib is not None and ia != ib and (vocab_limit is None or max(ia, ib) < vocab_limit):
            cand.append((ia, ib))
    cand = sorted(set(cand))
    if len(cand) < MIN_PAIRS:
        raise TooFewPairsError(f"only {len(cand)} WordNet synonym pairs are in the vocabulary of {emb.name}")
    chosen = [cand[i] for i in sorted(rng.choice(len(cand), size=min(max_pairs, len(cand)), replace=False))]
    syn_set = {tuple(sorted(p)) for p in cand}
    pool = np.array(sorted({i for p in chosen for i in p}))
    rand: list[tuple[int, int]] = []
    while len(rand) < len(chosen):
        a, b = rng.choice(pool, size=2, replace=False)
        if tuple(sorted((int(a), int(b)))) not in syn_set:
            rand.append((int(a), int(b)))

    def cosines(pairs: list[tuple[int, int]]) -> np.ndarray:
        idx = torch.tensor(pairs, dtype=torch.long, device=emb.device)  # (n, 2)
        unit = emb.unit_vectors
        return (unit[idx[:, 0]] * unit[idx[:, 1]]).sum(-1).float().cpu().numpy()

    cs, cr = cosines(chosen), cosines(rand)
    labels = np.r_[np.ones(len(cs)), np.zeros(len(cr))]
    return {
        "model": emb.name,
        "n_pairs": len(chosen),
        "n_candidate_pairs": len(cand),
        "mean_cos_synonyms": float(cs.mean()),
        "mean_cos_random": float(cr.mean()),
        "auc": float(roc_auc_score(labels, np.r_[cs, cr])),
        "seed": seed,
        "vocab_limit": vocab_limit,
    }


def card_quality(emb: StaticEmbedder, log=print) -> dict:
    """A trainer's model-card entry for the check, and its log line. A vocabulary too small for it (a corpus of a
    few sentences) is said in the card, not raised after the training: the model is still written."""
    try:
        q = wordnet_similarity(emb)
    except TooFewPairsError as exc:
        log(f" WordNet synonym check: not measured ({exc}; {MIN_PAIRS} needed)")
        return {"wordnet_synonym_auc": None, "note": f"not measured: {exc} ({MIN_PAIRS} needed)"}
    log(
        f" WordNet synonym check: AUC {q['auc']:.3f} (synonyms {q['mean_cos_synonyms']:.3f} vs random "
        f"{q['mean_cos_random']:.3f}, {q['n_pairs']} pairs)"
    )
    return {
        "wordnet_synonym_auc": round(q["auc"], 4),
        "mean_cos_synonyms": round(q["mean_cos_synonyms"], 4),
        "mean_cos_random": round(q["mean_cos_random"], 4),
        "pairs": q["n_pairs"],
    }


DEFAULT_MODELS = tuple(name for name, spec in REGISTRY.items() if spec.family == STATIC.name)  # the static zoo


def main(argv: list[str] | None = None) -> int:
    """``python -m models.quality [MODEL ...]``: the WordNet check as a Markdown table.

    Two rows of numbers per model: over its whole vocabulary, and over its 20,000 most frequent
    words (same footing for models with different vocabulary sizes).
    """
    p = argparse.ArgumentParser(prog="python -m models.quality", description=main.__doc__)
    p.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    p.add_argument("--max-pairs", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    args = state_defaults(p).parse_args(argv)
    print("| model | vocab | words used | synonym pairs | mean cos synonyms | mean cos random | AUC |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for name in args.models:
        emb = load_embedder(name)
        for limit in (None, 20_000):
            q = wordnet_similarity(emb, args.max_pairs, args.seed, vocab_limit=limit)
            print(
                f"| {name} | {len(emb):,} | {'all' if limit is None else f'top {limit:,}'} | {q['n_pairs']:,} "
                f"| {q['mean_cos_synonyms']:.3f} | {q['mean_cos_random']:.3f} | {q['auc']:.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
