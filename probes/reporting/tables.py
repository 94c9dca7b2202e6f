"""Tables from saved results, and the one Markdown writer of the lab.

``build_tables`` collects every registered probe's tables (plus the rigor and paper tables); it is what
``python -m probes reproduce`` writes to ``docs/results/`` and what the app's Reproduce page shows, so the
two never disagree.

``dataset_tables`` is the table builder of the probes that read a user's files (``tag``, ``span``): one
table per dataset, label column and metric. A row's ``dataset`` names the data (``NAME@HASH``), the split
and the task (``en_ewt-ud@1a2b3c4d:test:UPOS``), so two datasets or two label columns never share a table.
Each table is model × layer spec (``0``, ``1``, …, ``mean``, ``mix:…``), each cell its value and 95% interval,
the majority-label baseline under ``baseline``, ``n`` (test instances) and what the intervals resample; runs over
several seeds (``--seeds``) show their mean ± standard deviation and a ``seeds`` column.
``write_dataset_tables`` writes them alone (docs/results/ud_ewt); ``write_tables`` writes them too, after the
probes' own tables (``titles(tables)``), each to a CSV named after its key (``csv_name``).

Every Markdown table is ``markdown_table``; only the mark of a missing cell differs (``n/a`` in tables.md,
``—`` in the per-dataset tables).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from corpora.errors import LabError
from corpora.temps import write_atomically
from probes.registry import all_probes
from probes.reporting import paper
from probes.reporting.rigor_tables import NOTES as RIGOR_NOTES, TITLES as RIGOR_TITLES, rigor_tables
from probes.reporting.schedule_notes import SCHEDULE_NOTE, note_schedules
from probes.result_names import FAMILY_SEPARATOR
from probes.results import ProbeResult, as_full_run, extras_of, latest_rows, read_results, slice_of, split_slice
from probes.stats.units import UNSTATED_UNIT, count_span, over_texts, value_interval_text

TABLE_NOTES = RIGOR_NOTES  # table key -> a note printed under it (tables.md, the Reproduce page)
#: Tables that set the papers' numbers beside our full runs: a slice has none of its own.
BESIDE_PAPERS = ("published_rigor",)
PAPER_TITLES = {
    "paper_wsd": "Paper, Table 5: all-words fine-grained WSD F1",
    "paper_pos": "Paper, Table 6: PTB POS tagging accuracy",
}


def titles(tables: dict[str, pd.DataFrame] | None = None) -> dict[str, str]:
    """Table key -> title, in the order ``tables.md`` shows them (probes in registry order, the tables of
    ``tables`` no probe names — one per user dataset, ``tag:…``, ``wsd_data:…`` — the claim tests and
    selectivity/MDL, then the papers'; then the tables of each slice, ``"<key> (limit N)"``, in that order)."""
    out: dict[str, str] = {}
    for spec in all_probes():
        out.update(spec.table_titles)
    named = {key: split_slice(key) for key in tables or {}}  # key -> (its full-data key, its slice or None)
    for name in dict.fromkeys(full_key for full_key, _ in named.values()):
        base, sep, family = name.partition(FAMILY_SEPARATOR)  # another probe family's table ("pos+mlp-256")
        if sep and base in out and ":" not in family:
            out[name] = f"{out[base]} — {family} probe"
    rest = {
        **{k: RIGOR_TITLES[k] for k in ("claims", "best_layer", "selectivity_mdl")},
        **PAPER_TITLES,
        "published_rigor": RIGOR_TITLES["published_rigor"],
    }
    full = {**out, **rest}
    keys = [k for k in tables or {} if k not in full]
    slices = {k: named[k] for k in keys if named[k][1] is not None}
    per_dataset = {k: dataset_table_title(k) for k in keys if k not in slices}
    ordered = {**out, **per_dataset, **rest}
    of_slices = {
        k: slice_title(ordered.get(base) or dataset_table_title(base), limit)
        for k, (base, limit) in sorted(slices.items(), key=lambda item: slice_order(item[1][1]))
    }
    return {**ordered, **of_slices}


def slice_order(label: str | None) -> tuple:
    """A sort key of slices: the full data first, then by flag and size ("limit 3" before "limit 20")."""
    return () if label is None else tuple((f, int(n)) for f, n in (p.rsplit(" ", 1) for p in label.split(", ")))


def slice_flags(label: str) -> str:
    """A slice as the command line that made it: "--limit 20, --semcor-limit 100" for "limit 20, semcor-limit 100"."""
    return ", ".join(f"--{part}" for part in label.split(", "))


def slice_title(title: str, label: str) -> str:
    """The title of a table built from the runs on a slice (``label``: "limit 3", "semcor-limit 100") alone."""
    return f"{title} — runs with {slice_flags(label)}: a slice of the data, kept apart from the full runs"


def csv_name(key: str) -> str:
    """The CSV file of a table: its key, with what a file name cannot hold (``:``, ``/``, spaces) as ``_``."""
    return re.sub(r"[^\w.@+-]+", "_", key) + ".csv"


def paper_tables() -> dict[str, pd.DataFrame]:
    return {
        "paper_wsd": pd.DataFrame(
            [(row, paper.fmt(v)) for row, v in paper.WSD_TABLE5.items()],
            columns=["paper Table 5 (ALL w/o SE07: SE2+SE3+SE13+SE15)", "F1"],
        ),
        "paper_pos": pd.DataFrame(
            [(row, paper.fmt(v)) for row, v in paper.POS_TABLE6.items()], columns=["paper Table 6 (PTB)", "accuracy"]
        ),
    }


def build_tables(results_dir: Path, models: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Paper-style tables (DataFrames) from the result files under ``results_dir`` ({} when there are none).

    ``models``: keep only these models' rows (and every probe's baselines). The runs on a slice of the data
    (``--limit N``, or a training slice: ``--semcor-limit N``, ``--train-limit N``) make tables of their own, built
    from their results alone the way the full data's are and keyed ``"<key> (limit N)"`` (:func:`slice_key`): a
    table, a claim test or a learned weight never mixes a slice with the full run, and a slice never stands in for it.
    """
    by_slice: dict[Any, list[ProbeResult]] = {}
    for res in read_results(results_dir):  # one read of the files serves the rows and the extras
        by_slice.setdefault(slice_of(res), []).append(res)
    tables: dict[str, pd.DataFrame] = {}
    for limit in sorted(by_slice, key=slice_order):
        if limit is None:
            tables.update(_tables_of(by_slice[limit], models))
        else:
            part = _tables_of([as_full_run(res) for res in by_slice[limit]], models)
            shown = {key: table for key, table in part.items() if key not in BESIDE_PAPERS and not table.empty}
            tables.update({slice_key(key, limit): table for key, table in shown.items()})
    return {**tables, **paper_tables()} if tables else {}


def _tables_of(results: list[ProbeResult], models: list[str] | None) -> dict[str, pd.DataFrame]:
    """Every probe's tables and the rigor tables of ``results`` (oldest first)."""
    df = latest_rows(results)
    if df.empty:
        return {}
    specs = all_probes()
    if models is not None:
        keep = set(models).union(*(spec.baseline_models for spec in specs))
        df = df[df.model.isin(keep)]
    extras = extras_of(results)
    tables: dict[str, pd.DataFrame] = {}
    for spec in specs:
        tables.update(spec.tables(df, extras))
    tables = {**tables, **rigor_tables(results, df, models)}
    note_schedules(tables, df)
    return tables


def slice_key(key: str, label: str) -> str:
    """The key of table ``key`` built from the runs on the slice ``label`` ("limit 3": ``--limit 3``)."""
    return f"{key} ({label})"


def table_note(key: str, table: pd.DataFrame | None = None) -> str | None:
    """The note printed under table ``key`` (a slice's table: its full-data table's note), and under it the note
    ``build_tables`` kept in ``table`` when its rows come from more than one training schedule (``schedule_notes``)."""
    notes = [TABLE_NOTES.get(split_slice(key)[0]), None if table is None else table.attrs.get(SCHEDULE_NOTE)]
    return "\n\n".join(note for note in notes if note) or None


def markdown_table(df: pd.DataFrame, missing: str = "n/a") -> str:
    """A pipe table of ``df`` (floats with 2 decimals, a missing value as ``missing``); no extra dependency."""

    def cell(v) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            return missing
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _section(title: str, df: pd.DataFrame, missing: str = "n/a") -> list[str]:
    return [f"## {title}", "", markdown_table(df, missing), ""]


def table_section(key: str, title: str, df: pd.DataFrame, missing: str = "n/a") -> list[str]:
    """Table ``key`` as ``tables.md`` has it, in lines: its title, the table and the note under it (``table_note``:
    how its intervals and verdicts were made) — also what the Reproduce page's Markdown downloads give, and (with
    ``missing="—"``) each table of ``write_dataset_tables``."""
    note = table_note(key, df)
    return _section(title, df, missing) + ([note, ""] if note else [])


def write_tables(
    results_dir: Path, out: Path, models: list[str] | None = None, timings: dict | None = None, command: str = ""
) -> Path | None:
    """Write ``tables.md`` and one CSV per table under ``out`` (``csv_name``), every table ``build_tables``
    made: the user datasets' too; returns the Markdown path. No result in ``results_dir``: writes nothing
    (never a table of headers alone) and returns None."""
    tables = build_tables(results_dir, models)
    if not tables:
        return None
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# Probe results (Peters et al. 2018, section 5)", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    files = {}
    for key, title in titles(tables).items():
        if key not in tables:
            continue
        t = tables[key]
        files[csv_name(key)] = t.to_csv(index=False)
        lines += table_section(key, title, t)
    if timings:
        lines += ["## Wall time (s)", ""] + [f"- {k}: {v:.0f}" for k, v in timings.items()] + [""]
    return write_tables_files(out, {**files, "tables.md": "\n".join(lines)})


def write_tables_files(out: Path, files: dict[str, str]) -> Path:
    """Each of ``files`` (name -> text) into ``out`` whole or not at all, in order (the Markdown last: it is never
    newer than the CSVs it shows); the last one's path. A full or unwritable disk is a ``LabError`` saying what it left
    (a file written in place had been cut mid-sentence, and the old one gone with it)."""
    path = out
    for name, text in files.items():
        path = out / name
        try:
            write_atomically(path, text)
        except OSError as exc:
            raise LabError(
                f"Could not write {path} ({exc.strerror or exc}): the files of {out} written before it are this "
                "run's, the others as they were (each whole). Free some space and run it again."
            ) from None
    return path


METRIC_NAMES = {"accuracy": "accuracy (%)", "F1": "span F1 (%, conlleval)"}


def _layer_order(layers) -> list[str]:
    numeric = sorted((x for x in layers if str(x).isdigit()), key=int)
    others = sorted(x for x in layers if not str(x).isdigit() and x != "baseline")
    return numeric + others + (["baseline"] if "baseline" in set(layers) else [])


def dataset_tables(df: pd.DataFrame, probe: str) -> dict[str, pd.DataFrame]:
    """``{"<probe>:<dataset>:<metric>": model × layer table}`` for every dataset and metric of ``probe``,
    e.g. ``{"tag:en_ewt-ud@1a2b3c4d:test:UPOS:accuracy": DataFrame}``."""
    sel = df[df["probe"] == probe]
    out: dict[str, pd.DataFrame] = {}
    for (dataset, metric), part in sel.groupby(["dataset", "metric"], sort=False):
        seeded = part["seeds"].fillna(1).astype(int) > 1
        spread = part["std"].where(seeded)  # a mean over seeds shows its spread; a plain run none
        cells = [value_interval_text(*row) for row in zip(part.value, part.lo, part.hi, spread)]
        part = part.assign(cell=cells)
        wide = part.pivot_table(index="model", columns="layer", values="cell", aggfunc="first")
        wide = wide[_layer_order(wide.columns)]
        # a model's n over its layers: normally one count; "lo–hi" where they differ (the largest alone would state a
        # count some layers were not scored on). One type a column (a data grid needs one): whole numbers, or text
        # throughout once a range is in it.
        n = part.groupby("model")["n"].agg(count_span).replace("", pd.NA)
        n = n if n.str.contains("–", na=False).any() else pd.to_numeric(n).astype("Int64")
        # a model's layers normally resample the same units; where they do not, the range of their counts
        over = part.groupby("model").apply(
            lambda g: (
                UNSTATED_UNIT
                if g.unit.isna().all() and g.lo.notna().any()
                else over_texts(g.unit.iloc[-1], g.clusters, g.seeds.max())
            ),
            include_groups=False,
        )
        wide = wide.assign(n=n.reindex(wide.index), **{"CI over": over.reindex(wide.index)})
        if seeded.any():  # how many seeds each model's cells average (its ± is their standard deviation)
            wide = wide.assign(seeds=part.groupby("model")["seeds"].max().reindex(wide.index).fillna(1).astype(int))
        out[f"{probe}:{dataset}:{metric}"] = wide.reset_index().rename_axis(columns=None)
    return out


def dataset_table_title(key: str) -> str:
    """``PROBE:DATASET:METRIC`` -> "PROBE: METRIC on DATASET, by layer"; ``PROBE:DATASET`` (``wsd_data:…``)
    -> "PROBE: DATASET, by layer"; ``wsd_words:DATASET`` -> "WSD F1 per target word on DATASET (…)"."""
    probe, _, rest = key.partition(":")
    dataset, _, metric = rest.rpartition(":")
    if probe == "wsd_words":  # probes.tasks.wsd.tables: words as rows, each model at its best pooled layer
        return f"WSD F1 per target word on {rest} (each model at its best layer)"
    if not dataset:
        return f"{probe}: {rest}, by layer"
    return f"{probe}: {METRIC_NAMES.get(metric, metric)} on {dataset}, by layer"


def write_dataset_tables(runs: Path, out: Path, probes: tuple[str, ...] = ("tag", "span"), header: str = "") -> Path:
    """``out`` (Markdown): ``header``, then every ``dataset_tables`` table of ``probes`` from the results under
    ``runs``."""
    df = latest_rows(read_results(runs))
    lines = [header.rstrip(), ""] if header else []
    for probe in probes:
        tables = dataset_tables(df, probe) if not df.empty else {}
        note_schedules(tables, df)
        for key, table in tables.items():
            lines += table_section(key, dataset_table_title(key), table, missing="—")
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_tables_files(out.parent, {out.name: "\n".join(lines)})
