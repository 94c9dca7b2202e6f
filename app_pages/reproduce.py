"""Reproduce the paper: Peters et al. (2018) §5 tables with the paper's numbers beside ours."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages.common import chart, folder_select, page, page_header, safe, wrapping_row
from models.random_init import twin_base
from probes.reporting.schedule_notes import SCHEDULE_NOTE
from probes.reporting.tables import slice_flags, slice_order, table_note, table_section, titles
from probes.results import split_slice
from viz.export import frame_csv
from viz.reproduce import comparison_figure, comparison_frame, load_tables, read_run_notes, tables_markdown
from viz.results import dirs_with_results, folder_version, load_dir

INTRO = """
Peters et al. (2018), *Deep contextualized word representations* (NAACL), §5 asks **what the
biLM's layers capture**: word sense (Table 5: 1-NN WSD), syntax (Table 6: a linear POS probe) and
how much a task gains from mixing all layers (Table 2: the λ ablation). Below are the paper's
published numbers beside ours, produced by one command of the form
`python -m probes reproduce --models glove-6b-50d,minilm,... --out docs/results/`
(the exact command, machine and date of the committed run are under "How these results were
produced").

Our ELMo and GPT (and the static models we trained) are far smaller than the paper's (trained in about an hour on
a 2-core CPU, not on the 1B Word Benchmark for weeks); MiniLM and GloVe 6B are pretrained downloads of other
architectures and data. So the absolute numbers differ, and the question is whether the *pattern across layers*
holds. docs/results/ explains the differences.
"""


@st.cache_data(show_spinner=False, max_entries=8)
def cached_tables(directory: str, version: tuple) -> dict:
    """The paper-style tables of ``directory``, built again only when its ``folder_version`` changes."""
    return load_tables(Path(directory))


@st.cache_data(show_spinner=False, max_entries=8)
def cached_rows(directory: str, version: tuple) -> pd.DataFrame:
    """The result rows (with their intervals) behind the tables."""
    return load_dir(Path(directory))


def download_row(key: str, title: str, df) -> None:
    c1, c2, _ = st.columns([1, 1, 4])
    c1.download_button(
        "CSV",
        df.to_csv(index=False).encode(),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"dl_csv_{key}",
        icon=":material/download:",
    )
    c2.download_button(
        "Markdown",
        "\n".join(table_section(key, title, df)).encode(),
        file_name=f"{key}.md",
        mime="text/markdown",
        key=f"dl_md_{key}",
        icon=":material/download:",
    )


@page
def main() -> None:
    page_header("Reproduce the paper", INTRO, draws=("plotly",))
    dirs = dirs_with_results()
    if not dirs:
        st.info(
            "No probe results yet. Run the command above (or with `--limit 50` for a quick version); "
            "the paper's own numbers are shown below in the meantime."
        )
    directory = None
    if dirs:
        directory = folder_select("Results from", dirs, "repro_dir", "results")
    with safe("build the tables"):
        tables = cached_tables(directory, folder_version(directory)) if directory else load_tables(None)
        notes = read_run_notes(Path(directory)) if directory else ""
        if notes:
            how = st.expander(
                "How these results were produced (command, machine, date)", key="repro_how", on_change="rerun"
            )
            if how.open:  # lazy: its command blocks load a code highlighter a first visit does not need
                how.markdown(notes)
        comp = comparison_frame(
            tables, cached_rows(directory, folder_version(directory)) if directory else None, twin_of=twin_base
        )
        if not comp.empty:
            st.subheader("Paper vs. ours at a glance")
            st.caption(
                "WSD: F1 on the paper's evaluation set, ALL without SemEval-07 (SE2, SE3, SE13, SE15), "
                "for both (paper: biLM and CoVe layers 1 and 2; ours: each model's layer ranked best without the "
                "test set — WSD on SemEval-07, POS on the probe's held-out tenth of its training tokens — as in "
                "the best-layer table). "
                "POS: accuracy, on different test sets (paper: PTB; ours: CoNLL-2000, also WSJ text), "
                "so only the pattern compares. Grey hatched bars, and the dotted line at the first: baselines "
                "that use no embeddings (WordNet's first sense, SemCor's most frequent sense, the majority tag). "
                "Pale cross-hatched bars: random-weight controls (a trained model's architecture with its weights "
                "re-drawn), not models. Error bars on our rows: 95% cluster-bootstrap intervals over the test set's "
                "documents (WSD: the framework's 23, few, so approximate) and sentences (POS), and over the seeds "
                "where a value averages several; the paper gives none."
            )
            cols = wrapping_row("repro_charts", 2)  # stacked in a narrow window: labels leave little of half of it
            for col, (task, part), name in zip(cols, comp.groupby("task", sort=False), ("wsd", "pos")):
                chart(
                    comparison_figure(part, task),
                    f"paper-vs-ours-{name}",
                    key=f"repro_compare_{name}",
                    data=frame_csv(part),
                    container=col,
                    image_size=False,  # its legend is placed for its own height: at 1200 × 700 an entry was cut
                )
            if note := tables["pos"].attrs.get(SCHEDULE_NOTE) if "pos" in tables else None:
                st.caption(f"⚠️ POS: {note}")
        elif slices := sorted({label for key in tables for label in [split_slice(key)[1]] if label}, key=slice_order):
            st.info(
                f"The runs in this folder are slices ({'; '.join(map(slice_flags, slices))}): the paper-vs-ours chart "
                "compares full runs only. Their tables are below, each titled as a slice.",
                icon=":material/info:",
            )
        st.download_button(
            "Download all tables (Markdown)",
            tables_markdown(tables).encode(),
            file_name="embedding-probe-lab-tables.md",
            mime="text/markdown",
            key="dl_all_md",
            type="primary",
            icon=":material/download:",
        )
        st.caption("Each table opens on demand (the page draws only the charts above until you do).")
        for key, title in titles(tables).items():
            if key not in tables:
                continue
            box = st.expander(title, key=f"repro_table_{key}", on_change="rerun")
            if not box.open:
                continue
            shown = tables[key].map(
                lambda v: (
                    "—"
                    if v is None or (isinstance(v, float) and pd.isna(v))
                    else f"{v:.2f}"
                    if isinstance(v, float)
                    else str(v)
                )
            )
            box.dataframe(shown, hide_index=True, width="stretch")
            if note := table_note(key, tables[key]):
                box.caption(note)
            with box:
                download_row(key, title, tables[key])


main()
