"""Polysemy explorer: a word's occurrences as contextual vectors, coloured by WordNet sense."""
from __future__ import annotations

import streamlit as st

from app_pages.common import (
    family_of, md, model_select, wait_warmup, occurrence_vectors_progress, page, page_header, projected, safe,
    semcor_corpus, show_warnings,
)
from viz.figures import layer_curves, scatter_points
from viz.polysemy import (
    POS_CHOICES, SUGGESTED_WORDS, distinct_vectors, layer_agreement, neighbour_table, semcor_occurrences,
    typed_occurrences,
)
from viz.projection import METHODS
from viz.senses import sense_info, wordnet_sense_count
from viz.text import parse_sentences, shorten, validate_word

INTRO = """
One spelling, several meanings: *bank* (river side / money), *play* (a drama / to play a game),
*interest* (curiosity / money). A **static** model gives every occurrence of a word form the same
vector, so all its senses collapse into one point. A **contextual** model (ELMo, BERT, GPT) gives
each occurrence its own vector; if it captures meaning, occurrences of the same WordNet sense
cluster together — more so in some layers than others (Peters et al. 2018, §5.3).
Points are SemCor 3.0 sentences hand-tagged with WordNet senses, or sentences you type.
"""

TYPED_DEFAULT = """I deposited my salary at the bank on Monday. | money
The bank raised its interest rates again. | money
She works as a teller in a small savings bank. | money
We had a picnic on the bank of the river. | river
The boat drifted towards the muddy bank. | river
Fishermen lined the river bank at dawn. | river"""


def sense_name(group: str | None) -> str:
    if group is None:
        return "(no label)"
    if "%" not in group:       # a user label
        return group
    return sense_info(group).short


def hover_text(occ) -> str:
    lines = [occ.source, shorten(occ.context(10), 110)]
    if occ.keys:
        info = sense_info(occ.keys[0])
        lines += [f"{info.synset} ({info.lexname})", shorten(info.gloss, 110)]
    elif occ.label:
        lines.append(f"label: {occ.label}")
    return "\n".join(lines)


def controls() -> dict:
    c1, c2, c3 = st.columns([2, 2, 1])
    source = c1.segmented_control("Occurrences from", ["SemCor", "my sentences"], default="SemCor",
                                  key="poly_source") or "SemCor"
    with c2:
        model = model_select("Model", None, key="poly_model", default="minilm")
    dims = c3.segmented_control("Plot", ["2-D", "3-D"], default="2-D", key="poly_dims") or "2-D"
    c4, c5, c6 = st.columns([2, 1, 1])
    word = c4.text_input("Word (lemma)", "bank", key="poly_word", max_chars=60,
                         help="Try: " + ", ".join(SUGGESTED_WORDS))
    method = c5.selectbox("Projection", METHODS, key="poly_method",
                          help="PCA is linear and fast; t-SNE and UMAP keep local neighbourhoods (UMAP compiles "
                               "on first use, ~20 s).")
    if source == "SemCor":
        pos = c6.selectbox("Part of speech", POS_CHOICES, index=1, key="poly_pos")
        cap = st.slider("Occurrences (sample size)", 20, 300, 120, step=10, key="poly_cap",
                        help="A seeded random sample of SemCor's tagged occurrences; bigger = slower.")
        text = None
    else:
        pos, cap = "any", 0
        text = st.text_area("Sentences containing the word, one per line; optional “| label” to colour by",
                            TYPED_DEFAULT, height=160, key="poly_text")
    return dict(source=source, model=model, dims=3 if dims == "3-D" else 2, word=word, method=method,
                pos=pos, cap=cap, text=text)


