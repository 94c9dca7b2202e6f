"""The Syntax page's figures: dependency trees as arcs over the words, distance matrices, depths, head heatmap.

A :class:`TreeView` holds one sentence as the structural probe sees it: its words, the words it scores
(punctuation left out, as Hewitt & Manning: UPOS PUNCT for an EWT tree, words of punctuation characters
only for a typed sentence), the probe's predicted squared distances and depths, and the gold tree when
there is one. The predicted tree is the minimum spanning tree of the predicted distances over the scored
words (``probes.estimators.tree_metrics``: the probe's own decoder and UUAS), so the page and the probe's
numbers never disagree.

- :func:`arc_figure` — gold tree above, predicted tree below, as arcs over the words; predicted edges
  green (a gold edge) or red (not one), the sentence's UUAS in the title;
- :func:`distance_figure` — predicted squared distances beside gold tree distances (scored words);
- :func:`depth_figure` — predicted depth (‖Bh‖²) and gold depth per scored word, as bars;
- :func:`sentence_choices` — the EWT sentences a search box finds.

The attention heads' heatmap is ``viz/syntax_heads.py``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from corpora.conllu import DepTree
from probes.estimators.tree_metrics import (
    Edge,
    chain_edges,
    gold_edges,
    mst_edges,
    ratio,
    scored_edges,
    tree_distances,
    uuas_counts,
)
from viz.text import InputError, escape_html

GOLD, RIGHT, WRONG, UNSCORED = "#3b5b92", "#2a9d8f", "#d62828", "#6f6f6f"


def is_punctuation(word: str) -> bool:
    """A word of punctuation characters only (Unicode category P*): what a typed sentence leaves unscored."""
    return bool(word) and all(unicodedata.category(ch).startswith("P") for ch in word)


@dataclass(frozen=True)
class TreeView:
    """One sentence, the probe's predictions and (for an EWT sentence) its gold tree."""

    words: tuple[str, ...]
    distances: np.ndarray  # (n, n) predicted squared distances
    depths: np.ndarray  # (n,) predicted squared norms
    tree: DepTree | None = None

    def __post_init__(self) -> None:
        n = len(self.words)
        if self.distances.shape != (n, n) or self.depths.shape != (n,):
            raise InputError(
                f"The probe's predictions ({self.distances.shape}, {self.depths.shape}) do not fit the {n} words."
            )
        if self.tree is not None and tuple(self.tree.words) != tuple(self.words):
            raise InputError("The gold tree's words are not the sentence's words.")
        if not self.scored.any():
            raise InputError("Every word is punctuation, which the probe leaves out: type a sentence with words.")

    @cached_property
    def scored(self) -> np.ndarray:
        return self.tree.scored if self.tree is not None else np.array([not is_punctuation(w) for w in self.words])

    @cached_property
    def predicted(self) -> set[Edge]:
        """The minimum spanning tree of the predicted distances over the scored words."""
        keep = self.scored
        return scored_edges(mst_edges(self.distances[np.ix_(keep, keep)]), keep)

    @cached_property
    def gold(self) -> set[Edge] | None:
        return None if self.tree is None else gold_edges(self.tree)

    @property
    def uuas(self) -> float | None:
        """The sentence's UUAS in percent (None without a gold tree or without a scored gold edge)."""
        if self.tree is None or not self.gold:
            return None
        return float(ratio(uuas_counts([self.predicted], [self.tree]))[0])

    @property
    def chain_uuas(self) -> float | None:
        """The left-to-right chain's UUAS on this sentence (the linear-structure baseline)."""
        if self.tree is None or not self.gold:
            return None
        return float(ratio(uuas_counts([chain_edges(self.tree)], [self.tree]))[0])

    @property
    def predicted_root(self) -> int | None:
        idx = np.flatnonzero(self.scored)
        return int(idx[np.argmin(self.depths[idx])]) if idx.size else None

    def edges_frame(self) -> pd.DataFrame:
        """Every gold (head → dependent, relation) and predicted edge: whether each tree has it (the arcs' CSV).
        Words are numbered from 1, as CoNLL-U's IDs and the distance and depth charts' labels ("1:From") are."""
        rows = {}
        if self.tree is not None:
            for d, h in enumerate(self.tree.heads):
                if h > 0:
                    edge = (min(d, h - 1), max(d, h - 1))
                    scored = bool(self.scored[d] and self.scored[h - 1])
                    rows[edge] = {"head": h, "dependent": d + 1, "relation": self.tree.deprels[d], "scored": scored}
        for edge in self.predicted:
            rows.setdefault(edge, {"head": None, "dependent": None, "relation": None, "scored": True})
        frame = pd.DataFrame(
            [
                {
                    "i": i + 1,
                    "j": j + 1,
                    "word_i": self.words[i],
                    "word_j": self.words[j],
                    **info,
                    "gold": self.gold is not None and (i, j) in self.gold,
                    "predicted": (i, j) in self.predicted,
                }
                for (i, j), info in sorted(rows.items())
            ]
        )
        whole = [c for c in ("head", "dependent") if c in frame]  # a predicted-only edge has none: not "2.0"
        return frame.astype(dict.fromkeys(whole, "Int64"))


