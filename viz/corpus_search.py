"""Corpus search (exBERT's idea): the nearest contextual neighbours of one vector among ALL of SemCor's
sense-tagged occurrences at one layer, with their WordNet senses.

The vectors come from the feature cache the WSD probe fills (``probes.tasks.wsd.data.semcor_view`` and
``get_features(embedder, "semcor-tagged", ...)``): one row per sense-tagged SemCor token (225,415),
the mean of its pieces, in corpus order. After ``python -m probes wsd --model M`` (or the app's
"Build the index" button) a search reads one layer file and is one matrix-vector product.

    index = corpus_index(sentences)                      # SemCor sentences in load_semcor() order
    Xn = corpus_vectors(embedder, layer)                 # (225415, dim) float32 unit rows
    hits = nearest(Xn, query_vector, k=20, exclude=index.row_of(si, ti))
    frame = hits_frame(hits, index, sentences, sense_name)
    frame["sense"].value_counts()                        # the page draws it as a histogram

Nothing here imports streamlit; the page caches ``corpus_index`` per process and ``corpus_vectors``
per (model, layer).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from corpora.types import SemcorSentence
from viz.points import genre_of
from viz.polysemy import key_pos
from viz.text import shorten

DATASET_KEY = "semcor-tagged"   # the WSD probe's entry: searching reuses its cache and vice versa
ProgressFn = Callable[[float, str], None]


@dataclass
class CorpusIndex:
    """Where each row of the corpus matrix comes from: (sentence, token) in SemCor, lemma and first sense."""

    sentence: np.ndarray             # (N,) index into the SemCor sentence list
    token: np.ndarray                # (N,) token index in that sentence
    lemma: list[str]
    key: list[str]
    _rows: dict[tuple[int, int], int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.key)

    def row_of(self, sentence: int, token: int) -> int | None:
        """The corpus row of SemCor token ``token`` of sentence ``sentence`` (None: not sense-tagged)."""
        if not self._rows:
            self._rows.update({(int(s), int(t)): r for r, (s, t) in enumerate(zip(self.sentence, self.token))})
        return self._rows.get((int(sentence), int(token)))


def corpus_index(sentences: Sequence[SemcorSentence]) -> CorpusIndex:
    """Rows in the WSD probe's order: sentences in order, their sense-tagged tokens in order."""
    si, ti, lemmas, keys = [], [], [], []
    for s_i, sent in enumerate(sentences):
        for t_i, tok in enumerate(sent.tokens):
            if tok.sense_keys:
                si.append(s_i)
                ti.append(t_i)
                lemmas.append((tok.lemma or tok.text).lower())
                keys.append(tok.sense_keys[0])
    return CorpusIndex(np.asarray(si, np.int64), np.asarray(ti, np.int64), lemmas, keys)


def _unit(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, np.float32)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def is_cached(embedder, layer: int, root=None) -> bool:
    """Whether the feature cache already holds SemCor at ``layer`` for this model (no extraction needed)."""
    from features.store import feature_dir, read_meta

    directory = feature_dir(embedder.fingerprint(), DATASET_KEY, root)
    meta = read_meta(directory) if directory.is_dir() else None
    return bool(meta) and (directory / f"layer_{int(layer)}.npy").is_file()


def corpus_vectors(embedder, layer: int, *, progress: ProgressFn | None = None, root=None) -> np.ndarray:
    """(N, dim) float32 unit vectors of every sense-tagged SemCor token at ``layer`` (cache, or extracted now)."""
    from features.extract import get_features
    from probes.tasks.wsd.data import semcor_view

    layout, keep, _keys, _n = semcor_view(None)
    feats = get_features(embedder, DATASET_KEY, layout.sentences, [int(layer)], keep=keep, progress=progress,
                         show_progress=False, root=root)
    return _unit(layout.token_vectors(feats.layer(int(layer))))


def semcor_features(embedder, root=None):
    """(layout, Features) of the WSD probe's SemCor cache when it holds *every* layer of ``embedder``,
    else None — nothing is extracted here (the Polysemy explorer then embeds its sentences itself)."""
    from features.extract import get_features
    from probes.tasks.wsd.data import semcor_view

    if not all(is_cached(embedder, j, root) for j in range(embedder.num_layers)):
        return None
    layout, keep, _keys, _n = semcor_view(None)
    return layout, get_features(embedder, DATASET_KEY, layout.sentences, None, keep=keep, show_progress=False,
                                root=root)


def rows_vectors(layout, features, rows: Sequence[int]) -> np.ndarray:
    """(layers, len(rows), dim) float32: corpus rows ``rows`` at every layer, each the mean of its
    pieces — what ``viz.polysemy.occurrence_vectors`` computes for a SemCor occurrence, read from the
    cache (float16-rounded, as the WSD probe reads it) instead of embedding its sentence."""
    sub = layout.subset(rows)
    return np.stack([sub.token_vectors(features.layer(j)) for j in range(features.num_layers)]).astype(np.float32)


def nearest(Xn: np.ndarray, query: np.ndarray, k: int = 20, exclude: int | None = None) -> list[tuple[int, float]]:
    """The ``k`` rows of unit matrix ``Xn`` most cosine-similar to ``query``, nearest first (``exclude`` left out)."""
    q = np.asarray(query, np.float32).ravel()
    if q.shape[0] != Xn.shape[1]:
        raise ValueError(f"The query has {q.shape[0]} dimensions; the corpus vectors have {Xn.shape[1]}.")
    norm = float(np.linalg.norm(q))
    if norm == 0.0 or not np.isfinite(norm):
        raise ValueError("The query vector is zero (an unknown word for a static model): nothing to compare.")
    sims = Xn @ (q / norm)
    if exclude is not None:
        sims[exclude] = -np.inf
    k = max(0, min(int(k), len(sims) - (exclude is not None)))
    top = np.argpartition(-sims, k - 1)[:k] if 0 < k < len(sims) else np.arange(len(sims))[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(r), float(sims[r])) for r in top]


def hits_frame(hits: Sequence[tuple[int, float]], index: CorpusIndex, sentences: Sequence[SemcorSentence],
               sense_name: Callable[[str], str], query_key: str | None = None) -> pd.DataFrame:
    """One row per hit: cosine, lemma, sense, POS, genre, context ([target] marked), source; ``same sense``
    (✓/✗) when the query's sense key is known."""
    rows = []
    for r, sim in hits:
        sent = sentences[int(index.sentence[r])]
        t = int(index.token[r])
        words = [tok.text for tok in sent.tokens]
        left, right = " ".join(words[max(0, t - 8):t]), " ".join(words[t + 1:t + 9])
        row = {"cosine": round(sim, 4), "lemma": index.lemma[r], "sense": sense_name(index.key[r]),
               "POS": key_pos(index.key[r]), "genre": genre_of(sent.doc),
               "context": shorten(f"{left} [{words[t]}] {right}".strip(), 150), "source": f"{sent.doc} s{sent.snum}"}
        if query_key is not None:
            row["same sense"] = "✓" if index.key[r] == query_key else "✗"
        rows.append(row)
    return pd.DataFrame(rows)


def same_sense_share(hits: Sequence[tuple[int, float]], index: CorpusIndex, key: str) -> float:
    """Fraction of the hits whose first sense key is ``key`` (NaN for no hits)."""
    return float(np.mean([index.key[r] == key for r, _ in hits])) if hits else float("nan")
