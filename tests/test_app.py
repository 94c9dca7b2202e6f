"""Every page of the Streamlit app under Streamlit's AppTest (the script runner without a browser).

Each test opens a page through the real entry point (app.py + st.navigation), performs its main
interaction with real models and data, and checks that bad input (empty text, a 10,000-word
paste, HTML/Markdown, emoji and RTL text, a word with no SemCor occurrences, a model that fails
to load) gives a friendly message — never an exception — and that the rest of the page works.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from models.registry import REGISTRY, load_embedder, loaded_models, register, unload_embedder
from models.spec import ModelSpec

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 300  # seconds per script run: first runs load models and read WordNet on a busy 2-core CPU
XSS = "<script>alert(1)</script> **bold** [x](javascript:alert(1))"
PASTE = " ".join(["word"] * 10_000)
EMOJI_RTL = "The bank 🏦 said مرحبا بالعالم and שלום 👍🏽"


def open_page(name: str, timeout: float = TIMEOUT, **params: str) -> AppTest:
    """Page ``name`` of a new session, its URL parameters ``params`` (``tab="Your data"``: a link to a tab)."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout).run()
    if name != "models":
        # A browser clears the query string on a page switch; AppTest keeps it (the Models page's
        # ?model=… would otherwise choose the next page's model).
        at.query_params.clear()
        for key, value in params.items():
            at.query_params[key] = value
        at.switch_page(f"app_pages/{name}.py").run()
    assert_ok(at)
    return at


def assert_ok(at: AppTest) -> None:
    """No exception element and no error box on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def quick_run(at: AppTest, probe: str, model: str, limit: int) -> AppTest:
    """The Probes page's quick run as a person makes it: the probe, the model and the size picked, Run pressed."""
    at.selectbox(key="probe_kind").set_value(probe).run()
    at.selectbox(key="probe_model").set_value(model).run()
    at.number_input(key="probe_limit").set_value(limit).run()
    at.button(key="probe_run").click().run()
    return at


def figures(at: AppTest) -> list[dict]:
    """The plotly figures on the page, as the browser receives them."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def texts(elements) -> str:
    """The elements' text as the user reads it (Markdown backslash escapes removed)."""
    return "\n".join(str(e.value) for e in elements).replace("\\", "")


# ----------------------------------------------------------------------------- Models


def _unload(name: str) -> None:
    """Start from an unloaded model (another test in this process may have loaded it)."""
    from app_pages.loaders import unload

    unload(name)


def test_models_page_lists_loads_and_unloads() -> None:
    _unload("glove-6b-50d")
    at = open_page("models")
    assert at.title[0].value == "Models"
    table = at.dataframe[0].value
    assert set(table["model"]) == set(REGISTRY)
    at.selectbox(key="models_pick").set_value("glove-6b-50d").run()
    at.button(key="models_load").click().run()
    assert_ok(at)
    assert "glove-6b-50d" in loaded_models()
    row = at.dataframe[0].value.set_index("model").loc["glove-6b-50d"]
    assert row["status"] == "loaded" and row["dim"] == "50"
    assert at.json, "the model card is shown once loaded"
    assert json.loads(at.json[0].proto.body)["status"] == "loaded"  # as the table says (it read "ready")
    at.button(key="models_unload").click().run()
    assert_ok(at)
    assert "glove-6b-50d" not in loaded_models()


def test_models_page_starts_here_and_shows_facts_and_cards_without_loading() -> None:
    """Bug 5: a start-here for a newcomer; GloVe's and MiniLM's shape without loading them; a card
    for MiniLM (a pip model) before and after loading, not a promise of one."""
    _unload("minilm")
    _unload("glove-6b-50d")
    at = open_page("models")
    assert "Nothing needs to be loaded first" in texts(at.markdown)
    table = at.dataframe[0].value.set_index("model")
    assert (table.loc["glove-6b-50d", "layers"], table.loc["glove-6b-50d", "dim"]) == ("1", "50")
    assert (table.loc["minilm", "layers"], table.loc["minilm", "dim"]) == ("7", "384")
    assert table.loc["glove-6b-50d", "params"] == "20.0 M"  # from the vectors' header
    at.selectbox(key="models_pick").set_value("minilm").run()
    card = json.loads(at.json[0].proto.body)
    assert (card["layers"], card["dim"], card["params"]) == (7, 384, "22.7 M") and "loaded" not in card
    at.button(key="models_load").click().run()
    assert_ok(at)
    card = json.loads(at.json[0].proto.body)
    assert card["loaded"]["layers"] == 7 and len(card["loaded"]["fingerprint"]) >= 8
    assert "once it is loaded" not in texts(at.info) + texts(at.caption)
    _unload("minilm")


