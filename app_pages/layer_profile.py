"""Layer profile: where in each model a probe's information sits, compared across models of any depth.

Every chart goes through ``app_pages.common.chart`` (the sidebar's SVG/PNG download, a CSV of its data)
and every choice lives in the URL (``app_pages.state``): results folders ``dir`` / ``ctx_dir``, ``measure``,
``models``, ``ctx_measure``, ``ctx_corpus``, ``cka_a``, ``cka_b``, ``cka_n``. The probe profile and the
contextuality curves stand side by side, each read from its own results folder; a probe's baseline
results (majority tag, first sense …: ``ProbeSpec.baseline_models``) are named in a caption, never
offered as models.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import (
    chart,
    folder_select,
    md,
    model_names,
    model_order,
    page,
    page_header,
    preferred,
    safe,
    wrapping_row,
)
from app_pages.loaders import get_embedder
from app_pages.warmup import wait_warmup
from models.random_init import random_name, twin_base
from models.registry import get_spec
from probes.registry import ChartSpec, all_probes, get_probe
from probes.reporting.schedule_notes import schedule_note
from probes.results import load_extras
from probes.run import run_probe
from probes.stats.profiles import LOWER_IS_BETTER, centres_of_gravity, expected_layers, layer_profile
from probes.tasks.cka import MAX_VECTORS, PROBE as CKA
from probes.tasks.contextuality import TITLES as CONTEXTUALITY_TITLES
from viz.export import file_stem, frame_csv, with_baselines
from viz.profile import (
    CONTEXTUALITY,
    choice_label,
    cka_heatmap,
    contextuality_metrics,
    profile_choices,
    profile_figure,
    summary_frame,
)
from viz.results import CONTEXTUALITY_RUNS, baseline_frame, dirs_with_results, folder_version, load_dir, result_dirs

INTRO = """
Per-layer probe scores against **relative depth** (layer / top layer: 0 is the input layer, which no
other word shapes, 1 the top layer), so a 2-layer ELMo and a 6-layer MiniLM share one axis. Beside them: the
**centre of gravity** of score gains and the **expected layer** of the learned scalar-mix weights
(Tenney et al. 2019), the **contextuality** of each layer (Ethayarajh 2019), and **linear CKA**
(Kornblith et al. 2019) between layers, within a model and across two. Random-weight models
(`random:NAME@SEED`, dashed) show what the architecture gives before training.
"""


@st.cache_data(show_spinner=False, max_entries=8)
def _cached_results(directory: str, version: tuple):
    return load_dir(Path(directory)), load_extras(Path(directory), "mix")


def cached_results(directory: str):
    """The folder's rows and λ extras, read again only when its files change (``viz.results.folder_version``)."""
    return _cached_results(directory, folder_version(directory))


@st.cache_data(show_spinner=False, max_entries=16)
def cached_cka(a: str, fp_a: str, b: str, fp_b: str, n: int) -> dict:
    """The ``cka`` probe's ``extra`` on SemCor's first ``n`` sentences: A's layer × layer matrix and labels,
    and (``extra["against"]``) A's layers × B's when B is another model."""
    against = {"against": get_embedder(b)} if b != a else {}
    return run_probe(CKA, get_embedder(a), limit=n, options=against, baselines=False, show_progress=False).result.extra


