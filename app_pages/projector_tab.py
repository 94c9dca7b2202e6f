"""The Embedding space page's Projector tab (after TensorFlow's Embedding Projector and LIT).

Points come from SemCor occurrences of a word, a lexical-sample upload, the user's own vectors, or a
whole slice of a static model's vocabulary (thousands of words, drawn with WebGL). Colour by any
metadata, search and isolate; project by PCA, t-SNE, UMAP or **custom axes** (x = the direction from one
word to another, y = a second pair). **A click on a point selects it** (linked: the picker, the ring,
the table of its nearest neighbours in the ORIGINAL space, the diamonds on the plot); labels on demand.

Every choice is in the URL (``app_pages.state``). Widget keys: space_pj_source, space_pj_model,
space_pj_word, space_pj_layer, space_pj_upload, space_pj_vectors, space_pj_meta, space_pj_static,
space_pj_start, space_pj_count, space_pj_words_only, space_pj_colour, space_pj_search, space_pj_isolate,
space_pj_method, space_pj_labels, space_pj_xa/xb/ya/yb (custom axes), space_pj_pick (1-based; 0 = none),
space_pj_k, space_pj_plot (the chart).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import MAX_UPLOAD_MB, chart, download, md, model_names, preferred, safe, uploader, wrapping_row
from app_pages.corpus_ui import sense_label
from app_pages.linked import linked_chart_kwargs
from app_pages.loaders import get_embedder, lexical_source, occurrence_vectors_progress, semcor_corpus
from app_pages.warmup import wait_warmup
from models import DEFAULT_STATIC_MODEL
from viz.export import file_stem, frame_csv, frame_json
from viz.occurrence_figures import occurrence_scatter
from viz.points import KEY_COLUMNS, collapse, colour_groups, occurrence_metadata, search_mask
from viz.polysemy import MAX_OCCURRENCES, semcor_occurrences
from viz.projection import METHODS, cosine_neighbours, project
from viz.projector import parse_metadata, parse_vectors, stack_layers
from viz.projector_tools import (
    MAX_LABELS,
    custom_coords,
    endpoint_vector,
    neighbour_frame,
    point_labels,
    slice_metadata,
    unit_direction,
    vocabulary_slice,
)
from viz.text import counted, escape_html, shorten, validate_word

PJ_SOURCES = ("SemCor word", "lexical sample (TSV)", "my vectors (TSV)", "vocabulary slice")
CUSTOM = "custom axes"
PJ_METHODS = (*METHODS, CUSTOM)
SLICE_SIZES = (1000, 2000, 5000, 10000, 20000)
SLOW_AT = 2000  # t-SNE/UMAP of more points than this wait for a click (measured: minutes for 5,000)
AXES_DEFAULT = (("space_pj_xa", "man"), ("space_pj_xb", "woman"), ("space_pj_ya", "bad"), ("space_pj_yb", "good"))

Points = tuple[np.ndarray, pd.DataFrame, str, Callable[[str], np.ndarray | None] | None]


def _slice_points() -> Points | None:
    """A slice of a static model's vocabulary: (vectors, rank/word metadata, title, the model's word lookup)."""
    statics = model_names(contextual=False)
    if not statics:
        st.info("No static model is available yet. See the Models page.")
        return None
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    model = c1.selectbox(
        "Static model",
        statics,
        key=state.bind("space_pj_static", preferred(statics, DEFAULT_STATIC_MODEL), statics, param="pj_static"),
    )
    start = c2.number_input(
        "From rank", min_value=1, step=1000, key=state.bind("space_pj_start", 1, lo=1, param="pj_start")
    )
    count = c3.selectbox("Words", SLICE_SIZES, key=state.bind("space_pj_count", 5000, SLICE_SIZES, param="pj_count"))
    words_only = c4.toggle(
        "Words only",
        key=state.bind("space_pj_words_only", True, param="pj_words_only"),
        help="Skip punctuation and numbers (entries without a letter).",
    )
    emb = get_embedder(model)
    vocab = getattr(emb, "vocab", None)
    if vocab is None:
        st.info(f"{md(model)} has no vocabulary table to slice.")
        return None
    rows = vocabulary_slice(vocab, int(start) - 1, int(count), words_only=words_only)
    X = emb.vectors[rows].float().cpu().numpy()  # a view of the model's table, gathered: no copy of all of it

    def lookup(word: str) -> np.ndarray | None:  # an axis end: the model's own vector, in the slice or not
        return emb.word_vector(word) if emb.index(word) is not None else None

    return X, slice_metadata(vocab, rows), f"{model}, ranks {rows[0] + 1:,}–{rows[-1] + 1:,}", lookup


def _projector_points() -> Points | None:
    """(vectors (n, dim), metadata, title, word lookup or None) for the projector's chosen source, or None."""
    source = (
        st.segmented_control(
            "Points from", PJ_SOURCES, key=state.bind("space_pj_source", PJ_SOURCES[0], PJ_SOURCES, param="pj_source")
        )
        or PJ_SOURCES[0]
    )
    if source == "vocabulary slice":
        return _slice_points()
    if source == "my vectors (TSV)":
        c1, c2 = st.columns(2)
        vec = uploader(
            "Vectors (one per line, numbers separated by tabs)",
            types=["tsv", "txt", "csv"],
            key="space_pj_vectors",
            container=c1,
        )
        meta = uploader(
            "Metadata (optional; a header line when it has several columns)",
            types=["tsv", "txt"],
            key="space_pj_meta",
            container=c2,
        )
        if vec is None:
            st.info("Upload a vectors TSV (the Embedding Projector's format) and, optionally, its metadata.")
            return None
        X = parse_vectors(vec.getvalue(), max_mb=MAX_UPLOAD_MB)
        labels = parse_metadata(meta.getvalue() if meta is not None else None, len(X), max_mb=MAX_UPLOAD_MB)
        return X, labels, vec.name, None
    names = model_names()
    c1, c2, c3 = st.columns([2, 2, 1])
    model = c1.selectbox("Model", names, key=state.bind("space_pj_model", preferred(names), names, param="pj_model"))
    if source == "SemCor word":
        word = validate_word(
            c2.text_input("Word (lemma)", key=state.bind("space_pj_word", "bank", param="pj_word"), max_chars=60)
        )
        wait_warmup()
        sentences, index = semcor_corpus()
        occs, _total = semcor_occurrences(sentences, index, word, "any", cap=150)
        if not occs:
            st.info(f"“{md(word)}” has no sense-tagged occurrences in SemCor.")
            return None
    else:
        up = uploader("Lexical-sample TSV", types=["tsv", "txt"], key="space_pj_upload", container=c2)
        if up is None:
            st.info("Upload a lexical-sample TSV (sentence⇥target index⇥label): every occurrence, coloured by label.")
            return None
        occs, total = lexical_source(up.getvalue(), up.name).all_occurrences(cap=MAX_OCCURRENCES)
        if total > len(occs):
            st.caption(f"A random sample of {len(occs)} of the file's {total} occurrences.")
    X = occurrence_vectors_progress(model, occs)
    layers = ["all layers"] + list(range(X.shape[0]))
    choice = c3.selectbox("Layer", layers, key=state.bind("space_pj_layer", X.shape[0] - 1, layers, param="pj_layer"))
    meta = occurrence_metadata(occs, sense_label)
    if choice == "all layers":
        pts, meta = stack_layers(X, meta)
        return pts, meta, f"{model}, all layers", None
    return X[int(choice)], meta.assign(layer=int(choice)), f"{model}, layer {choice}", None


