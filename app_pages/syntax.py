"""Syntax page: is the dependency tree in a layer's geometry (Hewitt & Manning's structural probe), and which
attention heads find the syntactic head (Clark et al.)? For one EWT sentence, or one the user types.

Trees tab: the distance and depth probes of the chosen (model, layer), fitted on the first N sentences of
EWT train (``probes.syntax_views``: the probe's own estimator and feature-cache entry; ``st.cache_resource``
keeps one fit per model, layer and N), then the sentence's gold tree above its predicted tree
(``viz.trees``), the distance matrices and the depths. Heads tab (``app_pages.syntax_heads_ui``, shared
with the Attention page's Syntax tab): the head-syntax probe's counts on the first EWT dev sentences as a
layers × heads heatmap of each head's best relation (``viz.syntax_heads``); a click picks a head, and a link
opens it in the Attention page's head view on this page's sentence.

Every choice is in the URL (``state.bind``): model, tab, source, sentence, search, text, layer, train,
heads_n, rank, head_layer, head. Every chart goes through ``app_pages.common.chart`` (image + CSV).
"""

from __future__ import annotations

import time

import streamlit as st

from app_pages import state
from app_pages.common import (
    EXAMPLE_SENTENCE,
    chart,
    md,
    model_names,
    page,
    page_header,
    preferred,
    safe,
    show_warnings,
    wrapping_row,
)
from app_pages.loaders import embed_sentences, get_embedder
from app_pages.syntax_heads_ui import heads_tab
from corpora.conllu import DepTree
from features.background import duration
from probes.syntax_views import (
    TRAIN_LIMIT,
    TreeProbes,
    ewt_trees,
    extraction_estimate,
    fit_tree_probes,
    train_cached,
    train_features,
)
from viz.export import file_stem, frame_csv
from viz.text import parse_sentences
from viz.trees import TreeView, arc_figure, depth_figure, distance_figure, sentence_choices

INTRO = """
Is a sentence's **dependency tree** hidden in a layer's vectors? Hewitt & Manning's **structural probe**
learns one linear map B so that ‖B(hᵢ − hⱼ)‖² is the number of tree edges between words i and j; the
**predicted tree** is the minimum spanning tree of those distances, scored by **UUAS** (the share of gold
edges it finds; punctuation left out, as in the paper). A second map's ‖Bhᵢ‖² predicts each word's depth.
The **Heads** tab asks the same of attention (Clark et al. 2019): does a head attend to the word's head?
"""
SOURCES = {"dev": "EWT dev", "test": "EWT test", "typed": "Type a sentence"}
TRAIN_SIZES = [50, 100, 200, TRAIN_LIMIT, 1000, 2000]
TABS = ["Trees", "Heads"]
MAX_WORDS = 60


@st.cache_resource(show_spinner=False)
def _ewt(split: str):
    return ewt_trees(split)


@st.cache_resource(show_spinner=False, max_entries=32)
def _probes(name: str, fingerprint: str, layer: int, limit: int) -> TreeProbes:
    return fit_tree_probes(get_embedder(name), layer, limit=limit)


def tree_probes(model: str, layer: int, limit: int) -> TreeProbes:
    """The fitted probes: the training slice embedded first (with a progress bar and an estimate) if needed."""
    emb = get_embedder(model)
    if not train_cached(emb, limit):
        estimate = extraction_estimate(emb, limit)
        note = st.info(f"First use of {md(model)} here: {estimate}.", icon="⏳")
        bar = st.progress(0.0, text=f"Embedding the first {limit} EWT training sentences with {model}…")
        t0 = time.perf_counter()
        train_features(emb, limit, lambda f, msg: bar.progress(min(1.0, max(0.0, f)), text=msg))
        bar.empty()
        note.caption(f"First use of {md(model)} here: {estimate}; took {duration(time.perf_counter() - t0)}.")
    with st.spinner(f"Fitting the distance and depth probes of layer {layer} on {limit} sentences (seconds)…"):
        return _probes(model, emb.fingerprint(), layer, limit)


def choose_sentence() -> tuple[list[str], DepTree | None, str] | None:
    """(words, gold tree or None, how the sentence is named in file names) from the chosen source."""
    c1, c2 = st.columns([3, 2])
    source = (
        c1.segmented_control(
            "Sentence from",
            list(SOURCES),
            format_func=SOURCES.get,
            key=state.bind("syn_source", "dev", SOURCES, param="source"),
        )
        or "dev"
    )
    if source == "typed":
        for param in ("sentence", "search"):
            state.forget(param)
        text = st.text_input("Your sentence", key=state.bind("syn_text", EXAMPLE_SENTENCE, param="text"))
        parsed = parse_sentences(text, one_per_line=False, max_words_per_sentence=MAX_WORDS, max_sentences=1)
        show_warnings(parsed.warnings)
        st.caption("A typed sentence has no gold tree: only the predicted tree is drawn (punctuation left out).")
        return parsed.sentences[0], None, "typed"
    state.forget("text")
    trees = _ewt(source)
    search = c2.text_input("Search", key=state.bind("syn_search", "", param="search"), help="Words the sentence holds")
    found = [i + 1 for i in sentence_choices([t.words for t in trees], search)]
    if not found:
        st.warning(f"No {SOURCES[source]} sentence contains “{md(search)}”.", icon="🔎")
        return None  # not st.stop: the page ends normally, so the URL gets the search
    number = st.selectbox(
        f"Sentence ({len(found):,} of {len(trees):,})",
        found,
        format_func=lambda k: f"{k}. {' '.join(trees[k - 1].words)[:110]}",
        key=state.bind("syn_sentence", found[0], found, param="sentence"),
    )
    return list(trees[number - 1].words), trees[number - 1], f"{source}{number}"


