"""Issue 30, "Panels that talk": the projector's tools (neighbours in the original space, custom axes, a
vocabulary slice, labels, a clicked point) on numbers checked by hand, and the linked-selection callback.

The pages themselves (a click, a link, a 5,000-word slice) are in ``tests/test_app_projector_panels.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from sklearn.neighbors import NearestNeighbors

from app_pages.linked import linked_chart_kwargs, select_clicked_point
from viz.occurrence_figures import WEBGL_MIN_POINTS, occurrence_scatter
from viz.projector_tools import (
    clicked_index,
    custom_coords,
    endpoint_vector,
    neighbour_frame,
    point_labels,
    slice_metadata,
    unit_direction,
    vocabulary_slice,
)
from viz.text import InputError


def test_a_custom_axis_gives_a_vector_along_it_its_norm_and_one_across_it_zero() -> None:
    x_dir = unit_direction(np.array([1.0, 0, 0]), np.array([1.0, 3, 4]))  # (0, 3, 4) / 5
    assert np.allclose(x_dir, [0, 0.6, 0.8])
    y_dir = unit_direction(np.zeros(3), np.array([2.0, 0, 0]))  # (1, 0, 0)
    X = np.array([[0, 3, 4], [7, 0, 0], [0, -4, 3], [1, 3, 4]], np.float32)
    xy = custom_coords(X, x_dir, y_dir)
    assert np.allclose(xy[0], [5, 0])  # the axis direction itself: its norm, 5
    assert np.allclose(xy[1], [0, 7])  # across x, along y
    assert np.allclose(xy[2], [0, 0])  # orthogonal to both
    assert np.allclose(xy[3], [5, 1])
    with pytest.raises(InputError, match="same vector"):
        unit_direction(np.ones(3), np.ones(3), "the x axis")


def test_neighbours_are_sklearn_cosine_neighbours_in_the_full_space() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 50)).astype(np.float32)
    meta = pd.DataFrame({"word": [f"w{i}" for i in range(300)], "point": range(300)})  # an upload's own "point"
    table = neighbour_frame(X, meta, 17, k=10)
    dist, idx = NearestNeighbors(n_neighbors=11, metric="cosine").fit(X).kneighbors(X[17:18])
    assert idx[0][0] == 17  # itself first, left out of the table
    assert list(table["point"] - 1) == list(idx[0][1:])
    assert np.allclose(table["cosine"], 1 - dist[0][1:], atol=1e-4)
    assert list(table["point (metadata)"]) == list(idx[0][1:])
    assert list(table["nearest"]) == list(range(1, 11)) and list(table["word"]) == [f"w{j}" for j in idx[0][1:]]


def test_a_vocabulary_slice_counts_words_from_a_rank_and_skips_punctuation_on_request() -> None:
    vocab = ["the", ",", "of", ".", "1990", "and", "n't", "king"]
    assert list(vocabulary_slice(vocab, 0, 3)) == [0, 2, 5]
    assert list(vocabulary_slice(vocab, 0, 3, words_only=False)) == [0, 1, 2]
    assert list(vocabulary_slice(vocab, 5, 10)) == [5, 6, 7]  # the vocabulary ends first
    meta = slice_metadata(vocab, np.array([0, 2, 5]))
    assert list(meta["rank"]) == [1, 3, 6] and list(meta["word"]) == ["the", "of", "and"]
    with pytest.raises(InputError, match="vocabulary has 8 words"):
        vocabulary_slice(vocab, 8, 3)
    with pytest.raises(InputError, match="between 2 and"):
        vocabulary_slice(vocab, 0, 1)


def test_an_axis_end_is_the_models_vector_else_the_label_else_the_centroid_of_the_matches() -> None:
    X = np.array([[1.0, 0], [0, 1], [3, 3], [5, 1]])
    meta = pd.DataFrame({"word": ["man", "woman", "manner", "mankind"]})
    vec, how = endpoint_vector("man", X, meta)  # the exact label, not every word containing "man"
    assert np.allclose(vec, [1, 0]) and "labelled" in how
    vec, how = endpoint_vector("re:^mann", X, meta)  # a pattern: the points a search matches ("manner")
    assert np.allclose(vec, [3, 3]) and "1 point " in how
    # No such label: the points with the WORD in a column, which the caption names. A substring matched "he" in
    # "the" (39 of 40 sentences) and "money" through the senses' glosses (an audit).
    ctx = meta.assign(context=["the bank", "he sat", "he is the one", "then"], gloss=["", "", "", "money"])
    vec, how = endpoint_vector("he", X, ctx)
    assert np.allclose(vec, [1.5, 2]) and "2 points with the word “he” in their context" in how
    vec, how = endpoint_vector("money", X, ctx)
    assert np.allclose(vec, [5, 1]) and "in their gloss" in how
    with pytest.raises(InputError, match="No point has the word “kind”.*e.g. “man”, “woman”, “manner”"):
        endpoint_vector("kind", X, meta)  # "mankind" holds it, but not as a word
    vec, how = endpoint_vector("queen", X, meta, lookup=lambda w: np.array([9.0, 9]) if w == "queen" else None)
    assert np.allclose(vec, [9, 9]) and "model" in how
    with pytest.raises(InputError, match="No point has the word “zebra”"):
        endpoint_vector("zebra", X, meta, lookup=lambda w: None)
    with pytest.raises(InputError, match="Type a word"):
        endpoint_vector("  ", X, meta)


def test_a_click_names_the_point_in_its_customdata_and_the_ring_or_nothing_names_none() -> None:
    assert clicked_index({"selection": {"points": [{"customdata": 4, "x": 1}]}}, 10) == 4
    assert clicked_index({"selection": {"points": [{"customdata": [3, "x"]}]}}, 10) == 3
    assert clicked_index({"selection": {"points": [{"customdata": {"0": 2}}]}}, 10) == 2
    assert clicked_index({"selection": {"points": [{"x": 1}, {"customdata": 6}]}}, 10) == 6  # ring, then a point
    assert clicked_index({"selection": {"points": [{"customdata": 12}]}}, 10) is None  # out of range
    assert clicked_index({"selection": {"points": []}}, 10) is None
    assert clicked_index(None, 10) is None


def test_the_click_callback_sets_the_pages_picker(monkeypatch) -> None:
    fake: dict = {"plot": {"selection": {"points": [{"customdata": 7}]}}, "pick": 0}
    monkeypatch.setattr(st, "session_state", fake)
    select_clicked_point("plot", "pick", 20, offset=1)()
    assert fake["pick"] == 8  # a 1-based picker
    fake["plot"] = {"selection": {"points": [{"x": 0.3, "y": 0.1}]}}  # the ring: no customdata
    select_clicked_point("plot", "pick", 20)()
    assert fake["pick"] == 8
    kwargs = linked_chart_kwargs("plot", "pick", 20)
    assert kwargs["selection_mode"] == "points" and callable(kwargs["on_select"])
    assert linked_chart_kwargs("plot", "pick", 20, dims=3) == {}  # 3-D: a click turns the camera


def test_a_large_cloud_is_drawn_with_webgl_labels_and_the_neighbours_marked() -> None:
    n = WEBGL_MIN_POINTS
    rng = np.random.default_rng(1)
    coords = rng.normal(size=(n, 2))
    groups = ["a" if i % 2 else "b" for i in range(n)]
    meta = pd.DataFrame({"rank": range(1, n + 1), "word": [f"w{i}" for i in range(n)]})
    labels = point_labels(meta, limit=100, first=[n - 1])
    assert labels[n - 1] == f"w{n - 1}" and labels[0] == "w0" and labels[99] == "" and sum(map(bool, labels)) == 100
    fig = occurrence_scatter(coords, groups, ["h"] * n, highlight=5, related=[6, 7], labels=labels)
    types = {t.type for t in fig.data}
    assert types == {"scattergl"}
    near = next(t for t in fig.data if t.name == "nearest (full space)")
    assert np.allclose(np.c_[near.x, near.y], coords[[6, 7]])
    assert any("w0" in (t.text or ()) for t in fig.data)
    small = occurrence_scatter(coords[:50], groups[:50], ["h"] * 50)
    assert {t.type for t in small.data} == {"scatter"} and all(t.text is None for t in small.data)
