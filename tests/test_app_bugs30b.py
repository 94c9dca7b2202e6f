"""Issue 30, bugs 2 and 4: the Layer profile page's shared features and the projector's layers and search.

The pages under AppTest (``tests/test_app.py``'s ``open_page``) on the committed results, SemCor and the
real small models (ELMo-small for CKA, MiniLM for the projector); the metadata on a real sentence.
"""

from __future__ import annotations

import json
import re

import pytest
from test_app import assert_ok, figures, open_page, texts

from probes.registry import get_probe
from viz.points import occurrence_metadata, search_mask
from viz.polysemy import Occurrence

# ----------------------------------------------------------------------------- bug 2: Layer profile


def _key(element) -> str:
    """The widget key an element was created with (its id ends in ``-KEY``)."""
    return element.proto.id.rsplit("-", 1)[-1]


def _exports(at) -> dict[str, tuple[str | None, bool]]:
    """Chart key -> (the camera button's image format, whether a CSV button of its data follows)."""
    buttons = {_key(b) for b in at.get("download_button")}
    out = {}
    for c in at.get("plotly_chart"):
        config = json.loads(c.proto.config or "{}")
        out[_key(c)] = (config.get("toImageButtonOptions", {}).get("format"), f"{_key(c)}__data" in buttons)
    return out


def test_layer_profile_charts_export_in_the_chosen_format_with_a_csv_and_contextuality_beside() -> None:
    """The page called st.plotly_chart itself: a PNG camera whatever the sidebar said, no CSV; contextuality
    was drawn only when the one "Results from" picker held its folder (and then no probe chart)."""
    at = open_page("layer_profile")
    exports = _exports(at)
    assert {"lp_profile_chart", "lp_ctx_chart"} <= set(exports)  # both at once, from their own folders
    assert set(exports.values()) == {("svg", True)}
    at.radio(key="fig_format").set_value("png").run()
    at.selectbox(key="lp_cka_a").set_value("elmo-small")
    at.selectbox(key="lp_cka_b").set_value("elmo-small")
    at.number_input(key="lp_cka_n").set_value(5)
    at.button(key="lp_cka_go").click().run()
    assert_ok(at)
    exports = _exports(at)
    assert "lp_cka_within_a" in exports and set(exports.values()) == {("png", True)}
    # error bars wherever the rows have intervals (the committed POS runs all do)
    profile = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("pos · conll2000-test"))
    models = [t for t in profile["data"] if not t["name"].endswith("(baseline)")]
    assert models and all(len(t["error_y"]["array"]) == len(t["y"]) for t in models)
    # the majority-tag baseline is a dashed series of its own (it was only a caption)
    (base,) = [t for t in profile["data"] if t["name"].endswith("(baseline)")]
    assert base["line"]["dash"] == "dash" and "majority tag" in base["name"]


def test_layer_profile_choices_round_trip_through_the_url() -> None:
    at = open_page("layer_profile")
    assert "measure" not in at.query_params  # arriving writes nothing: the bare address stands for the defaults
    at.selectbox(key="lp_measure").set_value("wsd · ALL · F1").run()
    at.multiselect(key="lp_models").set_value(["minilm", "elmo-small"]).run()
    at.selectbox(key="lp_ctx_metric").set_value("anisotropy").run()
    at.number_input(key="lp_cka_n").set_value(15).run()
    assert_ok(at)
    link = dict(at.query_params)  # one value: a str; several: a list
    assert link["models"] == ["minilm", "elmo-small"] and link["cka_n"] == "15"
    fresh = open_page("layer_profile", **{k: v for k, v in link.items() if k != "models"}, models="minilm")
    assert fresh.selectbox(key="lp_measure").value == "wsd · ALL · F1"
    assert fresh.selectbox(key="lp_ctx_metric").value == "anisotropy"
    assert fresh.number_input(key="lp_cka_n").value == 15
    assert fresh.multiselect(key="lp_models").value == ["minilm"]
    (title,) = [f["layout"]["title"]["text"] for f in figures(fresh) if "· ALL ·" in f["layout"]["title"]["text"]]
    names = [t["name"] for f in figures(fresh) if f["layout"]["title"]["text"] == title for t in f["data"]]
    assert [n for n in names if not n.endswith("(baseline)")] == ["minilm"]  # the baselines: series of their own


@pytest.mark.parametrize(("probe", "measure"), [("pos", "pos · conll2000-test · accuracy"), ("wsd", "wsd · ALL · F1")])
def test_layer_profile_offers_no_baseline_as_a_model(probe: str, measure: str) -> None:
    """ "majority-tag" was a model of the POS profile (the WSD first-sense baselines of the WSD one)."""
    at = open_page("layer_profile", measure=measure)
    options = at.multiselect(key="lp_models").options
    spec = get_probe(probe)
    assert "minilm" in options and not set(spec.baseline_models) & set(options)
    assert any(label in texts(at.caption) for label in spec.baseline_models.values())  # named as baselines


# ----------------------------------------------------------------------------- bug 4: projector


def test_context_is_the_whole_sentence_so_a_search_sees_it_all() -> None:
    sentence = "What in the name of God was he doing , crouched in a timbered pit on the wrong bank of the river ?"
    words = tuple(sentence.split())  # SemCor brown1: "bank" is token 18
    occ = Occurrence(words, 18, 19, keys=("bank%1:17:01::",), source="brown1/br-k01 s5")
    (context,) = occurrence_metadata([occ], str)["context"]
    assert context == sentence.replace(" bank ", " [bank] ")  # was "… , crouched in … [bank] of the river ?"
    other = Occurrence(words[9:], 9, 10, source="typed line 1")
    meta = occurrence_metadata([occ, other], str)
    assert list(search_mask(meta, r"re:^What\b")) == [True, False]  # the old "… " prefix hid the start
    assert list(search_mask(meta, "re:God was he")) == [True, False]  # and the words cut off with it


