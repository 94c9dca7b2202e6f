"""Probes page: saved layer-by-layer results compared across models, and quick probe runs.

Only the open tab runs and draws (``st.tabs(..., on_change="rerun")``), the saved results' probes
included: each probe's section draws two or three charts, and a new visitor's browser would otherwise
draw every probe's. Its model × layer table opens on demand (an expander that runs only when open): the data
grid cost a new visitor's first paint 0.14–0.24 s at p50 in two A/B runs (issue 30, docs/benchmarks.md) for
the scores the chart and its CSV already give. The open tabs and the pickers live in the URL
(``?tab=…&saved=…&results=…&saved_set=…&saved_metric=…``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import chart, download, folder_select, model_order, page, page_header, safe
from app_pages.probe_quick import quick_tab
from app_pages.probe_rigor import layer_tests_section, rigor_section
from app_pages.probe_upload import upload_tab
from models.random_init import is_random, twin_base
from probes.registry import ProbeSpec, all_probes, get_probe
from probes.results import ProbeResult, read_results
from probes.stats.comparisons import has_outcomes
from viz.export import file_stem, frame_csv, run_record_json, with_baselines
from viz.probe_figures import has_intervals, interval_note, small_sample_note
from viz.probe_views import frame_signature, probe_view
from viz.results import (
    baseline_only,
    breakdown_scored,
    datasets_of,
    dirs_with_results,
    folder_version,
    load_dir,
    metrics_of,
)
from viz.text import counted

INTRO = """
**Probing** asks what a frozen representation already knows, with a deliberately weak model on
top (Peters et al. 2018, §5.3). **WSD**: each SemCor sense is the mean vector of its tagged
tokens; a test word takes the nearest sense (1-nearest-neighbour) — fine-grained *semantics*.
**POS**: a linear classifier on one layer's vectors — *syntax*. The paper found syntax peaks in
ELMo's first layer and word sense in the second. **λ ablation**: a task model learns the scalar
mix of all layers with a penalty λ on the mix weights' spread (on the softmax weights; the paper's is on the raw ones).
"""

TABS = ["Saved results (layer-probe comparison)", "Run a quick probe", "Your data"]


@st.cache_data(show_spinner=False, max_entries=8)
def _saved_results(directory: str, version: tuple) -> pd.DataFrame:
    return load_dir(Path(directory))


def saved_results(directory: str) -> pd.DataFrame:
    """The folder's result rows, read again only when its files change (``viz.results.folder_version``)."""
    return _saved_results(directory, folder_version(directory))


@st.cache_resource(show_spinner=False, max_entries=8)
def _saved_result_objects(directory: str, version: tuple) -> list[ProbeResult]:
    return read_results(Path(directory))


def saved_result_objects(directory: str) -> list[ProbeResult]:
    """The results behind ``saved_results`` (run records, per-instance outcomes for the layer tests): read once
    per version of the folder for every session, not on each rerun; shared, never modified."""
    return _saved_result_objects(directory, folder_version(directory))


@state.fragment
def probe_section(spec: ProbeSpec, df: pd.DataFrame, key: str, records=None, results=None) -> None:
    """One probe's results: a layer-by-layer chart with its baselines as their own series, the
    model × layer table, the per-category breakdown where the probe has one, and (``results``: () -> the
    results behind ``df``) paired tests between adjacent layers. A fragment: its evaluation-set and metric
    pickers rerun only this probe's section, not the page."""
    datasets = datasets_of(df, spec)
    if not datasets:  # no pickers: the URL keeps no other tab's choices
        for name in ("set", "metric", "tests_model"):
            state.forget(f"{key}_{name}")
        st.info(f'No {spec.short_title} results in this folder (another in "Results from" may hold them).')
        return
    c1, c2 = st.columns(2)
    choice = f"{key}_{spec.name}"  # the pickers of each probe's section, in the URL as {key}_set, {key}_metric
    dataset = c1.selectbox(
        "Evaluation set", datasets, key=state.bind(f"{choice}_set", datasets[0], datasets, param=f"{key}_set")
    )
    metrics = metrics_of(df, spec, dataset)
    if not metrics:
        st.info("No results of this probe's metrics on this set.")
        return
    if len(metrics) > 1:
        metric = c2.selectbox(
            "Metric", metrics, key=state.bind(f"{choice}_metric", metrics[0], metrics, param=f"{key}_metric")
        )
    else:
        metric = metrics[0]
        state.forget(f"{key}_metric")
    signature = frame_signature(df)
    view = section_view(signature, spec.name, dataset, metric, df, model_order(df["model"]))
    curves, base = view["curves"], view["base"]
    if view["rows_figure"] is not None:  # named rows (the λ ablation): bars per row, by model
        chart(
            view["rows_figure"],
            file_stem(key, spec.name, dataset, metric),
            key=f"{key}_{spec.name}_rows",
            data=frame_csv(with_baselines(view["rows"], base)),
        )
    if view["layer_figure"] is not None:
        chart(
            view["layer_figure"],
            file_stem(key, spec.name, dataset, metric),
            key=f"{key}_{spec.name}_plot",
            data=frame_csv(with_baselines(curves, base)),
        )
        if records is not None:
            download(
                "Run records (JSON: model fingerprint, seed, layers, data, command)",
                records,
                f"{file_stem(key, spec.name)}-runs.json",
                key=f"{key}_{spec.name}_records",
                mime="application/json",
            )
        if note := small_sample_note(curves, spec.chart.small_n):
            over = interval_note(curves)  # "95% CI over 3 documents (few: …)": the units the bars resample
            resampled = f", {over.removeprefix('95% CI ')}" if over.startswith("95% CI over ") else ""
            st.caption(
                f"⚠️ {note.capitalize()} {spec.chart.small_what}. "
                + (
                    f"The error bars are bootstrap 95% intervals of each score on its own{resampled}: whether two "
                    "layers differ is the paired tests' question below (overlapping bars can still differ, and with "
                    "few units no test can tell them apart)."
                    if has_intervals(curves)
                    else "These results carry no intervals: treat differences of a few points as noise."
                )
            )
    if view["schedule_note"]:
        st.caption(f"⚠️ {view['schedule_note']}")
    if not view["table"].empty:  # on demand (issue 30): the chart and its CSV hold the same scores
        table = st.expander("Scores by model and layer (table)", key=f"{choice}_table_open", on_change="rerun")
        if table.open:  # a closed box costs a new visitor nothing: no data grid drawn, its code not loaded
            table.dataframe(view["table"], width="stretch")
    if results is not None and not curves.empty and metric == spec.chart.metrics[0]:
        layer_tests_section(spec, dataset, metric, sorted(set(curves["model"])), results, key)
    else:  # the tests read the kept per-instance outcomes, which score the headline metric only
        state.forget(f"{key}_tests_model")
        if results is not None and not curves.empty and has_outcomes(results(), spec.name, dataset):
            st.caption(f"Paired layer tests are on {spec.chart.metrics[0]} (what the kept outcomes score).")
    if not base.empty:
        st.caption(
            "Baselines (drawn as dashed lines): "
            + "; ".join(
                (f"{r.label} {r.value:.2f}" if pd.notna(r.value) else f"{r.label}: missing")
                + (f" [{r.lo:.2f}, {r.hi:.2f}]" if pd.notna(r.lo) and pd.notna(r.hi) else "")
                for r in base.itertuples()
            )
        )
    rigor_section(spec, df, key, signature)
    if view["breakdown_figure"] is not None:
        st.markdown(f"**By {spec.chart.breakdown_label}** ({breakdown_scored(spec, dataset)})")
        if view["breakdown_note"]:
            st.caption(view["breakdown_note"])
        chart(
            view["breakdown_figure"],
            file_stem(key, spec.name, "by", spec.chart.breakdown_label),
            key=f"{key}_{spec.name}_breakdown",
            data=frame_csv(view["breakdown"]),
        )