def word_positions(words: Sequence[str]) -> np.ndarray:
    """Each word's centre on the x axis, its room as wide as the word (so long words do not overlap), in units
    of the mean room: a sentence of n words spans about n."""
    room = np.array([max(len(w), 2) + 2.0 for w in words])
    return (np.cumsum(room) - room / 2) / room.mean()


def _arcs(
    fig: go.Figure, row: int, x: np.ndarray, edges: list[tuple[int, int, str, str]], name_of: dict[str, str]
) -> float:
    """Arcs (i, j, colour, hover) of one panel as path shapes, a hover marker at each apex; returns the top.
    An arc's height grows with the square root of the words it spans, so long arcs stay on screen."""
    top = 1.0
    points: dict[str, list] = {}
    for i, j, colour, hover in edges:
        h = 0.5 + 0.55 * np.sqrt(abs(j - i))
        top = max(top, h)
        dash = "dot" if colour == UNSCORED else "solid"
        mid = (x[i] + x[j]) / 2
        fig.add_shape(
            type="path",
            path=f"M {x[i]:.3f},0.35 Q {mid:.3f},{2 * h - 0.35:.3f} {x[j]:.3f},0.35",
            line=dict(color=colour, width=2, dash=dash),
            row=row,
            col=1,
        )
        points.setdefault(colour, []).append((mid, h, hover))
    for colour, pts in points.items():
        x, y, text = zip(*pts)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                name=name_of[colour],
                legendgroup=name_of[colour],
                marker=dict(color=colour, size=7),
                hovertext=text,
                hoverinfo="text",
                showlegend=row == 1 or colour != GOLD,
            ),
            row=row,
            col=1,
        )
    return top


def arc_figure(view: TreeView, *, title: str = "") -> go.Figure:
    """The gold tree (if any) above the predicted tree, arcs over the words, predicted edges right/wrong."""
    x, words = word_positions(view.words), [escape_html(w) for w in view.words]
    panels = (["Gold tree (UD EWT)"] if view.tree is not None else []) + [
        "Predicted tree (minimum spanning tree of predicted distances)"
        + ("" if view.uuas is None else f": UUAS {view.uuas:.1f}")
    ]
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=panels, vertical_spacing=0.12)
    tops = []
    if view.tree is not None:
        gold = []
        for d, h in enumerate(view.tree.heads):
            if h > 0:
                scored = bool(view.scored[d] and view.scored[h - 1])
                hover = f"{words[h - 1]} → {words[d]} ({escape_html(view.tree.deprels[d])})"
                gold.append((d, h - 1, GOLD if scored else UNSCORED, hover + ("" if scored else ": not scored")))
        tops.append(_arcs(fig, 1, x, gold, {GOLD: "gold edge", UNSCORED: "edge to punctuation (not scored)"}))
    pred = []
    for i, j in sorted(view.predicted):
        colour = RIGHT if view.gold is None or (i, j) in view.gold else WRONG
        verdict = "" if view.gold is None else (": in the gold tree" if colour == RIGHT else ": not a gold edge")
        pred.append((i, j, GOLD if view.gold is None else colour, f"{words[i]} — {words[j]}{verdict}"))
    names = {RIGHT: "predicted edge, right", WRONG: "predicted edge, wrong", GOLD: "predicted edge"}
    tops.append(_arcs(fig, len(panels), x, pred, names))
    roots = [view.tree.heads.index(0)] if view.tree is not None else []
    roots.append(view.predicted_root)
    for row, root in enumerate(roots, start=1):
        colours = [UNSCORED if not s else "#222" for s in view.scored]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[0] * len(x),
                mode="text",
                text=words,
                textfont=dict(color=colours, size=13),
                hoverinfo="skip",
                showlegend=False,
                name="words",
            ),
            row=row,
            col=1,
        )
        if root is not None:
            fig.add_annotation(x=x[root], y=0.35, ay=-28, text="root", showarrow=True, arrowhead=2, row=row, col=1)
    fig.update_xaxes(visible=False, range=[-0.2, x[-1] + x[0] + 0.2])
    for row, top in enumerate(tops, start=1):
        fig.update_yaxes(visible=False, range=[-0.4, top + 0.4], row=row, col=1)
    fig.update_layout(
        template="plotly_white",
        height=90 + sum(120 + 45 * t for t in tops),
        margin=dict(l=10, r=10, t=60, b=10),
        title=dict(text=title, x=0),
        legend=dict(orientation="h", y=-0.02, yanchor="top"),
    )
    return fig