def profile_section(dirs: list[Path]) -> pd.DataFrame | None:
    """The chosen probe measure by relative depth; returns the centre-of-gravity summary of the chosen models."""
    if not dirs:
        st.info("No probe results yet. Run `python -m probes reproduce --models minilm,elmo-small --out results/`.")
        return None
    df, extras = cached_results(folder_select("Results from", dirs, "lp_dir", "dir"))
    by_label = {choice_label(c): c for c in profile_choices(df)}
    if not by_label:
        st.info("No per-layer probe results in this folder. Run e.g. `python -m probes pos --model minilm`.")
        return None
    labels = list(by_label)
    probe, dataset, metric = by_label[
        st.selectbox("Measure", labels, key=state.bind("lp_measure", labels[0], labels, param="measure"))
    ]
    spec = next((s for s in all_probes() if s.name == probe), None)
    rows = df.loc[(df.probe == probe) & (df.dataset == dataset) & (df.metric == metric), "model"]
    present = [m for m in dict.fromkeys(rows) if spec is None or m not in spec.baseline_models]
    models = st.multiselect("Models", present, key=state.bind("lp_models", present, present, param="models"))
    prof = layer_profile(df, probe, dataset, metric, models)
    if partial := prof.attrs.get("partial"):
        st.caption(
            "Left out, their depth unknown (measured at some layers only, with a gap): "
            + "; ".join(f"{m} (layers {', '.join(map(str, ls))})" for m, ls in partial.items())
        )
    if prof.empty:
        st.info("Pick at least one model with per-layer results.")
        return None
    title = choice_label((probe, dataset, metric))
    base = baseline_frame(df, spec, dataset, metric) if spec is not None else None
    chart_spec = spec.chart if spec is not None else ChartSpec(metrics=())  # a probe no longer registered: defaults
    fig = profile_figure(
        prof,
        title=title,
        y_title=chart_spec.axis_title(metric) or metric,
        base=base,
        y_range=chart_spec.y_range,
        twin_of=twin_base,
        model_order=model_order(df["model"]),
        metric=metric,
        small_n=chart_spec.small_n,
    )
    stem = file_stem("layer-profile", probe, dataset, metric)
    chart(fig, stem, key="lp_profile_chart", data=frame_csv(with_baselines(prof, base)))  # the baselines' rows too
    if base is not None and not base.empty:
        st.caption(
            "Baselines (drawn as dashed lines): "
            + "; ".join(f"{r.label} {r.value:.2f}" for r in base.itertuples() if pd.notna(r.value))
        )
    drawn = df[(df.probe == probe) & (df.dataset == dataset) & (df.metric == metric) & df.model.isin(prof["model"])]
    drawn = drawn[drawn.layer.str.isdigit()]  # the profile's numbered layers
    if note := schedule_note(drawn):
        st.caption(f"⚠️ {note}")
    small = sorted({m for m, n in zip(prof["model"], prof["n"]) if n == n and n < chart_spec.small_n})
    if small:
        st.caption(
            f"Small samples (under {chart_spec.small_n:,} {chart_spec.small_what}, as on the Probes page): "
            f"{', '.join(small)} — "
            "differences may be noise."
        )
    cog = centres_of_gravity(prof, lower_is_better=metric in LOWER_IS_BETTER)
    summary = summary_frame(cog, expected_layers(extras) if extras else None)
    return summary[summary["model"].isin(models) & (summary["top layer"] > 0)]  # a static model has no depth


def contextuality_section(dirs: list[Path]) -> None:
    if not dirs:
        st.info(
            "No contextuality results here. Run `python -m probes contextuality --model minilm` "
            "(results go to the cache's results folder)."
        )
        return
    df, _ = cached_results(folder_select("Contextuality results from", dirs, "lp_ctx_dir", "ctx_dir"))
    metrics = contextuality_metrics(df)
    metric = st.selectbox(
        "Measure",
        metrics,
        format_func=lambda m: CONTEXTUALITY_TITLES.get(m, m),
        key=state.bind("lp_ctx_metric", metrics[0], metrics, param="ctx_measure"),
    )
    corpora = sorted(set(df.loc[(df.probe == CONTEXTUALITY) & (df.metric == metric), "dataset"]))
    dataset = st.selectbox("Corpus", corpora, key=state.bind("lp_ctx_dataset", corpora[0], corpora, param="ctx_corpus"))
    prof = layer_profile(df, CONTEXTUALITY, dataset, metric)
    title = CONTEXTUALITY_TITLES.get(metric, metric)
    chart_spec = get_probe(CONTEXTUALITY).chart
    fig = profile_figure(
        prof,
        title=title,
        y_title=chart_spec.axis_title(metric) or metric,
        y_range=chart_spec.y_range,
        small_n=chart_spec.small_n,
        twin_of=twin_base,
        model_order=model_order(df["model"]),
    )
    chart(fig, file_stem("contextuality", dataset, metric), key="lp_ctx_chart", data=frame_csv(prof))
    st.caption(
        "Self-similarity: mean cosine of a word's vectors across its sentences; adjusted = minus the mean "
        "cosine of random occurrence pairs at that layer (anisotropy). A static model's self-similarity is 1, so "
        "its adjusted value is 1 minus its anisotropy."
    )


