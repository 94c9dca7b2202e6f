"""The Syntax page (issue 28, items 3 and 4): tree views of the structural probe and the head heatmap.

Figure-level tests of ``viz.trees`` / ``viz.syntax_heads`` on hand-made trees and attention, then the page
under AppTest (``tests/test_app.py``'s ``open_page``) with real models on tiny EWT slices (50 training
sentences, 50 dev sentences for the heads).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from plotly.colors import sample_colorscale
from test_app import assert_ok, figures, open_page, texts
from test_app_bugs30b import _exports

from corpora.conllu import DepTree
from corpora.paths import REPO_ROOT
from models.registry import load_embedder
from probes.estimators.head_syntax import HeadCounts
from probes.estimators.tree_metrics import tree_distances
from probes.syntax_views import EPOCHS, ewt_trees, extraction_estimate, fit_tree_probes, train_cached
from viz.contrast import contrast_ratio
from viz.syntax_heads import RANKINGS, best_relations, head_figure, relation_table
from viz.text import InputError
from viz.trees import RIGHT, UNSCORED, WRONG, TreeView, arc_figure, depth_figure, distance_figure, sentence_choices

# "The old dog chased a cat , quickly ." — chased is the root; two punctuation words
WORDS = ("The", "old", "dog", "chased", "a", "cat", ",", "quickly", ".")
HEADS = (3, 3, 4, 0, 6, 4, 4, 4, 4)
RELS = ("det", "amod", "nsubj", "root", "det", "obj", "punct", "advmod", "punct")
UPOS = ("DET", "ADJ", "NOUN", "VERB", "DET", "NOUN", "PUNCT", "ADV", "PUNCT")
TREE = DepTree(WORDS, HEADS, RELS, UPOS)
GOLD = tree_distances(HEADS)


def _traces(fig) -> dict[str, int]:
    return {t.name: len(t.x) for t in fig.data if t.name != "words"}


def test_the_trees_words_read_on_white_the_unscored_ones_too() -> None:
    """An unscored word (punctuation: ":" and ".") was printed in #b0b0b0, 2.2:1 on the white page; every word
    label now reaches WCAG AA's 4.5:1 and the unscored ones stay lighter than the scored."""
    fig = arc_figure(TreeView(WORDS, GOLD, GOLD[3], TREE))
    colours = [c for t in fig.data if t.name == "words" for c in t.textfont.color]
    assert len(set(colours)) == 2 and colours.count(UNSCORED) == 2 * 2  # two panels, two punctuation marks
    assert min(map(contrast_ratio, colours)) >= 4.5
    assert contrast_ratio(UNSCORED) < min(contrast_ratio(c) for c in colours if c != UNSCORED)


def test_a_prediction_equal_to_the_gold_tree_colours_every_edge_right_and_scores_uuas_100() -> None:
    view = TreeView(WORDS, GOLD, GOLD[3], TREE)
    assert view.uuas == 100.0 and view.predicted == view.gold and view.predicted_root == 3
    fig = arc_figure(view)
    traces = _traces(fig)
    assert traces["predicted edge, right"] == 6 and "predicted edge, wrong" not in traces  # 7 scored words
    assert traces["gold edge"] == 6 and traces["edge to punctuation (not scored)"] == 2
    assert "UUAS 100.0" in fig.layout.annotations[1].text
    colours = [s.line.color for s in fig.layout.shapes]
    assert colours.count(RIGHT) == 6 and WRONG not in colours and colours.count(UNSCORED) == 2
    edges = view.edges_frame()
    assert edges["predicted"].sum() == 6 and (edges["gold"] == edges["predicted"]).all()
    # numbered from 1 like CoNLL-U and the distance/depth labels ("1:From"); heads whole numbers, not "2.0"
    first = edges.iloc[0]
    assert (first["i"], first["word_i"]) == (1, WORDS[0]) and edges["i"].min() == 1
    assert edges["head"].dtype == "Int64" and ",2.0," not in edges.to_csv(index=False)
    gold = edges[edges["gold"]]
    assert all(
        WORDS[d - 1] in (wi, wj) and WORDS[h - 1] in (wi, wj)
        for d, h, wi, wj in gold[["dependent", "head", "word_i", "word_j"]].itertuples(index=False)
    )


