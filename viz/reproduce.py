"""The Reproduce page's data: paper-style tables, a paper-vs-ours summary, run notes.

Tables come from :func:`probes.reporting.tables.build_tables` (the same code that writes
``docs/results/tables.md``), so the app and the committed tables never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from probes.reporting import paper
from probes.reporting.tables import build_tables, paper_tables, table_section, titles
from probes.stats.comparisons import labelled_side
from probes.tasks.wsd.scoring import EVAL_LABELS, PAPER_ALL
from probes.tasks.wsd.tables import BASELINE_MODELS as WSD_BASELINES  # baselines: rows of their own
from viz.probe_figures import interval_error
from viz.text import escape_html
from viz.titles import two_line_title

PAPER_WSD = {
    "WordNet 1st sense": "WordNet 1st Sense Baseline",
    "biLM layer 1": "biLM, First layer",
    "biLM layer 2": "biLM, Second layer",
    "CoVe layer 1": "CoVe, First Layer",
    "CoVe layer 2": "CoVe, Second Layer",
}
PAPER_POS = {
    "biLM layer 1": "biLM, First Layer",
    "biLM layer 2": "biLM, Second Layer",
    "CoVe layer 1": "CoVe, First Layer",
    "CoVe layer 2": "CoVe, Second Layer",
}


def load_tables(results_dir: Path | None) -> dict[str, pd.DataFrame]:
    """Paper-style tables from a results directory; only the paper's tables when there is none."""
    if results_dir is None:
        return paper_tables()
    tables = build_tables(Path(results_dir))
    return tables or paper_tables()


def _ranked_rows(df: pd.DataFrame, value_col: str, ranked: dict[str, str]) -> list[tuple[str, str, str, float]]:
    """(model, system, layer, value) of each model at the layer ranked best without the test set (``ranked``: model ->
    layer, from the best-layer table); a one-layer model at its layer; a model the table does not rank at its
    best on the test set itself, which its system name says ("… (best on test)")."""
    out = []
    sel = df[df["layer"].astype(str).str.fullmatch(r"\d+")].copy()
    sel[value_col] = pd.to_numeric(sel[value_col], errors="coerce")
    for model, grp in sel.dropna(subset=[value_col]).groupby("model", sort=False):
        layers = grp.set_index(grp["layer"].astype(str))[value_col]
        if len(layers) == 1:
            layer, note = layers.index[0], ""
        elif ranked.get(str(model)) in layers.index:
            layer, note = ranked[str(model)], ""
        else:
            layer, note = str(layers.idxmax()), " (best on test)"
        out.append((str(model), f"{model} layer {layer}{note}", layer, float(layers[layer])))
    return out


def _ranked_layers(tables: dict[str, pd.DataFrame], probe: str) -> dict[str, str]:
    """model -> its best layer as the best-layer table ranked it without the test set ("minilm L6" -> "6")."""
    table = tables.get("best_layer")
    if table is None or table.empty:
        return {}
    return dict(labelled_side(best) for best in table.loc[table["probe"] == probe, "best"])


#: The paper's WSD numbers (Table 5) are on ALL without SemEval-07 (SE2, SE3, SE13, SE15): ours on the same.
WSD_COLUMN = EVAL_LABELS[PAPER_ALL]
POS_COLUMN = "accuracy (CoNLL-2000 test)"
WSD_TASK = "WSD F1 on ALL without SE07 (SE2 + SE3 + SE13 + SE15)"
POS_TASK = "POS accuracy (paper: PTB test; ours: CoNLL-2000 test)"
COMPARISON_COLUMNS = ["task", "system", "source", "test set", "score", "lo", "hi", "control"]
MAJORITY_TAG = "majority tag"  # the POS baseline's system name in the chart
BASELINE_SYSTEMS = (*WSD_BASELINES.values(), MAJORITY_TAG)  # our rows that use no embeddings
#: Where each task's "ours" rows live in the results: (probe, dataset, metric).
RESULT_ROWS = {WSD_TASK: ("wsd", PAPER_ALL, "F1"), POS_TASK: ("pos", "conll2000-test", "accuracy")}


