"""Embedding space page: static neighbours, analogies, a map of a word list, contextual neighbours
(typed tokens and all of SemCor), and a projector of occurrences or uploaded vectors.

Only the open tab runs (``st.tabs(..., on_change="rerun")``); every choice lives in the URL.
Widget keys (stable; the browser benchmark uses them): space_tab, space_model, space_nn_word, space_nn_k,
space_an_a/b/c/k, space_map_words, space_map_method, space_ctx_model, space_ctx_text, space_ctx_layer,
space_ctx_token, space_corpus_k, space_pj_source, space_pj_model, space_pj_word, space_pj_layer,
space_pj_colour, space_pj_search, space_pj_isolate, space_pj_method, space_pj_upload, space_pj_vectors,
space_pj_meta.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import (
    EXAMPLE_SENTENCE,
    MAX_UPLOAD_MB,
    chart,
    download,
    embed_sentences,
    get_embedder,
    md,
    model_names,
    occurrence_vectors_progress,
    page,
    page_header,
    preferred,
    safe,
    semcor_corpus,
    show_warnings,
    wait_warmup,
)
from app_pages.corpus_ui import corpus_panel, sense_label
from models import DEFAULT_STATIC_MODEL
from viz.export import file_stem, frame_csv, frame_json
from viz.figures import scatter_points
from viz.lexical_sample import LexicalSampleSource
from viz.occurrence_figures import occurrence_scatter
from viz.points import collapse, colour_groups, occurrence_metadata, search_mask
from viz.polysemy import semcor_occurrences
from viz.projection import METHODS, project
from viz.projector import parse_metadata, parse_vectors, stack_layers
from viz.space import parse_word_groups, static_vectors, token_neighbours, token_table
from viz.text import parse_sentences, shorten, validate_word

INTRO = """
Word vectors put words with similar distributions near each other. Explore a **static** model's
space (one vector per word type) with nearest neighbours, analogies (*a* is to *b* as *c* is to ?,
solved by 3CosAdd: the word nearest to *b − a + c*) and a 2-D map of your own word list — then
compare with **contextual** vectors, where every *token* of a sentence has its own vector, and search
all of SemCor for a token's nearest occurrences. The address bar always holds a link to this view.
"""

DEFAULT_WORDS = """king queen prince princess man woman
paris france rome italy berlin germany
bank money loan river shore water
play game theatre actor music"""
TABS = ("Neighbours", "Analogies", "Map a word list", "Contextual neighbours", "Projector")
PJ_SOURCES = ("SemCor word", "lexical sample (TSV)", "my vectors (TSV)")


def neighbours_tab(model: str) -> None:
    c1, c2 = st.columns([3, 1])
    word = c1.text_input("Word", key=state.bind("space_nn_word", "bank", param="word"), max_chars=60)
    k = c2.slider("Neighbours", 3, 30, key=state.bind("space_nn_k", 10, lo=3, hi=30, param="k"))
    with safe("find neighbours"):
        word = validate_word(word)
        emb = get_embedder(model)
        try:
            nn = emb.neighbours(word, k)
        except KeyError:
            st.info(f"“{md(word)}” is not in the vocabulary of {model}. Try another word.")
            return
        df = pd.DataFrame(nn, columns=["word", "cosine"])
        st.dataframe(
            df,
            hide_index=True,
            width="stretch",
            column_config={
                "cosine": st.column_config.ProgressColumn("cosine", min_value=0.0, max_value=1.0, format="%.3f")
            },
        )
        download("Neighbours (CSV)", frame_csv(df), f"{file_stem('neighbours', model, word)}.csv", key="space_nn_csv")


def analogy_tab(model: str) -> None:
    st.caption("3CosAdd: rank every vocabulary word x by cos(x, b − a + c), excluding a, b and c.")
    c1, c2, c3, c4 = st.columns(4)
    a = c1.text_input("a", key=state.bind("space_an_a", "man", param="a"), max_chars=60)
    b = c2.text_input("is to b", key=state.bind("space_an_b", "king", param="b"), max_chars=60)
    c = c3.text_input("as c", key=state.bind("space_an_c", "woman", param="c"), max_chars=60)
    k = c4.slider("answers", 1, 20, key=state.bind("space_an_k", 5, lo=1, hi=20, param="answers"))
    with safe("solve the analogy"):
        a, b, c = validate_word(a), validate_word(b), validate_word(c)
        emb = get_embedder(model)
        try:
            answers = emb.analogy(a, b, c, k)
        except KeyError as exc:
            st.info(f"{md(str(exc.args[0]) if exc.args else 'A word is not in the vocabulary.')}")
            return
        st.markdown(f"**{md(a)} : {md(b)} :: {md(c)} : {md(answers[0][0])}**")
        st.dataframe(pd.DataFrame(answers, columns=["answer", "cosine"]), hide_index=True, width="stretch")


def map_tab(model: str) -> None:
    text = st.text_area(
        "Words to map (one group per line)", key=state.bind("space_map_words", DEFAULT_WORDS, param="words"), height=130
    )
    method = (
        st.segmented_control("Projection", METHODS, key=state.bind("space_map_method", "PCA", METHODS, param="method"))
        or "PCA"
    )
    with safe("draw the map"):
        words, groups, warnings = parse_word_groups(text)
        show_warnings(warnings)
        emb = get_embedder(model)
        vecs, kept, idx, missing = static_vectors(emb, words)
        if missing:
            st.caption("Not in the vocabulary (left out): " + ", ".join(md(w) for w in missing[:30]))
        if len(kept) < 2:
            st.info("Need at least two known words to draw a map.")
            return
        coords, note = project(vecs, method, 2)
        if note:
            st.caption(note)
        fig = scatter_points(
            coords,
            [groups[i] for i in idx],
            kept,
            text_labels=kept,
            legend_title="group",
            title=f"{model}: {method} of {len(kept)} words",
        )
        data = pd.DataFrame({"word": kept, "group": [groups[i] for i in idx], "x": coords[:, 0], "y": coords[:, 1]})
        chart(
            fig,
            file_stem("map", model, method),
            key="space_map_plot",
            data=frame_csv(data),
            data_label="Coordinates (CSV)",
        )


def contextual_tab() -> None:
    st.caption(
        "Every token gets its own vector, so the same word in two sentences has two different vectors. "
        "Pick a token: its nearest occurrences among **all of SemCor** (225k sense-tagged tokens, with "
        "their WordNet senses), and among the tokens you typed."
    )
    c1, c2 = st.columns([1, 2])
    names = model_names(contextual=True)
    if not names:
        st.info("No contextual model is available yet. See the Models page.")
        return
    model = c1.selectbox(
        "Contextual model", names, key=state.bind("space_ctx_model", preferred(names), names, param="ctx_model")
    )
    default_text = EXAMPLE_SENTENCE + "\nShe deposited the cheque at the bank.\nThey fished from the bank of the river."
    text = c2.text_area(
        "Sentences (one per line)", key=state.bind("space_ctx_text", default_text, param="text"), height=110
    )
    with safe("compute contextual neighbours"):
        parsed = parse_sentences(text, max_sentences=20, max_words_per_sentence=60, max_total_words=400)
        show_warnings(parsed.warnings)
        outs = embed_sentences(model, parsed.sentences)
        num_layers = outs[0]["vectors"].shape[0]
        layer = st.slider(
            "Layer",
            0,
            num_layers - 1,
            key=state.bind("space_ctx_layer", num_layers - 1, lo=0, hi=num_layers - 1, param="layer"),
            help="0 = context-independent layer",
        )
        table = token_table(outs, layer)  # words only: punctuation is neither a query nor a neighbour
        if len(table.rows) < 1:
            st.info("No words in these sentences (only punctuation).")
            return
        tokens = list(table.rows["token"])
        default = next((i for i, t in enumerate(tokens) if t.lower() == "bank"), 0)
        pick = st.selectbox(
            "Token",
            list(range(len(tokens))),
            key=state.bind("space_ctx_token", default, lo=0, hi=len(tokens) - 1, param="token"),
            format_func=lambda i: f"s{table.rows['sentence'][i]} · {table.rows['context'][i]}",
        )
        st.subheader("Nearest in all of SemCor")
        corpus_panel(
            model,
            layer,
            table.vectors[pick],
            key="space_corpus",
            what=f"“{tokens[pick]}” (s{table.rows['sentence'][pick]})",
        )
        st.subheader("Nearest among your tokens")
        st.caption(
            "At a top layer the same word form is often nearest whatever its sense (the vectors keep much "
            "of the word's identity); the SemCor neighbours above show which sense a token is read as."
        )
        if len(tokens) > 1:
            st.dataframe(token_neighbours(table, pick, 10), hide_index=True, width="stretch")


@st.cache_data(show_spinner=False, max_entries=8)
def _lexical(data: bytes, name: str) -> LexicalSampleSource:
    return LexicalSampleSource.from_upload(data, name, max_mb=MAX_UPLOAD_MB)


def _projector_points():
    """(vectors (n, dim), metadata, title) for the projector's chosen source, or None."""
    source = (
        st.segmented_control(
            "Points from", PJ_SOURCES, key=state.bind("space_pj_source", PJ_SOURCES[0], PJ_SOURCES, param="pj_source")
        )
        or PJ_SOURCES[0]
    )
    if source == "my vectors (TSV)":
        c1, c2 = st.columns(2)
        vec = c1.file_uploader(
            "Vectors (one per line, numbers separated by tabs)", type=["tsv", "txt", "csv"], key="space_pj_vectors"
        )
        meta = c2.file_uploader(
            "Metadata (optional; a header line when it has several columns)", type=["tsv", "txt"], key="space_pj_meta"
        )
        if vec is None:
            st.info("Upload a vectors TSV (the Embedding Projector's format) and, optionally, its metadata.")
            return None
        X = parse_vectors(vec.getvalue())
        return X, parse_metadata(meta.getvalue() if meta is not None else None, len(X)), vec.name
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
        up = c2.file_uploader(
            f"Lexical-sample TSV (≤ {MAX_UPLOAD_MB:g} MB)",
            type=["tsv", "txt"],
            key="space_pj_upload",
            max_upload_size=max(int(MAX_UPLOAD_MB), 1),
        )
        if up is None:
            st.info("Upload a lexical-sample TSV (sentence⇥target index⇥label): every occurrence, coloured by label.")
            return None
        occs, total = _lexical(up.getvalue(), up.name).all_occurrences(cap=300)
        if total > len(occs):
            st.caption(f"A random sample of {len(occs)} of the file's {total} occurrences.")
    X = occurrence_vectors_progress(model, occs)
    layers = ["all layers"] + list(range(X.shape[0]))
    choice = c3.selectbox("Layer", layers, key=state.bind("space_pj_layer", X.shape[0] - 1, layers, param="pj_layer"))
    meta = occurrence_metadata(occs, sense_label)
    if choice == "all layers":
        pts, meta = stack_layers(X, meta)
        return pts, meta, f"{model}, all layers"
    return X[int(choice)], meta.assign(layer=int(choice)), f"{model}, layer {choice}"


