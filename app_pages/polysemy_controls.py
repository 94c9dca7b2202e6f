"""Polysemy explorer, its inputs: the controls at the top of the page and the occurrences they select.

The controls (source, model, word, projection, colour, comparison, and per source the part of speech
and sample size, the typed sentences or the uploaded lexical-sample file) rerun the whole page; their
values come back as one dict that the page and its view read. Every choice is bound to the URL
(``app_pages.state``). ``get_occurrences`` turns that dict into the word's occurrences, from SemCor,
the typed sentences or the upload, and explains on the page when there are none.
"""

from __future__ import annotations

import streamlit as st

from app_pages import state
from app_pages.common import md, model_names, preferred, show_warnings, uploader
from app_pages.loaders import lexical_source, semcor_corpus
from app_pages.warmup import wait_warmup
from models import DEFAULT_STATIC_MODEL
from viz.points import COLOUR_COLUMNS
from viz.polysemy import MAX_OCCURRENCES, POS_CHOICES, SUGGESTED_WORDS, semcor_occurrences, typed_occurrences
from viz.projection import METHODS
from viz.senses import wordnet_sense_count
from viz.text import counted, parse_sentences, validate_word

TYPED_DEFAULT = """I deposited my salary at the bank on Monday. | money
The bank raised its interest rates again. | money
She works as a teller in a small savings bank. | money
We had a picnic on the bank of the river. | river
The boat drifted towards the muddy bank. | river
Fishermen lined the river bank at dawn. | river"""
SOURCES = ("SemCor", "my sentences", "upload")
COMPARE = ("one panel", "two models", "two layers")
DIMS = ("2-D", "3-D")
#: The URL parameters of each source's own controls (the others are dropped from the URL).
SOURCE_PARAMS = {"SemCor": ("pos", "cap"), "my sentences": ("text",)}


def controls() -> dict | None:
    names = model_names()
    if not names:
        st.info("No model is available yet. See the Models page for how to train or add one.")
        return None
    c1, c2, c3 = st.columns([10, 5, 4])  # the buttons whole at a 1024-px window (they scrolled out of sight)
    source = (
        c1.segmented_control(
            "Occurrences from", SOURCES, key=state.bind("poly_source", "SemCor", SOURCES, param="source")
        )
        or "SemCor"
    )
    model = c2.selectbox("Model", names, key=state.bind("poly_model", preferred(names), names, param="model"))
    dims = c3.segmented_control("Plot", DIMS, key=state.bind("poly_dims", "2-D", DIMS, param="dims")) or "2-D"
    c4, c5, c6, c7 = st.columns([3, 2, 2, 2])  # "one panel" whole at a 1024-px window
    word = c4.text_input(
        "Word (lemma)",
        key=state.bind("poly_word", "bank", param="word"),
        max_chars=60,
        help="Try: " + ", ".join(SUGGESTED_WORDS),
    )
    method = c5.selectbox(
        "Projection",
        METHODS,
        key=state.bind("poly_method", "PCA", METHODS, param="method"),
        help="PCA is linear and fast; t-SNE and UMAP keep local neighbourhoods (UMAP compiles on first use, ~20 s).",
    )
    colour = c6.selectbox(
        "Colour by", COLOUR_COLUMNS, key=state.bind("poly_colour", "sense", COLOUR_COLUMNS, param="colour")
    )
    compare = c7.selectbox(
        "Compare",
        COMPARE,
        key=state.bind("poly_compare", "one panel", COMPARE, param="compare"),
        help="Two models (or two layers of one) side by side, same word and occurrences.",
    )
    model_b = None
    if compare == "two models":
        others = [m for m in names if m != model] or names
        model_b = st.selectbox(
            "Second model",
            others,
            key=state.bind("poly_model_b", preferred(others, DEFAULT_STATIC_MODEL), others, param="model_b"),
        )
    else:
        state.forget("model_b")
    c = dict(
        source=source,
        model=model,
        model_b=model_b,
        compare=compare,
        dims=3 if dims == "3-D" else 2,
        word=word,
        method=method,
        colour=colour,
        pos="any",
        cap=0,
        text=None,
        upload=None,
    )
    hidden = {p for params in SOURCE_PARAMS.values() for p in params} - set(SOURCE_PARAMS.get(source, ()))
    for p in hidden:  # only the hidden controls' params:
        state.forget(p)  # a shown control reads its own from the URL (a shared link) when it binds
    if source == "SemCor":
        c1, c2 = st.columns([1, 3])
        c["pos"] = c1.selectbox(
            "Part of speech", POS_CHOICES, key=state.bind("poly_pos", "noun", POS_CHOICES, param="pos")
        )
        c["cap"] = c2.slider(
            "Occurrences (sample size)",
            20,
            MAX_OCCURRENCES,
            key=state.bind("poly_cap", 120, lo=20, hi=MAX_OCCURRENCES, step=10, param="cap"),
            step=10,
            help="A seeded random sample of SemCor's tagged occurrences; bigger = slower.",
        )
    elif source == "my sentences":
        c["text"] = st.text_area(
            "Sentences containing the word, one per line; optional “| label” to colour by",
            key=state.bind("poly_text", TYPED_DEFAULT, param="text"),
            height=160,
        )
    else:
        up = uploader(
            "Lexical-sample TSV (sentence⇥target index⇥label[⇥lemma])",
            types=["tsv", "txt"],
            key="poly_upload",
            help="One occurrence per line: the sentence (words separated by spaces), the "
            "0-based index of the target word, its label (a WordNet sense key or your own).",
        )
        c["upload"] = (up.name, up.getvalue()) if up is not None else None
    return c