def _lohi(results: pd.DataFrame | None, task: str, model: str, layer: str | None) -> dict[str, float]:
    """lo, hi: the 95% interval of one of our rows (NaN where the results have none; a baseline: its one row)."""
    none = {"lo": float("nan"), "hi": float("nan")}
    if results is None or results.empty or not {"lo", "hi"} <= set(results):
        return none
    probe, dataset, metric = RESULT_ROWS[task]
    sel = results[
        (results["model"] == model)
        & (results["probe"] == probe)
        & (results["dataset"] == dataset)
        & (results["metric"] == metric)
    ]
    if layer is not None:
        sel = sel[sel["layer"].astype(str) == layer]
    return none if sel.empty else {"lo": float(sel["lo"].iloc[-1]), "hi": float(sel["hi"].iloc[-1])}


def comparison_frame(
    tables: dict[str, pd.DataFrame],
    results: pd.DataFrame | None = None,
    twin_of: Callable[[str], str | None] = lambda model: None,
) -> pd.DataFrame:
    """Long table task, system, source ("paper" / "ours"), test set, score, lo, hi, control for the at-a-glance
    chart.

    Like with like: the WSD rows of both sources are F1 on ALL without SE07, the evaluation set of
    the paper's Table 5 (our "ALL" includes SE07 and is not comparable). POS cannot be: the paper
    used the PTB, we use CoNLL-2000 (WSJ text too), so each row says its test set. ``results`` (the
    result rows, ``probes.results.load_results``): our rows' bootstrap 95% intervals (the paper gives none).
    ``twin_of``: the trained model a random-weight twin re-draws (``models.random_init.twin_base``), else None;
    a twin's row has ``control`` True and is drawn as a control, not as one of our models.
    """
    rows = []
    for label, key in PAPER_WSD.items():
        rows.append(
            {
                "task": WSD_TASK,
                "system": label,
                "source": "paper",
                "test set": WSD_COLUMN,
                "score": paper.WSD_TABLE5[key],
            }
        )
    for label, key in PAPER_POS.items():
        rows.append(
            {
                "task": POS_TASK,
                "system": label,
                "source": "paper",
                "test set": "PTB (WSJ 22-24)",
                "score": paper.POS_TABLE6[key],
            }
        )
    ours = 0
    wsd = tables.get("wsd")
    if wsd is not None and WSD_COLUMN in wsd.columns:
        for baseline, label in WSD_BASELINES.items():  # baselines are rows of their own, never "our systems"
            value = pd.to_numeric(wsd[wsd["model"] == baseline][WSD_COLUMN], errors="coerce").dropna()
            if len(value):
                rows.append(
                    {
                        "task": WSD_TASK,
                        "system": label,
                        "source": "ours",
                        "test set": WSD_COLUMN,
                        "score": float(value.iloc[0]),
                        **_lohi(results, WSD_TASK, baseline, None),
                    }
                )
                ours += 1
        ranked = _ranked_layers(tables, "wsd")
        for model, system, layer, value in _ranked_rows(
            wsd[~wsd["model"].isin(list(WSD_BASELINES))], WSD_COLUMN, ranked
        ):
            rows.append(
                {
                    "task": WSD_TASK,
                    "system": system,
                    "source": "ours",
                    "test set": WSD_COLUMN,
                    "score": value,
                    **_lohi(results, WSD_TASK, model, layer),
                    "control": twin_of(model) is not None,
                }
            )
            ours += 1
    pos = tables.get("pos")
    if pos is not None and POS_COLUMN in pos.columns:
        base = pos[pos["model"] == "majority-tag"]
        if len(base):
            rows.append(
                {
                    "task": POS_TASK,
                    "system": MAJORITY_TAG,
                    "source": "ours",
                    "test set": "CoNLL-2000",
                    "score": float(base[POS_COLUMN].iloc[0]),
                    **_lohi(results, POS_TASK, "majority-tag", None),
                }
            )
        ranked = _ranked_layers(tables, "pos")
        for model, system, layer, value in _ranked_rows(pos[pos["model"] != "majority-tag"], POS_COLUMN, ranked):
            rows.append(
                {
                    "task": POS_TASK,
                    "system": system,
                    "source": "ours",
                    "test set": "CoNLL-2000",
                    "score": value,
                    **_lohi(results, POS_TASK, model, layer),
                    "control": twin_of(model) is not None,
                }
            )
            ours += 1
    frame = pd.DataFrame(rows, columns=COMPARISON_COLUMNS) if ours else pd.DataFrame(columns=COMPARISON_COLUMNS)
    return frame.assign(control=frame["control"].fillna(False).astype(bool))  # the paper's and baselines: False


