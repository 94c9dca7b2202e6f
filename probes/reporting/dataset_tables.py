"""Tables of the probes that read a user's files (``tag``, ``span``): one table per dataset, label column and metric.

A row's ``dataset`` names the data (``NAME@HASH``), the split and the task
(``en_ewt-ud@1a2b3c4d:test:UPOS``), so two datasets or two label columns never share a table. Each
table is model × layer spec (``0``, ``1``, …, ``mean``, ``mix:…``), the majority-label baseline on a
row of its own under ``baseline``, and ``n`` (test instances).

    tables = dataset_tables(df, "tag")        # {"tag:en_ewt-ud@1a2b3c4d:test:UPOS:accuracy": DataFrame}
    write_dataset_tables(runs, out / "tables.md", header=...)
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from probes.results import latest_rows, read_results

METRIC_NAMES = {"accuracy": "accuracy (%)", "F1": "span F1 (%, conlleval)"}


def _layer_order(layers) -> list[str]:
    numeric = sorted((x for x in layers if str(x).isdigit()), key=int)
    others = sorted(x for x in layers if not str(x).isdigit() and x != "baseline")
    return numeric + others + (["baseline"] if "baseline" in set(layers) else [])


def dataset_tables(df: pd.DataFrame, probe: str) -> dict[str, pd.DataFrame]:
    """``{"<probe>:<dataset>:<metric>": model × layer table}`` for every dataset and metric of ``probe``."""
    sel = df[df["probe"] == probe]
    out: dict[str, pd.DataFrame] = {}
    for (dataset, metric), part in sel.groupby(["dataset", "metric"], sort=False):
        wide = part.pivot_table(index="model", columns="layer", values="value", aggfunc="first")
        wide = wide[_layer_order(wide.columns)]
        n = part.groupby("model")["n"].max()
        wide = wide.assign(n=n.reindex(wide.index).astype("Int64"))
        out[f"{probe}:{dataset}:{metric}"] = wide.reset_index().rename_axis(columns=None)
    return out


def table_title(key: str) -> str:
    probe, rest = key.split(":", 1)
    dataset, metric = rest.rsplit(":", 1)
    return f"{probe}: {METRIC_NAMES.get(metric, metric)} on {dataset}, by layer"


def markdown(df: pd.DataFrame) -> str:
    def cell(v) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            return "—"
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    return "\n".join([head, sep, *("| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False))])


def write_dataset_tables(runs: Path, out: Path, probes: tuple[str, ...] = ("tag", "span"), header: str = "") -> Path:
    """``out`` (Markdown): every table of ``probes`` from the result files under ``runs``."""
    df = latest_rows(read_results(runs))
    lines = [header.rstrip(), ""] if header else []
    for probe in probes:
        for key, table in dataset_tables(df, probe).items() if not df.empty else []:
            lines += [f"## {table_title(key)}", "", markdown(table), ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    return out
