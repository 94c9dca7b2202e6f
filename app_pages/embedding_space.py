"""Embedding space page: static neighbours, analogies, a map of a word list, contextual neighbours
(typed tokens and all of SemCor), and a projector of occurrences or uploaded vectors.

Only the open tab runs (``st.tabs(..., on_change="rerun")``); every choice lives in the URL.
Widget keys (stable; the browser benchmark uses them): space_tab, space_model, space_nn_word, space_nn_k,
space_an_a/b/c/k, space_map_words, space_map_method, space_ctx_model, space_ctx_text, space_ctx_layer,
space_ctx_token, space_corpus_k; the Projector tab's (space_pj_*) are listed in ``app_pages.projector_tab``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import (
    EXAMPLE_SENTENCE,
    chart,
    download,
    md,
    model_names,
    page,
    page_header,
    preferred,
    safe,
    show_warnings,
)
from app_pages.corpus_ui import corpus_limit, corpus_panel, corpus_scope
from app_pages.loaders import embed_sentences, get_embedder
from app_pages.projector_tab import projector_tab
from models import DEFAULT_STATIC_MODEL
from viz.export import file_stem, frame_csv
from viz.occurrence_figures import occurrence_scatter
from viz.projection import METHODS, project
from viz.space import parse_word_groups, static_vectors, token_neighbours, token_table
from viz.text import parse_sentences, validate_word

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
        fig = occurrence_scatter(
            coords,
            [groups[i] for i in idx],
            kept,
            labels=kept,
            legend_title="group",
            title=f"{model}: {method} of {len(kept)} words",
            height=560,
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
    scope = corpus_scope(corpus_limit())
    st.caption(
        "Every token gets its own vector, so the same word in two sentences has two different vectors. "
        f"Pick a token: its nearest occurrences among the sense-tagged tokens of **{scope}** (with "
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
            help="0 = the input layer (no other word shapes it; a transformer's adds the position)",
        )
        table = token_table(outs, layer)  # words only: punctuation is neither a query nor a neighbour
        if len(table.rows) < 1:
            st.info("No words in these sentences: only tokens without a letter or digit (punctuation, emoji, symbols).")
            return
        tokens = list(table.rows["token"])
        default = next((i for i, t in enumerate(tokens) if t.lower() == "bank"), 0)
        pick = st.selectbox(
            "Token",
            list(range(len(tokens))),
            key=state.bind("space_ctx_token", default, lo=0, hi=len(tokens) - 1, param="token"),
            format_func=lambda i: f"s{table.rows['sentence'][i]} · {table.rows['context'][i]}",
        )
        st.subheader(f"Nearest in {scope}")
        with safe("search SemCor", without_data="Your own tokens' neighbours, below, need no data."):
            corpus_panel(
                model,
                layer,
                table.vectors[pick],
                key="space_corpus",
                k_param="corpus_k",
                what=f"“{tokens[pick]}” (s{table.rows['sentence'][pick]})",
            )
        st.subheader("Nearest among your tokens")
        st.caption(
            "At a top layer the same word form is often nearest whatever its sense (the vectors keep much "
            "of the word's identity); the SemCor neighbours above show which sense a token is read as."
        )
        if len(tokens) > 1:
            st.dataframe(token_neighbours(table, pick, 10), hide_index=True, width="stretch")


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
