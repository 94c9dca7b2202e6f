"""Attention page: layers × heads grid, one head token-to-token, averages; words or subword pieces."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app_pages.common import (
    EXAMPLE_SENTENCE, embed_sentences, family_of, model_select, page, page_header, piece_attention, safe,
    show_warnings,
)
from viz.attention import head_entropy, mean_over_heads, strongest_links
from viz.figures import attention_grid, attention_heatmap
from viz.text import parse_sentences

INTRO = """
Transformers build each layer's vector of a word as a weighted average over the words of the
sentence: the **attention** weights. Each layer has several **heads**, each with its own pattern
(some look at the previous word, some at the sentence's punctuation, some at a related word).
Rows are the attending word (query), columns the word attended to (key); each row sums to 1.
A GPT-style model only attends to the left (a triangle); a BERT-style model sees both sides.
"""

MAX_WORDS = 40   # a 6 × 12 grid of 40 × 40 maps stays fast to draw


def get_attention(model: str, words: list[str], unit: str) -> tuple[np.ndarray, list[str], str]:
    """(layers, heads, n, n) attention, the n token labels, and a note about the units."""
    if unit == "words":
        out = embed_sentences(model, [words], with_attention=True)[0]
        return out["attentions"], list(out["words"]), (
            "Word view: attention to a word's pieces is summed, a word's query pieces are averaged, "
            "special tokens dropped and rows renormalised.")
    pa = piece_attention(model, words)
    return pa["attentions"], list(pa["pieces"]), "Piece view: the model's own subword pieces, special tokens included."


@page
def main() -> None:
    page_header("Attention", INTRO)
    c1, c2 = st.columns([3, 1])
    text = c1.text_input("Sentence", EXAMPLE_SENTENCE, key="attn_text",
                         help=f"Up to {MAX_WORDS} words; longer text is cut with a warning.")
    with c2:
        model = model_select("Model", ("bert", "gpt"), key="attn_model", default="minilm")
    unit = st.segmented_control("Units", ["words", "subword pieces"], default="words", key="attn_unit") or "words"
    if model is None:
        return
    with safe("compute attention"):
        parsed = parse_sentences(text, one_per_line=False, max_words_per_sentence=MAX_WORDS,
                                 max_sentences=1, max_total_words=MAX_WORDS)
        show_warnings(parsed.warnings)
        words = parsed.sentences[0]
        att, tokens, note = get_attention(model, words, unit)
        L, H, n, _ = att.shape
        st.caption(f"{model} ({family_of(model)}): {L} layers × {H} heads over {n} tokens. {note}")
        with st.expander("Tokens the model saw", expanded=False):
            st.code(" | ".join(tokens), language=None, wrap_lines=True)

        grid_tab, head_tab, avg_tab = st.tabs(["All heads", "One head", "Averages"])
        with grid_tab:
            st.caption("One small map per head: rows = layers (bottom = deeper), columns = heads. "
                       "Hover for the tokens and weights; pick a head in the next tab to zoom in.")
            st.plotly_chart(attention_grid(att, tokens), width="stretch", key="attn_grid",
                            config={"displayModeBar": False})
        with head_tab:
            h1, h2 = st.columns(2)
            layer = h1.slider("Layer", 1, L, min(L, 2), key="attn_layer")
            head = h2.slider("Head", 1, H, 1, key="attn_head")
            fig = attention_heatmap(att[layer - 1, head - 1], tokens, title=f"Layer {layer}, head {head}")
            st.plotly_chart(fig, width="stretch", key="attn_head_plot")
            st.caption("Strongest links of this head (self-attention left out):")
            st.dataframe(strongest_links(att[layer - 1, head - 1], tokens, k=8), hide_index=True, width="stretch")
        with avg_tab:
            a1, a2 = st.columns(2)
            avg_layer = a1.slider("Layer for the head average", 1, L, L, key="attn_avg_layer")
            a1.plotly_chart(attention_heatmap(mean_over_heads(att, avg_layer - 1), tokens,
                                              title=f"Layer {avg_layer}, mean over {H} heads"),
                            width="stretch", key="attn_avg_layer_plot")
            a2.plotly_chart(attention_heatmap(mean_over_heads(att), tokens,
                                              title=f"Mean over all {L} layers and {H} heads"),
                            width="stretch", key="attn_avg_all_plot")
            ent = head_entropy(att)
            fig = go.Figure(go.Heatmap(
                z=ent, x=[f"H{h + 1}" for h in range(H)], y=[f"L{l + 1}" for l in range(L)],
                colorscale="Viridis", colorbar=dict(title="bits", thickness=12),
                hovertemplate="%{y} %{x}: %{z:.2f} bits<extra></extra>"))
            fig.update_yaxes(autorange="reversed")
            fig.update_layout(template="plotly_white", height=60 + 34 * L, margin=dict(l=10, r=10, t=40, b=10),
                              title=dict(text=f"Mean attention entropy per head (uniform = {np.log2(max(n, 2)):.1f} bits): "
                                              "low = focused heads", x=0))
            st.plotly_chart(fig, width="stretch", key="attn_entropy_plot")


main()
