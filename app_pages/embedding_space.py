"""Embedding space page: static neighbours, analogies, a map of a word list, contextual neighbours."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.common import (
    EXAMPLE_SENTENCE, embed_sentences, family_of, get_embedder, md, model_select, page, page_header,
    safe, show_warnings,
)
from viz.figures import scatter_points
from viz.projection import METHODS, project
from viz.space import parse_word_groups, static_vectors, token_neighbours, token_table
from viz.text import parse_sentences, validate_word

INTRO = """
Word vectors put words with similar distributions near each other. Explore a **static** model's
space (one vector per word type) with nearest neighbours, analogies (*a* is to *b* as *c* is to ?,
solved by 3CosAdd: the word nearest to *b − a + c*) and a 2-D map of your own word list — then
compare with **contextual** vectors, where every *token* of a sentence has its own vector.
"""

DEFAULT_WORDS = """king queen prince princess man woman
paris france rome italy berlin germany
bank money loan river shore water
play game theatre actor music"""


def neighbours_tab(model: str) -> None:
    c1, c2 = st.columns([3, 1])
    word = c1.text_input("Word", "bank", key="space_nn_word", max_chars=60)
    k = c2.slider("Neighbours", 3, 30, 10, key="space_nn_k")
    with safe("find neighbours"):
        word = validate_word(word)
        emb = get_embedder(model)
        try:
            nn = emb.neighbours(word, k)
        except KeyError:
            st.info(f"“{md(word)}” is not in the vocabulary of {model}. Try another word.")
            return
        df = pd.DataFrame(nn, columns=["word", "cosine"])
        st.dataframe(df, hide_index=True, width="stretch",
                     column_config={"cosine": st.column_config.ProgressColumn(
                         "cosine", min_value=0.0, max_value=1.0, format="%.3f")})


def analogy_tab(model: str) -> None:
    st.caption("3CosAdd: rank every vocabulary word x by cos(x, b − a + c), excluding a, b and c.")
    c1, c2, c3, c4 = st.columns(4)
    a = c1.text_input("a", "man", key="space_an_a", max_chars=60)
    b = c2.text_input("is to b", "king", key="space_an_b", max_chars=60)
    c = c3.text_input("as c", "woman", key="space_an_c", max_chars=60)
    k = c4.slider("answers", 1, 20, 5, key="space_an_k")
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
    text = st.text_area("Words to map (one group per line)", DEFAULT_WORDS, height=130, key="space_map_words")
    method = st.segmented_control("Projection", METHODS, default="PCA", key="space_map_method") or "PCA"
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
        fig = scatter_points(coords, [groups[i] for i in idx], kept, text_labels=kept, legend_title="group",
                             title=f"{model}: {method} of {len(kept)} words")
        st.plotly_chart(fig, width="stretch", key="space_map_plot")


def contextual_tab() -> None:
    st.caption("Every token gets its own vector, so the same word in two sentences has two different vectors. "
               "Pick a token and see which typed tokens are nearest (cosine) at a chosen layer.")
    c1, c2 = st.columns([1, 2])
    with c1:
        model = model_select("Contextual model", ("elmo", "bert", "gpt"), key="space_ctx_model", default="minilm")
    text = c2.text_area("Sentences (one per line)",
                        EXAMPLE_SENTENCE + "\nShe deposited the cheque at the bank.\nThey fished from the bank of the river.",
                        height=110, key="space_ctx_text")
    if model is None:
        return
    with safe("compute contextual neighbours"):
        parsed = parse_sentences(text, max_sentences=20, max_words_per_sentence=60, max_total_words=400)
        show_warnings(parsed.warnings)
        outs = embed_sentences(model, parsed.sentences)
        num_layers = outs[0]["vectors"].shape[0]
        layer = st.slider("Layer", 0, num_layers - 1, num_layers - 1, key="space_ctx_layer",
                          help="0 = context-independent layer")
        table = token_table(outs, layer)
        options = list(range(len(table.rows)))
        default = next((i for i, t in enumerate(table.rows["token"]) if t.lower() == "bank"), 0)
        pick = st.selectbox("Token", options, index=default, key="space_ctx_token",
                            format_func=lambda i: f"s{table.rows['sentence'][i]} · {table.rows['context'][i]}")
        st.dataframe(token_neighbours(table, pick, 10), hide_index=True, width="stretch")


@page
def main() -> None:
    page_header("Embedding space", INTRO)
    model = model_select("Static model", ("static",), key="space_model", default="glove-6b-50d")
    tabs = st.tabs(["Neighbours", "Analogies", "Map a word list", "Contextual neighbours"])
    if model is not None and family_of(model) == "static":
        with tabs[0]:
            neighbours_tab(model)
        with tabs[1]:
            analogy_tab(model)
        with tabs[2]:
            map_tab(model)
    with tabs[3]:
        contextual_tab()


main()
