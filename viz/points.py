"""Points of a projection and what they are coloured by: metadata, collapsed duplicates, search.

The Polysemy explorer and the Embedding space draw occurrences (one vector each) with metadata. Three
concerns live here, none of them streamlit:

- **Collapsing identical vectors.** A static model gives every occurrence of a word form the same
  vector; projecting 37 copies of two vectors lets float noise (1e-7) decide the layout and the axes
  auto-scale to it, so noise looks like distance. :func:`collapse` finds the distinct vectors (rounded),
  the page projects only those and draws one point per distinct vector, with its count.
- **Metadata** (:func:`occurrence_metadata`): sense, part of speech, Brown genre, sentence length and
  source per occurrence, as a DataFrame; :func:`colour_groups` turns any column into legend groups
  (numbers binned, so "sentence length" is a handful of colours, not 60).
- **Search and isolate** (:func:`search_mask`): which points a query selects, by substring over the
  chosen columns (case-insensitive; ``re:`` for a regular expression, checked before use), always over
  the full text (the context column is the whole sentence, so ``re:^The`` finds sentences that start so).
  The full sense keys (``bank%1:14:00::``, a column for CSVs to join on) are read only by a query with a ``%``,
  as every key has one: "river" or "1" would otherwise match points through their keys' lemma and digits.
  A pattern runs under the ``regex`` engine with a time budget (``SEARCH_SECONDS``): ``re`` has no timeout and
  holds the interpreter's lock, so one catastrophic pattern in a link (``re:(.|.)*!``) froze every session.

    rep, inverse = collapse(X_layer)            # X_layer[rep] are the distinct vectors; inverse: point -> rep
    meta = occurrence_metadata(occs, sense_name)
    groups = colour_groups(meta, "sentence length")
    mask = search_mask(meta, "river", columns=("context", "sense"))
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import regex
from sklearn.metrics import pairwise_distances

from viz.polysemy import key_pos
from viz.text import InputError

#: Brown corpus genres (SemCor documents are named br-<letter><number>).
BROWN_GENRES = {
    "a": "press: reportage",
    "b": "press: editorial",
    "c": "press: reviews",
    "d": "religion",
    "e": "skill and hobbies",
    "f": "popular lore",
    "g": "belles-lettres",
    "h": "miscellaneous",
    "j": "learned",
    "k": "general fiction",
    "l": "mystery",
    "m": "science fiction",
    "n": "adventure",
    "p": "romance",
    "r": "humor",
}
COLOUR_COLUMNS = ("sense", "POS", "genre", "sentence length", "source")
MAX_SEARCH_CHARS = 200
SEARCH_SECONDS = 2.0  # a pattern's time over all the points, before it is refused


def genre_of(source: str) -> str:
    """Brown genre of a SemCor source ("brown1/br-a01 s12" -> "press: reportage"); "" when not SemCor."""
    m = re.search(r"br-([a-z])\d", source or "")
    return BROWN_GENRES.get(m.group(1), "?") if m else ""


#: Groups of rounded rows compared pairwise (``collapse``) up to this many: a Polysemy or projector view of
#: occurrences has hundreds; a vocabulary slice of distinct words is left to the rounding alone.
MERGE_MAX = 2000


def collapse(X: np.ndarray, decimals: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``X`` (n, dim), compared after rounding to ``decimals`` (relative to the largest |x|).

    Rounding alone splits two copies of one vector whose coordinates straddle a rounding boundary: 60 copies of two
    pasted sentences were drawn as four groups. So a group whose first row lies within the rounding's resolution
    (Euclidean, √dim · 10^-decimals of the scale) of an earlier group's representative joins it, wherever there are
    at most ``MERGE_MAX`` groups.

    Returns (rep (m,) index of each distinct row's first occurrence, in order; inverse (n,) point -> 0..m-1).
    """
    X = np.asarray(X, np.float64)
    if X.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    scale = float(np.abs(X).max()) or 1.0
    rounded = np.round(X / scale, decimals)
    _, first, inverse = np.unique(rounded, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    if 1 < len(first) <= MERGE_MAX:
        tol = np.sqrt(X.shape[1]) * 10.0**-decimals
        order = np.argsort(first, kind="stable")  # groups in order of first appearance
        close = pairwise_distances(X[first[order]] / scale) <= tol
        # each group joins the first earlier representative within the tolerance of it, never a chain: points each
        # within tol of the next (200 of them 1.3e-5 apart) would otherwise become one spanning 180 × tol
        owner = np.arange(len(order))
        for g in range(1, len(order)):
            earlier = np.flatnonzero(close[g, :g] & (owner[:g] == np.arange(g)))  # representatives only
            if earlier.size:
                owner[g] = earlier[0]
        merged = np.empty_like(owner)
        merged[order] = owner
        inverse = first[order][merged[inverse]]  # point -> its representative's row
        first = np.unique(inverse)
        inverse = np.searchsorted(first, inverse)
    order = np.argsort(first, kind="stable")  # distinct rows in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order].astype(np.int64), rank[inverse].astype(np.int64)


def coordinates_frame(meta: pd.DataFrame, coords: np.ndarray, inverse: np.ndarray) -> pd.DataFrame:
    """The Polysemy chart's CSV/JSON: one row per occurrence, numbered from 1 as the page's "#1" (``occurrence``),
    its metadata, its coordinates ``x1``…, and the marker it is drawn as (``point``, from 1: copies of one vector
    share one)."""
    coords = np.asarray(coords)
    frame = meta.assign(**{f"x{d + 1}": coords[:, d] for d in range(coords.shape[1])}, point=np.asarray(inverse) + 1)
    frame.insert(0, "occurrence", np.arange(1, len(frame) + 1))  # a copy: ``meta`` is left as it was
    return frame


def occurrence_metadata(occs: Sequence, sense_name: Callable[[str | None], str]) -> pd.DataFrame:
    """One row per occurrence: sense (or label), POS, genre, sentence length, source, context, and the gold sense
    key(s) in full (``bank%1:14:00::``; several joined by " "; "" where there is none) for a CSV to be joined on.

    The context is the whole sentence with the target in [brackets], never "…"-shortened: a search
    (``re:^The``) and a CSV see the full text; a page shortens it only where it displays it.
    """
    rows = []
    for o in occs:
        key = o.keys[0] if getattr(o, "keys", ()) else None
        rows.append(
            {
                "sense": sense_name(o.group),
                "POS": key_pos(key) if key else "?",
                "genre": genre_of(o.source) or "(not SemCor)",
                "sentence length": len(o.words),
                "source": o.source,
                "context": o.context(len(o.words)),
                "sense key": " ".join(getattr(o, "keys", ()) or ()),
            }
        )
    columns = ["sense", "POS", "genre", "sentence length", "source", "context", "sense key"]
    return pd.DataFrame(rows, columns=columns)


def colour_groups(meta: pd.DataFrame, column: str, max_groups: int = 12) -> list[str]:
    """Legend group of every row by ``column``: numbers with ≤ ``max_groups`` values one group each (MiniLM's 7
    layers are 7 colours, not 6 ranges), more binned into ≤ 6 ranges; rare text values pooled."""
    if column not in meta.columns:
        raise InputError(f"Cannot colour by “{column}”: choose one of {', '.join(map(str, meta.columns))}.")
    values = meta[column]
    if pd.api.types.is_numeric_dtype(values) and values.nunique() <= max_groups:
        return [f"{column} {v:g}" for v in values.astype(float)]
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.astype(float)
        edges = np.unique(np.quantile(numbers, np.linspace(0, 1, 7)))
        bins = pd.cut(numbers, edges, include_lowest=True, duplicates="drop")
        # each range named by the values it holds: bin edges on whole numbers ("3486–5227 | 3486–…") overlapped
        span = numbers.groupby(bins, observed=True).agg(["min", "max"])
        names = {b: f"{column} {lo:g}–{hi:g}" if lo != hi else f"{column} {lo:g}" for b, (lo, hi) in span.iterrows()}
        return [names[b] for b in bins]
    text = values.astype(str)
    counts = text.value_counts()
    if len(counts) > max_groups:
        keep = set(counts.index[: max_groups - 1])
        return [t if t in keep else f"other ({len(counts) - len(keep)} values)" for t in text]
    return list(text)


#: Columns a search reads only when its query names them by a ``%`` (see the module's notes).
KEY_COLUMNS = ("sense key",)


def search_mask(meta: pd.DataFrame, query: str | None, columns: Sequence[str] | None = None) -> np.ndarray:
    """Boolean mask of the rows matching ``query`` in any of ``columns`` (default: all but :data:`KEY_COLUMNS`,
    which a query with a ``%`` reads too).

    Plain text matches as a case-insensitive substring; ``re:PATTERN`` as a regular expression.
    An empty query selects nothing. A bad pattern or an over-long query is an InputError.
    """
    n = len(meta)
    if query is None or not query.strip():
        return np.zeros(n, bool)
    query = query.strip()
    if len(query) > MAX_SEARCH_CHARS:
        raise InputError(f"The search is {len(query)} characters long; keep it under {MAX_SEARCH_CHARS}.")
    cols = [c for c in (columns or meta.columns) if c in meta.columns]
    if columns is None and "%" not in query:
        cols = [c for c in cols if c not in KEY_COLUMNS]
    if query.startswith("re:"):
        try:
            pattern = regex.compile(query[3:], regex.IGNORECASE)
        except regex.error as exc:
            raise InputError(f"“{query[3:]}” is not a valid regular expression ({exc}).") from None
        deadline = time.monotonic() + SEARCH_SECONDS

        def match(s: str) -> bool:
            try:
                return bool(pattern.search(s, timeout=max(deadline - time.monotonic(), 1e-3)))
            except TimeoutError:
                raise InputError(
                    f"The pattern “{query[3:]}” takes more than {SEARCH_SECONDS:g} s over these points (nested "
                    "repeats such as (a|aa)+ try every way to split the text); write it more simply."
                ) from None
    else:
        needle = query.lower()
        match = lambda s: needle in s.lower()
    mask = np.zeros(n, bool)
    for c in cols:
        mask |= np.fromiter((match(str(v)) for v in meta[c]), bool, count=n)
    return mask