def test_a_wrong_prediction_is_coloured_wrong_and_its_uuas_counts_the_gold_edges_found() -> None:
    chain = np.abs(np.subtract.outer(np.arange(9), np.arange(9))).astype(np.float32)  # the left-to-right chain
    view = TreeView(WORDS, chain, np.arange(9.0), TREE)
    # the chain over the scored words 0 1 2 3 4 5 7: gold edges found (1,2), (4,5); not (0,1), (2,3), (3,4), (5,7)
    assert view.predicted == {(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 7)}
    right = view.predicted & view.gold
    assert view.uuas == pytest.approx(100 * len(right) / 6) and 0 < view.uuas < 100
    assert view.uuas == view.chain_uuas
    traces = _traces(arc_figure(view))
    assert traces["predicted edge, right"] == len(right) and traces["predicted edge, wrong"] == 6 - len(right)


def test_a_typed_sentence_has_one_panel_and_leaves_punctuation_unscored() -> None:
    words = ("Dogs", "bark", "!", "…")
    dist = tree_distances((2, 0, 2, 2))
    view = TreeView(words, dist, dist[1])
    assert view.uuas is None and list(view.scored) == [True, True, False, False]
    fig = arc_figure(view)
    assert len(fig.layout.annotations) == 2  # one panel title and its root marker
    assert _traces(fig) == {"predicted edge": 1}
    assert len(distance_figure(view).data) == 1 and len(depth_figure(view).data) == 1


def test_distances_and_depths_show_the_scored_words_beside_the_gold() -> None:
    view = TreeView(WORDS, GOLD * 2, GOLD[3] + 1, TREE)
    pred, gold = distance_figure(view).data
    assert np.asarray(pred.z).shape == (7, 7) and ",".join(pred.x).count(",") == 6
    assert np.asarray(gold.z)[0].tolist() == [0, 2, 1, 2, 4, 3, 3]  # "The" to the scored words
    bars = depth_figure(view).data
    assert list(bars[1].y) == [2, 2, 1, 0, 2, 1, 1] and list(bars[0].y) == [3, 3, 2, 1, 3, 2, 2]


def test_predictions_that_do_not_fit_the_words_are_refused() -> None:
    with pytest.raises(InputError, match="do not fit the 9 words"):
        TreeView(WORDS, GOLD[:5, :5], GOLD[3], TREE)
    with pytest.raises(InputError, match="Every word is punctuation"):
        TreeView(("!", "?"), np.ones((2, 2)), np.ones(2))


def test_sentence_search_is_case_insensitive_and_empty_finds_all() -> None:
    sents = [["The", "bank"], ["A", "river", "Bank"], ["no"]]
    assert sentence_choices(sents, "") == [0, 1, 2] and sentence_choices(sents, " bank") == [0, 1]


def _counts() -> HeadCounts:
    """Two layers × two heads over 25 copies of TREE: head (2, 1) attends from every word to its gold head."""
    counts = HeadCounts(2, 2)
    for _ in range(25):
        att = np.full((2, 2, 9, 9), 1 / 9, dtype=np.float32)
        att[:, :, :, 0] += 0.5  # every other head: the first word
        for d, h in enumerate(HEADS):
            att[1, 0, d, (h - 1) if h else d] += 1.0
        counts.add(att, TREE)
    return counts