def test_a_model_that_fails_to_load_gives_a_message_and_the_page_keeps_working() -> None:
    register(
        ModelSpec(
            "broken-test-model",
            "static",
            "models.static:load_static_asset",
            {"name": "no-such-checkpoint"},
            description="a checkpoint that does not exist",
        )
    )
    _unload("glove-6b-50d")
    try:
        at = open_page("models")
        at.selectbox(key="models_pick").set_value("broken-test-model").run()
        at.button(key="models_load").click().run()
        assert not at.exception
        assert "could not be loaded" in texts(at.error) and "no-such-checkpoint" in texts(at.error)
        assert "Traceback" not in texts(at.error)
        # The rest of the app keeps working: another model still loads.
        at.selectbox(key="models_pick").set_value("glove-6b-50d").run()
        at.button(key="models_load").click().run()
        assert_ok(at)
    finally:
        REGISTRY.pop("broken-test-model", None)


def test_models_page_adds_a_local_checkpoint_that_every_page_offers(tmp_path, monkeypatch) -> None:
    from models.tiny import make_tiny_checkpoint

    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    folder = make_tiny_checkpoint("roberta", tmp_path / "my-roberta", layers=2, hidden=32, heads=2)
    at = open_page("models")
    # A folder that is not a model: refused with the reason, nothing saved.
    at.text_input(key="models_add_name").set_value("nope")
    at.text_input(key="models_add_ref").set_value(str(tmp_path))
    at.button(key="models_add_submit").click().run()
    assert "not a model folder" in texts(at.error)
    assert not (tmp_path / "embprobe.toml").exists()
    at.text_input(key="models_add_name").set_value("my-roberta")
    at.text_input(key="models_add_ref").set_value(str(folder))
    at.selectbox(key="models_add_pooling").set_value("first")
    at.button(key="models_add_submit").click().run()
    assert_ok(at)
    assert "Added my-roberta" in texts(at.success)
    facts = at.dataframe[-1].value.iloc[0]
    assert (facts["family"], facts["layers"], facts["dim"]) == ("BERT-family", "3", "32")
    assert "my-roberta" in set(open_page("models").dataframe[0].value["model"])  # beside the zoo
    poly = open_page("polysemy")
    assert "my-roberta" in poly.selectbox(key="poly_model").options
    poly.selectbox(key="poly_model").set_value("my-roberta").run()
    assert_ok(poly)
    assert poly.get("plotly_chart")
    at = open_page("models")
    at.selectbox(key="models_remove_pick").set_value("my-roberta")
    at.button(key="models_remove").click().run()
    assert_ok(at)
    assert "my-roberta" not in open_page("polysemy").selectbox(key="poly_model").options


# ----------------------------------------------------------------------------- Embedding space


def open_space_tab(tab: str) -> AppTest:
    """The Embedding space with ``tab`` open (only the open tab runs)."""
    at = open_page("embedding_space")
    at.session_state["space_tab"] = tab
    at.run()
    assert_ok(at)
    return at


def test_embedding_space_neighbours_analogy_and_map() -> None:
    at = open_page("embedding_space")
    neighbours = at.dataframe[0].value
    assert "banks" in list(neighbours["word"])  # GloVe's nearest words to "bank"
    at.text_input(key="space_nn_word").set_value("river").run()
    assert_ok(at)
    assert "river" not in list(at.dataframe[0].value["word"])  # the query word itself is excluded
    assert "queen" in texts(open_space_tab("Analogies").markdown)  # man : king :: woman : queen
    assert open_space_tab("Map a word list").get("plotly_chart"), "the word-list map is drawn"


