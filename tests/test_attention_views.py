"""viz/attention.py's head explorer figures on real MiniLM attention: the one-trace grid and its
click targets, bertviz's line view (focus, threshold, several heads in their own colours), the
query·key products recovered from the softmax, and the neuron view's figures (viz/attention_neurons.py)."""

from __future__ import annotations

import numpy as np
import pytest

from models.registry import load_embedder
from viz.attention import grid_figure, line_view, mosaic, query_key_figure, query_key_scores
from viz.attention_lines import FADE, PALETTE, head_colours
from viz.attention_neurons import keys_figure, keys_frame, pair_figure, pair_frame

WORDS = ["The", "bank", "raised", "interest", "rates", ",", "so", "we", "walked", "along", "the", "river", "bank", "."]


@pytest.fixture(scope="module")
def att() -> np.ndarray:
    return load_embedder("minilm").embed([WORDS], with_attention=True)[0].attentions


def test_mosaic_tiles_every_head_where_the_grid_clicks(att) -> None:
    L, H, n, _ = att.shape
    z = mosaic(att)
    assert z.shape == (L * (n + 1) - 1, H * (n + 1) - 1)
    assert np.array_equal(z[3 * (n + 1) : 3 * (n + 1) + n, 6 * (n + 1) : 6 * (n + 1) + n], att[3, 6])
    assert np.isnan(z[n, :]).all()  # a gap between layers
    fig = grid_figure(att, selected=(4, 7))
    assert len(fig.data) == 2  # one heatmap for all 72 heads + the click targets
    scale = fig.to_dict()["data"][0]["colorscale"]  # built unvalidated: the full scale, light = 0
    assert scale[0] == [0.0, "rgb(247,251,255)"] and scale[-1] == [1.0, "rgb(8,48,107)"]
    targets = fig.data[1]
    i = 3 * H + 6
    assert list(targets.customdata[i]) == [4, 7]
    # the click target of (layer 4, head 7) sits on the centre of its tile
    assert targets.x[i] == pytest.approx(6 * (n + 1) + (n - 1) / 2)
    assert targets.y[i] == pytest.approx(3 * (n + 1) + (n - 1) / 2)
    (box,) = fig.layout.shapes
    assert box.x0 < targets.x[i] < box.x1 and box.y0 < targets.y[i] < box.y1


def test_a_titled_grid_grows_by_its_title_so_tiles_and_click_targets_keep_their_size(att) -> None:
    from viz.titles import TOOLBAR_PX, title_below_toolbar

    plain, titled = grid_figure(att), grid_figure(att, title="Attention of every head: <minilm>")

    def plot_px(fig) -> float:
        return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b

    assert titled.layout.title.text == "Attention of every head: &lt;minilm&gt;"  # user text escaped
    assert titled.layout.title.pad.t >= TOOLBAR_PX and titled.layout.height > plain.layout.height
    assert plot_px(titled) == plot_px(plain) and titled.data[1].marker.size == plain.data[1].marker.size
    again = title_below_toolbar(titled)  # the app's chart helper applies the rule again: nothing moves
    assert plot_px(again) == plot_px(plain)
    two = grid_figure(att, title="Attention of every head", subtitle="hf:a-long/model-name · words")
    assert two.layout.title.text == "Attention of every head<br><sup>hf:a-long/model-name · words</sup>"
    assert plot_px(two) == plot_px(plain) and two.layout.height > titled.layout.height  # a line more, tiles kept


def test_line_view_draws_each_link_over_the_threshold_once(att) -> None:
    a = att[1, 0]
    fig = line_view(a, WORDS, query=1, threshold=0.05)
    segments = sum(int(np.isnan(np.asarray(t.x, float)).sum()) for t in fig.data if t.mode == "lines" and len(t.x) != 2)
    query_lines = [t for t in fig.data if t.mode == "lines" and len(t.x) == 2]
    assert segments + len(query_lines) == int((a >= 0.05).sum())
    assert len(query_lines) == int((a[1] >= 0.05).sum()) and all(t.y[0] == -1 for t in query_lines)
    texts = [t for t in fig.data if t.mode == "markers+text"]  # clickable tokens: [side, index]
    assert [list(t.text) for t in texts] == [WORDS, WORDS]
    assert [list(t.customdata[3]) for t in texts] == [[0, 3], [1, 3]]
    with pytest.raises(ValueError, match="does not match"):
        line_view(a, WORDS[:-1])