def get_occurrences(c: dict):
    word = validate_word(c["word"])
    if c["source"] == "SemCor":
        wait_warmup()  # WordNet glosses and SemCor
        with st.spinner("Reading SemCor (once per server)…"):
            sentences, index = semcor_corpus()
        occs, total = semcor_occurrences(sentences, index, word, c["pos"], cap=c["cap"])
        if not occs:
            pos_txt = "" if c["pos"] == "any" else f" as a {c['pos']}"
            st.info(
                f"“{md(word)}” has no sense-tagged occurrences{pos_txt} in SemCor. "
                f"Try another part of speech, a lemma such as {', '.join(SUGGESTED_WORDS[:4])}, "
                "or type your own sentences."
            )
            return None
        n_wn, shown = wordnet_sense_count(word, c["pos"]), len({o.keys[0] for o in occs})
        st.caption(
            f"{counted(total, 'tagged occurrence')} of “{md(word)}” in SemCor"
            + (f"; a random sample of {len(occs):,} is shown" if total > len(occs) else "")
            + f". WordNet lists {counted(n_wn, 'sense')}; {shown} {'appears' if shown == 1 else 'appear'} here."
        )
        return occs
    if c["source"] == "upload":
        if c["upload"] is None:
            st.info(
                "Upload a lexical-sample file: one occurrence per line, “sentence⇥target index⇥label”. "
                "Points are coloured by its labels."
            )
            return None
        src = lexical_source(c["upload"][1], c["upload"][0])
        occs, total = src.occurrences(word, cap=MAX_OCCURRENCES)
        if not occs:
            targets = ", ".join(f"{w} ({n})" for w, n in src.words()[:12])
            st.info(f"“{md(word)}” is not a target in {md(src.name)}. Its targets: {md(targets)}.")
            return None
        st.caption(
            f"{total} occurrences of “{md(word)}” in {md(src.name)}"
            + (f"; a random sample of {len(occs)} is shown" if total > len(occs) else "")
            + f"; {len({o.label for o in occs})} labels."
        )
        return occs
    parsed = parse_sentences(
        c["text"], max_sentences=60, max_words_per_sentence=60, max_total_words=1500, allow_labels=True
    )
    show_warnings(parsed.warnings)
    occs, missing = typed_occurrences(parsed, word)
    if missing:
        st.warning(f"{missing} line(s) do not contain “{md(word)}” and are left out.", icon="🔎")
    if not occs:
        st.info(f"None of the sentences contains “{md(word)}”. Type sentences that use the word.")
        return None
    return occs
