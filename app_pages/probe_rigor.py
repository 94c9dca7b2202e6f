"""The Probes page's two optional parts of a probe's section (not a page): paired tests between adjacent layers
(on demand, in an expander) and the control task / MDL panels where a run measured them.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import state
from app_pages.common import chart, md, model_order
from models.random_init import twin_base
from probes.registry import ProbeSpec
from probes.reporting.schedule_notes import TRAINED_METRICS, schedule_note
from viz.export import file_stem, frame_csv
from viz.probe_views import RIGOR_PANELS, layer_tests, rigor_view, undecidable_note


def layer_tests_section(spec: ProbeSpec, dataset: str, metric: str, models: list[str], results, key: str) -> None:
    """Each layer of one model against the one before it (paired tests on ``metric``, one Holm family), on demand."""
    box = st.expander(
        f"Does each layer differ from the one before? (paired tests on {metric}, Holm-corrected)",
        key=f"{key}_{spec.name}_tests_open",
        on_change="rerun",
    )
    if not box.open:  # its model is in the URL only while it is shown
        state.forget(f"{key}_tests_model")
        return
    model = box.selectbox(
        "Model", models, key=state.bind(f"{key}_{spec.name}_tests_model", models[0], models, param=f"{key}_tests_model")
    )
    table = layer_tests(results(), spec.name, dataset, model)
    if table is None:
        box.info(
            f"{md(model)} kept no per-instance outcomes for two layers on {md(dataset)} (re-run it to test layers)."
        )
        return
    box.dataframe(table, hide_index=True, width="stretch")
    box.caption(
        "A − B on the same test instances: interval = 95% cluster bootstrap over the unit named, per comparison and "
        "not adjusted for multiplicity; p = cluster sign-flip test, two-sided (with several seeds: seeds resampled "
        "too); the layers of one model are one family of tests, so the decision reads Holm's adjusted p (a row can "
        "read no while its interval excludes 0; docs/statistics.md)."
    )
    if note := undecidable_note(table):
        box.warning(note)


@st.cache_resource(show_spinner=False, max_entries=32)
def cached_rigor_view(signature: int, probe: str, _df: pd.DataFrame, order: tuple[str, ...] = ()) -> dict | None:
    return rigor_view(_df, probe, twin_of=twin_base, model_order=order)


def rigor_section(spec: ProbeSpec, df: pd.DataFrame, key: str, signature: int) -> None:
    """Control task and MDL of a token probe, where a run measured them (``--control``, ``--mdl``):
    task vs control accuracy and codelength per layer, and the selectivity/MDL table."""
    view = cached_rigor_view(signature, spec.name, df, model_order(df["model"]))
    if view is None:
        return
    st.markdown("**Control task and MDL** (Hewitt & Liang 2019; Voita & Titov 2020)")
    st.caption(
        "A control task gives every word type a fixed random label: a probe can only learn it by "
        "memorising words. **Selectivity** = task accuracy − control accuracy, both from the control run (its "
        "first seed), so it can differ by a few tenths from the task accuracy of the table's mean over seeds: high "
        "when the layer, not the probe, carries the task. **Online codelength** (MDL): the bits needed to transmit the "
        "training labels when the probe is trained on ever larger blocks of them; shorter = the "
        "labels are easier to extract; the control task's codelength is the memorisation reference."
    )
    for col, panel, (task_metric, _c, _t, what, flag) in zip(st.columns(2), view["panels"], RIGOR_PANELS):
        if panel is None:
            col.caption(f"No {what} of a control task measured yet (run with {flag}).")
            continue
        fig, data = panel
        chart(
            fig,
            file_stem(key, spec.name, "control", task_metric),
            key=f"{key}_{spec.name}_rigor_{task_metric}",
            container=col,
            data=frame_csv(data),
        )
    st.dataframe(view["table"], hide_index=True, width="stretch")
    controlled = df[(df.probe == spec.name) & (df.metric == "control_accuracy")].model
    if note := schedule_note(df[(df.probe == spec.name) & df.metric.isin(TRAINED_METRICS) & df.model.isin(controlled)]):
        st.caption(f"⚠️ {note}")
