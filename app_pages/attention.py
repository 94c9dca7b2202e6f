"""Attention page: every head at a glance (click one to open it), its token-to-token map beside
bertviz's line view, the selected token's query·key products, bertviz's neuron view (the Neurons tab,
``app_pages.attention_neurons``), two models or two layers side by side, and (the Syntax tab,
``app_pages.syntax_heads_ui``, as on the Syntax page) each head's best dependency relation on EWT dev.

Line view as in bertviz's head view (``viz.attention_lines``): a click on a token focuses its lines and
fades the others (left: as a query, right: as a key), links under a threshold are hidden, and further
heads of the layer can be drawn over the open one, each in its own colour with a legend. The query/key
pair, focus, threshold and heads live in the URL (``app_pages.attention_controls``, ``state.bind``).

Speed: the head explorer is one ``st.fragment``, so a click on the grid, a layer/head slider or the
query token reruns only it (not the sentence parsing, the model call or the averages), and the grid
is one heatmap trace (``viz.attention.grid_figure``), not one subplot per head. Only the open tab
(heads, neurons or averages) runs and draws, and the tokens box fills when opened: a new visitor's
browser draws three charts fewer. Attention is cached per (model, fingerprint, sentence) by
``app_pages.common``.

Comparable by eye: the two line views side by side share one weight scale (``line_view(top=…)``) and
start level; the Averages tab shows both models of "two models", every map of a kind on one colour
scale (``viz.attention.same_scale``). A new sentence (or unit) puts the query token back on its first
token (and the key token on its strongest link), so no box shows the old sentence's token.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import state
from app_pages.attention_controls import (
    TABS,
    get_attention,
    head_controls,
    line_controls,
    pair_controls,
    select_line_token,
)
from app_pages.attention_neurons import neuron_view
from app_pages.common import (
    EXAMPLE_SENTENCE,
    chart,
    download,
    model_names,
    page,
    page_header,
    preferred,
    safe,
    select_clicked_head,
    show_warnings,
    wrapping_row,
)
from app_pages.loaders import piece_attention
from app_pages.syntax_heads_ui import heads_tab as head_syntax_view
from models.registry import get_spec
from viz.attention import (
    entropy_figure,
    grid_figure,
    line_view,
    mean_over_heads,
    query_key_figure,
    same_scale,
    strongest_links,
)
from viz.export import attention_csv, attention_json, file_stem
from viz.figures import attention_heatmap
from viz.text import counted, parse_sentences

INTRO = """
Transformers build each layer's vector of a word as a weighted average over the words of the
sentence: the **attention** weights. Each layer has several **heads**, each with its own pattern
(some look at the previous word, some at the sentence's punctuation, some at a related word).
Rows are the attending word (query), columns the word attended to (key); each row sums to 1.
A GPT-style model only attends to the left (a triangle); a BERT-style model sees both sides.
"""

MAX_WORDS = 40  # a 6 × 12 grid of 40 × 40 maps stays fast to draw
UNITS = ["words", "subword pieces"]
COMPARE = ["one model", "two models", "two layers"]
SHORT = {"subword pieces": "subwords", "one model": "off"}  # labels of choices (the URL keeps the names)


def short_label(choice: str) -> str:
    return SHORT.get(choice, choice)


def head_panel(
    att: np.ndarray, tokens: list[str], model: str, layer: int, head: int, query: int, key: int, key_prefix: str
) -> None:
    """One head: its heatmap beside the line view (the focused token's lines strong, the others faded)."""
    a = att[layer - 1, head - 1]
    focus, threshold, more = line_controls(att.shape[1])
    shown = sorted({head, *more})
    c1, c2 = wrapping_row(f"{key_prefix}_row", 2)  # stacked in a narrow window: at 1024 px the map kept 157 px
    with c1:
        chart(
            attention_heatmap(a, tokens, title=f"{model}: layer {layer}, head {head}"),
            file_stem("attention", model, f"L{layer}", f"H{head}"),
            key=f"{key_prefix}_map",
            data=lambda: attention_csv(a, tokens, layers=[layer], heads=[head]),
        )
    lines = att[layer - 1, [h - 1 for h in shown]] if len(shown) > 1 else a
    names = ", ".join(f"H{h}" for h in shown) if len(shown) > 1 else f"head {head}"
    with c2:
        chart(
            line_view(
                lines,
                tokens,
                query=query if focus == "query" else None,
                key=key if focus == "key" else None,
                threshold=threshold,
                heads=shown if len(shown) > 1 else None,
                title=f"Line view, layer {layer}: {names}",
            ),
            file_stem("attention-lines", model, f"L{layer}", *(f"H{h}" for h in shown)),
            key=f"{key_prefix}_lines",
            data=lambda: attention_csv(
                att[layer - 1 : layer, [h - 1 for h in shown]], tokens, layers=[layer], heads=shown
            ),
            on_select=select_line_token(f"{key_prefix}_lines"),
            selection_mode="points",
        )
    st.caption(
        "Line view: queries on the left, keys on the right; a line's width and opacity are its weight. "
        f"Links under {threshold:.2f} are hidden. Click a token to focus its lines (hover one for its strongest links)"
        + (f"; {len(shown)} heads, each in its own colour." if len(shown) > 1 else ".")
    )


@state.fragment
def head_explorer(model: str, words: list[str], unit: str, compare: str, model_b: str | None) -> None:
    """The grid, the selected head (map + line view), its query·key products, the side-by-side panel."""
    att, tokens, _ = get_attention(model, words, unit)
    grid_col, ctrl_col = st.columns([3, 2])
    with ctrl_col:  # filled first: the grid outlines the head these controls hold
        layer, head = head_controls(att)
        query, key = pair_controls(att, tokens, layer, head)
        st.caption("Strongest links of this head (self-attention left out):")
        st.table(strongest_links(att[layer - 1, head - 1], tokens, k=8), hide_index=True, border="horizontal")
    with grid_col:
        st.caption(
            "Every head of every layer (rows = layers, columns = heads). **Click a tile to open that "
            "head**; the open head is outlined in red."
        )
        chart(
            grid_figure(att, (layer, head), title="Attention of every head", subtitle=f"{model} · {unit}"),
            file_stem("attention-grid", model),
            key="attn_grid",
            on_select=select_clicked_head("attn_grid", "attn_layer", "attn_head"),  # the tile opens its head
            selection_mode="points",
            image_size=False,
            data=lambda: attention_csv(att, tokens),
            data_label="All heads (CSV)",
        )
        download(
            "All heads (JSON)",
            lambda: attention_json(att, tokens, model=model, unit=unit),
            f"{file_stem('attention', model)}.json",
            key="attn_all_json",
            mime="application/json",
        )
    head_panel(att, tokens, model, layer, head, query, key, "attn_head_plot")
    chart(
        query_key_figure(
            att[layer - 1, head - 1],
            tokens,
            query,
            title=f"Query “{tokens[query]}”: q·k/√d with every key, and the weight it becomes",
        ),
        file_stem("attention-qk", model, f"L{layer}", f"H{head}", f"q{query + 1}"),
        key="attn_qk",
    )
    st.caption(
        "The bars are the scaled dot products of the query's vector with each key's vector (the neuron "
        "view's core), centred on the row's mean: recovered exactly from the softmax, which ignores "
        "a row's constant (log weight − mean log weight). A gap of 1 is a factor e ≈ 2.7 in weight. "
        "The Neurons tab shows the query and key vectors that make them."
        + (
            " In the word view, pieces are merged first, so these are per word, not per piece."
            if unit == "words"
            else ""
        )
    )
    if compare != COMPARE[0]:
        side_by_side(att, tokens, model, layer, head, query, words, unit, compare, model_b)


def side_by_side(
    att: np.ndarray,
    tokens: list[str],
    model: str,
    layer: int,
    head: int,
    query: int,
    words: list[str],
    unit: str,
    compare: str,
    model_b: str | None,
) -> None:
    """Two heads' line views on one scale, their tops level: the second head's controls sit above both."""
    st.subheader("Side by side")
    if compare == COMPARE[1] and model_b is None:
        st.info("Pick the second model above.")
        return
    other = model_b if compare == COMPARE[1] else model
    att_b, tokens_b, _ = get_attention(other, words, unit) if other != model else (att, tokens, "")
    Lb, Hb = att_b.shape[:2]
    _, c1, c2 = st.columns([2, 1, 1])
    default_b = min(Lb, layer + 1) if other == model else min(Lb, layer)
    lb = c1.slider(f"Layer ({other})", 1, Lb, key=state.bind("attn_b_layer", default_b, lo=1, hi=Lb, param="b_layer"))
    hb = c2.slider(f"Head ({other})", 1, Hb, key=state.bind("attn_b_head", min(head, Hb), lo=1, hi=Hb, param="b_head"))
    maps = (att[layer - 1, head - 1], att_b[lb - 1, hb - 1])
    top = float(max(m.max() for m in maps))
    height = min(900, max(300, 22 * max(len(tokens), len(tokens_b)) + 70))
    st.caption(
        f"One scale for both: a line's width and colour are its weight, the strongest of the two ({top:.2f}) "
        "drawn at full strength."
    )
    for col, name, a, toks, lay, hd, q, key in zip(
        st.columns(2),
        (model, other),
        maps,
        (tokens, tokens_b),
        (layer, lb),
        (head, hb),
        (query, query if query < len(tokens_b) else 0),
        ("attn_side_a", "attn_side_b"),
    ):
        chart(
            line_view(
                a,
                toks,
                query=q,
                threshold=float(st.session_state.get("attn_min_weight", 0.02)),
                top=top,
                height=height,
                title=f"{name}: layer {lay}, head {hd}",
            ),
            file_stem("attention-lines", name, f"L{lay}", f"H{hd}"),  # as the page's other files name them
            key=key,
            data=lambda a=a, toks=toks, lay=lay, hd=hd: attention_csv(a, toks, layers=[lay], heads=[hd]),
            container=col,
        )
    if tokens_b != tokens:
        st.caption("The two models split the sentence differently (piece view); the word view lines them up.")


def averages(runs: list[tuple[str, np.ndarray, list[str]]]) -> None:
    """Each model's head averages and head entropies (``runs``: (model, attention, tokens), one or two
    models), every map of a kind on one colour scale."""
    two = len(runs) > 1
    note = st.empty()  # the scales' caption, above the maps, once they are known
    cols = st.columns(len(runs))
    shown = []
    for col, (model, att, tokens), suffix in zip(cols, runs, ("", "_b")):
        L, H = att.shape[:2]
        label = f"Layer for the head average ({model})" if two else "Layer for the head average"
        layer_key = state.bind(f"attn_avg_layer{suffix}", L, lo=1, hi=L, param=f"avg_layer{suffix}")
        avg_layer = col.slider(label, 1, L, key=layer_key)
        maps = [
            (
                attention_heatmap(
                    mean_over_heads(att, avg_layer - 1), tokens, title=f"{model}, layer {avg_layer}: mean of {H} heads"
                ),
                file_stem("attention-mean", model, f"L{avg_layer}"),
                f"attn_avg_layer_plot{suffix}",
            ),
            (
                attention_heatmap(mean_over_heads(att), tokens, title=f"{model}: mean of all {L} layers × {H} heads"),
                file_stem("attention-mean", model, "all"),
                f"attn_avg_all_plot{suffix}",
            ),
        ]
        shown.append((col, maps, (entropy_figure(att, model), file_stem("attention-entropy", model), suffix)))
    top = same_scale([fig for _, maps, _ in shown for fig, _, _ in maps])
    bits = same_scale([entropy[0] for _, _, entropy in shown])
    uniform = " and ".join(
        sorted({f"{np.log2(max(n, 2)):.1f} bits over {counted(n, 'token')}" for n in (a.shape[-1] for _, a, _ in runs)})
    )
    note.caption(
        f"One colour scale for every attention map on this tab (weight 0 to {top:.2f}) and one for every "
        f"entropy map (0 to {bits:.2f} bits; low = a focused head, uniform attention = {uniform})."
    )
    for col, maps, (ent, ent_name, suffix) in shown:
        for slot, (fig, name, key) in zip(col.columns(2) if not two else (col, col), maps):
            chart(fig, name, key=key, container=slot)
        chart(ent, ent_name, key=f"attn_entropy_plot{suffix}", container=col)


@page
def main() -> None:
    page_header("Attention", INTRO, draws=("plotly",))
    names = model_names(has_attention=True)
    if not names:
        st.info(
            "No model with attention (BERT- or GPT-family) is available yet. See the Models page for how to train one."
        )
        return
    c1, c2 = st.columns([3, 1])
    text = c1.text_input(
        "Sentence",
        key=state.bind("attn_text", EXAMPLE_SENTENCE, param="text"),
        help=f"Up to {MAX_WORDS} words; longer text is cut with a warning.",
    )
    model = c2.selectbox("Model", names, key=state.bind("attn_model", preferred(names), names, param="model"))
    # Each control as wide as its options, in a row that wraps when the window is narrow (fixed columns cut the
    # buttons at 800 px); short labels for them.
    row = st.container(horizontal=True, vertical_alignment="bottom")
    unit = (
        row.segmented_control(
            "Units", UNITS, key=state.bind("attn_unit", "words", UNITS, param="unit"), format_func=short_label
        )
        or "words"
    )
    compare = (
        row.segmented_control(
            "Side by side",
            COMPARE,
            key=state.bind("attn_compare", COMPARE[0], COMPARE, param="compare"),
            format_func=short_label,
            help="Two models on the same sentence, or two layers of this model.",
        )
        or COMPARE[0]
    )
    model_b = None
    if compare == COMPARE[0]:
        for param in ("b_layer", "b_head", "model_b"):
            state.forget(param)
    if compare == COMPARE[1]:
        others = [m for m in names if m != model] or names
        model_b = row.selectbox(
            "Second model", others, key=state.bind("attn_model_b", others[0], others, param="model_b"), width=220
        )
    with safe("compute attention"):
        parsed = parse_sentences(
            text, one_per_line=False, max_words_per_sentence=MAX_WORDS, max_sentences=1, max_total_words=MAX_WORDS
        )
        show_warnings(parsed.warnings)
        words = parsed.sentences[0]
        att, tokens, note = get_attention(model, words, unit)
        L, H, n, _ = att.shape
        st.caption(
            f"{model} ({get_spec(model).traits.label}): {L} layers × {H} heads over {counted(n, 'token')}. {note}"
        )
        tokens_box = st.expander("Tokens the model saw", key="attn_tokens_open", on_change="rerun")
        if tokens_box.open:  # lazy: a closed box costs a new visitor nothing (st.code loads a highlighter)
            # the model's own pieces in either view: the word view's words hid an [UNK] ("🙂" read as [UNK])
            seen = tokens if unit != "words" else list(piece_attention(model, words)["pieces"])
            tokens_box.code(" | ".join(seen), language=None, wrap_lines=True)
            if unit == "words":
                tokens_box.caption("The model's own pieces, special tokens included; the maps pool them into words.")
        heads_tab, neurons_tab, avg_tab, syntax_tab = st.tabs(
            TABS, key=state.bind("attn_tab", TABS[0], TABS, param="tab"), on_change="rerun"
        )
        if heads_tab.open:
            with heads_tab:
                head_explorer(model, words, unit, compare, model_b)
        if neurons_tab.open:
            with neurons_tab:
                neuron_view(model, words, unit)
        if avg_tab.open:
            with avg_tab:
                others = [(model_b, *get_attention(model_b, words, unit)[:2])] if model_b else []
                averages([(model, att, tokens), *others])
        if syntax_tab.open:  # Clark et al.: which heads find the dependency head (the Syntax page's view)
            with syntax_tab, safe("count which heads find the dependency head on UD EWT dev"):
                head_syntax_view(model, words, keys="attn_syn", params="syn_")


main()
