"""The refactored probes give exactly the numbers the code before it gave.

``tests/golden/*.json`` are result files written by the pre-refactor code (commit 890f3ec, the CLI
commands recorded in each file: ``wsd --limit 25``, ``pos --limit 80``, ``mix --limit 80 --epochs 2``,
``--threads 2``) for one model of every family. Here the registry's runners recompute each on the
same slice, from a fresh feature cache, and every row must match exactly (same value, same n). One deliberate
change since: the ``pos`` rows were rewritten on 2026-12-02, when a probe trained on fewer than 32,768 tokens got at
least 16 Adam steps an epoch (``probes.estimators.classifier.auto_batch``; these 80-sentence slices had one step an
epoch: GloVe 55.29 → 68.01, fastText 73.57 → 84.14); full-data runs keep 2,048-token batches and their numbers. A
second on 2026-12-06: WSD's per-POS rows are scored on ALL without SemEval-07 (the dev set that picks a layer),
no longer on ALL; each ``ALL:<POS>`` row of the ``wsd`` files was replaced in place by today's ``ALL-noSE07:<POS>``
row of the same layer, after every other row had come out equal to the pre-refactor code's. A third on 2026-12-07:
the token probes now train on the plateau schedule (``probes.estimators.classifier``); the ``pos`` files are
recomputed with ``schedule="early-stop"``, the schedule they were written with (``--schedule early-stop``). The
model fingerprints are not compared: today they include file paths and mtimes, which differ between
checkouts (content-based fingerprints are issue 13). The full-data check against ``docs/results/``
is ``python -m probes reproduce`` (docs/results/README.md).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import torch

from models.registry import load_embedder
from probes.estimators.classifier import EARLY_STOP
from probes.registry import RunContext, get_probe
from probes.reporting.tables import build_tables, markdown_table, titles

GOLDEN = Path(__file__).resolve().parent / "golden"
REPO = GOLDEN.parent.parent


def _golden() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(GOLDEN.glob("*.json"))]


def _flag(command: str, name: str, default=None):
    argv = shlex.split(command)
    return int(argv[argv.index(name) + 1]) if name in argv else default


def _rows(rows) -> set[tuple]:
    return {(r["dataset"], str(r["layer"]), r["metric"], r["value"], r.get("n")) for r in rows}


@pytest.fixture(scope="module")
def feature_root(tmp_path_factory):
    torch.set_num_threads(2)  # the golden runs used --threads 2 (reduction order)
    return tmp_path_factory.mktemp("features")


@pytest.mark.parametrize(
    "golden",
    [g for g in _golden() if g["model"] not in ("wordnet-1st-sense", "majority-tag")],
    ids=lambda g: f"{g['model']}-{g['probe']}",
)
def test_probe_rows_identical_to_the_pre_refactor_code(golden, feature_root):
    spec = get_probe(golden["probe"])
    emb = load_embedder(golden["model"])
    ctx = RunContext(
        limit=_flag(golden["command"], "--limit"), device="cpu", show_progress=False, feature_root=feature_root
    )
    given = {"mix": {"epochs": _flag(golden["command"], "--epochs")}, "pos": {"schedule": EARLY_STOP}}
    options = spec.options_from(given.get(spec.name, {}))
    results = [spec.run(emb, None, ctx, **options)]
    if spec.name == "mix":  # the old `mix` command put the GloVe baseline row into the model's file
        results += spec.baselines(ctx, **options)
    ours = set().union(*(_rows(r.rows) for r in results))
    assert ours == _rows(golden["rows"])


@pytest.mark.parametrize(
    "golden", [g for g in _golden() if g["model"] in ("wordnet-1st-sense", "majority-tag")], ids=lambda g: g["model"]
)
def test_baselines_identical_to_the_pre_refactor_code(golden):
    # A probe may have several baselines (wsd: WordNet's first sense and the most frequent sense in
    # SemCor); the golden one must come out unchanged.
    results = get_probe(golden["probe"]).baselines(RunContext(limit=_flag(golden["command"], "--limit")))
    (res,) = [r for r in results if r.model == golden["model"]]
    assert _rows(res.rows) == _rows(golden["rows"])


def test_committed_tables_render_unchanged():
    """Every table of docs/results/tables.md comes out of the committed runs exactly as committed."""
    committed = (REPO / "docs" / "results" / "tables.md").read_text()
    tables = build_tables(REPO / "docs" / "results" / "runs")
    for key, title in titles().items():
        if key in tables:  # some tables exist only when their runs do (selectivity/MDL, best layer)
            assert f"## {title}\n\n{markdown_table(tables[key])}\n" in committed, key
