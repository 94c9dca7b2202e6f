"""Contextuality (``probes.estimators.contextuality``) of every layer of one model over a corpus, as a ProbeResult.

    res = run_contextuality(load_embedder("minilm"), RunContext(limit=2000, seed=0))
    res.rows   # {"dataset": "semcor-first2000", "layer": "3", "metric": "self_similarity_adj", "value": 0.41, "n": 812}

The corpus is SemCor's first ``ctx.limit`` sentences (default 2000: every word, tagged or not; a multiword
token is its words) or any list of sentences (``corpus_sentences`` reads a text file, one sentence a
line, words split at white space). A word is its exact form (case kept); tokens without a letter or digit
(punctuation) are never measured but stay in the sentences the model sees. Features come from the
feature cache (``features.extract``), so a second run, or another seed, extracts nothing.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from probes.estimators.contextuality import METRICS, layer_measures, select_words
from probes.errors import ProbeInputError
from features.extract import get_features
from probes.registry import RunContext
from probes.results import ProbeResult

DEFAULT_LIMIT = 2000
PROBE = "contextuality"


def word_key(word: str) -> str:
    """The word a token counts as: its exact form ("The" and "the" are two inputs, and a character-level
    layer 0 gives them two vectors); "" for punctuation (no letter or digit)."""
    return word if any(c.isalnum() for c in word) else ""


def semcor_sentences(limit: int | None) -> tuple[str, list[list[str]]]:
    """(dataset name, words of SemCor's first ``limit`` sentences)."""
    from corpora.semcor import load_semcor   # imported here: the SemCor parse cache is read on demand

    sentences, _ = load_semcor()
    sentences = sentences[:limit] if limit is not None else sentences
    words = [[p for tok in s.tokens for p in tok.pieces] for s in sentences]
    return (f"semcor-first{limit}" if limit is not None else "semcor"), [w for w in words if w]


def corpus_sentences(path: str | Path, limit: int | None) -> tuple[str, list[list[str]]]:
    """(dataset name, sentences) of a UTF-8 text file, one sentence a line; ProbeInputError for a bad file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProbeInputError(f"--corpus {path}: no such file.") from None
    except UnicodeDecodeError as exc:
        raise ProbeInputError(f"--corpus {path}: not UTF-8 text (byte {exc.start}).") from None
    except OSError as exc:
        raise ProbeInputError(f"--corpus {path}: cannot read it ({exc.strerror}).") from None
    sentences = [line.split() for line in text.splitlines() if line.strip()]
    sentences = sentences[:limit] if limit is not None else sentences
    if not sentences:
        raise ProbeInputError(f"--corpus {path}: no sentences (one sentence a line, words split at spaces).")
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{path.stem}-{digest}" + (f"-first{limit}" if limit is not None else ""), sentences


def run_contextuality(embedder, ctx: RunContext = RunContext(), *, sentences: Sequence[Sequence[str]] | None = None,
                      dataset: str | None = None, words: list[str] | None = None, min_occurrences: int = 5,
                      max_occurrences: int | None = 50, max_words: int | None = 1000, pairs: int = 2000) -> ProbeResult:
    """Every metric of ``probes.estimators.contextuality.METRICS`` at every layer of ``embedder`` (see the module doc)."""
    t0 = time.perf_counter()
    if sentences is None:
        dataset, sentences = semcor_sentences(ctx.limit if ctx.limit is not None else DEFAULT_LIMIT)
    sentences = [list(map(str, s)) for s in sentences if len(s)]
    dataset = dataset or "corpus"
    lengths = np.array([len(s) for s in sentences])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sentence_of_row = np.repeat(np.arange(len(sentences)), lengths)
    keys = np.array([word_key(w) for s in sentences for w in s], dtype=object)
    try:
        selection = select_words(keys, sentence_of_row, min_occurrences=min_occurrences, max_occurrences=max_occurrences,
                                 max_words=max_words, words=words,
                                 pairs=pairs, seed=ctx.seed)
    except ValueError as exc:
        raise ProbeInputError(f"{dataset}: {exc}") from None
    feats = get_features(embedder, f"contextuality-{dataset}", sentences, show_progress=ctx.show_progress,
                         root=ctx.feature_root)
    t_feat = time.perf_counter() - t0
    ids = embedder.info.layer_ids or tuple(range(embedder.num_layers))
    rows = []
    for j in range(embedder.num_layers):
        X = np.asarray(feats.layer(j), dtype=np.float32)
        measures = layer_measures(X, selection, offsets)
        for metric in METRICS:
            value, n = measures[metric]
            rows.append({"dataset": dataset, "layer": str(ids[j]), "metric": metric,
                         "value": None if np.isnan(value) else round(value, 4), "n": n})
        if ctx.progress is not None:
            ctx.progress((j + 1) / embedder.num_layers, f"layer {ids[j]}")
    occurrences = [len(r) for r in selection.rows]
    return ProbeResult(
        embedder.name, PROBE, rows, dataset=dataset, fingerprint=embedder.fingerprint(),
        params={"limit": ctx.limit, "seed": ctx.seed, "words": words, "min_occurrences": min_occurrences,
                "max_occurrences": max_occurrences, "max_words": max_words, "pairs": pairs},
        extra={"sentences": len(sentences), "tokens": int(offsets[-1]), "words_measured": len(selection.words),
               "occurrences": int(sum(occurrences)), "median_occurrences": float(np.median(occurrences)),
               "random_pairs": int(len(selection.pairs)), "example_words": list(selection.words[:20]),
               "feature_s": round(t_feat, 1), "total_s": round(time.perf_counter() - t0, 1)})
