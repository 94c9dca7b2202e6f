"""Issue 30, "Panels that talk", under AppTest: the projector's vocabulary slice (WebGL), its selected point
and nearest neighbours in the original space, custom axes, labels; the Polysemy explorer's linked pick.

A click on a plotly point runs ``app_pages.linked.select_clicked_point`` (tested directly in
``tests/test_projector_panels.py``: AppTest sends no plotly selection events), which sets the page's
picker; here the picker is set as the click sets it, and a link (``?pj_pick=``, ``?pick=``) restores it.
Real data: GloVe 6B 50d (the default static model), SemCor and MiniLM.
"""

from __future__ import annotations

import numpy as np
from test_app import assert_ok, figures, open_page, texts
from test_app_explore import values

from corpora.semcor import load_semcor
from models.registry import load_embedder
from viz.polysemy import build_lemma_index, semcor_occurrences
from viz.projector_tools import vocabulary_slice

SLICE = {"tab": "Projector", "pj_source": "vocabulary slice"}


def _points(fig: dict) -> dict[int, tuple[float, float]]:
    """Point index (customdata) -> its drawn (x, y), over every trace of points."""
    out = {}
    for t in fig["data"]:
        if "customdata" in t:
            out.update(zip(map(int, values(t["customdata"])), zip(values(t["x"]), values(t["y"]))))
    return out


def _trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t.get("name") == name)


def _slice_index() -> dict[str, int]:
    emb = load_embedder("glove-6b-50d")
    rows = vocabulary_slice(emb.vocab, 0, 5000, words_only=True)
    return {emb.vocab[r]: i for i, r in enumerate(rows)}


def test_a_5000_word_slice_is_drawn_with_webgl_and_a_click_lists_neighbours_in_the_original_space() -> None:
    index = _slice_index()
    king = index["king"]
    at = open_page("embedding_space", **SLICE, pj_pick=str(king + 1), pj_k="5")  # a link to "king"
    (fig,) = figures(at)
    assert "PCA of 5,000 points" in fig["layout"]["title"]["text"]
    points = _points(fig)
    assert len(points) == 5000
    assert {t["type"] for t in fig["data"]} == {"scattergl"}
    ring = _trace(fig, "selected")
    assert np.allclose([values(ring["x"])[0], values(ring["y"])[0]], points[king])
    table = at.dataframe[-1].value
    assert len(table) == 5 and table["cosine"].is_monotonic_decreasing
    assert {"queen", "prince"} <= set(table["word"]), list(table["word"])  # cosine, not 2-D distance
    near = _trace(fig, "nearest (full space)")
    assert len(values(near["x"])) == 5
    # A click sets the picker (as select_clicked_point does): the table, the ring and the link follow.
    at.session_state["space_pj_pick"] = index["paris"] + 1
    at.run()
    assert_ok(at)
    assert at.query_params["pj_pick"] == str(index["paris"] + 1)
    assert {"france", "london"} & set(at.dataframe[-1].value["word"]), list(at.dataframe[-1].value["word"])
    ring = _trace(figures(at)[0], "selected")
    assert np.allclose([values(ring["x"])[0], values(ring["y"])[0]], points[index["paris"]])
    # Labels on demand: the selected word and its neighbours are labelled first.
    at.toggle(key="space_pj_labels").set_value(True).run()
    assert_ok(at)
    labelled = {w for t in figures(at)[0]["data"] for w in (t.get("text") or [])}
    assert {"paris", "france"} <= labelled and at.query_params["pj_labels"] == "1"
    # t-SNE of 5,000 points waits for a click (minutes); PCA stays on screen meanwhile.
    at.selectbox(key="space_pj_method").set_value("t-SNE").run()
    assert_ok(at)
    assert "PCA of 5,000" in figures(at)[0]["layout"]["title"]["text"]
    assert any(b.key == "space_pj_run_slow" for b in at.button) and at.query_params["pj_method"] == "t-SNE"


def test_custom_axes_place_each_word_by_its_projection_on_the_two_word_pair_directions() -> None:
    emb = load_embedder("glove-6b-50d")
    index = _slice_index()
    at = open_page("embedding_space", **SLICE, pj_method="custom axes", pj_xa="man", pj_xb="woman")
    (fig,) = figures(at)
    assert fig["layout"]["xaxis"]["title"]["text"] == "man → woman"
    assert fig["layout"]["yaxis"]["title"]["text"] == "bad → good"
    points = _points(fig)
    man, woman, bad, good = (emb.word_vector(w) for w in ("man", "woman", "bad", "good"))
    # Along its own axis, the far end is the near end plus the axis's length: x(woman) − x(man) = ‖woman − man‖.
    dx = points[index["woman"]][0] - points[index["man"]][0]
    dy = points[index["good"]][1] - points[index["bad"]][1]
    assert np.isclose(dx, np.linalg.norm(woman - man), rtol=1e-4)
    assert np.isclose(dy, np.linalg.norm(good - bad), rtol=1e-4)
    x_dir = (woman - man) / np.linalg.norm(woman - man)
    assert np.isclose(points[index["king"]][0], emb.word_vector("king") @ x_dir, rtol=1e-4)
    at.text_input(key="space_pj_yb").set_value("bad").run()  # a zero-length axis: a hint, not a traceback
    assert_ok(at)
    assert [at.query_params[p] for p in ("pj_xa", "pj_xb", "pj_ya", "pj_yb")] == ["man", "woman", "bad", "bad"]
    assert "same vector" in texts(at.warning)


def _bank_occurrences():
    """The occurrences the Polysemy page shows by default: "bank", nouns, a sample of 120 (its defaults)."""
    sentences, _ = load_semcor()
    return semcor_occurrences(sentences, build_lemma_index(sentences), "bank", "noun", cap=120)[0]


def test_a_polysemy_link_rings_the_picked_occurrence_and_shows_its_sentence_and_neighbours() -> None:
    """The plot ringed occurrence 0 on a link's first run (the picker read ?pick= only after the plot)."""
    at = open_page("polysemy", pick="5", k="4")
    (fig, *_layers) = figures(at)
    points = _points(fig)
    ring = _trace(fig, "selected")
    assert np.allclose([values(ring["x"])[0], values(ring["y"])[0]], points[5])
    assert at.selectbox(key="poly_pick").value == 5
    assert len(at.dataframe[0].value) == 4  # its nearest occurrences
    occs = _bank_occurrences()
    assert at.text[0].value == occs[5].context(12)  # its sentence
    # A click (the picker set as select_clicked_point sets it) moves the ring, the sentence and the table.
    table = at.dataframe[0].value
    at.session_state["poly_pick"] = 9
    at.run()
    assert_ok(at)
    fig = figures(at)[0]
    ring = _trace(fig, "selected")
    assert np.allclose([values(ring["x"])[0], values(ring["y"])[0]], _points(fig)[9])
    assert at.query_params["pick"] == "9" and at.text[0].value == occs[9].context(12)
    assert not at.dataframe[0].value.equals(table)