#: A system that both sources report (the WordNet first sense) gets two bars side by side, each this
#: thick (category units): paper above, ours below; a system only one source has gets one full bar.
HALF_BAR = 0.42
LEGEND_PX = 56  # the legend's top, below the plot: under the x axis's tick labels and title


def _bar_slots(part: pd.DataFrame) -> tuple[list[float], list[float]]:
    """(offset, width) of each row's bar: a system both sources report is split into two bars side by
    side (paper above, ours below), never drawn one under the other."""
    shared = set(part.loc[part["source"] == "paper", "system"]) & set(part.loc[part["source"] == "ours", "system"])
    slots = [
        (0.0 if source == "paper" else -HALF_BAR, HALF_BAR) if system in shared else (-HALF_BAR, 2 * HALF_BAR)
        for system, source in zip(part["system"], part["source"])
    ]
    return [offset for offset, _ in slots], [width for _, width in slots]


BASELINE_SERIES = "ours: baseline, no embeddings"
CONTROL_SERIES = "ours: random-weight control"
HATCH_INK = {CONTROL_SERIES: "#c93a22"}  # the twins' hatch in our red; the baselines' grey
#: The bar series, in legend order; our random-weight twins (``control``) are a series of their own (our red, pale
#: and cross-hatched: controls, not models), as are our rows that use no embeddings (``BASELINE_SYSTEMS``: grey,
#: hatched, with a dotted line at the first).
SERIES = (  # (name, which rows, colour, hatch, label colour); hatched grey: the baselines, a dotted line at the first
    # plotly's blue and red a shade darker: white values on them at 4.9 and 5.1 : 1 (AA), not 4.1 and 3.5
    ("paper", lambda p: p["source"] == "paper", "#5561e8", "", "white"),
    (
        "ours",
        lambda p: (p["source"] == "ours") & ~p["system"].isin(BASELINE_SYSTEMS) & ~p["control"],
        "#c93a22",
        "",
        "white",
    ),
    (CONTROL_SERIES, lambda p: (p["source"] == "ours") & p["control"], "#f4c7be", "x", "#222"),
    (BASELINE_SERIES, lambda p: (p["source"] == "ours") & p["system"].isin(BASELINE_SYSTEMS), "#9e9e9e", "/", "#222"),
)