def test_query_key_scores_give_back_the_attention_through_the_softmax(att) -> None:
    a = att[2, 3].astype(np.float64)
    s = query_key_scores(a, 4)
    assert np.exp(s) / np.exp(s).sum() == pytest.approx(a[4] / a[4].sum(), rel=1e-5)
    assert abs(np.nanmean(s)) < 1e-9
    causal = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    assert np.isnan(query_key_scores(causal, 1)[2:]).all()  # a causal model's future keys: not seen
    fig = query_key_figure(a, WORDS, 4)
    assert list(next(t for t in fig.data if t.name == "attention weight").y) == pytest.approx(list(a[4]))


# ----------------------------------------------------------------------------- issue 30: bertviz's views


def _alpha(colour: str) -> float:
    return float(colour.rsplit(",", 1)[1].rstrip(")"))


def _drawn_links(fig) -> set[tuple[int, int]]:
    """(query, key) of every line drawn (binned traces and the focused token's own)."""
    links = set()
    for t in fig.data:
        if t.mode != "lines" or t.x[0] is None:
            continue
        y = np.asarray(t.y, float).reshape(-1, 3)[:, :2] if len(t.x) != 2 else np.asarray([t.y], float)
        links |= {(int(-q), int(-k)) for q, k in y}
    return links


def test_line_view_focus_fades_every_other_line(att) -> None:
    a = att[1, 0]
    plain = line_view(a, WORDS)
    focused = line_view(a, WORDS, query=4)
    faded = [t for t in focused.data if t.mode == "lines" and len(t.x) != 2]
    own = [t for t in focused.data if t.mode == "lines" and len(t.x) == 2]
    assert own and all(t.y[0] == -4 for t in own)  # the focused query's lines, one per link
    # Their ends sit on the tokens: the tokens take the hover (and the click), each key naming its weight.
    assert all(t.hoverinfo == "skip" for t in own)
    left, right = [t for t in focused.data if t.mode == "markers+text"]
    assert f"focus: {WORDS[4]} → {WORDS[7]}: {a[4, 7]:.3f}" in right.hovertext[7]
    assert "focus:" not in left.hovertext[4] and "focus:" not in left.hovertext[3]
    # the focused query is ringed (a cue besides its red label, which a protanope loses among dark ones)
    rings = [c != "rgba(0,0,0,0)" for c in left.marker.color]
    assert left.marker.symbol == "circle-open" and rings == [i == 4 for i in range(len(WORDS))]
    assert not any(c != "rgba(0,0,0,0)" for c in right.marker.color)
    assert _drawn_links(focused) == _drawn_links(plain)  # nothing hidden, only faded
    plain_alpha = {t.line.width: _alpha(t.line.color) for t in plain.data if t.mode == "lines"}
    for t in faded:  # every other line at FADE of its unfocused opacity
        assert _alpha(t.line.color) == pytest.approx(FADE * plain_alpha[t.line.width], abs=2e-3)
    assert min(_alpha(t.line.color) for t in own) > max(_alpha(t.line.color) for t in faded)
    unfaded = line_view(a, WORDS, query=4, fade=False)
    assert {_alpha(t.line.color) for t in unfaded.data if len(t.x) != 2 and t.mode == "lines"} <= set(
        plain_alpha.values()
    )
    # A key on the right: its incoming lines are the focused ones; its label turns red on the right only.
    by_key = line_view(a, WORDS, query=4, key=7)
    own = [t for t in by_key.data if t.mode == "lines" and len(t.x) == 2]
    assert own and all(t.y[1] == -7 for t in own) and len(own) == int((a[:, 7] >= 0.02).sum())
    left, right = [t for t in by_key.data if t.mode == "markers+text"]
    assert "#d62728" not in left.textfont.color and right.textfont.color[7] == "#d62728"


@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.2, 0.45])
def test_line_view_threshold_hides_links_below_it(att, threshold) -> None:
    a = att[3, 2]
    fig = line_view(a, WORDS, query=0, threshold=threshold)
    drawn = _drawn_links(fig)
    assert drawn == {(int(q), int(k)) for q, k in zip(*np.nonzero(a >= threshold))}
    with pytest.raises(ValueError, match="threshold"):
        line_view(a, WORDS, threshold=1.0)