def cka_section() -> None:
    names = model_names()
    names += [random_name(n) for n in list(names) if get_spec(n).reinitialisable]
    if not names:
        st.info("No model is available yet. See the Models page.")
        return
    c1, c2, c3 = st.columns([2, 2, 1])
    first = "elmo-small" if "elmo-small" in names else names[0]
    a = c1.selectbox("Model A", names, key=state.bind("lp_cka_a", first, names, param="cka_a"))
    b = c2.selectbox("Model B", names, key=state.bind("lp_cka_b", preferred(names), names, param="cka_b"))
    n = c3.number_input(
        "SemCor sentences",
        min_value=5,
        max_value=300,
        step=5,
        key=state.bind("lp_cka_n", 40, lo=5, hi=300, param="cka_n"),
    )
    # shown once asked for, and in the URL: a link (or any later choice) keeps the heatmaps, which vanished with the
    # button's one run
    shown = state.bind("lp_cka_shown", False, param="cka")
    st.button("Compute CKA", key="lp_cka_go", type="primary", on_click=lambda: st.session_state.update({shown: True}))
    if not st.session_state[shown]:
        st.caption(
            f"Embeds SemCor's first sentences with both models (at most {MAX_VECTORS:,} words) and compares "
            f"every layer: the `cka` probe (`python -m probes cka --model {a} --against {b} --limit {int(n)}`)."
        )
        return
    wait_warmup()
    layered = {m: get_embedder(m).num_layers > 1 for m in (a, b)}  # a one-layer model's CKA with itself is 1
    if a == b and not layered[a]:
        st.info(f"{md(a)} has one layer: its CKA with itself is 1 by definition. Choose another Model B to compare.")
        return
    with st.spinner("Embedding and comparing layers…"):
        fa, fb = get_embedder(a).fingerprint(), get_embedder(b).fingerprint()
        first = cached_cka(a, fa, b, fb, int(n))  # A's matrix, and A × B when B is another model
        second = cached_cka(b, fb, b, fb, int(n)) if b != a and layered[b] else None
    la = first["layers"]
    heatmaps = []  # a one-layer model's own 1 × 1 map would be the 1 it has by definition
    if layered[a]:
        heatmaps.append((a, cka_heatmap(first["matrix"], la, la, title=f"{a}: layer × layer"), "lp_cka_within_a"))
    if second is not None:
        lb = second["layers"]
        heatmaps.append((b, cka_heatmap(second["matrix"], lb, lb, title=f"{b}: layer × layer"), "lp_cka_within_b"))
    if b != a:
        lb = first["against"]["layers"]
        heatmaps += [
            (
                f"{a}-x-{b}",
                cka_heatmap(
                    first["against"]["matrix"],
                    la,
                    lb,
                    title=f"{a} × {b}",
                    row_title=f"{a} layer",
                    col_title=f"{b} layer",
                ),
                "lp_cka_across",
            )
        ]
    # stacked in a narrow window: at 1024 px a third of the page left the toolbar over the titles, the labels touching
    cols = wrapping_row("lp_cka_maps", len(heatmaps), min_rem=18)
    for col, (what, fig, key) in zip(cols, heatmaps):
        chart(fig, file_stem("cka", what, int(n)), key=key, container=col)


@page
def main() -> None:
    page_header("Layer profile", INTRO, draws=("plotly",))
    st.subheader("Probe scores and contextuality by relative depth")
    # the committed contextuality runs hold no probe's layers: offered beside, first, not in the profile's picker
    dirs, ctx_dirs = [d for d in dirs_with_results(result_dirs()) if d != CONTEXTUALITY_RUNS], []
    with safe("read the contextuality results"):
        ordered = sorted(result_dirs(), key=lambda d: d != CONTEXTUALITY_RUNS)
        ctx_dirs = [d for d in dirs_with_results(tuple(ordered)) if contextuality_metrics(cached_results(str(d))[0])]
    left, right = st.columns(2)
    summary = None  # stays None when the profile section fails
    with left, safe("draw the layer profile"):
        summary = profile_section(dirs)
    with right, safe("draw the contextuality curves"):
        contextuality_section(ctx_dirs)
    if summary is not None:
        st.table(summary, hide_index=True, border="horizontal")
        st.caption(
            "Centre of gravity: Σℓ·Δ(ℓ)/ΣΔ(ℓ) over the gains Δ of the best score among layers 0…ℓ (Tenney et al. "
            "2019 use a cumulative scalar mix; for a codelength the best is the shortest); empty when no layer beats "
            "layer 0. Expected layer: Σℓ·s(ℓ) of "
            "the λ=0.001 scalar mix learned by the mix probe (where it ran; its first seed's weights, so no interval)."
        )
    st.subheader("Linear CKA between layers")
    with safe("compute CKA"):
        cka_section()


main()
