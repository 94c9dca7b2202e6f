"""The Layer profile page under Streamlit's AppTest, on the committed results and real models."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def open_page() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("app_pages/layer_profile.py").run()
    assert_ok(at)
    return at


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def test_profile_summary_and_cka_heatmaps():
    at = open_page()
    assert at.title[0].value == "Layer profile"
    measure = at.selectbox(key="lp_measure")
    assert any(o.startswith("pos · ") for o in measure.options)
    # the summary table names every chosen model with its centre of gravity
    summary = at.dataframe[0].value
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
    assert len(charts(at)) == before + 3   # within A, within B, A × B


def test_same_model_gives_one_heatmap():
    at = open_page()
    at.selectbox(key="lp_cka_a").set_value("elmo-small")
    at.selectbox(key="lp_cka_b").set_value("elmo-small")
    at.number_input(key="lp_cka_n").set_value(5)
    before = len(charts(at))
    at.button(key="lp_cka_go").click().run()
    assert_ok(at)
    assert len(charts(at)) == before + 1


def test_contextuality_curves_from_the_committed_run():
    at = open_page()
    folder = next(o for o in at.selectbox(key="lp_dir").options if o.endswith("contextuality/runs"))
    at.selectbox(key="lp_dir").set_value(folder).run()
    assert_ok(at)
    metric = at.selectbox(key="lp_ctx_metric")
    assert metric.value == "self_similarity_adj"
    assert "Anisotropy: mean cosine of random occurrence pairs" in metric.options   # options show the titles
    assert any("No per-layer probe results" in i.value for i in at.info)   # this folder holds contextuality only
    assert at.selectbox(key="lp_ctx_dataset").value == "semcor-first2000"
    metric.set_value("anisotropy").run()
    assert_ok(at)
