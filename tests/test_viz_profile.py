"""viz/profile.py: the Layer profile view's choices and figures, on the committed results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from corpora.paths import REPO_ROOT
from models.random_init import twin_base
from probes.results import load_extras, load_results
from probes.stats.profiles import centres_of_gravity, expected_layers, layer_profile
from viz.profile import choice_label, cka_heatmap, contextuality_metrics, profile_choices, profile_figure, summary_frame

RUNS = REPO_ROOT / "docs" / "results" / "runs"


def test_choices_are_layered_measures_without_precision_and_recall():
    df = load_results(RUNS)
    choices = profile_choices(df)
    assert ("pos", "conll2000-test", "accuracy") in choices and ("wsd", "ALL", "F1") in choices
    # per POS on ALL w/o SE07, not the rows on ALL that runs before 2026-12-06 wrote (still in their files)
    assert ("wsd", "ALL-noSE07:VERB", "F1") in choices and (df.dataset == "ALL:VERB").any()
    assert not any(dataset.startswith("ALL:") for _, dataset, _ in choices)
    assert not any(metric in ("P", "R") for _, _, metric in choices)
    assert not any(probe == "mix" for probe, _, _ in choices)  # mix rows are λ rows, not layers
    assert choice_label(choices[0]).count(" · ") == 2
    assert profile_choices(df.iloc[0:0]) == []
    # the note says what the intervals average, as the Probes page's does for the same rows
    selectivity = profile_figure(layer_profile(df, "pos", "conll2000-test", "selectivity"), title="t", y_title="s")
    assert selectivity.layout.title.text.endswith("<sup>95% CI over 2012 sentences, 5 control draws</sup>")


def test_profile_figure_one_series_per_model_random_dashed_intervals_drawn():
    df = pd.DataFrame(
        {
            "model": ["minilm"] * 3 + ["random:minilm@0"] * 3,
            "probe": "pos",
            "dataset": "d",
            "metric": "accuracy",
            "layer": ["0", "1", "2"] * 2,
            "value": [90, 92, 91, 60, 55, 50],
            "n": 1000,
            "lo": [89, 91, 90, np.nan, np.nan, np.nan],
            "hi": [91, 93, 92, np.nan, np.nan, np.nan],
            "unit": "sentence",
            "clusters": 60,
        }
    )
    prof = layer_profile(df, "pos", "d", "accuracy")
    base = pd.DataFrame({"label": ["majority tag"], "value": [85.0], "lo": [np.nan], "hi": [np.nan]})
    fig = profile_figure(prof, title="t <b> (aside)", y_title="accuracy", base=base, twin_of=twin_base)
    trained, random, baseline = fig.data
    assert list(trained.x) == [0, 0.5, 1] and list(trained.y) == [90, 92, 91]
    assert trained.line.dash == "solid" and random.line.dash == "dot"
    assert random.line.color == trained.line.color  # the twin is drawn beside its model, never as a look-alike
    assert list(trained.error_y.array) == [1, 1, 1] and random.error_y.array is None
    assert "layer 1 of 2" in trained.hovertext[1]
    # two lines at half width: the headline, then the aside and what the error bars are
    assert fig.layout.title.text == "t &lt;b&gt;<br><sup>aside; 95% CI over 60 sentences</sup>"
    # the baseline is a dashed series of its own across the depths, in the legend
    assert baseline.name == "majority tag<br>(baseline)" and baseline.line.dash == "dash" and list(baseline.x) == [0, 1]


def test_cka_heatmap_checks_its_labels():
    fig = cka_heatmap(np.eye(2), ["0", "1"], ["0", "1"], title="x")
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1
    with pytest.raises(ValueError, match="labels"):
        cka_heatmap(np.eye(2), ["0"], ["0", "1"], title="x")


def test_heatmap_cell_labels_read_on_every_cell_colour():
    """Plotly chose the labels' colour on heatmap cells itself: on mid-tone cells some read at 3.2:1 (the Syntax
    head grid: 10 of 72). Every label is now black or white, whichever contrasts more with its cell: ≥ 4.5:1; the
    CSV keeps one row per cell, not a second one per printed label."""
    from plotly.colors import sample_colorscale

    from viz.contrast import contrast_ratio
    from viz.export import figure_frame

    matrix = np.linspace(0, 1, 36).reshape(6, 6)
    fig = cka_heatmap(matrix, list("abcdef"), list("abcdef"), title="x")
    labels = fig.data[1]
    cells = sample_colorscale("Viridis", matrix.ravel().tolist())
    ratios = [contrast_ratio(text, cell) for text, cell in zip(labels.textfont.color, cells)]
    assert len(ratios) == 36 and min(ratios) >= 4.5
    assert list(labels.text[:2]) == [".00", ".03"] and fig.data[0].texttemplate is None
    assert len(figure_frame(fig)) == 36
    # narrow cells (7 layers in a third of the page) ran "1.000.940.89…" together: shorter, smaller labels, and none
    # past 12 columns (the hover keeps every value)
    seven = cka_heatmap(np.full((7, 7), 0.94), list("abcdefg"), list("abcdefg"), title="x").data[1]
    assert set(seven.text) == {".94"} and seven.textfont.size == 10 and labels.textfont.size == 12
    many = cka_heatmap(np.eye(13), list("abcdefghijklm"), list("abcdefghijklm"), title="x").data[1]
    assert set(many.text) == {""}


def test_summary_joins_centre_of_gravity_and_expected_layers():
    df = load_results(RUNS)
    prof = layer_profile(df, "pos", "conll2000-test", "accuracy", ["minilm", "elmo-small"])
    table = summary_frame(centres_of_gravity(prof), expected_layers(load_extras(RUNS, "mix")))
    assert set(table["model"]) == {"minilm", "elmo-small"}
    assert {"centre of gravity (depth)", "expected layer (pos)", "expected layer (chunk)"} <= set(table.columns)


def test_contextuality_metrics_adjusted_first():
    df = pd.DataFrame({"probe": "contextuality", "metric": ["self_similarity", "anisotropy", "self_similarity_adj"]})
    assert contextuality_metrics(df) == ["self_similarity_adj", "self_similarity", "anisotropy"]
    assert contextuality_metrics(df.iloc[0:0]) == []


def test_profile_axis_never_zooms_into_noise_and_takes_a_probes_fixed_range():
    """One model whose layers differ by 1.5 points: the accuracy axis still spans 20 points of its unit (as the
    Probes page's); a probe's fixed range (cosines: -1..1) is kept as given."""
    df = pd.DataFrame(
        {"model": "minilm", "probe": "pos", "dataset": "d", "metric": "accuracy", "layer": ["0", "1", "2"]}
        | {"value": [93.0, 94.5, 94.0]}
    )
    prof = layer_profile(df, "pos", "d", "accuracy")
    fig = profile_figure(prof, title="t", y_title="accuracy")
    lo, hi = fig.layout.yaxis.range
    assert hi - lo >= 20 and lo <= 93 and hi <= 100 and fig.layout.yaxis.title.text == "accuracy (%)"
    assert list(profile_figure(prof, title="t", y_title="cos", y_range=(-1.0, 1.0)).layout.yaxis.range) == [-1, 1]


def test_layer_profile_edge_cases_found_in_review():
    """A folder without a probe's numbered layers gave a KeyError, not "no choices"; a model measured at layers 0
    and 3 of six was drawn with layer 3 at depth 1; a probe's own axis title was read as the metric (structural
    selectivity floored at 0 with a "%"); a dataset name with brackets was split into the subtitle."""
    from pathlib import Path

    df = load_results(RUNS)
    assert profile_choices(df, "contextuality") == [] and profile_choices(df[df.layer.eq("mean")]) == []
    structural = load_results(Path(RUNS).parent / "ud_ewt" / "structural_runs")
    uuas = layer_profile(structural, "structural", "en_ewt-ud@4d7343ed:dev:tree", "UUAS")
    assert uuas.attrs["partial"] == {"random:minilm": [0, 3]} and "random:minilm" not in set(uuas.model)
    prof = layer_profile(structural, "structural", "en_ewt-ud@4d7343ed:dev:tree", "selectivity")
    fig = profile_figure(prof, title="t", y_title="selectivity (points: UUAS − control UUAS)", metric="selectivity")
    assert fig.layout.yaxis.title.text == "selectivity (points: UUAS − control UUAS)" and fig.layout.yaxis.range[0] < 0
    named = choice_label(("tag", "en_ewt-ud@4d7343ed:dev:feats:Number (not _)", "accuracy"))
    assert "(not _) · accuracy<br><sup>" in profile_figure(prof, title=named, y_title="accuracy").layout.title.text


def test_a_small_sample_is_said_in_the_profile_title_as_on_the_probes_page():
    """The committed contextuality run (n 993–1000) was titled "small sample" on the Probes page and not on the Layer
    profile's chart; both now say it, with the same note (``viz.probe_figures.small_sample_note``)."""
    rows = {"model": "m", "probe": "pos", "dataset": "d", "metric": "accuracy"}
    df = pd.DataFrame(rows | {"layer": ["0", "1", "2"], "value": [90.0, 95.0, 94.0], "n": [993, 1000, 1000]})
    small = profile_figure(layer_profile(df, "pos", "d", "accuracy"), title="t", y_title="accuracy")
    assert "small sample: n = 993–1000" in small.layout.title.text
    big = profile_figure(layer_profile(df.assign(n=5000), "pos", "d", "accuracy"), title="t", y_title="accuracy")
    assert "small sample" not in big.layout.title.text


def test_a_mean_over_a_thousand_words_is_not_called_a_small_sample_but_one_over_fifty_is():
    """Contextuality's rows count words (sentences, pairs), each a mean's unit, not test instances: GloVe's 993
    measured words (intervals ±0.001) were called "small sample" beside MiniLM's 1,000, by the 1,000-instance rule of
    an accuracy. Its chart now has its own threshold (``ChartSpec.small_n``), said in its own unit."""
    from probes.registry import get_probe

    chart = get_probe("contextuality").chart
    rows = {"model": "glove-6b-50d", "probe": "contextuality", "dataset": "d", "metric": "self_similarity_adj"}
    df = pd.DataFrame(rows | {"layer": ["0"], "value": [0.52], "lo": [0.521], "hi": [0.523], "n": [993]})

    def title(n: int) -> str:
        prof = layer_profile(df.assign(n=n), "contextuality", "d", "self_similarity_adj")
        return profile_figure(prof, title="t", y_title="c", small_n=chart.small_n).layout.title.text

    assert "small sample" not in title(993) and "small sample: n = 50" in title(50)
    assert chart.small_what.startswith("words") and get_probe("pos").chart.small_n == 1000
