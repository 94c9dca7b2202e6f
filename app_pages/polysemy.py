"""Polysemy explorer: a word's occurrences as contextual vectors, coloured by WordNet sense.

Speed: the controls at the top (word, model, source) rerun the page; everything below them is one
``st.fragment``, so a layer slider, the occurrence picker or the neighbour count reruns only the
plots. Vectors are cached per (model, occurrences), projections per (vectors, method) for all
layers at once (PCA) or per layer (t-SNE/UMAP). Every choice lives in the URL (``app_pages.state``).

The controls and the occurrences they select live in ``app_pages.polysemy_controls``; this module
is the page (``main``) and the view below the controls.

Linked selection (LIT): a click on a point of either plot selects that occurrence everywhere: the
picker (``poly_pick``, in the URL as ``pick``), its sentence, the nearest-occurrence table, the corpus
search.

Widget keys (stable; the browser benchmark uses them): poly_source, poly_model, poly_dims, poly_word,
poly_method, poly_pos, poly_cap, poly_text, poly_upload, poly_compare, poly_model_b, poly_colour,
poly_layer, poly_layer_b, poly_pick, poly_k, poly_corpus (toggle), poly_corpus_k.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import OCCURRENCE_COLUMNS, chart, download, md, page, page_header, safe
from app_pages.corpus_ui import cached_occurrence_vectors, corpus_limit, corpus_panel, corpus_scope, sense_label
from app_pages.linked import linked_chart_kwargs
from app_pages.loaders import occurrence_vectors_progress
from app_pages.polysemy_controls import controls, get_occurrences
from models.registry import get_spec
from viz.export import file_stem, frame_csv, frame_json
from viz.occurrence_figures import layer_measures_figure, occurrence_scatter
from viz.points import collapse, colour_groups, coordinates_frame, occurrence_metadata
from viz.polysemy import AGREEMENT_INTERVAL, layer_measures, neighbour_table, separability_problem
from viz.projection import project, project_layers
from viz.senses import sense_info
from viz.text import counted, shorten

INTRO = """
One spelling, several meanings: *bank* (river side / money), *play* (a drama / to play a game),
*interest* (curiosity / money). A **static** model gives every occurrence of a word form the same
vector, so all its senses collapse into one point. A **contextual** model (ELMo, BERT, GPT) gives
each occurrence its own vector; if it captures meaning, occurrences of the same WordNet sense
cluster together — more so in some layers than others (Peters et al. 2018, §5.3).
Points are SemCor 3.0 sentences hand-tagged with WordNet senses, sentences you type, or a lexical-sample
file you upload. The address bar always holds a link to this view.
"""


def hover_text(occ) -> str:
    lines = [occ.source, shorten(occ.context(10), 110)]
    if occ.keys:
        info = sense_info(occ.keys[0])
        lines += [f"{info.synset} ({info.lexname})", shorten(info.gloss, 110)]
    elif occ.label:
        lines.append(f"label: {occ.label}")
    return "\n".join(lines)


@st.cache_data(show_spinner=False, max_entries=32)
def projections(X: np.ndarray, method: str, dims: int, layer: int | None) -> tuple[np.ndarray, list, list[str]]:
    """(coords (layers, n, dims), inverses, notes): PCA of every layer at once (layer None), or one layer
    (t-SNE/UMAP are slow: only the layer shown). Identical vectors are laid out once (collapsed)."""
    layers = range(X.shape[0]) if layer is None else [layer]
    inverses = [collapse(X[j])[1] for j in layers]
    if layer is None:
        coords, notes = project_layers(X, method, dims, distinct=inverses)
        return coords, inverses, notes
    rep = np.unique(inverses[0], return_index=True)[1]
    rep_coords, note = project(X[layer][rep], method, dims)
    return rep_coords[inverses[0]][None], inverses, [note]


def layer_coords(X: np.ndarray, method: str, dims: int, layer: int):
    if method == "PCA":
        coords, inverses, notes = projections(X, method, dims, None)
        return coords[layer], inverses[layer], notes[layer]
    # a cached projection returns at once; a new one is seconds (UMAP's first call in a server also compiles it)
    with st.spinner(f"{method} of layer {layer}'s {X.shape[1]:,} vectors…"):
        coords, inverses, notes = projections(X, method, dims, layer)
    return coords[0], inverses[0], notes[0]


SLIDER_PX = 68  # a labelled slider's height: a one-layer model's panel beside another keeps its plot level


def layer_slider(key: str, L: int, default: int, label: str = "Layer", *, beside: bool = False) -> int:
    if L <= 1:
        if beside:  # a static model beside a contextual one: its plot starts where the other's does
            st.container(height=SLIDER_PX, border=False).caption(f"{label}: 0, its only layer")
        return 0
    return st.slider(
        label,
        0,
        L - 1,
        key=state.bind(key, default, lo=0, hi=L - 1, param=key.replace("poly_", "")),
        help="0 = the input layer (no other word shapes it; a transformer's adds the position); drag to watch "
        "the senses separate.",
    )


def panel(c: dict, occs, X: np.ndarray, model: str, layer: int, pick: int, meta: pd.DataFrame, key: str) -> None:
    """One plot (widget key ``key``): the occurrences of ``model`` at ``layer``; a click selects one."""
    coords, inverse, note = layer_coords(X, c["method"], c["dims"], layer)
    distinct = int(inverse.max()) + 1 if len(inverse) else 0
    if note:
        st.caption(note)
    groups = colour_groups(meta, c["colour"])
    fig = occurrence_scatter(
        coords,
        groups,
        [hover_text(o) for o in occs],
        inverse=inverse,
        highlight=pick,
        title=f"“{c['word']}” · {model} · layer {layer}",
        subtitle=f"{c['method']} ({counted(len(occs), 'occurrence')})",
        legend_title=c["colour"],
        height=520 if c["compare"] == "one panel" else 560,
        legend_below=c["compare"] != "one panel",
    )
    name = file_stem("polysemy", c["word"], model, f"layer{layer}", c["method"])
    data = coordinates_frame(meta, coords, inverse)
    chart(
        fig,
        name,
        key=key,
        data=lambda: frame_csv(data),
        data_label="Coordinates (CSV)",
        **linked_chart_kwargs(key, "poly_pick", len(occs), dims=c["dims"]),
    )
    download(
        "Coordinates (JSON)", lambda: frame_json(data), f"{name}.json", key=f"{key}__json", mime="application/json"
    )
    if note := collapse_note(model, occs, distinct, layer, unknown=not np.abs(X[layer]).any()):
        st.info(note)


def collapse_note(model: str, occs, distinct: int, layer: int, *, unknown: bool = False) -> str | None:
    """Why the occurrences are fewer points than occurrences, in the model's terms; None when they are not.
    ``unknown``: every vector is zero (a static model's word it has no vector for)."""
    forms = sorted({o.target.lower() for o in occs})
    if unknown and not get_spec(model).contextual:
        return (
            f"**{md(', '.join(forms[:8]))} is not in {md(model)}'s vocabulary**: a static model has no vector for a "
            "word it never saw, so every occurrence is the zero vector (one point at the origin) and has no "
            "neighbours. Pick a word the model knows, or a contextual model (minilm, elmo-small, gpt-small)."
        )
    if not get_spec(model).contextual:
        return (
            f"**{md(model)} is a static model**: every occurrence of a word form gets the same vector, "
            f"whatever the sentence. The {len(occs)} occurrences collapse to {distinct} point(s) "
            f"(one per form: {md(', '.join(forms[:8]))}), drawn once each with their count, so the senses "
            "cannot be told apart. Pick a contextual model (minilm, elmo-small, gpt-small) to see them separate."
        )
    if layer == 0 and 1 < distinct < len(occs):  # ELMo's character layer: one point per form (bank, banks)
        return (
            f"**Layer 0 of {md(model)} is its context-independent layer**: occurrences with the same word form (and, "
            f"in a transformer, the same position) share a vector there, so the {len(occs)} occurrences are "
            f"{distinct} points ({md(', '.join(forms[:8]))}), drawn once each with their count. Drag the layer "
            "slider up to see them separate."
        )
    if distinct != 1:
        return None
    if len(occs) == 1:
        return "**One occurrence, one point**: add sentences with the word to see how its vectors differ."
    if layer == 0:
        return (
            f"**Layer 0 of {md(model)} is its context-independent layer**: every occurrence of "
            f"{md(', '.join(forms[:8]))} gets the same vector there. Drag the layer slider up to see them separate."
        )
    return f"**All {len(occs)} occurrences have the same vector at layer {layer}**: the same sentence repeated?"


#: Fewer labelled occurrences than this make the layer chart's agreement a small sample (said beside it).
SMALL_OCCURRENCES = 30


def layer_chart(c: dict, occs, Xs: dict[str, np.ndarray]) -> None:
    groups = [o.group for o in occs]
    problem = separability_problem(groups)
    st.subheader("Which layer separates the senses?")
    layered = ", ".join(m for m, X in Xs.items() if X.shape[0] >= 2)  # a one-layer (static) model draws no series
    title = (f"Which layer separates the senses of “{shorten(c['word'], 30)}”?", f"{layered} · {len(occs)} occurrences")
    long, fig = _layer_figure(occurrence_signature(c, occs) + tuple(Xs), Xs, occs, problem is None, title)
    if fig is None:  # said alone: the captions below describe a chart that is not drawn
        st.caption("Nothing to compare across layers (a one-layer model, or a single sentence).")
        return
    st.caption(
        "For every occurrence, is its nearest other occurrence (cosine, full dimension) of the same "
        "sense? The fraction per layer, against chance (a random other occurrence). Beside it, how "
        "contextual each layer is for this word (Ethayarajh 2019): **self-similarity** (mean cosine "
        "between its occurrences; 1 = the same vector everywhere) and **explainable variance** (the "
        "share of the first principal direction)."
    )
    if problem:
        st.info(problem)
    elif labelled := sum(g is not None for g in groups):
        st.caption(
            f"1-NN over {labelled} occurrences with a sense"
            + (" (few: read the shape, not single steps)" if labelled < SMALL_OCCURRENCES else "")
            + f"; its error bars are {AGREEMENT_INTERVAL}, each layer's on its own — not a test between layers, "
            "and with many layers one pair can look apart by chance."
        )
    chart(fig, file_stem("polysemy-layers", c["word"], *Xs), key="poly_layers_plot", data=lambda: frame_csv(long))


@st.cache_resource(show_spinner=False, max_entries=16)
def _layer_figure(key: tuple, _Xs: dict, _occs, with_agreement: bool, title: tuple[str, str]):
    """(long frame, figure) of the per-layer measures, once per (occurrences, models): a slider step
    or a new pick only redraws it. ``key`` names the occurrences and models (the vectors are not hashed)."""
    frames, chance = [], []
    for model, X in _Xs.items():
        if X.shape[0] < 2:
            continue
        part = layer_measures(X, _occs, with_agreement=with_agreement)
        if not part.empty:
            chance.append(part[part["measure"] == "chance"])
            frames.append(part.assign(measure=(f"{model}: " if len(_Xs) > 1 else "") + part["measure"]))
    if not frames:
        return None, None
    if len(frames) > 1 and pd.concat(chance)["value"].nunique() == 1:  # the occurrences', not a model's: one line
        frames = [f[~f["measure"].str.endswith(": chance")] for f in frames]
        frames.append(pd.concat(chance).drop_duplicates("layer").sort_values("layer"))
    long = pd.concat(frames, ignore_index=True)
    return long, layer_measures_figure(long, title=title[0], subtitle=title[1], height=360)


@st.cache_resource(show_spinner=False, max_entries=16)
def _metadata(key: tuple, _occs) -> pd.DataFrame:
    """Sense, POS, genre, length per occurrence, once per set of occurrences (``key``)."""
    return occurrence_metadata(_occs, sense_label)


@state.fragment
def view(c: dict, occs, Xs: dict[str, np.ndarray]) -> None:
    """Everything below the controls; its widgets rerun only this fragment."""
    with safe("draw the occurrences"):  # inside the fragment: its own reruns get friendly errors too
        _view(c, occs, Xs)


def _view(c: dict, occs, Xs: dict[str, np.ndarray]) -> None:
    models = list(Xs)
    meta = _metadata(occurrence_signature(c, occs), occs)
    # Bound (read from a link) before the plots ring the pick: a link's ?pick= and a click show the same point.
    pick = st.session_state[state.bind("poly_pick", 0, lo=0, hi=len(occs) - 1, param="pick")]
    L = Xs[models[0]].shape[0]
    if c["compare"] == "two layers":
        # ELMo's three layers: its two LSTM layers (the paper's comparison); L - 1 on both sides drew one plot twice
        panels = [(models[0], "poly_layer", max(0, L - 2) if L <= 3 else L // 2), (models[0], "poly_layer_b", L - 1)]
    else:
        panels = [
            (m, key, (lambda n: min(n - 1, max(0, n // 2)))(Xs[m].shape[0]))
            for m, key in zip(models, ("poly_layer", "poly_layer_b"))
        ]
    if c["compare"] == "one panel":
        state.forget("layer_b")
    cols = st.columns(len(panels)) if len(panels) > 1 else [st.container()]
    layers = []
    for col, (model, key, default) in zip(cols, panels):
        with col:
            label = (
                "Layer"
                if key == "poly_layer"
                else ("Layer (right)" if c["compare"] == "two layers" else f"Layer of {model}")
            )
            layer = layer_slider(key, Xs[model].shape[0], default, label, beside=len(panels) > 1)
            layers.append(layer)
            plot_key = "poly_plot" if key == "poly_layer" else "poly_plot_b"
            panel(c, occs, Xs[model], model, layer, pick, meta, plot_key)

    st.subheader("Nearest occurrences")
    left, right = st.columns([2, 3])
    with left:
        pick = st.selectbox(
            "Occurrence",
            list(range(len(occs))),
            key=state.bind("poly_pick", 0, lo=0, hi=len(occs) - 1, param="pick"),
            format_func=lambda i: f"#{i + 1} {shorten(occs[i].context(5), 70)}",
            help="Or click a point on the plot." if c["dims"] == 2 else "A 3-D plot's clicks turn it: choose here.",
        )
        k = st.slider("Neighbours", 3, 20, key=state.bind("poly_k", 8, lo=3, hi=20, param="k"))
        st.caption(f"Sense: {md(sense_label(occs[pick].group))}")
        st.text(occs[pick].context(12), width="stretch")  # plain text: st.code would load a highlighter
    with right:
        model, layer = panels[0][0], layers[0]
        st.caption(
            f"Cosine similarity in the full {Xs[model].shape[2]}-dimensional space of {md(model)} layer "
            f"{layer}; ✓ = same sense as the selected occurrence."
        )
        st.dataframe(
            neighbour_table(Xs[model][layer], occs, pick, k, sense_label),
            hide_index=True,
            width="stretch",
            column_config=OCCURRENCE_COLUMNS,
        )

    scope = corpus_scope(corpus_limit())
    if st.toggle(
        f"Search {scope} for this occurrence's nearest neighbours (corpus search)",
        key=state.bind("poly_corpus", False, param="corpus"),
        help=f"Its nearest occurrences among the sense-tagged tokens of {scope}, at this layer, "
        "with their senses (exBERT).",
    ):
        with safe("search the corpus"):
            corpus_panel(
                model,
                layer,
                Xs[model][layer, pick],
                key="poly_corpus",
                k_param="corpus_k",
                ref=occs[pick].ref,
                query_key=occs[pick].keys[0] if occs[pick].keys else None,
                what=f"#{pick + 1} {occs[pick].target}",
            )
    layer_chart(c, occs, Xs)


def occurrence_vectors(model: str, occs) -> np.ndarray:
    """From the SemCor feature cache when it has them (``corpus_ui.cached_occurrence_vectors``), else embedded."""
    X = cached_occurrence_vectors(model, occs)
    return occurrence_vectors_progress(model, occs) if X is None else X


def occurrence_signature(c: dict, occs) -> tuple:
    """Names this set of occurrences exactly (every sentence, span, sense and label)."""
    return (c["source"], c["word"], len(occs), hash(tuple(occs)))


#: The URL parameters of the view below the controls (``_view``, ``corpus_panel``).
VIEW_PARAMS = ("pick", "layer", "layer_b", "k", "corpus", "corpus_k")


@page
def main() -> None:
    page_header("Polysemy explorer", INTRO, draws=("plotly", "dataframe"))
    c = controls()
    with safe(
        "collect the occurrences",
        without_data="Without SemCor, choose “my sentences” (or an upload) under “Occurrences from”: the explorer "
        "works on any sentences that use the word.",
    ):
        occs = None if c is None else get_occurrences(c)
        if occs is None:  # nothing to show: the view's choices leave the URL (a link holds what is on screen)
            for param in VIEW_PARAMS:
                state.forget(param)
            return
        # A new set of occurrences starts the picker at the first one (its old label would be stale).
        sig = occurrence_signature(c, occs)
        if st.session_state.get("_poly_occ_sig") not in (None, sig):
            st.session_state["poly_pick"] = 0
        st.session_state["_poly_occ_sig"] = sig
        models = [c["model"]] + ([c["model_b"]] if c["model_b"] else [])
        Xs = {m: occurrence_vectors(m, occs) for m in models}
        view(c, occs, Xs)


main()