@st.cache_resource(show_spinner=False, max_entries=128)
def section_view(
    signature: int, probe: str, dataset: str, metric: str, _df: pd.DataFrame, order: tuple[str, ...] = ()
) -> dict:
    """``viz.probe_views.probe_view``, built once per (results snapshot, probe, set, metric, model order) per
    server."""
    return probe_view(_df, get_probe(probe), dataset, metric, twin_of=twin_base, model_order=order)


def saved_tab() -> None:
    dirs = dirs_with_results()
    if not dirs:
        st.info(
            "No saved probe results yet. Run `python -m probes reproduce --models glove-6b-50d,minilm "
            "--out results/` (see docs/results/), or run a quick probe in the next tab."
        )
        return
    directory = folder_select(
        "Results from",
        dirs,
        "probe_results_dir",
        "results",
        help="docs/results/runs: the committed full runs (WSD, POS, λ, control, MDL); docs/results/ud_ewt/runs and "
        "…/structural_runs: the committed UD EWT runs (tag; structural probe, head syntax); results/runs: a local "
        "reproduce run; cache/results (or $EMBPROBE_CACHE/results): single command-line runs (possibly with --limit).",
    )
    df = saved_results(directory)
    if df.empty:
        st.info("No readable results in this directory.")
        return
    specs = all_probes()
    baselines = df["model"].isin(baseline_only(df, specs))
    controls = df["model"].map(is_random).astype(bool)  # random-weight twins: controls, not models (as Reproduce says)
    st.caption(
        f"{counted(df.loc[~baselines & ~controls, 'model'].nunique(), 'model')}, "
        f"{counted(df.loc[controls, 'model'].nunique(), 'random-weight control')} and "
        f"{counted(df.loc[baselines, 'model'].nunique(), 'baseline')} · "
        f"newest {str(df['timestamp'].max())[:16].replace('T', ' ')} UTC"
    )
    names = [spec.short_title for spec in specs]
    tabs = st.tabs(names, key=state.bind("probes_saved", names[0], names, param="saved"), on_change="rerun")
    for spec, tab in zip(specs, tabs):
        if tab.open:
            with tab:
                probe_section(
                    spec,
                    df,
                    "saved",
                    records=lambda d=directory, p=spec.name: run_record_json(
                        [r for r in saved_result_objects(d) if r.probe == p]
                    ),
                    results=lambda d=directory: saved_result_objects(d),
                )
    commands = st.expander("Commands that produced these results", key="probes_commands_open", on_change="rerun")
    if commands.open:
        cmds = sorted({c for c in df["command"].dropna().unique() if c})
        commands.code("\n".join(cmds) or "(not recorded)", language="bash")


@page
def main() -> None:
    page_header("Probes", INTRO, draws=("plotly",))  # tables open on demand
    saved, quick, yours = st.tabs(TABS, key=state.bind("probes_tab", TABS[0], TABS, param="tab"), on_change="rerun")
    if saved.open:
        with saved, safe("show the saved results"):
            saved_tab()
    if quick.open:
        with quick, safe("run the probe"):
            quick_tab(probe_section)
    if yours.open:
        with yours, safe("probe your data"):
            upload_tab(probe_section)


main()