def _custom_axes(X: np.ndarray, meta: pd.DataFrame, lookup) -> tuple[np.ndarray, tuple[str, str]]:
    """Coordinates on the two custom axes the user typed (x: xa → xb, y: ya → yb) and the axes' titles."""
    cols = st.columns(4)
    labels = ("x from", "x to", "y from", "y to")
    ends = [
        col.text_input(label, key=state.bind(key, default, param=key.replace("space_", "")), max_chars=60)
        for col, label, (key, default) in zip(cols, labels, AXES_DEFAULT)
    ]
    vecs, notes = zip(*(endpoint_vector(e, X, meta, lookup) for e in ends))
    st.caption(
        "Custom axes (a point's coordinate is its projection on the unit vector from one end to the other): "
        + "; ".join(md(n) for n in notes)
        + "."
    )
    x_dir = unit_direction(vecs[0], vecs[1], "the x axis")
    y_dir = unit_direction(vecs[2], vecs[3], "the y axis")
    cos = float(x_dir @ y_dir)
    if abs(cos) > 0.8:
        st.caption(f"The two axes are nearly parallel (cosine {cos:.2f}): the points lie close to a line.")
    titles = (f"{ends[0].strip()} → {ends[1].strip()}", f"{ends[2].strip()} → {ends[3].strip()}")
    return custom_coords(X, x_dir, y_dir), titles


