"""The Polysemy explorer and the Embedding space under AppTest: the bugs of issue 16 (1, 4, 6) and the
features that need no browser (side by side, colour by metadata, uploads, corpus search).

Each bug test failed on the code before its fix (checked by running this file against ``git archive HEAD``).
The corpus-search tests search SemCor's first ``TEST_CORPUS_LIMIT`` sentences (tests/browser_support.py says
why), reading MiniLM's features from the feature cache (``$EMBPROBE_CACHE``); a cold cache extracts them once.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from app_pages import corpus_ui
from corpora.semcor import load_semcor
from tests.browser_support import corpus_limit_env
from tests.test_app import assert_ok, open_page as open_app_page, texts
from viz.polysemy import build_lemma_index, semcor_occurrences

MONEY_BANK = "bank%1:14:00::"  # a financial institution
REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 600  # first runs load models, read WordNet/SemCor and (cold cache) embed SemCor on a busy 2-core CPU


def open_page(name: str, **params: str) -> AppTest:
    return open_app_page(name, timeout=TIMEOUT, **params)


def search_test_slice(monkeypatch) -> str:
    """Corpus searches over the tests' slice of SemCor (``$EMBPROBE_CORPUS_LIMIT``, read at each run); returns
    what the page's caption says was searched."""
    for name, value in corpus_limit_env(corpus_ui.LIMIT_ENV).items():
        monkeypatch.setenv(name, value)
    limit = os.environ[corpus_ui.LIMIT_ENV]
    return f"occurrences in SemCor's first {int(limit):,} sentences" if limit else "occurrences in all of SemCor"


def build(at: AppTest, key: str) -> None:
    """Click "Build the SemCor index" when the feature cache is cold (embeds SemCor once, in the background
    child process the page starts), wait for that build and rerun the page."""
    buttons = [b for b in at.button if b.key == key]
    if buttons:
        buttons[0].click().run()
        assert_ok(at)
        corpus_ui.wait_for_builds()
        at.run()
        assert_ok(at)


def figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def scatter(at: AppTest, i: int = 0) -> dict:
    return [
        f
        for f in figures(at)
        if any(
            t.get("type") in ("scatter", "scatter3d") and t.get("name") != "selected" and "customdata" in t
            for t in f["data"]
        )
    ][i]


def values(v) -> list:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata" (base64)}."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def drawn_points(fig: dict) -> int:
    return sum(len(values(t["x"])) for t in fig["data"] if t.get("name") != "selected")


# ----------------------------------------------------------------------------- Polysemy explorer: bugs


def test_bug1_static_model_occurrences_are_one_point_each_with_a_count() -> None:
    at = open_page("polysemy")
    at.selectbox(key="poly_model").set_value("glove-6b-50d").run()
    assert_ok(at)
    info = texts(at.info)
    assert "static model" in info and "collapse to 2 point(s)" in info, info
    fig = scatter(at)
    assert drawn_points(fig) == 2, "one marker per distinct vector (bank, banks)"
    # no layer chart for a one-layer model, and no caption describing one ("1-NN over 37 occurrences …")
    captions = texts(at.caption)
    assert "Nothing to compare across layers" in captions and "1-NN over" not in captions, captions
    counts = [int(t[1:]) for tr in fig["data"] if tr.get("name") != "selected" for t in tr.get("text") or [] if t]
    assert sum(counts) >= 30, counts  # ×N labels account for the occurrences
    # Two really different vectors: the layout spans them, not float noise.
    xs = [x for tr in fig["data"] for x in values(tr["x"])]
    assert max(xs) - min(xs) > 1e-3


def test_a_contextual_models_layer_0_says_why_its_occurrences_are_few_points() -> None:
    """ELMo's layer 0 (characters only) drew "bank"'s 37 occurrences as two points, ×11 and ×26, and said nothing;
    the note explained a contextual model only when everything fell on one point."""
    at = open_page("polysemy", model="elmo-small", layer="0")
    assert_ok(at)
    fig = scatter(at)
    assert drawn_points(fig) == 2
    info = texts(at.info)
    assert "context-independent layer" in info and "are 2 points (bank, banks)" in info, info
    at = open_page("polysemy", model="elmo-small", layer="1")
    assert "context-independent layer" not in texts(at.info)


def test_bug4_the_selected_ring_is_visible_in_2d() -> None:
    at = open_page("polysemy")
    at.selectbox(key="poly_pick").set_value(9).run()
    assert_ok(at)
    ring = [t for t in scatter(at)["data"] if t.get("name") == "selected"]
    assert len(ring) == 1
    colour = ring[0]["marker"].get("color")
    assert colour and "rgba(0,0,0,0)" not in str(colour).replace(" ", ""), colour
    assert ring[0].get("showlegend") is True