def test_the_head_heatmap_names_each_heads_best_relation_and_its_offset_baseline() -> None:
    frame = best_relations(_counts(), min_count=20)
    assert len(frame) == 4 and frame["layer"].tolist() == [1, 1, 2, 2]
    best = frame.set_index(["layer", "head"]).loc[(2, 1)]
    assert best["accuracy"] == 100.0 and best["direction"] == "dep->head"
    assert best["relation"] == "det" and best["offset_accuracy"] == 50.0  # "The"→dog at +2, "a"→cat at +1
    gains = best_relations(_counts(), min_count=20, by=RANKINGS[1]).set_index(["layer", "head"])
    # quickly -> chased is four words left: no offset (−3 … +3) reaches it; the comma's −3 takes half of punct
    assert gains.loc[(2, 1), "relation"] == "advmod" and gains.loc[(2, 1), "gain"] == 100.0
    fig = head_figure(frame, (2, 1), value="accuracy")
    assert np.asarray(fig.data[0].z).shape == (2, 2) and fig.layout.shapes[0].line.color == "#d62728"
    assert [list(c) for c in fig.data[1].customdata] == [[1, 1], [1, 2], [2, 1], [2, 2]]
    assert "best fixed offset" in fig.data[1].hovertext[2]
    # the relation on each tile in black or white, whichever reads better on its colour (plotly's own choice
    # left 10 of MiniLM's 72 at 3.2-4.5:1)
    tiles = sample_colorscale("Viridis", ((fig.data[0].z - np.min(fig.data[0].z)) / np.ptp(fig.data[0].z)).ravel())
    assert list(fig.data[1].text) == frame.sort_values(["layer", "head"])["relation"].tolist()
    assert min(contrast_ratio(t, c) for t, c in zip(fig.data[1].textfont.color, tiles)) >= 4.5
    table = relation_table(_counts()).set_index(["relation", "direction"])
    assert (
        table.loc[("det", "dep->head"), "best head"] == "L2 H1"
        and table.loc[("det", "dep->head"), "dependencies"] == 50
    )
    assert (
        table.loc[("det", "dep->head"), "offset accuracy"] == 50.0
        and table.loc[("det", "dep->head"), "head − offset (points)"]
        == round(table.loc[("det", "dep->head"), "head accuracy"] - 50.0, 2)
        > 0
    )
    with pytest.raises(InputError, match="No relation has 1000"):
        best_relations(_counts(), min_count=1000)


def test_the_page_fit_embeds_the_training_slice_once_and_trains_enough_steps(tmp_path) -> None:
    emb = load_embedder("glove-6b-50d")
    assert not train_cached(emb, 20, tmp_path)
    assert "words to embed once" in extraction_estimate(emb, 20)
    probes = fit_tree_probes(emb, 0, limit=20, feature_root=tmp_path)
    assert train_cached(emb, 20, tmp_path) and probes.sentences == 20
    assert len(probes.distance.history_) > EPOCHS  # 18 sentences are one batch: more epochs than the probe's 6
    tree = ewt_trees("dev")[0]
    dist, depth = probes.predict(emb.embed([list(tree.words)])[0].vectors[0])
    assert dist.shape == (len(tree.words),) * 2 and depth.shape == (len(tree.words),)
    with pytest.raises(ValueError, match="has layers 0…0"):
        fit_tree_probes(emb, 1, limit=20, feature_root=tmp_path)


# ----------------------------------------------------------------------------- the page


def test_the_training_slice_is_read_once_per_version_of_its_file(tmp_path, monkeypatch) -> None:
    """The page asks for the slice on every run: a second ask reuses the parse; a changed file is read again."""
    from corpora.paths import data_path
    from probes.syntax_views import train_slice
    from probes.tasks.structural import EWT

    blocks = data_path(EWT.format("train")).read_text(encoding="utf-8").split("\n\n")[:40]
    path = tmp_path / EWT.format("train")
    path.parent.mkdir(parents=True)
    path.write_text("\n\n".join(blocks[:30]) + "\n\n", encoding="utf-8")
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    key, trees = train_slice(20)
    assert len(trees) == 20 and train_slice(20)[1] is trees  # no second parse
    path.write_text("\n\n".join(blocks[10:40]) + "\n\n", encoding="utf-8")  # another slice
    # its mtime moved on by a second: a coarse file-system clock could give the rewrite the old one
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    key2, trees2 = train_slice(20)
    assert trees2[0].words == trees[10].words and key2 != key


