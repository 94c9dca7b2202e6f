"""Corpus search (exBERT's idea): the nearest contextual neighbours of one vector among ALL of SemCor's
sense-tagged occurrences at one layer, with their WordNet senses.

The vectors are those of the WSD probe's training split (``probes.tasks.wsd.sources.builtin_train``:
its piece ``layout``, its feature-cache key and kept rows): one row per sense-tagged SemCor token
(226,036), the mean of its pieces, in corpus order. The page supplies them as a callback
``piece_rows(layer)`` (``features.get_features`` with the page's model), so nothing here imports the
models or the feature cache. Once the index is built (``make index``, ``python -m features index --model M``,
the app's background build, or ``python -m probes wsd --model M``) a search reads one layer file and is
one matrix-vector product.

    index = corpus_index(sentences)                      # SemCor sentences in load_semcor() order
    Xn = corpus_vectors(layout, piece_rows, layer)       # (226036, dim) float32 unit rows
    hits = nearest(Xn, query_vector, k=20, exclude=index.row_of(si, ti))
    frame = hits_frame(hits, index, sentences, sense_name)
    frame["sense"].value_counts()                        # the page draws it as a histogram

Nothing here imports streamlit; the page caches ``corpus_index`` per process and ``corpus_vectors``
per (model, layer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from corpora.types import SemcorSentence
from viz.points import genre_of
from viz.polysemy import Occurrence, key_pos

if TYPE_CHECKING:  # the layout module imports torch; only its type is named here
    from probes.tasks.wsd.layout import PieceLayout

#: ``piece_rows(layer)``: the (rows, dim) stored rows of the WSD probe's SemCor feature-cache entry at
#: ``layer``, one per piece of a sense-tagged token (the app reads them with ``features.get_features``).
PieceRows = Callable[[int], np.ndarray]


@dataclass
class CorpusIndex:
    """Where each row of the corpus matrix comes from: (sentence, token) in SemCor, lemma and first sense."""

    sentence: np.ndarray  # (N,) index into the SemCor sentence list
    token: np.ndarray  # (N,) token index in that sentence
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


def corpus_vectors(layout: PieceLayout, piece_rows: PieceRows, layer: int) -> np.ndarray:
    """(N, dim) float32 unit vectors of every sense-tagged SemCor token at ``layer``: the mean of its
    pieces' rows ``piece_rows(layer)`` (``layout``: the WSD probe's SemCor layout)."""
    return _unit(layout.token_vectors(piece_rows(int(layer))))


def rows_vectors(layout: PieceLayout, piece_rows: PieceRows, num_layers: int, rows: Sequence[int]) -> np.ndarray:
    """(layers, len(rows), dim) float32: corpus rows ``rows`` at every layer, each the mean of its
    pieces — what ``viz.polysemy.occurrence_vectors`` computes for a SemCor occurrence, read from the
    cache (float16-rounded, as the WSD probe reads it) instead of embedding its sentence."""
    sub = layout.subset(rows)
    return np.stack([sub.token_vectors(piece_rows(j)) for j in range(num_layers)]).astype(np.float32)


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


def hits_frame(
    hits: Sequence[tuple[int, float]],
    index: CorpusIndex,
    sentences: Sequence[SemcorSentence],
    sense_name: Callable[[str], str],
    query_key: str | None = None,
) -> pd.DataFrame:
    """One row per hit: cosine, lemma, sense, POS, genre, context (eight words each side, [target] marked), source,
    the full sense key and the whole sentence (for the CSV; the page's table leaves it out); ``same sense`` (✓/✗)
    when the query's sense key is known."""
    rows = []
    for r, sim in hits:
        sent = sentences[int(index.sentence[r])]
        t = int(index.token[r])
        words = [tok.text for tok in sent.tokens]
        left, right = " ".join(words[max(0, t - 8) : t]), " ".join(words[t + 1 : t + 9])
        row = {
            "cosine": round(sim, 4),
            "lemma": index.lemma[r],
            "sense": sense_name(index.key[r]),
            "POS": key_pos(index.key[r]),
            "genre": genre_of(sent.doc),
            "context": f"{left} [{words[t]}] {right}".strip(),  # eight words each side, whole
            "source": f"{sent.doc} s{sent.snum}",
            "sense key": index.key[r],
            "sentence": Occurrence(tuple(words), t, t + 1).context(len(words)),  # whole, [target] marked
        }
        if query_key is not None:
            row["same sense"] = "✓" if index.key[r] == query_key else "✗"
        rows.append(row)
    return pd.DataFrame(rows)


def same_sense_share(hits: Sequence[tuple[int, float]], index: CorpusIndex, key: str) -> float:
    """Fraction of the hits whose first sense key is ``key`` (NaN for no hits)."""
    return float(np.mean([index.key[r] == key for r, _ in hits])) if hits else float("nan")