def test_several_heads_each_in_its_own_colour_with_a_legend(att) -> None:
    heads = [1, 4, 7]
    fig = line_view(att[2, [h - 1 for h in heads]], WORDS, heads=heads, query=3, threshold=0.05)
    legend = [t for t in fig.data if t.showlegend]
    assert [t.name for t in legend] == ["head 1", "head 4", "head 7"] and fig.layout.showlegend
    colour = {t.legendgroup: t.line.color.rsplit(",", 1)[0] for t in legend}
    assert len(set(colour.values())) == 3
    dash = {t.legendgroup: t.line.dash for t in legend}
    assert len(set(dash.values())) == 3  # a line style each too: D3's hues merge in pairs for a colour-blind reader
    for t in fig.data:  # every line is drawn in its head's colour and style
        if t.mode == "lines" and not t.showlegend:
            assert t.line.color.rsplit(",", 1)[0] == colour[t.legendgroup] and t.line.dash == dash[t.legendgroup]
    assert {t.line.dash for t in line_view(att[2, 0], WORDS).data if t.mode == "lines"} == {"solid"}  # one head
    for h, m in zip(heads, att[2, [h - 1 for h in heads]]):  # and each head draws its own links
        group = [t for t in fig.data if t.mode == "lines" and t.legendgroup == f"head {h}" and not t.showlegend]
        n_lines = sum(int(np.isnan(np.asarray(t.x, float)).sum()) if len(t.x) != 2 else 1 for t in group)
        assert n_lines == int((m >= 0.05).sum())
    many = head_colours(40)
    assert len(set(many)) == 40 and many[:10] == [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in PALETTE[:10]]
    with pytest.raises(ValueError, match="head numbers"):
        line_view(att[2, :3], WORDS, heads=[1, 2])
    # a token's hover gives each head's weight beside the mean, never a bare mean read as one head's (it showed
    # "→ so: 0.16" where the open head's weight was 0.39)
    left = next(t for t in fig.data if t.mode == "markers+text" and t.textposition == "middle left")
    stack = att[2, [h - 1 for h in heads]]
    j = int(np.argmax(stack[:, 3].mean(0)))
    first = left.hovertext[3].split("<br>")[1]
    weights = ", ".join(f"H{h} {stack[k, 3, j]:.2f}" for k, h in enumerate(heads))
    assert first == f"→ {WORDS[j]}: mean {stack[:, 3, j].mean():.2f} ({weights})", first
    assert "average over 3 heads" in left.hovertext[3]


def test_neuron_view_figures_add_up_to_the_score_and_the_attention() -> None:
    rng = np.random.default_rng(0)
    n, d, query, key = 6, 8, 3, 1
    q, keys = rng.normal(size=d), rng.normal(size=(n, d))
    scale = d**-0.5
    pair = pair_figure(q, keys[key], scale, query_label="bank", key_label="river")
    heat, bars = pair.data
    assert np.allclose(np.asarray(heat.z), [q, keys[key]]) and heat.zmid == 0
    assert np.asarray(bars.y) == pytest.approx(q * keys[key])
    score = float(q @ keys[key]) * scale
    assert f"score {score:.3f}" in pair.layout.title.text and f"q·k = {q @ keys[key]:.3f}" in pair.layout.title.text
    tokens = [f"t{i}" for i in range(n)]
    for causal in (False, True):
        fig = keys_figure(q, keys, scale, tokens, query, key=key, causal=causal)
        heat, bars = fig.data
        scores = np.asarray(bars.x, float)
        seen = np.arange(n) <= query if causal else np.ones(n, bool)
        assert np.isnan(scores[~seen]).all() and np.isnan(np.asarray(heat.z, float)[~seen]).all()
        expected = np.exp(keys[seen] @ q * scale)
        assert np.asarray(bars.customdata)[seen] == pytest.approx(expected / expected.sum())
        assert np.nansum(np.asarray(heat.z, float), 1)[seen] * scale == pytest.approx(scores[seen])
        assert bars.marker.color[key] == "#d62728"
    frame = keys_frame(q, keys, scale, tokens, query, True)
    assert frame["weight"].sum() == pytest.approx(1.0) and frame["weight"].iloc[query + 1 :].eq(0).all()
    assert pair_frame(q, keys[key])["q×k"].sum() == pytest.approx(q @ keys[key])


def test_several_heads_legend_sits_under_the_tokens_not_on_the_title(att) -> None:
    """Five heads wrapped the legend to two rows above the plot, over the title "Line view, layer 2: H1 … H5"."""
    five = line_view(att[1, :5], WORDS, heads=[1, 2, 3, 4, 5], title="Line view, layer 2: H1, H2, H3, H4, H5")
    one = line_view(att[1, 0], WORDS, title="Line view, layer 2: H1")
    assert five.layout.legend.y <= 0 and five.layout.legend.yanchor == "top"
    assert five.layout.margin.b >= 10 + 2 * 22 and five.layout.height == one.layout.height + 2 * 22  # two rows
    assert one.layout.showlegend is False and one.layout.margin.t == five.layout.margin.t