def test_bug4_the_picker_follows_a_new_source() -> None:
    at = open_page("polysemy")
    at.selectbox(key="poly_pick").set_value(4).run()
    # Switching the source resets the picker to the new occurrences (no stale SemCor label).
    at.segmented_control(key="poly_source").set_value("my sentences").run()
    assert_ok(at)
    picker = at.selectbox(key="poly_pick")
    assert picker.value == 0 and picker.index == 0
    assert "deposited my salary at the [bank]" in picker.options[picker.index]


def test_bug4_one_sentence_per_label_says_why_instead_of_a_zero_curve() -> None:
    at = open_page("polysemy")
    at.segmented_control(key="poly_source").set_value("my sentences").run()
    at.text_area(key="poly_text").set_value(
        "The bank raised rates. | money\nWe sat on the river bank. | river\nThe bank of snow melted. | snow"
    ).run()
    assert_ok(at)
    assert "single occurrence" in texts(at.info)
    layer_fig = [
        f
        for f in figures(at)
        if any("1-NN" in str(t.get("name")) or "self-similarity" in str(t.get("name")) for t in f["data"])
    ]
    for f in layer_fig:
        assert not any("1-NN" in str(t.get("name")) for t in f["data"]), "no all-zero 1-NN curve"


# ----------------------------------------------------------------------------- Polysemy explorer: features


def test_side_by_side_two_models_and_two_layers_share_the_occurrences() -> None:
    at = open_page("polysemy")
    at.selectbox(key="poly_compare").set_value("two models").run()
    at.selectbox(key="poly_model_b").set_value("glove-6b-50d").run()
    assert_ok(at)
    a, b = scatter(at, 0), scatter(at, 1)
    assert "minilm" in a["layout"]["title"]["text"] and "glove-6b-50d" in b["layout"]["title"]["text"]
    assert drawn_points(a) > drawn_points(b) == 2
    at.selectbox(key="poly_model_b").set_value("elmo-small").run()
    assert_ok(at)
    lines = {t["name"]: t for f in figures(at) for t in f["data"] if "chance" in str(t.get("name"))}
    # chance is the occurrences' (a random other one shares the sense), the same for both models: drawn once,
    # across both models' layers (it was drawn twice, "minilm: chance" over 0–6 on "elmo-small: chance" over 0–2)
    assert list(lines) == ["chance (baseline)"] and values(lines["chance (baseline)"]["x"]) == list(range(7))
    at.selectbox(key="poly_compare").set_value("two layers").run()
    at.slider(key="poly_layer").set_value(0).run()
    at.slider(key="poly_layer_b").set_value(6).run()
    assert_ok(at)
    titles = [scatter(at, i)["layout"]["title"]["text"] for i in (0, 1)]
    assert "layer 0" in titles[0] and "layer 6" in titles[1]


def test_colour_by_metadata_and_contextuality_beside_the_1nn_curve() -> None:
    at = open_page("polysemy")
    at.selectbox(key="poly_colour").set_value("genre").run()
    assert_ok(at)
    names = {t["name"] for t in scatter(at)["data"]} - {"selected"}
    assert "press: reportage" in " ".join(names), names
    measures = {t["name"] for f in figures(at) for t in f["data"]}
    assert {"1-NN same sense", "chance (baseline)", "self-similarity", "explainable variance"} <= measures
    assert re.search(r"1-NN over \d+ occurrences with a sense; its error bars are approximate 95%", texts(at.caption))
    # each bar is one layer's uncertainty: no rule that overlapping bars are "not told apart" (unpaired, uncorrected)
    assert "not a test between layers" in texts(at.caption) and "not told apart" not in texts(at.caption)


def test_upload_source_asks_for_a_lexical_sample_file() -> None:
    """(AppTest cannot upload; tests/test_browser_explore.py uploads a file and checks its labels.)"""
    at = open_page("polysemy")
    at.segmented_control(key="poly_source").set_value("upload").run()
    assert_ok(at)
    assert "Upload a lexical-sample file" in texts(at.info)