@pytest.mark.parametrize("bad", ["", "   ", XSS, "two words", "xqzzyvv"])
def test_embedding_space_bad_words_are_friendly(bad: str) -> None:
    at = open_page("embedding_space")
    at.text_input(key="space_nn_word").set_value(bad).run()
    assert_ok(at)
    shown = texts(at.warning) + texts(at.info)
    assert shown, "a hint is shown"
    assert "<script>" not in shown  # user text is escaped wherever it is echoed


def test_embedding_space_contextual_neighbours_and_bad_text() -> None:
    at = open_space_tab("Contextual neighbours")
    table = at.dataframe[-1].value  # the contextual-neighbours table
    assert {"cosine", "token", "context"} <= set(table.columns)
    for text, expect in [("", "type at least one sentence"), (PASTE, "cut"), (EMOJI_RTL, None), (XSS, None)]:
        at.text_area(key="space_ctx_text").set_value(text).run()
        assert_ok(at)
        if expect:
            assert expect in texts(at.warning)
    at = open_space_tab("Map a word list")
    at.text_area(key="space_map_words").set_value("   ").run()
    assert_ok(at)
    assert "Type some words" in texts(at.warning)


# ----------------------------------------------------------------------------- Attention


def test_attention_page_grid_head_and_pieces() -> None:
    at = open_page("attention")
    assert len(at.get("plotly_chart")) == 4  # grid, head map, line view, q·k; the averages tab waits
    # each says what it shows, in its downloaded image too (the grid's said it only in the page's caption)
    titles = [(f["layout"].get("title") or {}).get("text") for f in figures(at)]
    assert all(titles) and titles[0] == "Attention of every head<br><sup>minilm · words</sup>", titles
    caption = texts(at.caption)
    assert "6 layers × 12 heads" in caption
    at.slider(key="attn_layer").set_value(3).run()
    at.slider(key="attn_head").set_value(5).run()
    assert_ok(at)
    links = at.table[0].value  # a static table (st.table): no data-grid code for a new visitor (issue 30)
    assert (links["weight"] > 0).all() and (links["weight"] <= 1).all()
    at.segmented_control(key="attn_unit").set_value("subword pieces").run()
    assert_ok(at)
    assert not at.code  # the tokens box is closed: its content waits
    at.session_state["attn_tokens_open"] = True  # a click on it
    at.run()
    assert "[CLS]" in texts(at.code)
    at.session_state["attn_tab"] = "Averages"  # a click on the tab
    at.run()
    assert_ok(at)
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert len(titles) == 3 and "Mean attention entropy" in titles[-1], titles


@pytest.mark.parametrize(
    "text,hint",
    [
        ("", "type at least one sentence"),
        (PASTE, "cut to their first 40"),
        ("!!! ??? ...", None),
        (XSS, None),
        (EMOJI_RTL, None),
    ],
)
def test_attention_bad_inputs_are_friendly(text: str, hint: str | None) -> None:
    at = open_page("attention")
    at.session_state["attn_tokens_open"] = True
    at.text_input(key="attn_text").set_value(text).run()
    assert_ok(at)
    if hint:
        assert hint in texts(at.warning)
    if text == XSS:
        # Shown literally (st.code renders text, never HTML), so the tags are visible as characters.
        assert "<" in texts(at.code) and "script" in texts(at.code)
        assert all("alert" not in str(h.proto) for h in at.get("html"))  # the only HTML: the app's preload script
    if text == EMOJI_RTL:  # the word view showed the words ("🙂 | 🙂") where MiniLM read [UNK]: its own pieces now
        assert "[UNK]" in texts(at.code) and "[CLS]" in texts(at.code)


# ----------------------------------------------------------------------------- Polysemy


def test_polysemy_semcor_bank_contextual_and_static() -> None:
    at = open_page("polysemy")
    assert "tagged occurrences of “bank” in SemCor" in texts(at.caption)
    assert at.get("plotly_chart")
    neighbours = at.dataframe[0].value
    assert {"cosine", "same sense", "sense", "context"} <= set(neighbours.columns)
    assert neighbours["cosine"].is_monotonic_decreasing
    at.slider(key="poly_layer").set_value(0).run()
    at.selectbox(key="poly_method").set_value("t-SNE").run()
    assert_ok(at)
    at.segmented_control(key="poly_dims").set_value("3-D").run()
    at.selectbox(key="poly_pick").set_value(3).run()
    assert_ok(at)
    assert "3-D plot's clicks turn it" in at.selectbox(key="poly_pick").help  # no point-click in 3-D: says so
    assert len(at.dataframe[0].value) == at.slider(key="poly_k").value
    # A static model: one point per word form, with the explanation.
    at.selectbox(key="poly_model").set_value("glove-6b-50d").run()
    assert_ok(at)
    assert "static model" in texts(at.info)