def distance_figure(view: TreeView, *, title: str = "") -> go.Figure:
    """Predicted squared distances beside the gold tree's distances, over the scored words, on one colour
    scale (the probe is trained to make the first equal the second, so equal colours mean a good fit)."""
    keep = view.scored
    words = [escape_html(w) for w, k in zip(view.words, keep) if k]
    labels = [f"{i + 1}:{w}" for i, w in enumerate(words)]  # unique axis labels for repeated words
    mats = [("predicted", "predicted squared distance", view.distances[np.ix_(keep, keep)])]
    if view.tree is not None:
        mats.append(("gold tree", "gold tree distance", tree_distances(view.tree.heads)[np.ix_(keep, keep)]))
    # short panel titles: two side by side share ~280 px in a 1024-px window; the hover names the measure in full
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=[m[0] for m in mats], horizontal_spacing=0.03)
    for k, (_, name, z) in enumerate(mats):
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=labels,
                y=labels,
                name=name,
                coloraxis="coloraxis",
                hovertemplate="%{y} – %{x}: %{z:.2f}<extra>" + name + "</extra>",
            ),
            row=1,
            col=k + 1,
        )
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(showticklabels=False, col=2)
    fig.update_layout(
        template="plotly_white",
        height=min(760, 180 + 16 * len(words)),
        margin=dict(l=10, r=10, t=60, b=10),
        title=dict(text=title, x=0),
        coloraxis=dict(colorscale="Viridis", cmin=0, colorbar=dict(title="edges", thickness=10, len=0.9)),
    )
    return fig


def depth_figure(view: TreeView, *, title: str = "") -> go.Figure:
    """Per scored word: the predicted depth ‖Bhᵢ‖² and the gold depth (edges to the root) as bars."""
    idx = np.flatnonzero(view.scored)
    labels = [f"{i + 1}:{escape_html(view.words[i])}" for i in idx]
    fig = go.Figure(go.Bar(x=labels, y=view.depths[idx], name="predicted depth ‖Bh‖²", marker_color=RIGHT))
    if view.tree is not None:
        gold = tree_distances(view.tree.heads)[view.tree.heads.index(0)]
        fig.add_trace(go.Bar(x=labels, y=gold[idx], name="gold depth", marker_color=GOLD))
    fig.update_layout(
        template="plotly_white",
        barmode="group",
        height=360,
        margin=dict(l=10, r=10, t=50, b=10),
        title=dict(text=title, x=0),
        yaxis_title="depth (edges to the root)",
        legend=dict(orientation="h", y=-0.25, yanchor="top", x=0),
    )
    return fig


def sentence_choices(sentences: Sequence[Sequence[str]], search: str) -> list[int]:
    """Indices of the sentences containing ``search`` (case-insensitive; every sentence when it is empty)."""
    needle = search.strip().lower()
    return [i for i, s in enumerate(sentences) if not needle or needle in " ".join(s).lower()]