def test_corpus_search_for_bank_finds_mostly_the_same_sense(monkeypatch) -> None:
    from app_pages import common

    files: dict[str, str] = {}
    real = common.download
    monkeypatch.setattr(common, "download", lambda label, data, name, **kw: files.setdefault(label, name) and None)
    searched = search_test_slice(monkeypatch)
    at = open_page("polysemy")
    at.slider(key="poly_layer").set_value(6).run()
    # The page's occurrences of "bank" (noun, seeded sample of 120): pick the first money bank.
    sentences, _ = load_semcor()
    occs, _ = semcor_occurrences(sentences, build_lemma_index(sentences), "bank", "noun", cap=120)
    pick = next(i for i, o in enumerate(occs) if o.keys[0] == MONEY_BANK)
    at.selectbox(key="poly_pick").set_value(pick).run()
    at.toggle(key="poly_corpus").set_value(True).run()
    assert_ok(at)
    build(at, "poly_corpus_build")
    hits = at.dataframe[-1].value
    assert {"cosine", "lemma", "sense", "POS", "same sense"} <= set(hits.columns)
    assert len(hits) == 20 and hits["cosine"].is_monotonic_decreasing
    assert (hits["same sense"] == "✓").mean() > 0.5, hits[["lemma", "sense"]]
    assert "have the query's sense" in texts(at.caption)
    assert f"sense-tagged {searched} (cosine" in texts(at.caption)  # a slice of SemCor says so
    # every chart says what it shows, in its downloaded image too (the layer chart and the hits' histogram said it
    # only in the page's heading and caption)
    titles = [(f["layout"].get("title") or {}).get("text") or "" for f in figures(at)]
    heads = [t.split("<br>")[0] for t in titles]
    assert all(titles) and "Which layer separates the senses of “bank”?" in heads
    assert any(
        re.fullmatch(r"20 nearest SemCor occurrences to #\d+ \w+<br><sup>minilm layer 6</sup>", t) for t in titles
    )
    # the hits' CSV is named for the hits, not for the histogram beside it
    assert files["Hits (CSV)"].endswith("-hits.csv") and "histogram" not in files["Hits (CSV)"], files
    monkeypatch.setattr(common, "download", real)
    at.slider(key="poly_corpus_k").set_value(10).run()  # the number of neighbours is in the URL too
    assert len(at.dataframe[-1].value) == 10 and at.query_params["corpus_k"] in ("10", ["10"])
    link = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    fresh = open_page("polysemy", **link)
    assert fresh.slider(key="poly_corpus_k").value == 10 and len(fresh.dataframe[-1].value) == 10


# ----------------------------------------------------------------------------- Embedding space