def test_polysemy_word_without_occurrences_and_typed_sentences() -> None:
    at = open_page("polysemy")
    at.text_input(key="poly_word").set_value("xyzzyq").run()
    assert_ok(at)
    assert "no sense-tagged occurrences" in texts(at.info)
    at.text_input(key="poly_word").set_value(XSS).run()
    assert_ok(at)
    assert "single word" in texts(at.warning)
    at.text_input(key="poly_word").set_value("bank").run()
    at.segmented_control(key="poly_source").set_value("my sentences").run()
    assert_ok(at)
    assert at.get("plotly_chart")
    assert "Which layer separates the senses?" in texts(at.subheader)
    for text, hint in [
        ("", "type at least one sentence"),
        ("No target word in this line.", "None of the sentences"),
        (EMOJI_RTL + "\n" + XSS + " bank", None),
        (PASTE, "cut"),
    ]:
        at.text_area(key="poly_text").set_value(text).run()
        assert_ok(at)
        if hint:
            assert hint in texts(at.warning) + texts(at.info)
    # one typed sentence on a contextual model: one point, and MiniLM was called "a static model"
    at.text_area(key="poly_text").set_value("I sat by the bank .").run()
    assert_ok(at)
    info = texts(at.info)
    assert "static model" not in info and "One occurrence, one point" in info, info


# ----------------------------------------------------------------------------- Probes and Reproduce


def test_probes_page_quick_runs_with_progress() -> None:
    at = open_page("probes", tab="Run a quick probe")
    # Probes without built-in data (tag, span) are run from the "Your data" tab, not here.
    kinds = at.selectbox(key="probe_kind").options  # the probes' titles
    assert len(kinds) == 7 and not any(k.startswith(("Tag", "Span")) for k in kinds), kinds  # + structural, head_syntax
    quick_run(at, "pos", "glove-6b-50d", 5)
    assert_ok(at)
    assert "POS on glove-6b-50d, first 5 sentences" in texts(at.success)
    assert at.get("plotly_chart")
    # WSD: per-layer F1 beside the WordNet first-sense baseline, and the per-POS breakdown.
    at.selectbox(key="probe_kind").set_value("wsd").run()
    at.number_input(key="probe_limit").set_value(3).run()
    # Issue 30 bug 6: SemCor gets its own slice (a 3-sentence SemCor leaves every test word to the backoff)
    from probes.tasks.wsd.probe import PROBE as WSD

    assert at.number_input(key="probe_semcor_limit").value == WSD.quick["semcor_limit"]
    at.number_input(key="probe_semcor_limit").set_value(60).run()
    at.button(key="probe_run").click().run()
    assert_ok(at)
    assert "WSD on glove-6b-50d, first 3 sentences" in texts(at.success)
    # ... and the run says how many test words no layer could decide
    backoff = re.search(r"(\d+) of (\d+) evaluated instances \(\d+%\) had no sense seen in training", texts(at.caption))
    assert backoff and 0 < int(backoff[1]) < int(backoff[2]), texts(at.caption)
    assert "By part of speech" in texts(at.markdown)
    # ... each model at the layer the dev set ranks first, not the one the scored set would pick
    # (the bars score ALL w/o SE07, which holds none of the dev set's instances)
    # (the quick run trains on SemCor's first --semcor-limit sentences: its slice says so)
    ranked = (
        r"best on the \d+ instances of semeval2007 \(limit 3, semcor-limit \d+\), not at its best on the \d+ "
        r"instances of ALL-noSE07 \(limit 3, semcor-limit \d+\), which these bars score\."
    )
    assert re.search(ranked, texts(at.caption)), texts(at.caption)
    assert re.search(r"By part of speech\*\* \(ALL-noSE07 \(limit 3, semcor-limit \d+\)\)", texts(at.markdown))
    # Bug 3: the baseline is its own dashed series (not a layer of the model), the y axis does not
    # zoom into noise, and the tiny slice says that it is small, with its intervals.
    quick = [f for f in figures(at) if "small sample" in f["layout"].get("title", {}).get("text", "")]
    assert quick, "the quick run's chart says that its slice is small"
    fig = quick[-1]
    base = [t for t in fig["data"] if t.get("name") == "WordNet 1st sense (baseline)"]
    assert base and base[0]["line"]["dash"] == "dash"
    assert {t.get("name") for t in fig["data"] if t.get("mode") == "lines+markers"} == {"glove-6b-50d"}
    model = next(t for t in fig["data"] if t.get("name") == "glove-6b-50d")
    assert model["error_y"]["type"] == "data"  # 95% intervals drawn
    low, high = fig["layout"]["yaxis"]["range"]
    assert high - low >= 20
    # One document (Senseval-2's slice): resampling it cannot vary it; no zero-width bars that claim certainty
    sets = at.selectbox(key="quick_wsd_set").options
    assert sets[0].startswith("ALL"), sets  # the headline set first, not the first file's
    at.selectbox(key="quick_wsd_set").set_value(next(s for s in sets if s.startswith("senseval2"))).run()
    assert_ok(at)
    one = [
        f for f in figures(at) if "no interval: all from one document" in f["layout"].get("title", {}).get("text", "")
    ]
    assert one and not next(t for t in one[-1]["data"] if t.get("name") == "glove-6b-50d").get("error_y"), [
        f["layout"].get("title", {}).get("text") for f in figures(at)
    ]
    at.selectbox(key="quick_wsd_set").set_value(sets[0]).run()
    assert not at.dataframe, "the model × layer table opens on demand (issue 30)"
    at.session_state["quick_wsd_table_open"] = True  # a click on "Scores by model and layer (table)"
    at.run()
    table = at.dataframe[-1].value  # the quick run's model × layer table
    assert "wordnet-1st-sense" not in table.index and "first-sense" not in table.columns
    assert "WordNet 1st sense" in texts(at.caption)  # listed as a baseline instead
    assert any(b.proto.label.startswith("Run record") for b in at.get("download_button"))
    # A static model in the λ ablation is a clear message, not a crash.
    at.selectbox(key="probe_kind").set_value("mix").run()
    at.button(key="probe_run").click().run()
    assert not at.exception
    assert "single layer" in texts(at.error)