def test_the_page_draws_gold_and_predicted_trees_for_glove_from_the_url() -> None:
    at = open_page("syntax", model="glove-6b-50d", source="test", sentence="7", train="50", layer="0")
    assert at.selectbox(key="syn_model").value == "glove-6b-50d" and at.selectbox(key="syn_sentence").value == 7
    assert at.selectbox(key="syn_train").value == 50 and "one layer (0)" in texts(at.caption)
    assert "first **50** sentences of UD English EWT train" in texts(at.caption)
    assert at.selectbox(key="syn_sentence").options[6].startswith("7. ")
    uuas = float(at.metric[0].value)
    assert 0 <= uuas <= 100 and "vs the left-to-right chain" in at.metric[0].proto.delta
    found, total = map(int, re.search(r"this sentence: (\d+) of (\d+) gold edges", at.metric[0].label).groups())
    assert uuas == pytest.approx(100 * found / total, abs=0.05)  # the edges behind the score are on the page
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles == [
        "glove-6b-50d, layer 0: gold and predicted trees",
        "glove-6b-50d, layer 0: distances",
        "glove-6b-50d, layer 0: word depths",
    ]
    arcs = figures(at)[0]
    assert f"UUAS {uuas:.1f}" in arcs["layout"]["annotations"][1]["text"]
    assert set(_exports(at).values()) == {("svg", True)} and len(_exports(at)) == 3
    assert dict(at.query_params) | {} == {
        "model": "glove-6b-50d",
        "source": "test",
        "sentence": "7",
        "train": "50",
        "layer": "0",
    }  # fmt: skip  (the link as opened: the search and tab it leaves out are at their defaults)
    at.text_input(key="syn_search").set_value("would").run()  # the search narrows the choices
    assert_ok(at)
    numbers = [int(o.split(".", 1)[0]) for o in at.selectbox(key="syn_sentence").options]
    trees = ewt_trees("test")
    assert 0 < len(numbers) < len(trees) and all("would" in " ".join(trees[k - 1].words).lower() for k in numbers)
    assert numbers == [k + 1 for k, t in enumerate(trees) if "would" in " ".join(t.words).lower()]
    # a search that finds nothing says so and the page ends there, with the search in the URL (it ended in st.stop,
    # which leaves a run's URL changes unsent: the address still said the search before)
    at.text_input(key="syn_search").set_value("zzqxj").run()
    assert_ok(at)
    assert any("contains “zzqxj”" in w.value for w in at.warning) and at.query_params["search"] == "zzqxj"


def test_a_first_fit_states_its_estimate_and_leaves_the_vectors_in_the_cache(tmp_path, monkeypatch) -> None:
    """An empty feature cache: the page says how many words it embeds and about how long, then draws."""
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))  # after the tests above: the warm-up has started
    at = open_page("syntax", model="glove-6b-50d", train="50")
    first_use = texts(at.caption)
    assert "First use of glove-6b-50d here" in first_use and "words to embed once" in first_use, first_use
    assert re.search(r"\(~\d+ s on this machine, measured\); took \d+ s\.", first_use) and figures(at)
    assert train_cached(load_embedder("glove-6b-50d"), 50, tmp_path)
    at.run()  # a rerun finds the vectors cached: no estimate
    assert_ok(at)
    assert "First use" not in texts(at.caption)


def test_a_typed_sentence_shows_the_predicted_tree_only_and_minilm_layers_restore() -> None:
    at = open_page("syntax", model="minilm", source="typed", text="The cat sat on the mat .", train="50", layer="2")
    assert at.slider(key="syn_layer").value == 2 and at.query_params["layer"] == "2"
    assert "no gold tree" in texts(at.caption) and not at.metric
    arcs = figures(at)[0]
    assert arcs["layout"]["title"]["text"] == "minilm, layer 2: predicted tree"  # it said "gold and predicted"
    names = {t.get("name") for t in arcs["data"]} - {"words"}
    assert names == {"predicted edge"} and len(arcs["layout"]["annotations"]) == 2
    at.text_input(key="syn_text").set_value("   ").run()  # nothing to draw: a hint, not an error
    assert_ok(at)
    assert at.warning and not figures(at)


def test_the_heads_tab_draws_the_heatmap_and_links_the_chosen_head_to_the_attention_page() -> None:
    at = open_page("syntax", model="minilm", tab="Heads", heads_n="50", head_layer="3", head="5", sentence="2")
    grid = figures(at)[0]
    assert (len(grid["data"][0]["y"]), len(grid["data"][0]["x"])) == (6, 12)  # MiniLM: 6 layers × 12 heads
    assert "best relation" in grid["layout"]["title"]["text"]
    assert _exports(at) == {"syn_heads_grid": ("svg", True)}
    assert "fixed-offset baseline" in texts(at.caption)
    link = at.get("page_link")[0].proto
    assert link.page.endswith("attention") or "attention" in link.page
    params = dict(p.split("=", 1) for p in link.query_string.split("&")) if link.query_string else {}
    assert params.get("layer") == "3" and params.get("head") == "5" and params.get("tab") == "Heads"
    assert "Layer 3, head 5" in texts(at.markdown)
    at.selectbox(key="syn_model").set_value("glove-6b-50d").run()
    assert_ok(at)
    assert "no attention heads" in texts(at.info)


