"""The Layer profile page under Streamlit's AppTest, on the committed results and real models; the
contextuality and CKA probes as tabs of the Probes page."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from models.registry import load_embedder
from probes.registry import RunContext, get_probe
from probes.results import save_result

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def open_page(name: str = "layer_profile", **params: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    at.query_params.clear()
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(f"app_pages/{name}.py").run()
    assert_ok(at)
    return at


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def y_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["yaxis"]["title"]["text"] for c in charts(at)]


def test_profile_summary_and_cka_heatmaps():
    at = open_page()
    assert at.title[0].value == "Layer profile"
    measure = at.selectbox(key="lp_measure")
    assert any(o.startswith("pos · ") for o in measure.options)
    # the summary table names every chosen model with its centre of gravity
    summary = at.table[0].value
    assert {"model", "centre of gravity", "centre of gravity (depth)"} <= set(summary.columns)
    assert len(charts(at)) >= 1
    # no model chosen: a hint, not an error
    at.multiselect(key="lp_models").set_value([]).run()
    assert_ok(at)
    assert any("at least one model" in i.value for i in at.info)
    # CKA: ELMo against its own random-weight version
    at.selectbox(key="lp_cka_a").set_value("elmo-small")
    at.selectbox(key="lp_cka_b").set_value("random:elmo-small@0")
    at.number_input(key="lp_cka_n").set_value(10)
    before = len(charts(at))
    at.button(key="lp_cka_go").click().run()
    assert_ok(at)
    assert len(charts(at)) == before + 3  # within A, within B, A × B
    # they stay through another choice, and a link opens them (they vanished with the button's one run)
    at.multiselect(key="lp_models").set_value(["minilm"]).run()
    assert len(charts(at)) >= 4 and at.query_params["cka"] == "1"
    link = open_page(cka="1", cka_a="elmo-small", cka_b="random:elmo-small@0", cka_n="10")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts(link)]
    assert sum("layer × layer" in t for t in titles) == 2, titles


def computed_cka(a: str, b: str, n: int) -> tuple[AppTest, int]:
    """The page with CKA computed for models ``a`` and ``b`` on ``n`` sentences, and its chart count before."""
    at = open_page()
    at.selectbox(key="lp_cka_a").set_value(a)
    at.selectbox(key="lp_cka_b").set_value(b)
    at.number_input(key="lp_cka_n").set_value(n)
    before = len(charts(at))
    at.button(key="lp_cka_go").click().run()
    assert_ok(at)
    return at, before


def test_a_static_model_in_cka_is_compared_not_refused():
    """A one-layer Model B made the whole CKA section one error ("has one layer … --against NAME", round seventeen's
    refusal of a tautology): its A × B map is drawn, its own 1 × 1 map is not; alone it is an explanation."""
    at, before = computed_cka("elmo-small", "glove-6b-50d", 5)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts(at)[before:]]
    assert titles == ["elmo-small: layer × layer", "elmo-small × glove-6b-50d"], titles
    at.selectbox(key="lp_cka_a").set_value("glove-6b-50d").run()
    assert_ok(at)
    assert len(charts(at)) == before and any("one layer" in i.value for i in at.info)


def test_same_model_gives_one_heatmap():
    at, before = computed_cka("elmo-small", "elmo-small", 5)
    assert len(charts(at)) == before + 1


def test_contextuality_curves_from_the_committed_run():
    at = open_page()
    folder = at.selectbox(key="lp_ctx_dir")
    assert folder.value.endswith("contextuality/runs")  # its own folder, the committed run first
    assert not any(o.endswith("contextuality/runs") for o in at.selectbox(key="lp_dir").options)  # no probe rows
    metric = at.selectbox(key="lp_ctx_metric")
    assert metric.value == "self_similarity_adj"
    assert "Anisotropy: mean cosine of random occurrence pairs" in metric.options  # options show the titles
    assert at.selectbox(key="lp_ctx_dataset").value == "semcor-first2000"
    assert "cosine − anisotropy" in y_titles(at)  # what the number is (the axis said "self_similarity_adj")
    metric.set_value("anisotropy").run()
    assert_ok(at)
    assert "cosine" in y_titles(at)  # anisotropy: the mean cosine of random pairs


def test_contextuality_and_cka_are_tabs_of_the_probes_page(tmp_path, monkeypatch):
    """Their saved results are drawn by the page's generic per-layer chart, on their own fixed axes."""
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    elmo, ctx = load_embedder("elmo-small"), RunContext(limit=30, show_progress=False)
    for name, options in (("contextuality", {"min_occurrences": 3}), ("cka", {"max_vectors": 200})):
        spec = get_probe(name)
        save_result(spec.run(elmo, None, ctx, **spec.options_from(options)).stamped(), tmp_path / "results")
    for tab, title, y_range, y_title in (
        (
            "Contextuality",
            "Contextuality: self_similarity_adj on semcor-first30, by layer",
            [-1, 1],
            "cosine − anisotropy",
        ),
        ("CKA", "CKA: cka_0 on semcor-first30, by layer", [0, 1], "linear CKA with layer 0"),
    ):
        at = open_page("probes", saved=tab)
        mine = next(o for o in at.selectbox(key="probe_results_dir").options if str(tmp_path) in o)
        at.selectbox(key="probe_results_dir").set_value(mine).run()
        assert_ok(at)
        fig = next(
            f for f in (json.loads(c.proto.spec) for c in charts(at)) if f["layout"]["title"]["text"].startswith(title)
        )
        assert [t.get("name") for t in fig["data"]] == ["elmo-small"] and fig["layout"]["yaxis"]["range"] == y_range
        assert fig["layout"]["yaxis"]["title"]["text"] == y_title  # what the number is (it said "self_similarity_adj")
        at.session_state[f"saved_{tab.lower()}_table_open"] = True  # the table opens on demand (issue 30)
        at.run()
        table = next(d.value for d in at.dataframe if "elmo-small" in d.value.index)  # model × layer
        assert list(table.columns) == ["0", "1", "2"]
        if tab == "CKA":
            assert table.loc["elmo-small", "0"] == "1.00"  # layer 0 with itself
