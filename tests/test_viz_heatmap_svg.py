"""Heatmaps downloaded as vector SVG (issue 30: "heatmaps as vector SVG"): plotly.js exports a heatmap as one
embedded PNG, so the app writes the map itself, one rectangle a cell."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import plotly.graph_objects as go

from viz.attention import grid_figure
from viz.figures import attention_heatmap
from viz.heatmap_svg import drawable, heatmap_svg

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg: bytes) -> list[ET.Element]:
    """The map's cells: the rectangles that carry their value (the background and the colour bar carry none)."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert not list(root.iter(f"{SVG}image"))  # no raster anywhere
    return [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]


def brightness(fill: str) -> float:
    r, g, b = map(float, re.findall(r"[\d.]+", fill))
    return r + g + b


def test_an_attention_map_is_one_rectangle_a_cell_darker_where_the_weight_is_larger() -> None:
    tokens = ["The", "bank", "<rose>", "&"]
    att = np.array([[0.7, 0.1, 0.1, 0.1], [0.2, 0.5, 0.2, 0.1], [0.05, 0.05, 0.8, 0.1], [0.25, 0.25, 0.25, 0.25]])
    svg = heatmap_svg(attention_heatmap(att, tokens, title="minilm: layer 2, head 1"))
    rects = cells(svg)
    assert len(rects) == 16
    values = [float(r.find(f"{SVG}title").text) for r in rects]
    np.testing.assert_allclose(sorted(values), sorted(att.ravel()), atol=1e-4)
    order = np.argsort(values)  # Blues: the larger the weight, the darker the cell
    assert brightness(rects[order[-1]].get("fill")) < brightness(rects[order[0]].get("fill"))
    text = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text"))
    assert "minilm: layer 2, head 1" in text and "<rose>" in text and "&" in text and "query (attending)" in text
    # the query rows run down from the top, as the page draws them (the y axis is reversed)
    ys = {float(r.get("y")) for r, v in zip(rects, values) if v == 0.7}
    assert ys == {min(float(r.get("y")) for r in rects)}


def test_the_grid_of_every_head_leaves_its_gaps_empty_and_a_figure_without_one_map_gives_none() -> None:
    att = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5)).astype(np.float32)
    assert len(cells(heatmap_svg(grid_figure(att, (1, 2), title="grid")))) == 2 * 3 * 5 * 5
    assert heatmap_svg(go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))) is None


def test_a_map_without_its_own_range_spans_its_data_and_one_on_a_colour_axis_is_drawn_too() -> None:
    """A trace without ``zmin``/``zmax`` (the attention entropy map, 2.01–2.31 bits) was coloured over 0–2.31, every
    cell nearly one colour; a map whose colours live on ``layout.coloraxis`` (Syntax's distance map) crashed, and
    a figure of two maps got a button whose file was empty: it is now offered only where it can be drawn."""
    from viz.attention import entropy_figure
    from viz.trees import TreeView, distance_figure, tree_distances

    att = np.random.default_rng(1).dirichlet(np.ones(6), size=(2, 3, 6))
    ent = entropy_figure(att, "minilm")
    svg = heatmap_svg(ent)
    z = np.asarray([t for t in ent.data if t.type == "heatmap"][0].z, float)
    bar = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert f"{z.max():.3g}" in bar and f"{z.min():.3g}" in bar  # the colour bar runs over the data
    fills = {r.get("fill") for r in cells(svg)}
    assert len(fills) == z.size  # six distinct entropies, six distinct colours
    dist = tree_distances((2, 0, 2, 2))
    alone = distance_figure(TreeView(("Dogs", "bark", "!", "…"), dist, dist[1]))
    assert drawable(alone) and len(cells(heatmap_svg(alone))) == np.size(alone.data[0].z)  # the scored words'
    two = go.Figure([go.Heatmap(z=[[1, 2]]), go.Heatmap(z=[[3, 4]])])
    assert not drawable(two) and heatmap_svg(two) is None


def test_the_values_and_relations_written_on_cells_are_written_in_the_svg_in_their_colours() -> None:
    """The CKA map writes each cell's value and the head map each head's relation as a text trace over the map;
    the vector SVG had left them out, so a downloaded map lost the numbers the page shows."""
    import pandas as pd

    from viz.profile import cka_heatmap
    from viz.syntax_heads import head_figure

    matrix = np.array([[1.0, 0.94], [0.94, 0.12]])
    fig = cka_heatmap(matrix, ["0", "1"], ["0", "1"], title="CKA")
    svg = ET.fromstring(heatmap_svg(fig))
    labels = {t.text: t.get("fill") for t in svg.iter(f"{SVG}text") if t.get("fill")}
    assert set(labels) == {"1.00", ".94", ".12"}
    assert labels[".12"] == "#ffffff" and labels["1.00"] == "#000000"  # dark Viridis at 0.12, yellow at 1
    rects = {float(r.find(f"{SVG}title").text): r for r in cells(heatmap_svg(fig))}
    cell = next(t for t in svg.iter(f"{SVG}text") if t.text == ".12")  # centred in the bottom-right cell
    box = rects[0.12]
    assert float(box.get("x")) < float(cell.get("x")) < float(box.get("x")) + float(box.get("width"))
    assert float(box.get("y")) < float(cell.get("y")) < float(box.get("y")) + float(box.get("height"))
    heads = pd.DataFrame(
        [(1, 1, "nsubj", "dep→head", 60.0, 5.0, 1, 40.0, 10), (1, 2, "amod", "head→dep", 70.0, 8.0, -1, 30.0, 12)],
        columns=["layer", "head", "relation", "direction", "accuracy", "gain", "offset", "offset_accuracy", "n"],
    )
    text = [t.text for t in ET.fromstring(heatmap_svg(head_figure(heads))).iter(f"{SVG}text") if t.get("fill")]
    assert sorted(text) == ["amod", "nsubj"]