def test_a_quick_run_of_a_model_replaced_on_disk_is_not_shown_as_its_result(tmp_path, monkeypatch) -> None:
    """The app held a model by name (a Streamlit resource cache in front of the registry): its vectors file replaced,
    pages kept embedding with the old vectors, and the quick run of the old file was shown as the model's (an
    audit). Now the model is loaded again and the old run is not shown as its result."""
    from corpora.wsj import load_conll2000
    from models.manage import add_model

    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    words = sorted({w for split in ("train", "test") for s in load_conll2000(split)[:20] for w in s.words})
    rng = np.random.default_rng(0)

    def write(path: Path) -> None:
        lines = [f"{w} " + " ".join(f"{x:.3f}" for x in rng.normal(size=4)) for w in words]
        path.write_text(f"{len(words)} 4\n" + "\n".join(lines) + "\n", encoding="utf-8")

    vectors = tmp_path / "mine.vec"
    write(vectors)
    add_model("mine-swap", str(vectors))
    at = quick_run(open_page("probes", tab="Run a quick probe"), "pos", "mine-swap", 5)
    assert_ok(at)
    assert "POS on mine-swap, first 5 sentences" in texts(at.success)
    old = load_embedder("mine-swap")
    write(tmp_path / "fresh.vec")  # other vectors for the same words
    os.replace(tmp_path / "fresh.vec", vectors)
    at.run()
    assert_ok(at)
    assert "POS on mine-swap" not in texts(at.success) and "press **Run probe**" in texts(at.info)
    assert load_embedder("mine-swap").fingerprint() != old.fingerprint()
    unload_embedder("mine-swap")  # its registration goes with tmp_path


