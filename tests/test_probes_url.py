"""Issue 30: the Probes page's pickers are in the URL, so a link restores the view.

The results folder, a saved probe's evaluation set and metric, and the "Your data" tab's task (and size) were
widgets without a URL parameter (found by tests/test_browser_walk.py): a shared link opened on the defaults.
Under AppTest (``tests/test_app.py``'s ``open_page``) on the committed results.
"""

from __future__ import annotations

from test_app import assert_ok, figures, open_page

from probes.registry import all_probes
from viz.results import dirs_with_results, label_dir


def _one(value):
    return value[0] if isinstance(value, list) else value


def test_a_saved_probes_evaluation_set_and_metric_round_trip_through_the_url() -> None:
    at = open_page("probes")
    assert "results" not in at.query_params  # arriving writes nothing: the bare address stands for the defaults
    sets = at.selectbox(key="saved_wsd_set").options
    other = next(s for s in sets if s != at.selectbox(key="saved_wsd_set").value)
    at.selectbox(key="saved_wsd_set").set_value(other).run()
    assert_ok(at)
    assert _one(at.query_params["saved_set"]) == other
    assert _one(at.query_params["results"]) == at.selectbox(key="probe_results_dir").value  # a change links all
    link = {k: _one(v) for k, v in at.query_params.items()}
    fresh = open_page("probes", **link)
    assert fresh.selectbox(key="saved_wsd_set").value == other
    assert any(f"on {other}, by layer" in f["layout"]["title"]["text"] for f in figures(fresh))


def test_a_link_with_an_unknown_evaluation_set_falls_back_to_the_first() -> None:
    at = open_page("probes", saved_set="no-such-set", results="/no/such/dir")
    assert at.selectbox(key="saved_wsd_set").value == at.selectbox(key="saved_wsd_set").options[0]
    assert at.selectbox(key="probe_results_dir").value == label_dir(dirs_with_results()[0])
    assert _one(at.query_params["results"]) == label_dir(dirs_with_results()[0])  # the link now says what is shown


def test_a_link_names_the_projects_results_folder_by_its_relative_path() -> None:
    """The link held the server's absolute path (/work/main/docs/results/runs): it opened nothing on another
    install. It now holds docs/results/runs; a link made before, with the absolute path, still opens that folder."""
    committed = next(d for d in dirs_with_results() if label_dir(d) == "docs/results/runs")
    at = open_page("probes", results="docs/results/runs")
    assert _one(at.query_params["results"]) == "docs/results/runs" == at.selectbox(key="probe_results_dir").value
    older = open_page("probes", results=str(committed))
    assert _one(older.query_params["results"]) == "docs/results/runs"
    assert older.selectbox(key="probe_results_dir").value == "docs/results/runs"


def test_the_your_data_tabs_task_round_trips_through_the_url() -> None:
    tasks = [spec.name for spec in all_probes() if spec.inputs]
    at = open_page("probes", tab="Your data")
    assert at.radio(key="up_task").value == tasks[0] and "up_task" not in at.query_params  # the default: bare
    fresh = open_page("probes", tab="Your data", up_task=tasks[-1])
    assert fresh.radio(key="up_task").value == tasks[-1]


def test_the_quick_runs_model_picker_round_trips_through_the_url() -> None:
    # It was made by common.model_select without a URL parameter: a link opened on the default model.
    # (The "Your data" tab's picker, shown once files are uploaded: tests/test_app_upload.py.)
    at = open_page("probes", tab="Run a quick probe")
    assert "model" not in at.query_params  # the default: the bare address names it
    other = next(m for m in at.selectbox(key="probe_model").options if m != at.selectbox(key="probe_model").value)
    fresh = open_page("probes", tab="Run a quick probe", model=other)
    assert fresh.selectbox(key="probe_model").value == other
    bad = open_page("probes", tab="Run a quick probe", model="no-such-model")  # a bad link: the default
    assert bad.selectbox(key="probe_model").value == at.selectbox(key="probe_model").value


def test_a_tab_without_pickers_leaves_no_other_tabs_choices_in_the_url() -> None:
    """WSD's set and metric stayed in the address bar on a tab that has no results to pick from (Tag: the
    committed results hold none), so a copied link carried choices the view does not show."""
    at = open_page("probes")
    sets = at.selectbox(key="saved_wsd_set").options
    at.selectbox(key="saved_wsd_set").set_value(sets[-1]).run()
    assert "saved_set" in at.query_params
    at.session_state["probes_saved"] = next(spec.short_title for spec in all_probes() if spec.name == "tag")
    at.run()
    assert_ok(at)
    # the probe's own title (a raw "No HEAD_SYNTAX results" was its identifier)
    assert 'No Tag results in this folder (another in "Results from" may hold them).' in [i.value for i in at.info]
    assert not {"saved_set", "saved_metric", "saved_tests_model"} & set(at.query_params)


def test_the_committed_ud_ewt_runs_are_offered_and_their_structural_results_drawn() -> None:
    """The Probes page said "No STRUCTURAL results yet." while the committed structural runs sat in a folder its
    "Results from" picker did not offer (docs/results/ud_ewt/structural_runs)."""
    at = open_page("probes", results="docs/results/ud_ewt/structural_runs")
    assert at.selectbox(key="probe_results_dir").value == "docs/results/ud_ewt/structural_runs"
    at.session_state["probes_saved"] = next(spec.short_title for spec in all_probes() if spec.name == "structural")
    at.run()
    assert_ok(at)
    assert not [i.value for i in at.info if "No STRUCTURAL" in i.value] and at.get("plotly_chart")
    assert {"docs/results/ud_ewt/runs", "docs/results/runs", "docs/results/contextuality/runs"} <= set(
        at.selectbox(key="probe_results_dir").options
    )
    # a probe that keeps no per-instance outcomes is not told its tests are on UUAS
    at.selectbox(key="saved_structural_metric").set_value("DSpr").run()
    assert not [c.value for c in at.caption if "Paired layer tests are on" in c.value]