def projector_tab() -> None:
    st.caption(
        "Like the Embedding Projector: colour by any metadata, search (substring, or re:pattern) and "
        "isolate the matches, project a whole vocabulary slice or onto custom axes; click a point for its "
        "nearest neighbours in the original space (cosine). Upload your own vectors and metadata."
    )
    with safe(
        "draw the projector",
        without_data="Without the data, project a “vocabulary slice” or your own vectors (the source picker).",
    ):
        got = _projector_points()
        if got is None:
            return
        X, meta, what, lookup = got
        n = len(X)
        # a row that wraps in a narrow window: five fixed columns cut "Isolate matches" and "custom axes" at 1024 px
        c1, c2, c3, c4, c5 = wrapping_row("space_pj_controls", 5, min_rem=10)
        cols = [c for c in meta.columns if c not in ("context", *KEY_COLUMNS)] or list(meta.columns)
        colour = c1.selectbox("Colour by", cols, key=state.bind("space_pj_colour", cols[0], cols, param="colour"))
        query = c2.text_input(
            "Search",
            key=state.bind("space_pj_search", "", param="search"),
            max_chars=200,
            placeholder=r"e.g. river   or   re:^The\b",
            help="Case-insensitive text in any column, or re:PATTERN; a search with % reads the sense keys too.",
        )
        isolate = c3.toggle("Isolate matches", key=state.bind("space_pj_isolate", False, param="isolate"))
        show_labels = c3.toggle("Labels", key=state.bind("space_pj_labels", False, param="pj_labels"))
        method = c4.selectbox(
            "Projection", PJ_METHODS, key=state.bind("space_pj_method", "PCA", PJ_METHODS, param="pj_method")
        )
        # Bound before the plot rings it: a link's ?pj_pick= and a click select the same point.
        sig = (what, n)
        if st.session_state.get("_space_pj_sig") not in (None, sig):
            st.session_state["space_pj_pick"] = 0  # other points: the old pick would name another one
        st.session_state["_space_pj_sig"] = sig
        pick = c5.number_input(
            "Selected point (#)",
            min_value=0,
            max_value=n,
            key=state.bind("space_pj_pick", 0, lo=0, hi=n, param="pj_pick"),
            help="Click a point on the plot, or type its number (0 = none).",
        )
        k = st.session_state[state.bind("space_pj_k", 10, lo=3, hi=50, param="pj_k")]
        mask = search_mask(meta, query)
        if query.strip():
            st.caption(f"{int(mask.sum()):,} of {counted(n, 'point')} match “{md(query.strip())}”.")
        axes = None
        if method == CUSTOM:
            coords, axes = _custom_axes(X, meta, lookup)
            inverse = collapse(X)[1]
        else:
            rep, inverse = collapse(X)
            method = _slow_method_started(method, what, len(rep))
            with st.spinner(f"{method} of {len(rep):,} points…"):
                rep_coords, note = _project(X[rep], method)
            coords = rep_coords[inverse]
            if note:
                st.caption(note)
        near = [j for j, _ in cosine_neighbours(X, pick - 1, k)] if pick else []
        labels = None
        if show_labels:
            labels = point_labels(meta, first=([pick - 1, *near] if pick else []) + list(np.flatnonzero(mask)))
            if n > MAX_LABELS:
                st.caption(
                    f"Labels on {MAX_LABELS:,} of the {n:,} points (the selected one, its neighbours and the "
                    "search's matches first)."
                )
        rows = meta.astype(str).to_dict("records")
        hover = ["\n".join(f"{key}: {shorten(v, 110)}" for key, v in row.items()) for row in rows]
        fig = occurrence_scatter(
            coords,
            colour_groups(meta, colour),
            hover,
            inverse=inverse,
            matched=mask,
            isolate=isolate,
            highlight=pick - 1 if pick else None,
            related=near,
            labels=labels,
            legend_title=colour,
            title=f"{what}: {method} of {n:,} points",
        )
        if axes:
            fig.update_xaxes(title=escape_html(axes[0]), showticklabels=True, zeroline=True)
            fig.update_yaxes(title=escape_html(axes[1]), showticklabels=True, zeroline=True)
        data = meta.assign(x=coords[:, 0], y=coords[:, 1], match=mask)
        chart(
            fig,
            file_stem("projector", what, method),
            key="space_pj_plot",
            data=lambda: frame_csv(data),
            data_label="Points (CSV)",
            **linked_chart_kwargs("space_pj_plot", "space_pj_pick", n, offset=1),
        )
        download(
            "Points (JSON)",
            lambda: frame_json(data),
            f"{file_stem('projector', what)}.json",
            key="space_pj_json",
            mime="application/json",
        )
        _neighbours_panel(X, meta, pick)


