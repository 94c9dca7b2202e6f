"""The head-syntax view shared by the Syntax page's Heads tab and the Attention page's Syntax tab (not a page).

Clark et al. (2019): the head-syntax probe's counts on the first EWT dev sentences (``probes.syntax_views``,
kept per model and size by ``st.cache_resource``) as a layers × heads heatmap of each head's best relation
(``viz.syntax_heads``) and a table per relation against the fixed-offset baseline; a click picks a head, a
link opens it in the Attention page's head view on the page's sentence.
"""

from __future__ import annotations

import streamlit as st

from app_pages import state
from app_pages.attention_controls import head_link
from app_pages.common import chart, download, md, select_clicked_head
from app_pages.loaders import get_embedder
from probes.estimators.head_syntax import OFFSETS, HeadCounts
from probes.syntax_views import HEADS_LIMIT, head_counts
from viz.export import file_stem, frame_csv
from viz.syntax_heads import MIN_COUNT, RANKINGS, best_relations, head_figure, relation_table

HEAD_SIZES = [50, 100, HEADS_LIMIT, 500]


@st.cache_resource(show_spinner=False, max_entries=8)
def _head_counts(name: str, fingerprint: str, limit: int) -> HeadCounts:
    return head_counts(get_embedder(name), limit)


def heads_tab(model: str, words: list[str], keys: str, params: str) -> None:
    """The best relation of every head on EWT dev, a chosen head and a link into the Attention page's head
    view. ``keys`` prefixes the widget keys and ``params`` the URL parameters, so two pages (Syntax: "syn", "";
    Attention: "attn_syn", "syn_") keep their own choices and never read each other's ``head``/``layer``."""
    emb = get_embedder(model)
    if not emb.has_attention:
        st.info(f"{md(model)} has no attention heads: pick a transformer (e.g. minilm) for this tab.")
        return
    c1, c2 = st.columns([1, 2])
    limit = c1.selectbox(
        "EWT dev sentences",
        HEAD_SIZES,
        key=state.bind(f"{keys}_heads_n", HEADS_LIMIT, HEAD_SIZES, param=f"{params}heads_n"),
    )
    by = (
        c2.segmented_control(
            "Best relation by", RANKINGS, key=state.bind(f"{keys}_rank", RANKINGS[0], RANKINGS, param=f"{params}rank")
        )
        or RANKINGS[0]
    )
    with st.spinner(f"Reading {model}'s attention over the first {limit} EWT dev sentences (once per model)…"):
        counts = _head_counts(model, emb.fingerprint(), limit)
    frame = best_relations(counts, by=by)
    L, H = counts.layers, counts.heads
    top = frame.loc[frame["accuracy"].idxmax()]
    layer = state.bind(f"{keys}_head_layer", int(top["layer"]), lo=1, hi=L, param=f"{params}head_layer")
    head = state.bind(f"{keys}_head", int(top["head"]), lo=1, hi=H, param=f"{params}head")
    c1, c2 = st.columns(2)  # the keyboard's way to the head a click on a tile picks
    chosen = (c1.slider("Head's layer", 1, L, key=layer), c2.slider("Head", 1, H, key=head))
    value = "accuracy" if by == RANKINGS[0] else "gain"
    chart(
        head_figure(frame, chosen, value=value, title=f"{model}: each head's best relation ({value})"),
        file_stem("syntax-heads", model, f"dev{limit}", value),
        key=f"{keys}_heads_grid",
        on_select=select_clicked_head(f"{keys}_heads_grid", f"{keys}_head_layer", f"{keys}_head"),
        selection_mode="points",
        data=lambda: frame_csv(frame),
        data_label="Best relation per head (CSV)",
    )
    st.caption(
        f"Over {counts.sentences} EWT dev sentences, relations with ≥ {MIN_COUNT} dependencies, both directions "
        "(dep->head: the word the dependent attends to most is its head; head->dep: the word attending to the "
        "dependent most is its head; a word's attention to itself never counts). The **fixed-offset baseline** "
        f"always picks the word at {', '.join(f'{k:+d}' for k in OFFSETS)} from the dependent (the best of the "
        f"{len(OFFSETS)} per relation, on the same dependencies): a head is only interesting above it. Here each "
        "relation's best head is picked and scored on the same sentences, an upper bound for new text; the "
        "committed results (docs/results/ud_ewt/) pick on EWT dev and score on test. Per relation:"
    )
    table = relation_table(counts)
    st.dataframe(table, hide_index=True, width="stretch", height=250)
    download(
        "Best head per relation (CSV)",
        lambda: frame_csv(table),
        f"{file_stem('syntax-relations', model)}.csv",
        key=f"{keys}_rel_csv",
    )
    row = frame[(frame["layer"] == chosen[0]) & (frame["head"] == chosen[1])].iloc[0]
    st.markdown(
        f"**Layer {chosen[0]}, head {chosen[1]}**: {md(row['relation'])} ({row['direction']}) "
        f"{row['accuracy']:.1f}% against the best offset's {row['offset_accuracy']:.1f}%. Click a tile (or use the "
        "sliders) to pick another."
    )
    st.page_link(
        "app_pages/attention.py",
        label="Open this head in the Attention page",
        icon=":material/grid_on:",
        query_params=head_link(model, " ".join(words), *chosen),
    )