def test_the_models_page_lists_a_held_model_whose_registration_went(tmp_path, monkeypatch) -> None:
    """A model loaded, then its entry removed from embprobe.toml by hand: the Models page looked every held model up
    again and showed "Could not show this page: Unknown model"; it lists what is held instead."""
    from models.manage import add_model

    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    (tmp_path / "mine.vec").write_text("2 3\nbank 0.1 0.2 0.3\nriver 0.4 0.5 0.6\n", encoding="utf-8")
    add_model("gone-later", str(tmp_path / "mine.vec"))
    load_embedder("gone-later")
    try:
        (tmp_path / "embprobe.toml").write_text("", encoding="utf-8")  # edited by hand while the app runs
        at = open_page("models")
        assert_ok(at)
        assert at.metric[1].value == str(len(loaded_models()))
        held = [m.value for m in at.markdown if m.value.startswith("gone\\-later —")]
        assert held, "listed, with its Unload (it had no row: only a restart freed it)"
        at.button(key="models_unload_held_gone-later").click().run()
        assert "gone-later" not in loaded_models()
    finally:
        unload_embedder("gone-later")


def test_probes_page_draws_only_the_open_probe_and_links_to_it() -> None:
    """The saved results (docs/results): the open probe's tab alone runs and draws; the URL names it."""
    at = open_page("probes")
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles and all(t.startswith("WSD") for t in titles), titles
    assert "saved" not in at.query_params  # the default tab: the page's bare address names it (no history entry)
    linked = open_page("probes", saved="POS")
    titles = [f["layout"]["title"]["text"] for f in figures(linked)]
    assert titles[0].startswith("POS: accuracy") and not any(t.startswith("WSD") for t in titles), titles


def test_probes_page_shows_saved_results_by_layer(tmp_path, monkeypatch) -> None:
    """Results saved by the command-line probes (here a real small POS run) are charted per layer."""
    from probes.registry import RunContext
    from probes.results import save_result
    from probes.tasks.pos import run_pos, run_pos_baseline

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    glove = load_embedder("glove-6b-50d")
    save_result(run_pos(glove, ctx=RunContext(limit=15, show_progress=False)), tmp_path / "results")
    save_result(run_pos_baseline(limit=15), tmp_path / "results")
    at = open_page("probes", saved="POS")
    options = at.selectbox(key="probe_results_dir").options
    mine = next(o for o in options if str(tmp_path) in o)
    at.selectbox(key="probe_results_dir").set_value(mine).run()
    assert_ok(at)
    at.session_state["saved_pos_table_open"] = True  # the table opens on demand
    at.run()
    pos_table = next(d.value for d in at.dataframe if "glove-6b-50d" in d.value.index)
    assert set(pos_table.index) == {"glove-6b-50d"}  # the baseline is not a row of models' layers ...
    assert 0 < float(pos_table.loc["glove-6b-50d", "0"]) <= 100
    assert "majority tag per word" in texts(at.caption)  # ... but its own series, named under the chart
    pos_fig = next(
        f for f in figures(at) if any(t.get("name") == "majority tag per word (baseline)" for t in f["data"])
    )
    assert {t.get("name") for t in pos_fig["data"] if t.get("mode") == "lines+markers"} == {"glove-6b-50d"}


def test_probes_page_shows_control_task_and_mdl(tmp_path, monkeypatch) -> None:
    """A POS run with --control --mdl (real, small) gets its task-vs-control charts and table."""
    from probes.registry import RunContext
    from probes.results import save_result
    from probes.tasks.pos import run_pos

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    glove = load_embedder("glove-6b-50d")
    save_result(
        run_pos(glove, ctx=RunContext(limit=30, show_progress=False), control=True, mdl=True), tmp_path / "results"
    )
    at = open_page("probes", saved="POS")
    mine = next(o for o in at.selectbox(key="probe_results_dir").options if str(tmp_path) in o)
    at.selectbox(key="probe_results_dir").set_value(mine).run()
    assert_ok(at)
    assert "Control task and MDL" in texts(at.markdown)
    by_title = {f["layout"]["title"]["text"]: f for f in figures(at)}
    acc = next(f for t, f in by_title.items() if t.startswith("accuracy: task vs control on"))
    mdl = next(f for t, f in by_title.items() if t.startswith("online codelength: task vs control"))
    assert {t["line"]["dash"] for t in acc["data"]} == {"solid", "dash"}
    table = next(d.value for d in at.dataframe if "selectivity" in d.value.columns)
    assert list(table.model) == ["glove-6b-50d"] and "codelength_kbits" in table.columns
    control_kbits = float(table.control_codelength_kbits.item().split()[0])
    assert mdl["layout"]["yaxis"]["range"][0] == 0 and mdl["layout"]["yaxis"]["range"][1] >= control_kbits