def test_link_params_open_that_head_on_the_attention_page() -> None:
    at = open_page("attention", model="minilm", layer="3", head="5", tab="Heads", text="The dog barked .")
    assert at.slider(key="attn_layer").value == 3 and at.slider(key="attn_head").value == 5
    assert json.dumps(figures(at)[0])  # the grid is drawn for the linked head


def test_the_attention_page_has_the_head_syntax_heatmap_with_its_own_url_params() -> None:
    """Issue 28: the layers × heads map of each head's best relation is in the Attention page too (its Syntax
    tab, the Syntax page's view); its choices are ``syn_*`` params, so the Attention page's own ``layer`` and
    ``head`` keep their meaning."""
    at = open_page(
        "attention", model="minilm", tab="Syntax", syn_heads_n="50", syn_head_layer="4", syn_head="7",
        layer="2", head="3", text="The dog barked .",
    )  # fmt: skip
    assert_ok(at)
    assert at.query_params["layer"] == "2" and at.query_params["head"] == "3"  # the Heads tab's, untouched
    assert at.session_state["attn_syn_head_layer"] == 4 and at.session_state["attn_syn_head"] == 7
    grid = next(f for f in figures(at) if "best relation" in f["layout"]["title"]["text"])
    assert (len(grid["data"][0]["y"]), len(grid["data"][0]["x"])) == (6, 12)
    assert "Layer 4, head 7" in texts(at.markdown)
    assert "fixed-offset baseline" in texts(at.caption)


@pytest.mark.browser
def test_a_clicked_head_tile_is_chosen_and_its_link_opens_the_head_view(page, server) -> None:
    """In Chromium: a click on the heatmap picks that head (URL too); the link opens it on the Attention page."""
    from playwright.sync_api import expect

    from tests.browser_support import assert_clean, open_page, wait_idle

    open_page(page, server, "syntax?model=minilm&tab=Heads&heads_n=50&sentence=5")
    grid = page.locator('[data-testid="stPlotlyChart"]').first
    expect(grid.locator(".scatterlayer .point")).to_have_count(72, timeout=120_000)
    grid.locator(".scatterlayer .point").nth(1 * 12 + 4).click(force=True)  # layer 2, head 5
    expect(page.get_by_text("Layer 2, head 5")).to_be_visible(timeout=120_000)
    wait_idle(page)
    assert_clean(page)
    assert "head_layer=2" in page.url and "head=5" in page.url
    page.get_by_text("Open this head in the Attention page").click()
    expect(page.get_by_text("minilm: layer 2, head 5")).to_be_visible(timeout=120_000)
    wait_idle(page)
    assert_clean(page)
    assert "tab=Heads" in page.url


def test_the_attention_pages_syntax_tab_names_its_own_failure(monkeypatch, tmp_path) -> None:
    """Without UD EWT, the Syntax tab said "Could not compute attention", while the attention itself (the other
    tabs) works: the message names what failed and the dataset."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))  # an empty data folder: no UD EWT
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=120).run()
    at.query_params.clear()
    at.query_params["tab"] = "Syntax"
    at.query_params["text"] = "Heads find their dependents without data."
    at.switch_page("app_pages/attention.py").run()
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown escapes off
    assert "Could not count which heads find the dependency head" in errors and "ud_english_ewt" in errors
    assert "Could not compute attention" not in errors and at.get("plotly_chart") == []


def test_a_head_can_be_picked_without_a_mouse() -> None:
    """Syntax → Heads picked its head only by a click on a tile: two sliders now hold the same choice (the URL's
    ``head_layer`` and ``head``), so the keyboard reaches every head."""
    at = open_page("syntax", model="minilm", tab="Heads", heads_n="50", text="The dog barked .")
    at.slider(key="syn_head_layer").set_value(3).run()
    at.slider(key="syn_head").set_value(9).run()
    assert_ok(at)
    assert at.query_params["head_layer"] == "3" and at.query_params["head"] == "9"
    assert "Layer 3, head 9" in texts(at.markdown)