def _slow_method_started(method: str, what: str, n: int) -> str:
    """``method``, or PCA (with a button to start it) for a t-SNE/UMAP of more than ``SLOW_AT`` points not yet
    run in this session: those take minutes on a busy CPU, and a link or a click must not wait on them."""
    if method == "PCA" or n <= SLOW_AT:
        return method
    done = st.session_state.setdefault("_space_pj_slow_done", set())
    if (what, method, n) in done:
        return method  # computed before: from the cache
    st.caption(
        f"{method} of {n:,} points takes a few minutes on this server (PCA: about a second); PCA is shown "
        "until you start it."
    )
    if not st.button(f"Run {method} on {n:,} points", key="space_pj_run_slow", icon=":material/play_arrow:"):
        return "PCA"
    done.add((what, method, n))
    return method


def _neighbours_panel(X: np.ndarray, meta: pd.DataFrame, pick: int) -> None:
    """The selected point and its nearest neighbours by cosine in the full-dimensional space."""
    st.subheader("Nearest neighbours in the original space")
    if not pick:
        st.caption("Click a point (or type its number above) to list its nearest neighbours.")
        return
    k = st.slider("Neighbours", 3, 50, key=state.bind("space_pj_k", 10, lo=3, hi=50, param="pj_k"))
    row = meta.iloc[pick - 1]
    st.markdown(f"**#{pick}** · " + " · ".join(f"{md(str(c))}: {md(shorten(str(v), 200))}" for c, v in row.items()))
    st.caption(
        f"Cosine similarity of the full {X.shape[1]}-dimensional vectors (not distances on the 2-D map, "
        "which a projection distorts); the neighbours are the open diamonds on the plot."
    )
    st.dataframe(neighbour_frame(X, meta, pick - 1, k), hide_index=True, width="stretch")


@st.cache_data(show_spinner=False, max_entries=16)
def _project(X: np.ndarray, method: str):
    return project(X, method, 2)
