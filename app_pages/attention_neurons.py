"""The Attention page's Neurons tab: bertviz's neuron view of the open head for the query/key pair.

The query and key vectors are the model's own, per subword piece, read by forward hooks on its q/k
projections (``models.transformer.qk``), cached per (model, fingerprint, sentence) like the attention.
q·k is defined between pieces, so in the word view a word stands for its first piece (the caption says
which piece; the piece view shows every piece). The tab states how closely softmax(q·k × scale) over the
keys reproduces the attention the model returned; a model whose attention is not that (rotary or
relative positions) gets a clear message instead of vectors that would not explain it.
"""

from __future__ import annotations

import streamlit as st

from app_pages.attention_controls import get_attention, head_controls, pair_controls
from app_pages.common import chart
from app_pages.loaders import get_embedder
from models.transformer.qk import QueryKey, QueryKeyError, query_key_vectors
from viz.attention_neurons import keys_figure, keys_frame, pair_figure, pair_frame
from viz.export import file_stem, frame_csv


@st.cache_data(show_spinner=False, max_entries=16)
def _query_keys(name: str, fingerprint: str, words: tuple[str, ...]) -> QueryKey:
    return query_key_vectors(get_embedder(name), list(words))


def query_keys(model: str, words: list[str]) -> QueryKey:
    """The sentence's per-head query and key vectors (cached across reruns)."""
    emb = get_embedder(model)
    with st.spinner(f"Reading {model}'s queries and keys…"):
        return _query_keys(model, emb.fingerprint(), tuple(words))


def scaling_name(scale: float, dim: int) -> str:
    """What the factor on q·k is: "1/√64" where it is the usual 1/√d, else "the model's own scaling" (GPT-2 with
    ``scale_attn_by_inverse_layer_idx``, a model that scales its queries before the product)."""
    return f"1/√{dim}" if abs(scale * dim**0.5 - 1) < 1e-3 else "the model's own scaling"


def piece_of(qk: QueryKey, index: int, unit: str) -> int:
    """The piece that token ``index`` of the page's view stands for: itself (piece view) or a word's first piece."""
    return index if unit != "words" else qk.first_piece(index)


def neuron_view(model: str, words: list[str], unit: str) -> None:
    """The open head's q, k, q∘k and score for the pair, and q∘k with every key."""
    att, tokens, _ = get_attention(model, words, unit)
    c1, c2 = st.columns(2)
    with c1:
        layer, head = head_controls(att)
    with c2:
        query, key = pair_controls(att, tokens, layer, head)
    try:
        qk = query_keys(model, words)
    except QueryKeyError as exc:  # not softmax(q·k) (rotary, relative positions), or no heads; anything else: an error
        st.info(f"No neuron view for this model: {exc}")
        return
    li, h = layer - 1, head - 1
    qi, ki = piece_of(qk, query, unit), piece_of(qk, key, unit)
    pieces = qk.pieces
    q, keys, scale = qk.queries[li, h, qi], qk.keys[li, h], float(qk.scale[li])
    weight = float(qk.softmax(li, h)[qi, ki])
    d = q.shape[0]
    split = [tokens[i] for i in (query, key) if unit == "words" and qk.word_ids.count(i) > 1]
    where = f" (a word of several pieces stands for its first: {', '.join(split)})" if split else ""
    st.caption(
        f"Layer {layer}, head {head}: the query vector of “{pieces[qi]}” and the key vector of “{pieces[ki]}”"
        f"{where}, {d} dimensions each. Their products q×k add up to q·k; times {scale:.4g} "
        f"({scaling_name(scale, d)}) it is the score the softmax over the keys turns into a weight."
        + (" A decoder's query sees only itself and the pieces before it." if qk.causal else "")
    )
    if qk.causal and ki > qi:
        st.info("The key comes after the query: a decoder's query cannot see it (weight 0).")
    chart(
        pair_figure(
            q,
            keys[ki],
            scale,
            query_label=pieces[qi],
            key_label=pieces[ki],
            weight=None if qk.causal and ki > qi else weight,
            title=f"{model}, layer {layer}, head {head}: “{pieces[qi]}” → “{pieces[ki]}”",
        ),
        file_stem("attention-neurons", model, f"L{layer}", f"H{head}", f"q{qi + 1}", f"k{ki + 1}"),
        key="attn_neuron_pair",
        data=lambda: frame_csv(pair_frame(q, keys[ki])),
    )
    chart(
        keys_figure(
            q,
            keys,
            scale,
            pieces,
            qi,
            key=ki,
            causal=qk.causal,
            title=f"Query “{pieces[qi]}” with every key: q×k per dimension, and the score",
        ),
        file_stem("attention-neurons-keys", model, f"L{layer}", f"H{head}", f"q{qi + 1}"),
        key="attn_neuron_keys",
        data=lambda: frame_csv(keys_frame(q, keys, scale, pieces, qi, qk.causal)),
    )
    st.caption(
        f"Check: softmax(q·k × scale) over the keys gives the model's own attention to within "
        f"{qk.max_error():.1e} on every head of every layer (pieces, special tokens included)."
    )
