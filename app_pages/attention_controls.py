"""The Attention page's shared pieces: its attention in words or pieces, and the controls of the open head
and the query/key pair, which the Heads and Neurons tabs both show (one set of keys: the tab that is open
draws them; the URL keeps them across tabs, ``state.bind``).

A new sentence (or unit) puts the query token back on its first token and the key token on that query's
strongest link, so neither box shows the old sentence's token. A click on a token of the line view
focuses it (:func:`select_line_token`): a query on the left, a key on the right.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from app_pages import state
from app_pages.loaders import embed_sentences, piece_attention

FOCI = ["query", "key", "none"]  # the line view's focused token


TABS = ["Heads", "Neurons", "Averages", "Syntax"]  # only the open tab runs and draws (a new visitor's first paint)


def head_link(model: str, text: str, layer: int, head: int) -> dict[str, str | int]:
    """The query parameters that open one head on the Attention page's Heads tab: the names its widgets bind
    (``model``, ``text`` and ``tab`` on the page, ``layer`` and ``head`` in :func:`head_controls`), written once."""
    return {"model": model, "text": text, "layer": layer, "head": head, "tab": TABS[0]}


def get_attention(model: str, words: list[str], unit: str) -> tuple[np.ndarray, list[str], str]:
    """(layers, heads, n, n) attention, the n token labels, and a note about the units."""
    if unit == "words":
        out = embed_sentences(model, [words], with_attention=True)[0]
        return (
            out["attentions"],
            list(out["words"]),
            (
                "Word view: attention to a word's pieces is summed, a word's query pieces are averaged, "
                "special tokens dropped and rows renormalised."
            ),
        )
    pa = piece_attention(model, words)
    return pa["attentions"], list(pa["pieces"]), "Piece view: the model's own subword pieces, special tokens included."


def strongest_key(a: np.ndarray, query: int) -> int:
    """The key ``query`` attends to most in the (n, n) map ``a``, itself left out (unless it is alone)."""
    row = np.array(a[query], np.float64, copy=True)
    if len(row) > 1:
        row[query] = -1.0
    return int(np.argmax(row))


def head_controls(att: np.ndarray) -> tuple[int, int]:
    """Layer and head sliders (1-based) of the open head."""
    L, H = att.shape[:2]
    layer = st.slider("Layer", 1, L, key=state.bind("attn_layer", min(L, 2), lo=1, hi=L, param="layer"))
    head = st.slider("Head", 1, H, key=state.bind("attn_head", 1, lo=1, hi=H, param="head"))
    return layer, head


def pair_controls(att: np.ndarray, tokens: list[str], layer: int, head: int) -> tuple[int, int]:
    """The query and key token boxes (0-based indices); both start over with a new sentence or unit."""
    n = len(tokens)
    fresh = st.session_state.get("attn_query_tokens", tokens) != tokens
    if fresh:  # a new sentence (or units): its first token, and that token's strongest link
        st.session_state["attn_query"] = 0
    st.session_state["attn_query_tokens"] = tokens
    label = lambda i: f"{i + 1}: {tokens[i]}"
    query = st.selectbox(
        "Query token",
        list(range(n)),
        format_func=label,
        key=state.bind("attn_query", 0, list(range(n)), param="query"),
        help="Its links are red in the line view (or click a token on its left); its query·key products are below.",
    )
    default_key = strongest_key(att[layer - 1, head - 1], query)
    if fresh:
        st.session_state["attn_key"] = default_key
    key = st.selectbox(
        "Key token",
        list(range(n)),
        format_func=label,
        key=state.bind("attn_key", default_key, list(range(n)), param="key"),
        help="The key of the neuron view's pair, and the line view's focus when it focuses a key "
        "(or click a token on its right). It starts on the query's strongest link.",
    )
    return query, key


def line_controls(heads: int) -> tuple[str, float, list[int]]:
    """The line view's focus, its threshold and the further heads it draws (1-based), in one row."""
    c1, c2, c3 = st.columns([4, 3, 4])  # the focus's three buttons whole at a 1024-px window
    focus = (
        c1.segmented_control(
            "Line view focus",
            FOCI,
            key=state.bind("attn_focus", FOCI[0], FOCI, param="focus"),
            help="The focused token's lines stay strong, every other line is faded. Click a token in the "
            "line view to focus it.",
        )
        or FOCI[2]
    )
    threshold = c2.slider(
        "Hide links below",
        0.0,
        0.5,
        step=0.01,
        key=state.bind("attn_min_weight", 0.02, lo=0.0, hi=0.5, step=0.01, param="min_weight"),
        help="Links with a weight under this are not drawn (0: every link).",
    )
    others = list(range(1, heads + 1))
    more = c3.multiselect(
        "More heads in the line view",
        others,
        format_func=lambda h: f"H{h}",
        key=state.bind("attn_more_heads", [], others, param="heads"),
        help="Draw other heads of this layer over the open one, each in its own colour (a legend names them).",
    )
    return focus, float(threshold), list(more)


def select_line_token(chart_key: str) -> Callable[[], None]:
    """The ``on_select`` of a line view (chart key ``chart_key``): a clicked token on the left becomes the
    query, on the right the key, and the line view focuses it."""

    def on_select() -> None:
        points = (st.session_state.get(chart_key) or {}).get("selection", {}).get("points", [])
        for point in points:
            data = point.get("customdata")
            if isinstance(data, dict):
                data = [data.get("0"), data.get("1")]
            if isinstance(data, list) and len(data) == 2 and data[0] in (0, 1):
                side, index = int(data[0]), int(data[1])
                st.session_state["attn_query" if side == 0 else "attn_key"] = index
                st.session_state["attn_focus"] = FOCI[side]
                return

    return on_select