def test_reproduce_page_restores_its_results_folder_from_the_url(tmp_path, monkeypatch) -> None:
    """Shareable state: ?results=DIR chooses the results folder; the choice is written back to the URL."""
    from probes.results import save_result
    from probes.tasks.pos import run_pos_baseline

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    save_result(run_pos_baseline(limit=10), tmp_path / "results")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    at.query_params.clear()
    mine = next(
        o
        for o in at.switch_page("app_pages/reproduce.py").run().selectbox(key="repro_dir").options
        if str(tmp_path) in o
    )
    assert at.selectbox(key="repro_dir").value != mine  # not the default folder
    fresh = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    fresh.query_params.clear()
    fresh.query_params["results"] = mine
    fresh.switch_page("app_pages/reproduce.py").run()
    assert_ok(fresh)
    assert fresh.selectbox(key="repro_dir").value == mine
    assert fresh.query_params["results"] == [mine] or fresh.query_params["results"] == mine
    # a folder of slices only: no paper-vs-ours chart (full runs only), and the page says why
    assert not fresh.get("plotly_chart") and any("are slices (--limit 10)" in i.value for i in fresh.info)


def test_reproduce_page_tables_and_downloads() -> None:
    at = open_page("reproduce")
    assert at.title[0].value == "Reproduce the paper"
    # issue 30: the page settles on its summary charts; each table opens on demand
    assert not at.dataframe and "Paper, Table 5: all-words fine-grained WSD F1" in [e.label for e in at.expander]
    at.session_state["repro_table_paper_wsd"] = True  # a click on it
    at.run()
    shown = "\n".join(str(df.value) for df in at.dataframe)
    assert "biLM" in shown  # the paper's own table is always there
    assert {"dl_all_md", "dl_csv_paper_wsd"} <= {b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")}


# ----------------------------------------------------------------------------- error handling and sharing


def _page_with_a_bug() -> None:
    import streamlit as st

    from app_pages.common import safe

    with safe("divide the numbers"):
        st.write("before")
        1 / 0  # noqa: B018 — deliberately raises ZeroDivisionError inside safe()
    st.write("after the error the page goes on")


def test_unexpected_errors_become_a_message_and_the_page_goes_on() -> None:
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("embprobe.app").addHandler(handler)
    try:
        at = AppTest.from_function(_page_with_a_bug, default_timeout=60).run()
    finally:
        logging.getLogger("embprobe.app").removeHandler(handler)
    # The traceback goes to the server log ...
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in records)
    # ... and the page shows a message instead.
    assert not at.exception
    msg = texts(at.error)
    assert "Could not divide the numbers" in msg and "ZeroDivisionError" in msg and "server log" in msg
    assert "Traceback" not in msg
    assert "after the error the page goes on" in texts(at.markdown)


# ----------------------------------------------------------------------------- shared models


def test_sessions_share_one_loaded_model() -> None:
    """Two browser sessions (two AppTests in one server process) use the same model instance."""
    first = open_page("attention")
    model = load_embedder("minilm")
    second = open_page("attention")
    assert_ok(second)
    assert load_embedder("minilm") is model
    assert loaded_models().count("minilm") == 1
    assert texts(first.caption).split(".")[0] == texts(second.caption).split(".")[0]


