"""A table whose rows come from probes trained under different schedules says so (``probes.reporting.schedule_notes``).

Built from committed result files of docs/results/runs: runs from before 2026-12-07 (the early stop, unrecorded) and
the re-runs of that evening (the plateau schedule, recorded in ``extra["schedule"]``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from probes.reporting.schedule_notes import SCHEDULE_NOTE
from probes.reporting.tables import build_tables, table_note, write_tables
from probes.result_names import run_schedule
from probes.results import ProbeResult, results_frame

RUNS = Path(__file__).resolve().parents[1] / "docs" / "results" / "runs"
OLD_GLOVE = "glove-6b-50d__pos__20261127T0501130000_1efbbf.json"  # --control --mdl, early stop
NEW_GLOVE = "glove-6b-50d__pos__20261207T1941290000_2e256c.json"  # --control, plateau
NEW_MINILM = "minilm__pos__20261207T2031560000_adb57d.json"  # --seeds 3, plateau
PLATEAU_GLOVE = "glove-6b-50d__pos__20261207T2052030000_c540fa.json"  # --seeds 3, plateau, accuracy only
GLOVE_WSD = "glove-6b-50d__wsd__20261122T0541290000.json"
MINILM_WSD = "minilm__wsd__20261122T0547090000.json"
OLD_ELMO = "elmo-small__pos__20261127T0452390000_501863.json"  # --seeds 3, early stop
NEW_ELMO = "elmo-small__pos__20261207T2034410000_faeb91.json"  # --seeds 3, plateau


def _folder(tmp_path: Path, *names: str) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir(parents=True)
    for name in names:
        shutil.copy(RUNS / name, runs / name)
    return runs


def _read(name: str) -> ProbeResult:
    return ProbeResult.from_json(json.loads((RUNS / name).read_text(encoding="utf-8")))


def test_each_run_and_row_names_the_schedule_that_trained_it():
    old, new = _read(OLD_GLOVE), _read(NEW_GLOVE)
    assert run_schedule(old) == "early-stop" and run_schedule(new) == "plateau"
    majority = _read("majority-tag__pos__20261122T0601260000.json")
    wsd = _read("elmo-small__wsd__20261122T0613560000.json")
    assert run_schedule(majority) is None and run_schedule(wsd) is None  # no probe fit of the schedules
    rows = results_frame([old])
    by_metric = dict(zip(rows.metric, rows.schedule))
    assert by_metric["accuracy"] == by_metric["control_accuracy"] == "early-stop"
    assert pd.isna(by_metric["codelength_kbits"])  # MDL's block probes keep their own schedule, run by run


def test_a_table_of_two_schedules_names_each_models_and_tables_md_prints_it(tmp_path):
    runs = _folder(tmp_path, OLD_GLOVE, NEW_MINILM)
    tables = build_tables(runs)
    note = tables["pos"].attrs[SCHEDULE_NOTE]
    assert "early-stop: glove-6b-50d;" in note and "plateau: minilm)" in note
    assert note in table_note("pos", tables["pos"])
    written = write_tables(runs, tmp_path / "out").read_text(encoding="utf-8")
    assert note in written


def test_a_model_re_run_on_some_layers_lists_the_layers_of_each_schedule(tmp_path):
    runs = _folder(tmp_path, OLD_ELMO)
    partial = json.loads((RUNS / NEW_ELMO).read_text(encoding="utf-8"))
    partial["rows"] = [row for row in partial["rows"] if row["layer"] == "1"]  # as `pos --layers 1` saves it
    (runs / NEW_ELMO).write_text(json.dumps(partial), encoding="utf-8")
    note = build_tables(runs)["pos"].attrs[SCHEDULE_NOTE]
    assert "early-stop: elmo-small (layers 0, 2, mean)" in note and "plateau: elmo-small (layers 1)" in note


def test_only_the_tables_that_show_the_mixed_rows_say_so(tmp_path):
    # glove's accuracy re-run under the plateau schedule, its control task still the early stop's; minilm's accuracy
    # under the plateau schedule; both models' WSD runs (no probe fit of the schedules)
    runs = _folder(tmp_path, OLD_GLOVE, PLATEAU_GLOVE, NEW_MINILM, GLOVE_WSD, MINILM_WSD)
    tables = build_tables(runs)
    noted = {key for key, table in tables.items() if SCHEDULE_NOTE in table.attrs}
    assert noted == {"selectivity_mdl"}  # not pos (its accuracy rows: one schedule), not the WSD tables, not claims
    note = tables["selectivity_mdl"].attrs[SCHEDULE_NOTE]
    assert "early-stop: glove-6b-50d (metrics control_accuracy, selectivity)" in note
    assert "plateau: glove-6b-50d (metrics accuracy)" in note


def test_one_schedule_and_mdl_rows_from_older_runs_add_no_note(tmp_path):
    # the committed state: accuracy and control rows re-run under the plateau schedule, the MDL rows kept from the
    # early-stop runs, since MDL's block probes train the same way either side of the change
    runs = _folder(tmp_path, OLD_GLOVE, NEW_GLOVE, NEW_MINILM)
    tables = build_tables(runs)
    assert "codelength_kbits" in tables["selectivity_mdl"].columns
    assert not [key for key, table in tables.items() if SCHEDULE_NOTE in table.attrs]


def test_the_probes_page_says_so_under_a_chart_of_two_schedules(tmp_path, monkeypatch):
    from test_app import assert_ok, open_page

    from viz.results import label_dir

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))  # the app's own results folder: <cache>/results
    runs = _folder(tmp_path, OLD_GLOVE, NEW_MINILM).rename(tmp_path / "results")
    at = open_page("probes", results=label_dir(runs), saved="POS")
    assert_ok(at)
    notes = [c.value for c in at.caption if "trained under 2 schedules" in c.value]
    assert len(notes) == 1 and "early-stop: glove-6b-50d;" in notes[0]  # under the POS chart


def test_the_layer_profile_says_so_under_a_profile_of_two_schedules(tmp_path, monkeypatch):
    from test_app import assert_ok, open_page

    from viz.results import label_dir

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    runs = _folder(tmp_path, OLD_GLOVE, NEW_MINILM).rename(tmp_path / "results")
    at = open_page("layer_profile", dir=label_dir(runs))
    assert_ok(at)
    assert at.selectbox(key="lp_measure").value == "pos · conll2000-test · accuracy"
    assert [c.value for c in at.caption if "trained under 2 schedules (early-stop: glove-6b-50d;" in c.value]
    at.multiselect(key="lp_models").set_value(["minilm"]).run()  # one model, one schedule: nothing to say
    assert not [c.value for c in at.caption if "schedules" in c.value]


def test_compare_shows_the_schedules_of_rows_that_moved_between_them(tmp_path, capsys):
    from probes.cli import main

    old, new = _folder(tmp_path / "old", OLD_ELMO), _folder(tmp_path / "new", NEW_ELMO)
    assert main(["compare", str(old), str(new)]) == 1  # the plateau fits scored higher on every layer
    out = capsys.readouterr().out
    assert "schedule_reference" in out and "plateau early-stop" in " ".join(out.split())
    assert main(["compare", str(new), str(new)]) == 0 and "schedule" not in capsys.readouterr().out


def test_a_treebank_table_of_two_schedules_says_so_and_the_others_do_not(tmp_path):
    """UD EWT: glove's UPOS and XPOS runs of 2026-11-24 (the early stop) beside minilm's UPOS re-run of 2026-12-07
    (the plateau schedule) and its XPOS run of 2026-11-24: only the UPOS tables (dev and test) mix the two."""
    from probes.reporting.tables import write_dataset_tables

    ewt = RUNS.parent / "ud_ewt" / "runs"
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in (
        "glove-6b-50d__tag__20261124T0024000000_9ee042.json",  # UPOS
        "glove-6b-50d__tag__20261124T0032010000_ea0421.json",  # XPOS
        "minilm__tag__20261207T2246470000_2a699d.json",  # UPOS
        "minilm__tag__20261124T0203590000_8c949e.json",  # XPOS
    ):
        shutil.copy(ewt / name, runs / name)
    text = write_dataset_tables(runs, tmp_path / "tables.md", ("tag",)).read_text(encoding="utf-8")
    sections = {part.split("\n", 1)[0]: part for part in text.split("## ")[1:]}
    assert len(sections) == 4
    for title, section in sections.items():
        mixed = "early-stop: glove-6b-50d; plateau: minilm)" in section
        assert mixed == (":UPOS," in title), title


def test_a_small_run_finished_by_the_polish_is_told_apart_from_one_saved_before_it(tmp_path):
    """A 60-sentence POS run goes on to the L-BFGS polish (``probes.estimators.polish``); the same run as a version
    before the polish saved it (no polish rounds in its history) reads as the plateau schedule alone, and a table of
    the two says so."""
    import dataclasses

    from probes.registry import RunContext
    from probes.results import save_result
    from probes.tasks.pos import run_pos
    from tests.probe_helpers import RandomEmbedder

    ctx = RunContext(limit=60, device="cpu", show_progress=False, feature_root=tmp_path / "features")
    after = run_pos(RandomEmbedder(num_layers=2, dim=16, seed=7, version="typed"), "1", ctx)
    assert run_schedule(after) == "plateau + L-BFGS polish"
    unpolished = {layer: [e for e in fit if "polish" not in e] for layer, fit in after.extra["history"].items()}
    before = dataclasses.replace(after, model="older", extra={**after.extra, "history": unpolished})
    assert run_schedule(before) == "plateau"
    runs = tmp_path / "runs"
    save_result(dataclasses.replace(after, model="newer"), runs)
    save_result(before, runs)
    note = build_tables(runs)["pos (limit 60)"].attrs[SCHEDULE_NOTE]
    assert "plateau: older; plateau + L-BFGS polish: newer" in note