def get_occurrences(c: dict):
    word = validate_word(c["word"])
    wait_warmup()   # WordNet glosses and SemCor
    if c["source"] == "SemCor":
        with st.spinner("Reading SemCor (once per server)…"):
            sentences, index = semcor_corpus()
        occs, total = semcor_occurrences(sentences, index, word, c["pos"], cap=c["cap"])
        if not occs:
            pos_txt = "" if c["pos"] == "any" else f" as a {c['pos']}"
            st.info(f"“{md(word)}” has no sense-tagged occurrences{pos_txt} in SemCor. "
                    f"Try another part of speech, a lemma such as {', '.join(SUGGESTED_WORDS[:4])}, "
                    "or type your own sentences.")
            return None
        n_wn = wordnet_sense_count(word, c["pos"])
        st.caption(f"{total} tagged occurrences of “{md(word)}” in SemCor"
                   + (f"; a random sample of {len(occs)} is shown" if total > len(occs) else "")
                   + f". WordNet lists {n_wn} senses; {len({o.keys[0] for o in occs})} appear here.")
        return occs
    parsed = parse_sentences(c["text"], max_sentences=60, max_words_per_sentence=60, max_total_words=1500,
                             allow_labels=True)
    show_warnings(parsed.warnings)
    occs, missing = typed_occurrences(parsed, word)
    if missing:
        st.warning(f"{missing} line(s) do not contain “{md(word)}” and are left out.", icon="🔎")
    if not occs:
        st.info(f"None of the sentences contains “{md(word)}”. Type sentences that use the word.")
        return None
    return occs


def draw(c: dict, occs, X) -> None:
    model = c["model"]
    L = X.shape[0]
    layer = st.slider("Layer", 0, L - 1, min(L - 1, max(0, L // 2)), key="poly_layer",
                      help="0 = context-independent layer; drag to watch the senses separate.") if L > 1 else 0
    Xl = X[layer]
    distinct = distinct_vectors(Xl)
    if family_of(model) == "static" or distinct == 1:
        forms = sorted({o.target.lower() for o in occs})
        st.info(f"**{model} is a static model**: every occurrence of a word form gets the same vector, "
                f"whatever the sentence. The {len(occs)} occurrences collapse to {distinct} point(s) "
                f"(one per form: {md(', '.join(forms[:8]))}), so the senses cannot be told apart. "
                "Pick a contextual model (minilm, elmo-small, gpt-small) to see them separate.")
    groups = [o.group for o in occs]
    names = [sense_name(g) for g in groups]
    coords, note = projected(Xl, c["method"], c["dims"])
    if note:
        st.caption(note)

    # The occurrence picker sits below the plot; its value from the last run is ringed in the plot.
    picked = st.session_state.get("poly_pick", 0)
    fig = scatter_points(coords, names, [hover_text(o) for o in occs],
                         highlight=picked if isinstance(picked, int) and 0 <= picked < len(occs) else None,
                         title=f"“{c['word']}” · {model} · layer {layer} · {c['method']} ({len(occs)} occurrences)")
    st.plotly_chart(fig, width="stretch", key="poly_plot")

    st.subheader("Nearest occurrences")
    left, right = st.columns([2, 3])
    with left:
        pick = st.selectbox("Occurrence", list(range(len(occs))), key="poly_pick",
                            format_func=lambda i: f"#{i + 1} {shorten(occs[i].context(5), 70)}")
        k = st.slider("Neighbours", 3, 20, 8, key="poly_k")
        st.caption(f"Sense: {md(sense_name(groups[pick]))}")
        st.code(occs[pick].context(12), language=None, wrap_lines=True)
    with right:
        st.caption(f"Cosine similarity in the full {X.shape[2]}-dimensional space of layer {layer}; "
                   "✓ = same sense as the selected occurrence.")
        st.dataframe(neighbour_table(Xl, occs, pick, k, sense_name), hide_index=True, width="stretch",
                     column_config={"context": st.column_config.TextColumn(width="large")})

    labelled = [g for g in groups if g is not None]
    if len(set(labelled)) >= 2 and L > 1:
        st.subheader("Which layer separates the senses?")
        st.caption("For every occurrence, is its nearest other occurrence (cosine, full dimension) of the same "
                   "sense? The fraction per layer, against chance (a random other occurrence). This is the "
                   "1-nearest-neighbour idea behind the paper's WSD probe, on this word only.")
        df = layer_agreement(X, groups)
        long = df.melt(id_vars="layer", var_name="measure", value_name="fraction")
        st.plotly_chart(layer_curves(long, y="fraction", color="measure", y_title="fraction of occurrences",
                                     height=320), width="stretch", key="poly_layers_plot")


@page
def main() -> None:
    page_header("Polysemy explorer", INTRO)
    c = controls()
    if c["model"] is None:
        return
    with safe("collect the occurrences"):
        occs = get_occurrences(c)
        if occs is None:
            return
        X = occurrence_vectors_progress(c["model"], occs)
        draw(c, occs, X)


main()
