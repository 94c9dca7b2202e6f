"""Issue 30, bug 9: chart layout across pages, on the committed results (docs/results/runs).

Random-weight twins drawn beside their trained model (its colour, dotted), never as a look-alike of another
model; static models across the layers instead of piled at layer 0; titles clear of the toolbar and legends
under the plot; the λ chart without an empty category; sense legends in full; the model count without
the baselines.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from test_app import assert_ok, figures, open_page, texts

from models.random_init import twin_base
from probes.registry import get_probe
from probes.results import load_results
from probes.stats.profiles import layer_profile
from viz.figures import (
    HALF_TITLE_CHARS,
    LAPTOP_PLOT_PX,
    LEGEND_ROW_PX,
    TITLE_LINE,
    chart_layout,
    legend_rows,
    model_styles,
)
from viz.occurrence_figures import occurrence_scatter
from viz.probe_views import probe_view, rigor_view
from viz.profile import profile_figure
from viz.reproduce import comparison_figure, comparison_frame, load_tables
from viz.titles import balanced_wrap

RUNS = Path(__file__).resolve().parent.parent / "docs" / "results" / "runs"


@pytest.fixture(scope="module")
def committed():
    return load_results(RUNS)


def _traces(fig) -> dict[str, object]:
    return {t.name: t for t in fig.data if t.name}


def test_random_twins_take_their_models_colour_dotted_and_no_two_models_share_one(committed) -> None:
    fig = probe_view(committed, get_probe("wsd"), "ALL", "F1", twin_of=twin_base)["layer_figure"]
    traces = _traces(fig)
    for model in ("minilm", "gpt-small", "elmo-small"):
        trained, twin = traces[model], traces[f"random:{model}@0"]
        assert twin.line.color == trained.line.color and twin.line.dash == "dot" and trained.line.dash == "solid"
    trained = [t for name, t in traces.items() if twin_base(name) is None and "(baseline)" not in name]
    assert len({t.line.color for t in trained}) == len(trained)  # gpt-small no longer looks like random:minilm@0
    # a twin without its trained model keeps a colour of its own, still dotted
    alone = model_styles(["glove-6b-50d", "random:minilm@0"], twin_base)
    assert (
        alone["random:minilm@0"]["color"] != alone["glove-6b-50d"]["color"]
        and alone["random:minilm@0"]["dash"] == "dot"
    )


def test_static_models_run_across_the_layers_instead_of_piling_at_layer_0(committed) -> None:
    fig = probe_view(committed, get_probe("pos"), "conll2000-test", "accuracy", twin_of=twin_base)["layer_figure"]
    traces = _traces(fig)
    static = traces["glove-6b-50d (one layer)"]
    assert list(static.x) == [-0.25, 6.25] and static.y[0] == static.y[1]  # MiniLM's 7 layers set the span
    interval = [t for t in fig.data if t.legendgroup == "glove-6b-50d" and t.showlegend is False]
    assert interval and list(interval[0].x) == [0] and interval[0].error_y.array is not None  # its interval, at 0
    assert list(traces["minilm"].x) == list(range(7))


def test_titles_leave_the_toolbar_room_and_legends_sit_under_the_plot(committed) -> None:
    view = probe_view(committed, get_probe("wsd"), "ALL", "F1", twin_of=twin_base)
    fig = view["layer_figure"]
    head, second = fig.layout.title.text.split("<br>")
    assert len(head) <= TITLE_LINE and "95% CI over 26 documents" in second and fig.layout.margin.t >= 80
    legend = fig.layout.legend  # in rows at the figure's foot, below the axis title: every entry visible
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    assert {"WordNet 1st sense (baseline)", "MFS in SemCor (baseline)"} <= set(_traces(fig))


def test_legends_wrap_to_the_charts_width_and_the_figure_budgets_a_laptops_rows(committed) -> None:
    """At 1024 px the legend's entries had a fixed share of the width (a third, a half) and ran into each other;
    now plotly wraps them (no entry width set) and the figure is taller by the rows a 1280-px window needs."""
    fig = probe_view(committed, get_probe("wsd"), "ALL", "F1", twin_of=twin_base)["layer_figure"]
    legend = fig.layout.legend
    assert legend.entrywidth is None and legend.entrywidthmode is None and legend.maxheight == 1  # wraps, no scroll
    names = [(t.name, t.legendgroup) for t in fig.data if t.name and t.showlegend is not False]
    # the widest label is "WordNet 1st sense (baseline)": 36 + 6 * 28 = 204 px, so 3 a row in 744 px, 1 in 200;
    # the two baselines are one legend group (one column), the last of 12 groups
    assert legend_rows(names, LAPTOP_PLOT_PX[False]) == 5 and legend_rows(names, 200) == len(names) == 13
    assert fig.layout.height == 440 + LEGEND_ROW_PX * 5  # layer_probe_figure's plot height and the rows
    # a legend group's entries stack in one column: two groups of two a row are two rows
    assert legend_rows([("a — task", "a"), ("a — control", "a"), ("b — task", "b"), ("b — control", "b")], 740) == 2


def _title_lines(title: str) -> tuple[list[str], list[str]]:
    lines = title.split("<br>")
    return [x for x in lines if not x.startswith("<sup>")], [x[5:-6] for x in lines if x.startswith("<sup>")]


def test_half_width_titles_wrap_to_a_projectors_width(committed) -> None:
    """Beside another chart in a 1024-px window a chart is ~274 px wide: each line of its title fits it (the
    control/MDL panels' and the layer profile's titles ran past the chart's edge)."""
    long = (
        "online codelength: task vs control on conll2000-train — 95% CI over 3 data orders (few: interval approximate)"
    )
    heads, subs = _title_lines(chart_layout(go.Figure(), long, 380, half=True).layout.title.text)
    assert len(heads) == 2 and len(subs) == 2 and " ".join(heads + subs) == long.replace(" — ", " ")
    assert heads == ["online codelength: task vs", "control on conll2000-train"]  # even lines, the name whole
    assert balanced_wrap("lower = more context-specific; 95% CI over 1000 words", 48)[-1] != "words"
    panels = [fig for fig, _ in rigor_view(committed, "pos", twin_base)["panels"]]
    prof = layer_profile(committed, "pos", "conll2000-test", "accuracy")
    long_profile = "Self-similarity, adjusted for anisotropy (lower = more context-specific)"  # the longest one
    profile = profile_figure(prof, title=long_profile, y_title="accuracy", twin_of=twin_base)
    assert len(panels) == 2
    # the control task's intervals average 5 label draws, the contextual models' rows 3 seeds (the static ones one):
    # its subtitle says so, as claims.csv does, and that 3 seeds are few, as pos.csv does ("3 seeds (few)")
    subtitle = " ".join(_title_lines(panels[0].layout.title.text)[1])
    assert subtitle == "95% CI over 2012 sentences, 5 control draws, 1–3 seeds (few)", subtitle
    for fig in [*panels, profile]:
        heads, subs = _title_lines(fig.layout.title.text)
        assert subs and max(map(len, heads)) <= HALF_TITLE_CHARS[0] and max(map(len, subs)) <= HALF_TITLE_CHARS[1]


def test_the_reproduce_charts_headlines_stay_left_of_the_toolbar() -> None:
    """Side by side, each half-width chart has plotly's whole toolbar at its top right: the 53-character
    "WSD F1 on ALL without SE07 (SE2 + …)" ran under it (the README screenshot); the parenthesis now goes below."""
    comp = comparison_frame(load_tables(RUNS))
    for task, part in comp.groupby("task", sort=False):
        fig = comparison_figure(part, task)
        head, second = fig.layout.title.text.split("<br>")
        assert len(head) <= 30 and second.startswith("<sup>(") and fig.layout.margin.t >= 70, task


def test_the_lambda_chart_draws_no_empty_baseline_category(committed) -> None:
    fig = probe_view(committed, get_probe("mix"), "conll2000-test:pos", "accuracy", twin_of=twin_base)["rows_figure"]
    baseline = next(t for t in fig.data if t.name.endswith("(baseline)"))
    assert list(baseline.x) == ["last", "all λ=1", "all λ=0.001"]
    assert list(fig.layout.xaxis.categoryarray) == ["last", "all λ=1", "all λ=0.001"]


def test_sense_legends_are_whole() -> None:
    gloss = "bank%1:17:01:: — sloping land (especially the slope beside a body of water) where fishermen stand"
    fig = occurrence_scatter(np.array([[0.0, 0.0], [1.0, 1.0]]), [gloss, "other"], ["a", "b"])
    name = fig.data[0].name
    assert "…" not in name and name.replace("<br>", " ") == gloss.replace("&", "&amp;")


def test_the_saved_results_count_models_apart_from_baselines_and_random_controls(committed) -> None:
    """The random-weight twins were counted as models ("11 models and 3 baselines"), where the Reproduce page calls
    them controls, not models (an audit of the app's numbers, round twelve)."""
    at = open_page("probes")
    assert_ok(at)
    counted = re.search(r"(\d+) models, (\d+) random-weight controls and (\d+) baselines", texts(at.caption))
    # a baseline has no layers of its own: GloVe is the λ ablation's input and a model on POS and WSD
    layered = set(committed[committed.layer.str.isdigit()].model)
    controls = {m for m in layered if m.startswith("random:")}
    baselines = set(committed.model) - layered
    assert "glove-6b-50d" in layered and baselines == {"majority-tag", "wordnet-1st-sense", "semcor-mfs"}
    assert controls and counted
    assert tuple(map(int, counted.groups())) == (len(layered - controls), len(controls), len(baselines))


def test_tables_and_csvs_keep_whole_glosses_and_sentences() -> None:
    """Issue 30 (exports): sense labels were cut at 55 characters and contexts at 140 ("…") in tables and CSVs."""
    import numpy as np

    from viz.polysemy import Occurrence, neighbour_table
    from viz.senses import sense_info

    label = sense_info("bank%1:17:01::").label
    assert label == "bank.n.01 · sloping land (especially the slope beside a body of water)"
    words = tuple(f"w{i}" for i in range(40)) + ("bank",) + tuple(f"v{i}" for i in range(40))
    occs = [Occurrence(words, 40, 41, keys=("bank%1:17:01::",), source=f"doc s{i}") for i in range(3)]
    table = neighbour_table(np.eye(3, 4, dtype=np.float32) + 0.1, occs, 0, 2, lambda key: sense_info(key).label)
    assert set(table.sense) == {label} and set(table.source) == {"doc s1", "doc s2"}
    assert all(c == " ".join(words[:40]) + " [bank] " + " ".join(words[41:]) for c in table.context)


def test_panel_titles_of_a_chart_without_a_title_stay_below_the_toolbar() -> None:
    """Embedding space's corpus hits: two panels ("sense", "POS") and no title; the panel titles sat in the
    toolbar's row, the right one under its buttons."""
    import pandas as pd

    from viz.occurrence_figures import hit_histograms
    from viz.titles import PANEL_TITLE_GAP_PX, SUB_LINE_PX, TOOLBAR_PX, title_below_toolbar

    df = pd.DataFrame({"sense": ["bank%1:14:00::", "bank%1:17:01::"], "POS": ["NOUN", "NOUN"]})
    fig = title_below_toolbar(hit_histograms(df))
    assert not fig.layout.title.text and [a.text for a in fig.layout.annotations] == ["sense", "POS"]
    assert fig.layout.margin.t >= TOOLBAR_PX + SUB_LINE_PX + PANEL_TITLE_GAP_PX


def test_a_charts_csv_keeps_layer_numbers_and_counts_whole(committed) -> None:
    """The Probes chart's CSV wrote layers 0.0, 1.0, … (the baselines' missing layer made the column float)."""
    from viz.export import with_baselines

    view = probe_view(committed, get_probe("pos"), "conll2000-test", "accuracy")
    header, *lines = with_baselines(view["curves"], view["base"]).to_csv(index=False).splitlines()
    rows = [dict(zip(header.split(","), line.split(","))) for line in lines]
    assert {r["layer"] for r in rows if r["layer"]} == {str(k) for k in range(7)}
    assert all(r["clusters"] in ("", "2012") and "." not in r["n"] for r in rows)
    assert {r["seeds"] for r in rows} == {"", "3"}  # counts whole, as the seeds column is (not "3.0")
    assert [r["baseline"] for r in rows if not r["layer"]] == ["majority tag per word"]


def test_a_model_looks_the_same_on_every_chart_whichever_models_share_it() -> None:
    """Colours went in each chart's own order: minilm green on one Layer profile chart and yellow beside it,
    gpt-small pink on Probes' WSD and blue on Tag. A model's slot (colour and marker) is now its place in the
    registry's order, with a marker per slot for readers who cannot tell two hues apart."""
    order = ("glove-6b-50d", "word2vec-sg", "minilm", "gpt-small")
    one = model_styles(["minilm", "gpt-small"], twin_base, order)
    two = model_styles(["gpt-small", "word2vec-sg", "random:minilm@0"], twin_base, order)
    assert one["gpt-small"] == two["gpt-small"]
    assert {k: v for k, v in two["random:minilm@0"].items() if k != "dash"} == {
        k: v for k, v in one["minilm"].items() if k != "dash"
    }
    assert two["random:minilm@0"]["dash"] == "dot"  # its trained model's colour and symbol, even when it is absent
    every = model_styles(list(order), twin_base, order)
    assert len({s["color"] for s in every.values()}) == len({s["symbol"] for s in every.values()}) == len(order)
    mine = model_styles(["my-model", "minilm"], twin_base, order)  # not registered: a slot no ordered model holds
    assert mine["my-model"]["color"] not in {s["color"] for s in every.values()}


def test_the_apps_charts_draw_a_model_in_one_colour_and_symbol() -> None:
    """The Probes page's WSD chart and the Layer profile chart, whose model sets differ, agree on each model's
    look (colour and marker symbol)."""

    def looks(page: str) -> dict[str, tuple]:
        at = open_page(page)
        out = {}
        for fig in figures(at):
            for t in fig["data"]:
                marker = t.get("marker") or {}
                if t.get("name") and t.get("mode") == "lines+markers" and "(baseline)" not in t["name"]:
                    colour = (t.get("line") or {}).get("color") or marker.get("color")
                    look = (colour, marker.get("symbol", "circle"))  # plotly's default symbol
                    out.setdefault(t["name"].removesuffix(" (one layer)"), set()).add(look)
        return out

    probes, profile = looks("probes"), looks("layer_profile")
    shared = set(probes) & set(profile)
    assert {"minilm", "gpt-small"} <= shared
    for model in shared:
        assert len(probes[model]) == 1 and probes[model] == profile[model], model


def test_bar_labels_give_each_value_as_its_source_does_and_a_line_joins_only_layers_run() -> None:
    """Our values, stored to two decimals, were labelled to one: 61.25 (61.252 in the kept outcomes) read "61.2", a
    second rounding. A model run at layers 0 and 3 only was one line across layers 1 and 2, as if it had values
    there (an audit of the app's numbers, round twelve). Today's two-decimal label: gpt-small's POS layer 0, 82.37."""
    from viz.probe_figures import layer_probe_figure

    comp = comparison_frame(load_tables(RUNS), load_results(RUNS), twin_of=twin_base)
    labelled = 0
    for task in ("WSD", "POS"):
        for trace in comparison_figure(comp[comp["task"].str.startswith(task)], task).data:
            labelled += len(trace.x)
            digits = 1 if trace.name.startswith("paper") else 2
            assert list(trace.text) == [f"{x:.{digits}f}" for x in trace.x], trace.name
    assert labelled > 20 and "82.37" in {
        t for tr in comparison_figure(comp[comp.task.str.startswith("POS")], "POS").data for t in tr.text
    }
    curves = pd.DataFrame(
        [{"model": "a", "layer": str(k), "value": 50.0 + k} for k in range(7)]
        + [{"model": "random:a@0", "layer": str(k), "value": 40.0} for k in (0, 3)]
    )
    fig = layer_probe_figure(curves, title="UUAS")
    full, gapped = fig.data[0], fig.data[1]
    assert full.mode == "lines+markers" and gapped.mode == "markers" and "layers 0, 3 run" in gapped.name
