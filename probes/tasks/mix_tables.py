"""The λ ablation's rows and tables: which rows a run has (the paper's Table 2: GloVe alone, the last layer, all
layers with λ = 1 and λ = 0.001), the tasks, and the table beside the paper's numbers (``probes.tasks.mix`` runs it).
"""

from __future__ import annotations

import pandas as pd

from models import DEFAULT_STATIC_MODEL
from probes.reporting import paper
from probes.stats.units import over_text, value_interval_text

ROWS = ("baseline", "last", "all λ=1", "all λ=0.001")
MODEL_ROWS = ROWS[1:]  # the rows that read the probed model
ROW_LAMBDA = {"all λ=1": 1.0, "all λ=0.001": 0.001}
BASELINE_MODEL = DEFAULT_STATIC_MODEL  # GloVe 6B 50d in the same tagger (the paper's Baseline is each task's model)
TASKS = ("pos", "chunk")
METRICS = {"pos": "accuracy", "chunk": "chunk_F1"}
NO_GLOVE = " (no GloVe input)"  # the suffix of a row run on the model's vectors alone (GloVe missing)
NO_GLOVE_ROWS = tuple(r + NO_GLOVE for r in MODEL_ROWS)


def _cell(v: pd.DataFrame, why: str) -> str:
    """The newest of rows ``v`` as a table cell: value [interval], "missing (why)" or "n/a" (no row)."""
    if not len(v):
        return "n/a"
    if pd.isna(v.value.iloc[-1]):
        return f"missing: {why}"
    return value_interval_text(float(v.value.iloc[-1]), v.lo.iloc[-1], v.hi.iloc[-1])


def _mix_lines(mix: pd.DataFrame, extras: list[dict], model: str, suffix: str, why: str) -> list[dict]:
    """``model``'s table line per task from its rows labelled ``row + suffix`` ("", or ``NO_GLOVE``: then
    the learned weights of its results without GloVe); the baseline column is GloVe alone in either line."""
    rows, base = [], mix[mix.layer == "baseline"]
    for task in TASKS:
        name = f"{model}, without GloVe input: not the paper's rows" if suffix else model
        cell = {"model": name, "task": f"CoNLL-2000 {'POS acc.' if task == 'pos' else 'chunk F1'}"}
        over = "n/a"
        for col, layer in zip(paper.LAMBDA_COLUMNS, ROWS):
            src = base if layer == "baseline" else mix[mix.model == model]
            label = layer if layer == "baseline" else layer + suffix
            v = src[(src.layer == label) & (src.dataset == f"conll2000-test:{task}")]
            cell[col] = _cell(v, why)
            if len(v) and pd.notna(v.value.iloc[-1]):
                over = over_text(v.unit.iloc[-1], v.clusters.iloc[-1], v.seeds.iloc[-1])
        cell["CI over"] = over
        mixes = [e for e in extras if e["model"] == model and "mix" in e and bool(e.get("missing")) == bool(suffix)]
        if mixes:
            w = mixes[-1]["mix"].get(task, {}).get("all λ=0.001" + suffix) or {}
            cell["learned s (λ=0.001, first seed)"] = ", ".join(f"{x:.2f}" for x in w.get("s", [])) or "n/a"
            cell["γ (λ=0.001, first seed)"] = f"{w['gamma']:.2f}" if "gamma" in w else "n/a"
        rows.append(cell)
    return rows


def mix_tables(df: pd.DataFrame, extras: list[dict]) -> dict[str, pd.DataFrame]:
    """Our ablation rows per model and task, the learned s and γ at λ=0.001, and the paper's Table 2."""
    mix = df[df.probe == "mix"]
    if mix.empty:
        return {}
    rows = []
    extras = [e for e in extras if e.get("probe") == "mix"]
    why = next((e["missing"] for e in reversed(extras) if e.get("missing")), "no reason recorded")
    no_glove = set(NO_GLOVE_ROWS)
    for model in [m for m in mix.model.unique() if m != BASELINE_MODEL] or [BASELINE_MODEL]:
        own = set(mix.layer[mix.model == model])
        if own - no_glove - {"baseline"} or not own & no_glove:  # the paper's rows (GloVe + the model)
            rows += _mix_lines(mix, extras, model, "", why)
        if own & no_glove:  # rows run without GloVe: a line of their own
            rows += _mix_lines(mix, extras, model, NO_GLOVE, why)
    for task, vals in paper.LAMBDA_TABLE2.items():
        rows.append(
            {
                "model": "paper: ELMo (Table 2)",
                "task": task,
                **{c: paper.fmt(v) for c, v in zip(paper.LAMBDA_COLUMNS, vals)},
            }
        )
    return {"mix": pd.DataFrame(rows)}
