"""The projector's tools, after TensorFlow's Embedding Projector and LIT: a clicked point, its nearest
neighbours in the ORIGINAL space, custom axes from two word pairs, a whole vocabulary slice, labels.

- **Neighbours** (:func:`neighbour_frame`) are cosine neighbours of the full-dimensional vectors, never
  distances on the 2-D map: a projection (PCA keeps two directions of fifty; t-SNE/UMAP bend distances)
  puts far points side by side, so the table is what the point's neighbourhood really is.
- **Custom axes** (:func:`custom_coords`): a point's x is its projection on the unit vector from one
  end's vector to the other's (``man → woman``), y the same for a second pair; the Projector's "custom"
  projection. An end is a word's own vector when the model has one (:func:`endpoint_vector`'s
  ``lookup``), else the centroid of the points that match it (exactly on the label, else the points holding it
  as a word, the columns named; ``re:PATTERN`` as the search box reads it).
- **A vocabulary slice** (:func:`vocabulary_slice`): ``count`` words from a frequency rank of a static
  model's vocabulary (GloVe and word2vec list words by frequency), punctuation and numbers skipped on
  request, drawn with WebGL.
- **A clicked point** (:func:`clicked_index`): the point index a plotly selection event names (the
  scatter's ``customdata``), shared by the projector and the Polysemy explorer so a click and a link
  (``?pick=``) restore the same selection.

    rows = vocabulary_slice(emb.vocab, start=0, count=5000)
    xy = custom_coords(X, unit_direction(v_man, v_woman), unit_direction(v_bad, v_good))
    table = neighbour_frame(X, meta, i=12, k=10)

Nothing here imports streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from viz.points import search_mask
from viz.projection import cosine_neighbours
from viz.text import InputError, counted, shorten

MAX_SLICE = 20_000
LABEL_COLUMNS = ("word", "label", "sense")
MAX_LABELS = 1_500  # text labels beyond this many points are unreadable and slow the browser


def is_word(token: str) -> bool:
    """A vocabulary entry with a letter (``the``, ``n't``), not punctuation or a number (``,``, ``1990``)."""
    return any(ch.isalpha() for ch in token)


def vocabulary_slice(words: Sequence[str], start: int = 0, count: int = 5000, *, words_only: bool = True) -> np.ndarray:
    """Row indices of ``count`` vocabulary entries from rank ``start`` (0-based) on, in rank order.

    ``words_only`` skips entries without a letter (they are counted in ``start`` but not in ``count``).
    Fewer rows come back when the vocabulary ends first.
    """
    n = len(words)
    if not 0 <= start < n:
        raise InputError(f"The slice starts at rank {start + 1:,}, but the vocabulary has {n:,} words.")
    if not 2 <= count <= MAX_SLICE:
        raise InputError(f"Project between 2 and {MAX_SLICE:,} words (asked for {count:,}).")
    rows: list[int] = []
    for i in range(start, n):
        if not words_only or is_word(words[i]):
            rows.append(i)
            if len(rows) == count:
                break
    if len(rows) < 2:
        raise InputError("Fewer than two words in this slice of the vocabulary; start at a lower rank.")
    return np.asarray(rows, np.int64)


def slice_metadata(words: Sequence[str], rows: np.ndarray) -> pd.DataFrame:
    """One row per projected word: its frequency rank (1-based) and the word."""
    return pd.DataFrame({"rank": np.asarray(rows) + 1, "word": [words[i] for i in rows]})


def unit_direction(a: np.ndarray, b: np.ndarray, name: str = "the axis") -> np.ndarray:
    """(b − a) / ‖b − a‖: the unit vector from end ``a`` to end ``b``."""
    d = np.asarray(b, np.float64) - np.asarray(a, np.float64)
    norm = float(np.linalg.norm(d))
    if not np.isfinite(norm) or norm <= 1e-12:
        raise InputError(f"The two ends of {name} are the same vector; choose two different words.")
    return d / norm


def custom_coords(X: np.ndarray, x_dir: np.ndarray, y_dir: np.ndarray) -> np.ndarray:
    """(n, 2) coordinates: each row of ``X`` projected on the unit vectors ``x_dir`` and ``y_dir``."""
    X = np.asarray(X, np.float64)
    if X.ndim != 2 or X.shape[1] != len(x_dir) or X.shape[1] != len(y_dir):
        raise ValueError(f"Vectors of shape {X.shape} and axes of {len(x_dir)}/{len(y_dir)} dimensions.")
    return (X @ np.stack([x_dir, y_dir], axis=1)).astype(np.float32)


def label_column(meta: pd.DataFrame) -> str:
    """The metadata column a point is labelled (and an axis end matched) by: word, label, sense, else the first."""
    return next((c for c in LABEL_COLUMNS if c in meta.columns), meta.columns[0])


def endpoint_vector(
    query: str, X: np.ndarray, meta: pd.DataFrame, lookup: Callable[[str], np.ndarray | None] | None = None
) -> tuple[np.ndarray, str]:
    """The vector an axis end ``query`` stands for, and how it was found (for a caption).

    ``lookup(word)``: the model's own vector of a word (None when it has none); else the centroid of the
    points whose label is ``query`` (case-insensitive), else of the points holding it as a word in any column
    (the caption names which: a substring took "he" in "the", and "money" from the senses' glosses), else of
    those a ``re:`` pattern matches.
    """
    query = (query or "").strip()
    if not query:
        raise InputError("Type a word at each end of both custom axes (e.g. man → woman).")
    if lookup is not None:
        vec = lookup(query)
        if vec is not None:
            return np.asarray(vec, np.float64), f"“{query}”: the model's vector"
    column = label_column(meta)
    labels = meta[column].astype(str).str.lower()
    mask = (labels == query.lower()).to_numpy()
    if mask.any():
        what = (
            f"the point labelled “{query}”" if mask.sum() == 1 else f"the {counted(int(mask.sum()), 'point')} labelled"
        )
    elif query.startswith("re:"):  # a pattern: as the search box reads it, in every column
        mask = search_mask(meta, query)
        what = counted(int(mask.sum()), "point") + " its search matches"
    else:  # the word as a word ("he" is not in "the"), the columns that hold it named
        word = re.compile(rf"(?<!\w){re.escape(query)}(?!\w)", re.IGNORECASE)
        hits = {c: np.array([bool(word.search(str(v))) for v in meta[c]], bool) for c in meta.columns}
        mask = np.logical_or.reduce([np.zeros(len(meta), bool), *hits.values()])
        where = " or ".join(str(c) for c, m in hits.items() if m.any())
        what = f"{counted(int(mask.sum()), 'point')} with the word “{query}” in their {where}"
    if not mask.any():
        common = ", ".join(f"“{v}”" for v in meta[column].astype(str).value_counts().index[:3])
        raise InputError(
            f"No point has the word “{query}” for a custom axis; type a word the points' {column} or text holds "
            f"(e.g. {common}), or re:PATTERN."
        )
    return np.asarray(X, np.float64)[mask].mean(axis=0), f"“{query}”: centroid of {what}"


def neighbour_frame(X: np.ndarray, meta: pd.DataFrame, i: int, k: int = 10) -> pd.DataFrame:
    """The ``k`` points nearest point ``i`` by cosine in the full space: nearest (1..k), point (1-based), cosine,
    then the points' metadata."""
    nn = cosine_neighbours(np.asarray(X), i, k)
    rows = [j for j, _ in nn]
    out = meta.iloc[rows].reset_index(drop=True)
    if "context" in out.columns:
        out["context"] = [shorten(str(c), 140) for c in out["context"]]
    lead = pd.DataFrame({"nearest": range(1, len(rows) + 1), "point": [j + 1 for j in rows]})
    lead["cosine"] = [round(s, 4) for _, s in nn]
    clash = {c: f"{c} (metadata)" for c in out.columns if c in lead.columns}  # an upload's own "point" column
    return pd.concat([lead, out.rename(columns=clash)], axis=1)


def point_labels(meta: pd.DataFrame, limit: int = MAX_LABELS, first: Sequence[int] = ()) -> list[str]:
    """Text labels for the points (the label column, shortened); only ``limit`` of them, ``first`` ones first."""
    col = meta[label_column(meta)].astype(str)
    keep = list(dict.fromkeys([int(i) for i in first if 0 <= int(i) < len(col)] + list(range(len(col)))))[:limit]
    out = [""] * len(col)
    for i in keep:
        out[i] = shorten(col.iloc[i], 24)
    return out


def clicked_index(selection: Mapping | None, n: int) -> int | None:
    """The point a plotly selection event names (``{"selection": {"points": [{"customdata": i}]}}``), or None.

    ``customdata`` is the point's index (a list or a {"0": i} mapping when it holds several values);
    points without it (the "selected" ring) and indices outside 0..n-1 name nothing.
    """
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for p in points:
        data = p.get("customdata") if isinstance(p, Mapping) else None
        if isinstance(data, Mapping):
            data = data.get("0")
        elif isinstance(data, (list, tuple)):
            data = data[0] if data else None
        try:
            i = int(data)
        except (TypeError, ValueError):
            continue
        if 0 <= i < n:
            return i
    return None
