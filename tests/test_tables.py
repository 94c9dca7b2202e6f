"""The one Markdown writer (probes/reporting/tables.py) re-renders every committed table byte for byte.

``test_same_numbers`` checks each table of ``docs/results/tables.md`` on its own; here the whole files are
rewritten from the committed runs into a temporary directory: ``tables.md`` with its CSVs (what
``python -m probes reproduce --tables-only`` writes) and the UD EWT per-dataset tables
(``docs/results/ud_ewt/tables.md``, the command in its header).
"""

from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa

from corpora.paths import REPO_ROOT
from probes.reporting.tables import dataset_table_title, markdown_table, write_dataset_tables, write_tables

RESULTS = REPO_ROOT / "docs" / "results"


def test_markdown_table_marks_missing_cells_and_rounds_floats():
    df = pd.DataFrame({"model": ["a", "b"], "acc": [91.234, math.nan], "n": pd.array([3, None], dtype="Int64")})
    assert markdown_table(df) == "| model | acc | n |\n|---|---|---|\n| a | 91.23 | 3 |\n| b | n/a | n/a |"
    assert markdown_table(df, missing="—").splitlines()[-1] == "| b | — | — |"
    assert markdown_table(pd.DataFrame({"x": [None]})).splitlines()[-1] == "| n/a |"


def test_dataset_table_title_names_probe_metric_and_dataset():
    assert (
        dataset_table_title("tag:en_ewt-ud@1a2b3c4d:test:UPOS:accuracy")
        == "tag: accuracy (%) on en_ewt-ud@1a2b3c4d:test:UPOS, by layer"
    )
    assert dataset_table_title("span:ner@00:test:F1") == "span: span F1 (%, conlleval) on ner@00:test, by layer"


def test_a_run_over_several_seeds_shows_its_spread_and_seed_count():
    """A ``--seeds 3`` run's cells are its mean ± the standard deviation over seeds, with a ``seeds`` column (the
    per-dataset tables showed the mean alone, as if one run had scored it); a plain run's table is unchanged."""
    from probes.reporting.tables import dataset_tables
    from probes.results import ProbeResult, results_frame
    from probes.stats.seeds import merge_seeds

    def run(seed: int, value: float) -> ProbeResult:
        row = {"dataset": "ewt@00:test:tree", "layer": "3", "metric": "UUAS", "value": value, "lo": 60.0, "hi": 70.0}
        return ProbeResult("m", "structural", [{**row, "n": 100}], params={"seed": seed})

    merged = merge_seeds([run(0, 64.0), run(1, 65.0), run(2, 66.5)])
    table = next(iter(dataset_tables(results_frame([merged]), "structural").values()))
    assert table.loc[0, "3"] == "65.17 ± 1.26 [60.00, 70.00]" and table.loc[0, "seeds"] == 3
    plain = next(iter(dataset_tables(results_frame([run(0, 64.0)]), "structural").values()))
    assert plain.loc[0, "3"] == "64.00 [60.00, 70.00]" and "seeds" not in plain


def test_a_rows_ci_over_states_every_layers_unit_count_not_the_last_ones():
    """A model's layers that resample different numbers of units (say a layer run on another slice of documents)
    are stated as the range; "CI over" showed the last layer's count alone."""
    from probes.reporting.tables import dataset_tables
    from probes.results import ProbeResult, results_frame

    rows = [
        {"dataset": "d@00", "layer": str(j), "metric": "F1", "value": 50.0, "lo": 45.0, "hi": 55.0, "n": 300}
        | {"unit": "document", "clusters": k}
        for j, k in enumerate((23, 10))
    ]
    table = next(iter(dataset_tables(results_frame([ProbeResult("m", "wsd", rows)]), "wsd").values()))
    assert table.loc[0, "CI over"] == "10–23 documents (few: interval approximate)"
    same = [dict(r, clusters=23) for r in rows]
    table = next(iter(dataset_tables(results_frame([ProbeResult("m", "wsd", same)]), "wsd").values()))
    assert table.loc[0, "CI over"] == "23 documents (few: interval approximate)"


def test_tables_md_and_csvs_rerender_byte_identical(tmp_path):
    md = write_tables(RESULTS / "runs", tmp_path)
    assert md.read_bytes() == (RESULTS / "tables.md").read_bytes()
    written = sorted(p.name for p in tmp_path.glob("*.csv"))
    assert written == sorted(p.name for p in RESULTS.glob("*.csv"))
    changed = [name for name in written if (tmp_path / name).read_bytes() != (RESULTS / name).read_bytes()]
    assert changed == []


