"""viz/attention.py's head explorer figures on real MiniLM attention: the one-trace grid and its
click targets, bertviz's line view, and the query·key products recovered from the softmax."""

from __future__ import annotations

import numpy as np
import pytest

from models.registry import load_embedder
from viz.attention import grid_figure, line_view, mosaic, query_key_figure, query_key_scores

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


def test_line_view_draws_each_link_over_the_threshold_once(att) -> None:
    a = att[1, 0]
    fig = line_view(a, WORDS, query=1, threshold=0.05)
    segments = sum(int(np.isnan(np.asarray(t.x, float)).sum()) for t in fig.data if t.mode == "lines" and len(t.x) != 2)
    query_lines = [t for t in fig.data if t.mode == "lines" and len(t.x) == 2]
    assert segments + len(query_lines) == int((a >= 0.05).sum())
    assert len(query_lines) == int((a[1] >= 0.05).sum()) and all(t.y[0] == -1 for t in query_lines)
    texts = [t for t in fig.data if t.mode == "text"]
    assert [list(t.text) for t in texts] == [WORDS, WORDS]
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
    assert list(fig.data[1].y) == pytest.approx(list(a[4]))