def comparison_figure(part: pd.DataFrame, title: str) -> go.Figure:
    """Horizontal bars (every system's name readable, none rotated): the paper's, ours, and our baselines (no
    embeddings) as a series of their own with a dotted line at the first, so a model under it is seen to be;
    each bar labelled with its score at its base, clear of its interval's whiskers; the axis starts at 0, so
    bar lengths compare honestly. A system of both sources (the WordNet first sense: 65.9 vs 65.86) is two bars
    side by side; the legend sits under the plot, clear of the title and the bars."""
    part = part.reset_index(drop=True)
    offsets, widths = _bar_slots(part)
    shared = {s for s, w in zip(part["system"], widths) if w < 2 * HALF_BAR}
    fig = go.Figure()
    for name, rows, colour, hatch, ink in SERIES:
        sel = part[rows(part)]
        if sel.empty:
            continue
        # of a system both sources report, the paper's value goes past its bar's end (it has no whiskers there):
        # the two half bars' values at their bases touched ("65.9" over "65.9")
        outside = [name == "paper" and s in shared for s in sel["system"]]
        fig.add_trace(
            go.Bar(
                x=sel["score"],
                y=sel["system"],
                orientation="h",
                name=f"{name} ({sel['test set'].iloc[0]})",
                marker=dict(color=colour, pattern=dict(shape=hatch, fgcolor=HATCH_INK.get(name, "#616161"))),
                offset=[offsets[i] for i in sel.index],
                width=[widths[i] for i in sel.index],
                # each as its source gives it: the paper's to one decimal, ours as stored and tabled (two; "61.25"
                # labelled "61.2" was a second rounding of an already rounded 61.252)
                text=[f"{v:.1f}" if name == "paper" else f"{v:.2f}" for v in sel["score"]],
                # at the bar's base: the whiskers at its end would cross a label there
                textposition=["outside" if out else "inside" for out in outside],
                insidetextanchor="start",
                textfont=dict(size=11, color=["#31333F" if out else ink for out in outside]),
                constraintext="none",  # a half-thickness bar keeps a readable label
                error_x=interval_error(sel, "score", width=3, color="#333"),
                hovertemplate="%{y}: %{x:.2f}<extra>" + name + "</extra>",
            )
        )
        if name == BASELINE_SERIES:
            fig.add_vline(x=float(sel["score"].iloc[0]), line_dash="dot", line_color="#616161", line_width=1)
    systems = list(dict.fromkeys(part["system"]))
    fig.update_yaxes(categoryorder="array", categoryarray=systems[::-1], automargin=True, tickfont=dict(size=12))
    fig.update_xaxes(range=[0, 105], title="score (%)", dtick=20)
    # A half-width chart with plotly's whole toolbar: the headline (before " (") stays left of it, the rest
    # goes to a smaller second line.
    head, sep, rest = title.partition(" (")
    text = two_line_title(head, sep.strip() + rest) if sep else escape_html(title)
    height, top, bottom = 90 + 26 * len(systems) + LEGEND_PX, 72 if sep else 50, LEGEND_PX + 34  # + the legend's row
    fig.update_layout(
        template="plotly_white",
        height=height,
        barmode="overlay",
        title=dict(text=text, x=0, font=dict(size=14)),
        margin=dict(l=10, r=30, t=top, b=bottom),
        legend=dict(
            orientation="h", yanchor="top", y=-LEGEND_PX / (height - top - bottom), x=0, xanchor="left", title=None
        ),
    )
    return fig


def tables_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """Every table as one Markdown document (what the download button gives)."""
    parts = ["# Embedding Probe Lab — Peters et al. (2018) §5 reproduced", "", f"Paper numbers: {paper.SOURCE}.", ""]
    for key, title in titles(tables).items():
        if key in tables:
            parts += table_section(key, title, tables[key])
    return "\n".join(parts)


def read_run_notes(results_dir: Path) -> str:
    """How a results directory was produced: its README.md, else tables.md's command and timings."""
    root = results_dir.parent if results_dir.name == "runs" else results_dir
    readme = root / "README.md"
    if readme.is_file():
        return readme.read_text(encoding="utf-8", errors="replace")
    tables_md = root / "tables.md"
    if not tables_md.is_file():
        return ""
    text = tables_md.read_text(encoding="utf-8", errors="replace")
    notes = [line for line in text.splitlines() if line.startswith("Command:")]
    m = re.search(r"## Wall time \(s\)\n\n((?:- .*\n?)+)", text)
    if m:
        notes += ["", "Wall time (s):", "", m.group(1).strip()]
    return "\n".join(notes)