def trees_tab(model: str, words: list[str], tree: DepTree | None, name: str) -> None:
    """Layer and slice controls, the fitted probes, and the sentence's three charts."""
    emb = get_embedder(model)
    L = emb.num_layers
    c1, c2 = st.columns([3, 1])
    layer_key = state.bind("syn_layer", L // 2, lo=0, hi=L - 1, param="layer")
    if L > 1:
        layer = c1.slider(
            "Layer",
            0,
            L - 1,
            key=layer_key,
            help="0 = the input layer (no other word shapes it; a transformer's adds the position)",
        )
    else:
        layer = st.session_state[layer_key]
        c1.caption(f"{md(model)} has one layer (0): context-independent vectors.")
    limit = c2.selectbox(
        "Training sentences",
        TRAIN_SIZES,
        key=state.bind("syn_train", TRAIN_LIMIT, TRAIN_SIZES, param="train"),
        help="The first N sentences of EWT train; early stopping on their last tenth.",
    )
    probes = tree_probes(model, layer, limit)
    st.caption(
        f"Probes of layer {layer} (rank {probes.distance.model_.B.shape[1]}) fitted on the first **{limit}** "
        f"sentences of UD English EWT train ({len(probes.distance.history_)} epochs, {probes.fit_s:.0f} s; cached "
        "for this model, layer and slice). A small slice gives a weaker probe than the full one, trained on all "
        "12,544 sentences: `python -m probes structural --model " + model.replace("`", "") + "` "
        "(docs/results/ud_ewt/structural.md)."
    )
    out = embed_sentences(model, [words])[0]
    distances, depths = probes.predict(out["vectors"][layer])
    view = TreeView(tuple(words), distances, depths, tree)
    stem = file_stem("syntax", model, f"L{layer}", name)
    head = f"{model}, layer {layer}"
    if view.uuas is not None:
        found, total = len(view.predicted & view.gold), len(view.gold)
        st.metric(  # the edge count in the label: on a short sentence one edge moves UUAS by many points
            f"UUAS (this sentence: {found} of {total} gold edges)",
            f"{view.uuas:.1f}",
            f"{view.uuas - view.chain_uuas:+.1f} vs the left-to-right chain ({view.chain_uuas:.1f})",
            **({} if round(view.uuas - view.chain_uuas, 1) else {"delta_color": "off", "delta_arrow": "off"}),  # level
            help=f"{found} of {total} gold edges between non-punctuation words found; one edge is "
            f"{100 / total:.0f} points here, so one sentence says little: docs/results/ud_ewt/structural.md has "
            "UUAS over all of EWT test, with its interval",
        )
    chart(
        arc_figure(view, title=f"{head}: {'gold and predicted trees' if tree is not None else 'predicted tree'}"),
        stem + "-trees",
        key="syn_arcs",
        data=lambda: frame_csv(view.edges_frame()),
        data_label="Edges (CSV)",
    )
    c1, c2 = wrapping_row("syn_charts", 2)  # stacked in a narrow window: at 1024 px the depths' labels were cut
    chart(distance_figure(view, title=f"{head}: distances"), stem + "-distances", key="syn_dist", container=c1)
    chart(depth_figure(view, title=f"{head}: word depths"), stem + "-depths", key="syn_depth", container=c2)


@page
def main() -> None:
    page_header("Syntax", INTRO, draws=("plotly",))
    names = model_names()
    if not names:
        st.info("No model is available yet. See the Models page for how to train one.")
        return
    model = st.selectbox("Model", names, key=state.bind("syn_model", preferred(names), names, param="model"))
    chosen = choose_sentence()
    if chosen is None:
        return
    words, tree, name = chosen
    trees, heads = st.tabs(TABS, key=state.bind("syn_tab", TABS[0], TABS, param="tab"), on_change="rerun")
    if trees.open:
        with trees, safe("draw the trees"):
            trees_tab(model, words, tree, name)
    if heads.open:
        with heads, safe("count the attention heads"):
            heads_tab(model, words, keys="syn", params="")


main()