def test_ud_ewt_tables_rerender_byte_identical(tmp_path):
    committed = (RESULTS / "ud_ewt" / "tables.md").read_text()
    header = committed[: committed.index("\n## ")]
    assert "from probes.reporting.tables import write_dataset_tables" in header  # the command it states works
    out = write_dataset_tables(RESULTS / "ud_ewt" / "runs", tmp_path / "tables.md", ("tag",), header)
    assert out.read_bytes() == (RESULTS / "ud_ewt" / "tables.md").read_bytes()


def test_ud_ewt_structural_tables_rerender_byte_identical(tmp_path):
    """docs/results/ud_ewt/structural_tables.md: every structural and head-syntax table of the full-EWT runs."""
    path = RESULTS / "ud_ewt" / "structural_tables.md"
    committed = path.read_text()
    header = committed[: committed.index("\n## ")]
    assert "write_dataset_tables" in header and "structural_runs" in header  # the command it states
    runs = RESULTS / "ud_ewt" / "structural_runs"
    out = write_dataset_tables(runs, tmp_path / "t.md", ("structural", "head_syntax"), header)
    assert out.read_bytes() == path.read_bytes()


def test_structural_summary_prints_hewitt_manning_table1_as_recorded():
    """docs/results/ud_ewt/structural.md shows each published row exactly as probes.reporting.paper holds it
    (one place for the numbers; the page may not drift from it)."""
    from probes.reporting.paper import STRUCTURAL_TABLE1

    lines = (RESULTS / "ud_ewt" / "structural.md").read_text().splitlines()
    for name, values in STRUCTURAL_TABLE1.items():
        row = next((line for line in lines if line.startswith(f"| {name} |")), None)
        assert row is not None, name
        cells = [c.strip() for c in row.split("|")[2:6]]
        assert cells == [f"{values[0]:.1f}", f"{values[1]:.2f}", f"{values[2]:.1f}", f"{values[3]:.2f}"], name


def test_a_models_n_states_every_layers_count_not_the_largest():
    """Layers scored on different numbers of items (a structural metric that skips sentences, a layer run on
    another slice) show their range in ``n``; the largest alone stated a count some layers were not scored on."""
    from probes.reporting.tables import dataset_tables
    from probes.results import ProbeResult, results_frame

    rows = [
        {"dataset": "d@00", "layer": str(j), "metric": "F1", "value": 50.0, "lo": 45.0, "hi": 55.0, "n": n}
        | {"unit": "document", "clusters": 23}
        for j, n in enumerate((300, 280))
    ]
    table = next(iter(dataset_tables(results_frame([ProbeResult("m", "wsd", rows)]), "wsd").values()))
    assert table.loc[0, "n"] == "280–300"
    two = [*rows, *(dict(r, n=300) | {"model": "m2"} for r in rows)]  # one model's range beside another's count
    results = [ProbeResult(m, "wsd", [r for r in two if r.get("model", "m") == m]) for m in ("m", "m2")]
    table = next(iter(dataset_tables(results_frame(results), "wsd").values()))
    assert list(table["n"]) == ["280–300", "300"]  # one type a column: a data grid (Arrow) takes it
    pa.Table.from_pandas(table)
    same = [dict(r, n=300) for r in rows]
    table = next(iter(dataset_tables(results_frame([ProbeResult("m", "wsd", same)]), "wsd").values()))
    assert table.loc[0, "n"] == 300 and str(table["n"].dtype) == "Int64"


def test_the_papers_numbers_are_printed_as_their_sources_print_them_and_name_their_set():
    """Table 5's and 6's one-decimal numbers were written with two ("97.60" for Ma & Hovy, whose result is 97.55;
    no source prints 97.60), and Table 5's set was headed "ALL", which everywhere else here holds SemEval-07."""
    from probes.reporting.rigor_tables import published_rigor_table
    from probes.reporting.tables import markdown_table, paper_tables

    tables = paper_tables()
    wsd, pos = markdown_table(tables["paper_wsd"]), markdown_table(tables["paper_pos"])
    assert "| Ma and Hovy (2016) | 97.6 |" in pos and "97.60" not in pos and "| biLM, Second layer | 69.0 |" in wsd
    assert "ALL w/o SE07: SE2+SE3+SE13+SE15" in wsd
    rigor = published_rigor_table()
    voita = rigor[rigor.representation == "ELMo layer 1"].set_index("probe")
    assert voita.loc["MLP-2 (h=1000)", "codelength (kbits)"] == "96" and voita.loc["linear", "selectivity"] == "26.0"