def open_tab(tab: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    at.query_params.clear()
    at.switch_page("app_pages/embedding_space.py")
    at.session_state["space_tab"] = tab
    at.run()
    assert_ok(at)
    return at


def test_bug6_contextual_neighbours_come_from_semcor_and_skip_punctuation(monkeypatch) -> None:
    search_test_slice(monkeypatch)
    at = open_tab("Contextual neighbours")  # MiniLM, top layer (6)
    picker = at.selectbox(key="space_ctx_token")
    money = next(i for i, o in enumerate(picker.options) if o.startswith("s2 ·") and "[bank]" in o)
    picker.set_value(money).run()  # "She deposited the cheque at the [bank] ."
    build(at, "space_corpus_build")
    tables = [d.value for d in at.dataframe]
    typed = tables[-1]  # neighbours among the typed tokens
    assert {"cosine", "token", "context"} <= set(typed.columns)
    assert all(any(ch.isalnum() for ch in t) for t in typed["token"]), list(typed["token"])
    hits = next(t for t in tables if "sense" in t.columns)  # corpus neighbours with WordNet senses
    senses = hits["sense"].value_counts()
    assert "financial" in senses.index[0], senses  # the money sense comes first ...
    banks = hits[hits["lemma"] == "bank"]["sense"]
    assert len(banks) >= 5 and banks.str.contains("financial").mean() > 0.5, banks  # ... before the river bank
    picker = at.selectbox(key="space_ctx_token")
    assert all(any(ch.isalnum() for ch in opt.split("[", 1)[1].split("]", 1)[0]) for opt in picker.options)


def test_projector_colours_searches_and_isolates() -> None:
    at = open_tab("Projector")
    fig = scatter(at)
    n = drawn_points(fig)
    assert n >= 30
    at.selectbox(key="space_pj_colour").set_value("POS").run()
    at.text_input(key="space_pj_search").set_value("river").run()
    assert_ok(at)
    assert "points match “river”" in texts(at.caption)
    matches = int(texts(at.caption).split(" points match")[0].split()[-3])
    at.toggle(key="space_pj_isolate").set_value(True).run()
    assert_ok(at)
    assert 0 < drawn_points(scatter(at)) == matches < n
    at.text_input(key="space_pj_search").set_value("re:(unclosed").run()
    assert_ok(at)
    assert "not a valid regular expression" in texts(at.warning)
    at.selectbox(key="space_pj_layer").set_value("all layers").run()
    at.selectbox(key="space_pj_colour").set_value("layer").run()
    at.text_input(key="space_pj_search").set_value("").run()
    assert_ok(at)
    fig = scatter(at)
    assert f"all layers: PCA of {7 * n} points" in fig["layout"]["title"]["text"]
    # Layer 0 is context-independent: occurrences of one form share a vector and are drawn once.
    assert 6 * n < drawn_points(fig) < 7 * n


def test_issue30_bug1_a_polysemy_link_restores_pos_sample_size_and_typed_sentences() -> None:
    """The page dropped pos/cap/text from the URL before their widgets read it: a link showed noun / 120."""
    at = open_page("polysemy", word="play", pos="verb", cap="50")
    assert at.text_input(key="poly_word").value == "play"
    assert at.selectbox(key="poly_pos").value == "verb" and at.slider(key="poly_cap").value == 50
    assert at.query_params["pos"] == "verb" and at.query_params["cap"] == "50"
    typed = "The band will play tonight. | music\nThe children play outside. | game"
    at = open_page("polysemy", source="my sentences", word="play", text=typed)
    assert at.text_area(key="poly_text").value == typed
    assert "pos" not in at.query_params and "cap" not in at.query_params  # the hidden controls' params are dropped


def test_a_polysemy_word_without_occurrences_leaves_no_view_choices_in_the_url() -> None:
    """A link's layer, neighbour count and picked occurrence stayed in the address bar (even ``layer=abc``) while
    the page showed only "no occurrences": a copied link then carried choices the page never made."""
    at = open_page("polysemy", word="qwxz", layer="abc", k="1e9", pick="99999")
    assert "has no sense-tagged occurrences" in texts(at.info)
    assert at.query_params["word"] == "qwxz" and not {"layer", "k", "pick"} & set(at.query_params)


def test_a_link_value_between_a_sliders_steps_opens_the_nearest_step() -> None:
    """``cap=125`` (steps of 10 from 20): the slider showed 130 while the sample drawn was 125 (the caption said so);
    now the page uses what the slider shows, and the URL says it."""
    at = open_page("polysemy", word="play", pos="any", cap="125")
    assert_ok(at)
    assert at.slider(key="poly_cap").value == 130 and at.query_params["cap"] == "130"
    assert "a random sample of 130" in texts(at.caption)


def test_a_word_a_static_model_does_not_know_is_said_so_not_searched() -> None:
    """An unknown word typed for GloVe: every occurrence is the zero vector. The page drew one point and a red
    "Could not search the corpus" box; it now says the word is not in the vocabulary and searches nothing."""
    typed = "The blorf sat on the bank . | a\nI saw a blorf today . | b"
    at = open_page("polysemy", model="glove-6b-50d", source="my sentences", word="blorf", text=typed, corpus="1")
    assert_ok(at)
    info = texts(at.info)
    assert "not in glove-6b-50d's vocabulary" in info and "nothing to search for" in info, info
    assert not at.error and not at.warning


def test_without_the_data_the_pages_say_what_works_instead(monkeypatch) -> None:
    """Without SemCor a newcomer's first steps ended in red boxes that pointed nowhere: the Polysemy explorer now
    names the sources that need no data, and Contextual neighbours still shows the typed tokens' own neighbours
    (the SemCor search failed the whole tab)."""
    from app_pages import polysemy_controls
    from corpora.paths import DataMissingError

    def missing(*args, **kwargs):
        raise DataMissingError("semcor3.0/brown1/tagfiles")

    monkeypatch.setattr(polysemy_controls, "get_occurrences", missing)
    monkeypatch.setattr(corpus_ui, "corpus_panel", missing)
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=300).run()
    at.switch_page("app_pages/polysemy.py").run()
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "semcor3.0" in said and "choose “my sentences”" in said
    at.query_params.clear()
    at.query_params["tab"] = "Contextual neighbours"
    at.switch_page("app_pages/embedding_space.py").run()
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "Could not search SemCor" in said and "need no data" in said
    assert "Nearest among your tokens" in texts(at.subheader) and at.dataframe  # the typed tokens' neighbours


def test_two_layers_of_a_three_layer_model_open_on_two_different_layers() -> None:
    """ELMo's "two layers" view opened with layer 2 beside layer 2: one plot drawn twice (L − 1 on both sides for a
    model of three layers or fewer). It opens on its two LSTM layers, the paper's comparison."""
    at = open_page("polysemy", word="bank", model="elmo-small", compare="two layers")
    assert_ok(at)
    assert (at.slider(key="poly_layer").value, at.slider(key="poly_layer_b").value) == (1, 2)
    titles = [scatter(at, i)["layout"]["title"]["text"] for i in (0, 1)]
    assert "layer 1" in titles[0] and "layer 2" in titles[1]