@pytest.mark.parametrize("page", ["probes", "reproduce", "layer_profile", "attention", "syntax", "polysemy"])
def test_every_chart_has_an_accessible_name(page: str) -> None:
    """A screen reader heard an unnamed image reading its tick labels ("0 1 2 3 …"): each chart now carries its
    title as plain text (``alt``), markup and escapes undone."""
    import plotly.graph_objects as go

    from viz.titles import plain_title, two_line_title

    at = open_page(page)
    charts = at.get("plotly_chart")
    assert charts, f"{page} draws no chart on its first view"
    assert any(json.loads(c.proto.spec)["layout"].get("title", {}).get("text") for c in charts)  # a title is read
    wrapped = go.Figure().update_layout(title_text=two_line_title("a long head", "and its second line", (6, 10)))
    assert plain_title(wrapped) == "a long head — and its second line"  # a wrap is a space, the sub line a dash
    for c in charts:
        title = json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "")
        alt = c.proto.alt
        assert alt.strip() and "<" not in alt and "&lt;" not in alt and "&amp;" not in alt, (page, alt)
        headline = re.sub(r"<[^>]+>", "", title.split("<br>")[0]).replace("&amp;", "&")
        assert alt.startswith(headline[:20]), (alt, title)  # the headline's first words are the name's


def test_chart_text_is_dark_enough_to_read() -> None:
    """Streamlit's theme drew tick labels, legend titles and printed values in #808495 (3.7:1 on white, under
    WCAG AA's 4.5:1); the app's charts set their own, and keep a colour a figure chose itself."""
    import plotly.graph_objects as go

    from viz.contrast import MUTED, TEXT, readable_text

    fig = go.Figure(go.Bar(x=["a"], y=[1], text=["1.00"], textposition="outside"))
    fig.add_annotation(text="panel", font_color="white").add_annotation(text="note")
    readable_text(fig)
    assert fig.layout.xaxis.tickfont.color == MUTED and fig.layout.yaxis.title.font.color == TEXT
    assert fig.data[0].outsidetextfont.color == MUTED and fig.layout.legend.font.color == TEXT
    assert [a.font.color for a in fig.layout.annotations] == ["white", MUTED]  # a chosen colour stays
    heat = readable_text(go.Figure(go.Heatmap(z=[[0, 1]])).add_trace(go.Scatter3d(x=[0], y=[0], z=[0])))
    assert heat.data[0].colorbar.tickfont.color == MUTED and heat.layout.scene.zaxis.tickfont.color == MUTED
    for spec in figures(open_page("probes")):
        assert spec["layout"]["xaxis"]["tickfont"]["color"] == MUTED
        assert spec["layout"]["legend"]["font"]["color"] == TEXT


def test_the_quick_runs_size_hint_says_what_it_does_not_change() -> None:
    """The --limit box said "20 ≈ seconds" for every probe; a quick WSD run embeds its 5,000 SemCor training
    sentences whatever N is (46 s on a first run): the hint now names what the quick run fixes and points to the
    estimate."""
    at = open_page("probes", tab="Run a quick probe", probe="wsd")
    hint = at.number_input(key="probe_limit").help
    assert "--semcor-limit: the box below, whatever N is" in hint and "estimate" in hint and "≈ seconds" not in hint
    at = open_page("probes", tab="Run a quick probe", probe="pos")
    assert "whatever N is" not in at.number_input(key="probe_limit").help


def test_a_quick_run_that_cannot_start_says_so_once(monkeypatch) -> None:
    """Without the data the quick tab showed a warning (the estimate), a blue "press Run probe", and on a press a
    red error under a progress bar stuck at 0: one cause, three boxes. Now the warning alone, the button off."""
    from app_pages import probe_quick
    from corpora.paths import DataMissingError

    def missing(*args, **kwargs):
        raise DataMissingError("semcor3.0/brown1/tagfiles")

    monkeypatch.setattr(probe_quick, "estimate_run", missing)
    at = open_page("probes", tab="Run a quick probe", probe="wsd", limit="21")  # a size no other test estimated
    assert "semcor3.0" in texts(at.warning).replace("\\", "") and not at.info
    assert at.button(key="probe_run").disabled


def test_an_estimate_that_fails_for_another_reason_leaves_the_run_possible(monkeypatch) -> None:
    """Only what would stop the run too (a missing dataset, a model that does not load) turns Run off: the
    estimate's own work (a warm-up, a timed fit on random rows) failing says so and leaves the button on."""
    from app_pages import probe_quick

    def broken(*args, **kwargs):
        raise RuntimeError("the warm-up's timer broke")

    monkeypatch.setattr(probe_quick, "estimate_run", broken)
    at = open_page("probes", tab="Run a quick probe", probe="pos", limit="23")
    assert "RuntimeError" in texts(at.warning) and not at.button(key="probe_run").disabled
