"""Probes page: saved layer-by-layer results compared across models, and quick probe runs."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app_pages.common import get_embedder, log, model_select, page, page_header, safe, wait_warmup
from viz.figures import grouped_bars, layer_curves
from viz.results import (
    BASELINE_MODELS, WSD_SETS, baselines, best_layer, dirs_with_results, label_dir, layer_curves_frame, load_dir,
    pos_breakdown, rows_to_frame, wide_table,
)

INTRO = """
**Probing** asks what a frozen representation already knows, with a deliberately weak model on
top (Peters et al. 2018, §5.3). **WSD**: each SemCor sense is the mean vector of its tagged
tokens; a test word takes the nearest sense (1-nearest-neighbour) — fine-grained *semantics*.
**POS**: a linear classifier on one layer's vectors — *syntax*. The paper found syntax peaks in
ELMo's first layer and word sense in the second. **λ ablation**: a task model learns the scalar
mix of all layers with an L2 penalty λ on the mix weights.
"""

PROBES = {"wsd": "WSD — 1-NN word senses (SemCor → Senseval/SemEval)",
          "pos": "POS — linear probe (CoNLL-2000)",
          "mix": "λ ablation — learned scalar mix (CoNLL-2000 POS + chunking)"}
METRIC = {"wsd": ("F1", "F1 (%)"), "pos": ("accuracy", "accuracy (%)")}
DEFAULT_LIMIT = 20


@st.cache_data(ttl=30, show_spinner=False)
def saved_results(directory: str) -> pd.DataFrame:
    return load_dir(Path(directory))


@st.cache_resource
def _quick_runs() -> tuple[dict, threading.Lock]:
    """Quick-run results shared by every session of this server: key -> result dict."""
    return {}, threading.Lock()


def styled(table: pd.DataFrame) -> pd.DataFrame:
    """Two decimals, and a dash where a model has no such layer (st.dataframe shows nulls as "None")."""
    return table.map(lambda v: "—" if pd.isna(v) else f"{v:.2f}" if isinstance(v, float) else str(v))


def layer_figure(curves: pd.DataFrame, base: dict[str, float], y_title: str, title: str) -> go.Figure:
    fig = layer_curves(curves, y="value", color="model", y_title=y_title, title=title)
    values = list(curves["value"]) + list(base.values())
    pad = max(1.0, 0.08 * (max(values) - min(values)))
    fig.update_yaxes(range=[min(values) - pad, max(values) + pad])   # baselines stay inside the plot
    for label, value in base.items():
        fig.add_hline(y=value, line_dash="dash", line_color="#555", opacity=0.7,
                      annotation_text=f"{label}: {value:.1f}", annotation_position="bottom right")
    return fig


def wsd_section(df: pd.DataFrame, key: str) -> None:
    dataset = st.selectbox("Evaluation set", [d for d in WSD_SETS if (df["dataset"] == d).any()] or ["ALL"],
                           key=f"{key}_wsd_set")
    curves = layer_curves_frame(df, "wsd", dataset, "F1")
    if curves.empty:
        st.info("No WSD results for this set yet.")
        return
    st.plotly_chart(layer_figure(curves, baselines(df, "wsd", dataset, "F1"), "F1 (%)",
                                 f"1-NN WSD F1 on {dataset}, by layer"), width="stretch", key=f"{key}_wsd_plot")
    st.dataframe(styled(wide_table(df, "wsd", dataset, "F1")), width="stretch")
    models = [m for m in curves["model"].unique()]
    layer_of = {m: best_layer(df, m, "wsd", "ALL", "F1") for m in models}
    layer_of.update({m: "first-sense" for m in BASELINE_MODELS})
    breakdown = pos_breakdown(df, models + ["wordnet-1st-sense"], layer_of)
    if not breakdown.empty:
        st.markdown("**By part of speech** (ALL, each model at its best layer on ALL)")
        st.plotly_chart(grouped_bars(breakdown, x="POS", y="F1", color="model", y_title="F1 (%)", height=360),
                        width="stretch", key=f"{key}_wsd_pos_plot")


def pos_section(df: pd.DataFrame, key: str) -> None:
    curves = layer_curves_frame(df, "pos", "conll2000-test", "accuracy")
    if curves.empty:
        st.info("No POS probe results yet.")
        return
    st.plotly_chart(layer_figure(curves, baselines(df, "pos", "conll2000-test", "accuracy"), "accuracy (%)",
                                 "Linear POS probe accuracy on CoNLL-2000 test (WSJ 20), by layer"),
                    width="stretch", key=f"{key}_pos_plot")
    st.dataframe(styled(wide_table(df, "pos", "conll2000-test", "accuracy")), width="stretch")


def mix_section(df: pd.DataFrame, key: str) -> None:
    sel = df[df["probe"] == "mix"]
    if sel.empty:
        st.info("No λ-ablation results yet.")
        return
    from probes.mix import ROWS

    st.caption("Rows of the paper's Table 2: baseline = static GloVe input only; last = + the model's top layer; "
               "all = + a learned scalar mix of all layers, with weight penalty λ.")
    for (dataset, metric), _ in sel.groupby(["dataset", "metric"], sort=True):
        st.markdown(f"**{dataset.replace('conll2000-test:', 'CoNLL-2000 test, ')} — {metric}**")
        table = wide_table(df, "mix", dataset, metric)
        table = table[[c for c in ROWS if c in table.columns] + [c for c in table.columns if c not in ROWS]]
        st.dataframe(styled(table), width="stretch")


def saved_tab() -> None:
    dirs = dirs_with_results()
    if not dirs:
        st.info("No saved probe results yet. Run `python -m probes reproduce --models glove-6b-50d,minilm "
                "--out results/` (see docs/results/), or run a quick probe in the next tab.")
        return
    directory = st.selectbox("Results from", [str(d) for d in dirs], format_func=lambda d: label_dir(Path(d)),
                             key="probe_results_dir",
                             help="docs/results/runs: the committed full runs; results/runs: a local reproduce "
                                  "run; cache/results: single command-line runs (possibly with --limit).")
    df = saved_results(directory)
    if df.empty:
        st.info("No readable results in this directory.")
        return
    st.caption(f"{df['model'].nunique()} models · newest {str(df['timestamp'].max())[:16].replace('T', ' ')} UTC")
    t1, t2, t3 = st.tabs(["WSD", "POS", "λ ablation"])
    with t1:
        wsd_section(df, "saved")
    with t2:
        pos_section(df, "saved")
    with t3:
        mix_section(df, "saved")
    with st.expander("Commands that produced these results"):
        cmds = sorted({c for c in df["command"].dropna().unique() if c})
        st.code("\n".join(cmds) or "(not recorded)", language="bash")


def run_probe(probe: str, model: str, limit: int, progress) -> dict:
    """Run one probe (and its no-embedding baseline) on a small slice; returns a result dict."""
    emb = get_embedder(model)
    wait_warmup()
    if probe == "wsd":
        from probes.wsd import run_first_sense, run_wsd

        res = run_wsd(emb, limit=limit, progress=progress, show_progress=False)
        base = run_first_sense(limit=limit)
    elif probe == "pos":
        from probes.pos import run_pos, run_pos_baseline

        res = run_pos(emb, limit=limit, progress=progress, show_progress=False)
        base = run_pos_baseline(limit=limit)
    else:
        from probes.mix import run_mix

        res = run_mix(emb, limit=limit, progress=progress, show_progress=False)
        base = None
    res = dict(res)
    res["rows"] = list(res["rows"]) + (list(base["rows"]) if base else [])
    res.setdefault("timestamp", time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()))
    return res


def quick_tab() -> None:
    st.caption("Runs a probe on the first N sentences of each dataset (like `--limit N` on the command line), "
               "so it finishes in seconds to a minute on a laptop CPU. Scores on such small slices are noisy: "
               "use them to compare layers, not as the paper's numbers. Extracted vectors are cached on disk, "
               "so a second run is much faster.")
    c1, c2, c3 = st.columns([2, 2, 1])
    probe = c1.selectbox("Probe", list(PROBES), format_func=PROBES.get, key="probe_kind")
    with c2:
        model = model_select("Model", None, key="probe_model", default="minilm")
    limit = c3.number_input("Sentences (--limit)", min_value=1, max_value=5000, value=DEFAULT_LIMIT, step=10,
                            key="probe_limit", help="Per dataset. 20 ≈ seconds; 500 ≈ minutes; the full "
                                                    "datasets are for the command line.")
    if model is None:
        return
    runs, lock = _quick_runs()
    run_key = (model, probe, int(limit))
    if st.button("Run probe", type="primary", key="probe_run"):
        with safe(f"run the {probe.upper()} probe on {model}"):
            bar = st.progress(0.0, text=f"Starting {probe.upper()} on {model}…")

            def progress(frac: float, msg: str = "") -> None:
                bar.progress(float(min(max(frac, 0.0), 1.0)), text=msg or f"{probe.upper()} on {model}")

            t0 = time.perf_counter()
            res = run_probe(probe, model, int(limit), progress)
            res["wall_s"] = round(time.perf_counter() - t0, 1)
            log.info("quick %s probe on %s (limit %s) took %.1f s", probe, model, limit, res["wall_s"])
            with lock:
                runs[run_key] = res
            bar.empty()
    res = runs.get(run_key)
    if res is None:
        st.info("Choose a probe, a model and a size, then press **Run probe**.")
        return
    st.success(f"{PROBES[probe].split(' —')[0]} on {model}, first {limit} sentences per dataset: "
               f"done in {res.get('wall_s', '?')} s.")
    df = rows_to_frame(res)
    if probe == "wsd":
        wsd_section(df, "quick")
    elif probe == "pos":
        pos_section(df, "quick")
    else:
        mix_section(df, "quick")


@page
def main() -> None:
    page_header("Probes", INTRO)
    saved, quick = st.tabs(["Saved results (layer-probe comparison)", "Run a quick probe"])
    with saved:
        with safe("show the saved results"):
            saved_tab()
    with quick:
        with safe("run the probe"):
            quick_tab()


main()