def projector_tab() -> None:
    st.caption(
        "Like the Embedding Projector: colour by any metadata, search (substring, or re:pattern) and "
        "isolate the matches; upload your own vectors and metadata."
    )
    with safe("draw the projector"):
        got = _projector_points()
        if got is None:
            return
        X, meta, what = got
        c1, c2, c3, c4 = st.columns([1, 2, 1, 1])
        cols = [c for c in meta.columns if c != "context"] or list(meta.columns)
        colour = c1.selectbox("Colour by", cols, key=state.bind("space_pj_colour", cols[0], cols, param="colour"))
        query = c2.text_input(
            "Search",
            key=state.bind("space_pj_search", "", param="search"),
            max_chars=200,
            placeholder=r"e.g. river   or   re:^The\b",
        )
        isolate = c3.toggle("Isolate matches", key=state.bind("space_pj_isolate", False, param="isolate"))
        method = c4.selectbox(
            "Projection", METHODS, key=state.bind("space_pj_method", "PCA", METHODS, param="pj_method")
        )
        mask = search_mask(meta, query)
        if query.strip():
            st.caption(f"{int(mask.sum())} of {len(meta)} points match “{md(query.strip())}”.")
        rep, inverse = collapse(X)
        rep_coords, note = _project(X[rep], method)
        coords = rep_coords[inverse]
        if note:
            st.caption(note)
        hover = [
            "\n".join(f"{k}: {shorten(v, 110)}" for k, v in row.items()) for row in meta.astype(str).to_dict("records")
        ]
        fig = occurrence_scatter(
            coords,
            colour_groups(meta, colour),
            hover,
            inverse=inverse,
            matched=mask,
            isolate=isolate,
            legend_title=colour,
            title=f"{what}: {method} of {len(X)} points",
        )
        data = meta.assign(x=coords[:, 0], y=coords[:, 1], match=mask)
        chart(
            fig,
            file_stem("projector", what, method),
            key="space_pj_plot",
            data=lambda: frame_csv(data),
            data_label="Points (CSV)",
        )
        download(
            "Points (JSON)",
            lambda: frame_json(data),
            f"{file_stem('projector', what)}.json",
            key="space_pj_json",
            mime="application/json",
        )


@st.cache_data(show_spinner=False, max_entries=16)
def _project(X: np.ndarray, method: str):
    return project(X, method, 2)


@page
def main() -> None:
    page_header("Embedding space", INTRO)
    tabs = st.tabs(TABS, key=state.bind("space_tab", TABS[0], TABS, param="tab"), on_change="rerun")
    if tabs[0].open or tabs[1].open or tabs[2].open:
        statics = model_names(contextual=False)
        if not statics:
            with next(t for t in tabs if t.open):
                st.info("No static model is available yet. See the Models page.")
            return
        for tab, fn in zip(tabs[:3], (neighbours_tab, analogy_tab, map_tab)):
            if tab.open:
                with tab:
                    fn(
                        st.selectbox(
                            "Static model",
                            statics,
                            key=state.bind(
                                "space_model", preferred(statics, DEFAULT_STATIC_MODEL), statics, param="model"
                            ),
                        )
                    )
    elif tabs[3].open:
        with tabs[3]:
            contextual_tab()
    elif tabs[4].open:
        with tabs[4]:
            projector_tab()


main()
