"""Layer profile: where in each model a probe's information sits, compared across models of any depth."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app_pages.common import get_embedder, model_names, page, page_header, preferred, safe, wait_warmup
from corpora.paths import REPO_ROOT
from models.random_init import is_random, random_name
from models.registry import get_spec
from probes.registry import RunContext
from probes.results import load_extras
from probes.stats.profiles import centres_of_gravity, expected_layers, layer_profile
from probes.tasks.cka import MAX_VECTORS, PROBE as CKA
from probes.tasks.contextuality import TITLES as CONTEXTUALITY_TITLES
from viz.profile import (
    CONTEXTUALITY,
    choice_label,
    cka_heatmap,
    contextuality_metrics,
    profile_choices,
    profile_figure,
    summary_frame,
)
from viz.results import dirs_with_results, label_dir, load_dir, result_dirs

INTRO = """
Per-layer probe scores against **relative depth** (layer / top layer: 0 is the context-independent
layer 0, 1 the top layer), so a 2-layer ELMo and a 6-layer MiniLM share one axis. Beside them: the
**centre of gravity** of score gains and the **expected layer** of the learned scalar-mix weights
(Tenney et al. 2019), the **contextuality** of each layer (Ethayarajh 2019), and **linear CKA**
(Kornblith et al. 2019) between layers, within a model and across two. Random-weight models
(`random:NAME@SEED`, dashed) show what the architecture gives before training.
"""
CONTEXTUALITY_DIR = REPO_ROOT / "docs" / "results" / "contextuality" / "runs"


@st.cache_data(ttl=30, show_spinner=False)
def cached_results(directory: str):
    return load_dir(Path(directory)), load_extras(Path(directory), "mix")


@st.cache_data(show_spinner=False, max_entries=16)
def cached_cka(a: str, fp_a: str, b: str, fp_b: str, n: int) -> dict:
    """The ``cka`` probe's ``extra`` on SemCor's first ``n`` sentences: A's layer × layer matrix and labels,
    and (``extra["against"]``) A's layers × B's when B is another model."""
    res = CKA.run(
        get_embedder(a), None, RunContext(limit=n, show_progress=False), against=get_embedder(b) if b != a else None
    )
    return res.extra


def profile_section(df, extras) -> None:
    choices = profile_choices(df)
    if not choices:
        st.info("No per-layer probe results in this folder. Run e.g. `python -m probes pos --model minilm`.")
        return
    choice = st.selectbox("Measure", choices, format_func=choice_label, key="lp_measure")
    probe, dataset, metric = choice
    present = list(
        dict.fromkeys(df.loc[(df.probe == probe) & (df.dataset == dataset) & (df.metric == metric), "model"])
    )
    models = st.multiselect("Models", present, default=present, key="lp_models")
    prof = layer_profile(df, probe, dataset, metric, models)
    if prof.empty:
        st.info("Pick at least one model with per-layer results.")
        return
    st.plotly_chart(
        profile_figure(prof, title=choice_label(choice), y_title=metric, dashed=is_random),
        width="stretch",
        key="lp_profile_chart",
    )
    small = sorted({m for m, n in zip(prof["model"], prof["n"]) if n == n and n < 200})
    if small:
        st.caption(f"Small samples (under 200 test instances): {', '.join(small)} — differences may be noise.")
    summary = summary_frame(centres_of_gravity(prof), expected_layers(extras) if extras else None)
    layered = summary[summary["model"].isin(models) & (summary["top layer"] > 0)]  # a static model has no depth
    st.dataframe(layered, hide_index=True, width="stretch")
    st.caption(
        "Centre of gravity: Σℓ·Δ(ℓ)/ΣΔ(ℓ) over the gains Δ of the best score among layers 0…ℓ (Tenney et al. "
        "2019 use a cumulative scalar mix); empty when no layer beats layer 0. Expected layer: Σℓ·s(ℓ) of "
        "the λ=0.001 scalar mix learned by the mix probe (where it ran)."
    )


def contextuality_section(df) -> None:
    metrics = contextuality_metrics(df)
    if not metrics:
        st.info(
            "No contextuality results here. Run `python -m probes contextuality --model minilm` "
            "(results go to the cache's results folder) or pick docs/results/contextuality/runs."
        )
        return
    metric = st.selectbox("Measure", metrics, format_func=lambda m: CONTEXTUALITY_TITLES.get(m, m), key="lp_ctx_metric")
    sel = df[(df.probe == CONTEXTUALITY) & (df.metric == metric)]
    dataset = st.selectbox("Corpus", sorted(set(sel["dataset"])), key="lp_ctx_dataset")
    prof = layer_profile(df, CONTEXTUALITY, dataset, metric)
    st.plotly_chart(
        profile_figure(prof, title=CONTEXTUALITY_TITLES.get(metric, metric), y_title=metric, dashed=is_random),
        width="stretch",
        key="lp_ctx_chart",
    )
    st.caption(
        "Self-similarity: mean cosine of a word's vectors across its sentences; adjusted = minus the mean "
        "cosine of random occurrence pairs at that layer (anisotropy). A static model's self-similarity is 1."
    )


def cka_section() -> None:
    names = model_names()
    names += [random_name(n) for n in list(names) if get_spec(n).reinitialisable]
    if not names:
        st.info("No model is available yet. See the Models page.")
        return
    c1, c2, c3 = st.columns([2, 2, 1])
    a = c1.selectbox("Model A", names, index=names.index("elmo-small") if "elmo-small" in names else 0, key="lp_cka_a")
    b = c2.selectbox("Model B", names, index=names.index(preferred(names)), key="lp_cka_b")
    n = c3.number_input("SemCor sentences", min_value=5, max_value=300, value=40, step=5, key="lp_cka_n")
    if not st.button("Compute CKA", key="lp_cka_go", type="primary"):
        st.caption(
            f"Embeds SemCor's first sentences with both models (at most {MAX_VECTORS:,} words) and compares "
            f"every layer: the `cka` probe (`python -m probes cka --model {a} --against {b} --limit {int(n)}`)."
        )
        return
    wait_warmup()
    with st.spinner("Embedding and comparing layers…"):
        fa, fb = get_embedder(a).fingerprint(), get_embedder(b).fingerprint()
        first = cached_cka(a, fa, b, fb, int(n))  # A's matrix, and A × B when B is another model
        second = cached_cka(b, fb, b, fb, int(n)) if b != a else None
    la = first["layers"]
    cols = st.columns(2 if second is None else 3)
    cols[0].plotly_chart(
        cka_heatmap(first["matrix"], la, la, title=f"{a}: layer × layer"), width="stretch", key="lp_cka_within_a"
    )
    if second is not None:
        lb = second["layers"]
        cols[1].plotly_chart(
            cka_heatmap(second["matrix"], lb, lb, title=f"{b}: layer × layer"), width="stretch", key="lp_cka_within_b"
        )
        cols[2].plotly_chart(
            cka_heatmap(
                first["against"]["matrix"], la, lb, title=f"{a} × {b}", row_title=f"{a} layer", col_title=f"{b} layer"
            ),
            width="stretch",
            key="lp_cka_across",
        )


@page
def main() -> None:
    page_header("Layer profile", INTRO)
    dirs = dirs_with_results(result_dirs() + (CONTEXTUALITY_DIR,))
    st.subheader("Probe scores by relative depth")
    df = extras = None
    if not dirs:
        st.info("No probe results yet. Run `python -m probes reproduce --models minilm,elmo-small --out results/`.")
    else:
        directory = st.selectbox(
            "Results from", [str(d) for d in dirs], format_func=lambda d: label_dir(Path(d)), key="lp_dir"
        )
        with safe("read the results"):
            df, extras = cached_results(directory)
        if df is not None:
            with safe("draw the layer profile"):
                profile_section(df, extras)
    st.subheader("Contextuality (Ethayarajh 2019)")
    if df is not None:
        with safe("draw the contextuality curves"):
            contextuality_section(df)
    st.subheader("Linear CKA between layers")
    with safe("compute CKA"):
        cka_section()


main()