def test_projector_colours_each_layer_and_its_suggested_search_matches() -> None:
    """All MiniLM layers coloured by layer: 7 categories (was "layer 0–1 (80)" and 5 other ranges); the
    search suggested in the box matched 0 of 280 points."""
    at = open_page("embedding_space", tab="Projector", pj_model="minilm", pj_word="bank", pj_layer="all layers")
    at.selectbox(key="space_pj_colour").set_value("layer").run()
    box = at.text_input(key="space_pj_search")
    (example,) = re.findall(r"re:\S+", box.placeholder)
    box.set_value(example).run()
    assert_ok(at)
    (fig,) = figures(at)
    names = {t["name"].split(" (")[0] for t in fig["data"] if t.get("showlegend", True) and t.get("name")}
    assert {f"layer {k}" for k in range(7)} <= names and not any("–" in n for n in names)
    (matched, total) = map(int, re.search(r"(\d+) of (\d+) points match", texts(at.caption)).groups())
    assert total == 280 and 0 < matched < total and matched % 7 == 0  # the same sentences at every layer


def test_layer_profile_csv_holds_the_baselines_the_chart_draws(monkeypatch) -> None:
    """The chart drew the majority-tag line at 90.63 but its CSV had the models' rows only (the Probes page's
    CSVs carry their baselines): a number on the chart that no export held."""
    import io

    import pandas as pd
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    saved: dict[str, bytes] = {}
    load = MemoryMediaFileStorage.load_and_get_id

    def keep(self, data, mimetype, kind, filename=None):
        saved[filename] = data
        return load(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    open_page("layer_profile")
    (name,) = [n for n in saved if n and n.startswith("layer-profile-pos-conll2000-test")]
    csv = pd.read_csv(io.BytesIO(saved[name]))
    base = csv[csv["baseline"].notna()]
    assert list(base["baseline"]) == ["majority tag per word"] and base["value"].iloc[0] == 90.63
    models = csv[csv["baseline"].isna()]
    assert len(models) > 20 and "majority-tag" not in set(models["model"])  # the models' rows as before


@pytest.mark.parametrize("compare", ["two layers", "two models"])
def test_the_side_by_side_line_views_have_their_csv(compare: str, monkeypatch) -> None:
    """Side by side, the two line views offered an image only (six charts, five CSV buttons); their files were
    then named "…-2-3" where the page's others say "…-L2-H3"."""
    from app_pages import common

    files: dict[str, str] = {}
    real = common.download

    def download(label, data, name, *, key, **kw):
        files[key] = name
        real(label, data, name, key=key, **kw)

    monkeypatch.setattr(common, "download", download)
    at = open_page("attention", compare=compare)
    assert_ok(at)
    exports = _exports(at)
    assert {"attn_side_a", "attn_side_b"} <= set(exports)
    assert all(has_csv for _, has_csv in exports.values()), exports
    for side in ("attn_side_a", "attn_side_b"):
        assert re.fullmatch(r"attention-lines-[\w.-]+-L\d+-H\d+\.csv", files[f"{side}__data"]), files


def test_the_averages_tab_layer_is_in_the_link() -> None:
    """The Averages tab's layer slider was the one Attention choice a link did not restore."""
    at = open_page("attention", tab="Averages", avg_layer="3")
    assert_ok(at)
    assert at.slider(key="attn_avg_layer").value == 3 and at.query_params["avg_layer"] == "3"


def test_the_committed_contextuality_run_is_not_called_a_small_sample() -> None:
    """Its chart said "small sample: n = 993–1000" (GloVe's 993 measured words against the 1,000 test instances
    that make an accuracy's sample small), though its intervals are ±0.001 to ±0.01 wide."""
    at = open_page("layer_profile")
    assert_ok(at)
    (ctx,) = [f for f in figures(at) if f["layout"]["title"]["text"].startswith("Self-similarity")]
    assert "95%" in ctx["layout"]["title"]["text"] and "small sample" not in ctx["layout"]["title"]["text"]


def test_attention_maps_download_as_vector_svg_while_svg_is_chosen(monkeypatch) -> None:
    """Issue 30, "heatmaps as vector SVG": plotly.js's SVG of a heatmap wraps one PNG (the camera button gave
    ``<image href="data:image/png…">``). While SVG downloads are chosen each map has a vector SVG of its own."""
    from app_pages import common

    files: dict[str, object] = {}
    real = common.download
    monkeypatch.setattr(common, "download", lambda label, data, name, **kw: files.__setitem__(name, data))
    at = open_page("attention")
    assert_ok(at)
    svgs = {name: data() for name, data in files.items() if name.endswith(".svg")}
    assert any(n.startswith("attention-grid") for n in svgs) and any("-L" in n and "-H" in n for n in svgs), svgs
    for svg in svgs.values():
        assert svg.startswith(b"<svg") and b"<image" not in svg and svg.count(b"<rect") > 16
    monkeypatch.setattr(common, "download", real)
    at.radio(key="fig_format").set_value("png").run()
    assert not any(_key(b).endswith("__svg") for b in at.get("download_button"))
