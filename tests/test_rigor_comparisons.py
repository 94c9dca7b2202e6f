"""Paired comparisons, claim tests and --seeds on real probe runs (CoNLL-2000 slices)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from probes.cli import main
from probes.errors import ProbeInputError
from probes.registry import ChartSpec, ProbeSpec, RunContext, get_probe
from probes.results import ProbeResult, load_results
from probes.stats.claims import CLAIMS, DIFF, claims_table, verdict
from probes.stats.comparisons import compare, layer_comparisons, outcome_table
from probes.stats.intervals import keep_instances
from probes.stats.seeds import merge_seeds, run_with_seeds
from tests.probe_helpers import RandomEmbedder

SLICE = "conll2000-test (limit 60)"  # the dataset a --limit 60 run's rows read back as


@pytest.fixture(scope="module")
def pos_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("features")
    ctx = RunContext(limit=60, device="cpu", show_progress=False, feature_root=root)  # rows: SLICE
    typed = RandomEmbedder(num_layers=3, dim=24, seed=7, version="typed", noise=0.5)
    spec = get_probe("pos")
    return ctx, typed, spec, spec.run(typed, "0,1,2", ctx)


def test_a_model_against_itself_gives_p_1(pos_runs):
    ctx, typed, spec, res = pos_runs
    again = spec.run(typed, "0,1,2", ctx)  # same seed: the same outcomes
    outcomes = outcome_table([res], "pos", SLICE)
    twin = {("twin", layer): out for (_, layer), out in outcome_table([again], "pos", SLICE).items()}
    t = compare(
        {**outcomes, **twin}, [(("random-test", "2"), ("twin", "2")), (("random-test", "1"), ("random-test", "1"))]
    )
    assert list(t.p) == [1.0, 1.0] and list(t["diff"]) == [0.0, 0.0]


def test_layer_differences_are_the_row_differences(pos_runs):
    _, _, _, res = pos_runs
    value = {r["layer"]: r["value"] for r in res.rows if r["metric"] == "accuracy"}
    t = layer_comparisons(outcome_table([res], "pos", SLICE), "random-test", against="first")
    assert list(t.a) == ["random-test L1", "random-test L2"] and set(t.b) == {"random-test L0"}
    for row, layer in zip(t.itertuples(), ("1", "2")):
        assert row.diff == pytest.approx(value[layer] - value["0"], abs=0.011)
        assert row.lo <= row.diff <= row.hi and 0 < row.p <= 1
    with pytest.raises(ProbeInputError, match="previous or first"):
        layer_comparisons({}, "m", against="best")


def test_comparisons_refuse_different_instances_and_missing_outcomes(pos_runs):
    _, _, _, res = pos_runs
    outcomes = outcome_table([res], "pos", SLICE)
    outcomes[("short", "0")] = outcomes[("random-test", "0")][:-5]
    with pytest.raises(ProbeInputError, match="different data"):
        compare(outcomes, [(("random-test", "0"), ("short", "0"))])
    with pytest.raises(ProbeInputError, match="re-run"):
        compare(outcomes, [(("random-test", "0"), ("nobody", "0"))])


def _result(model: str, probe: str, dataset: str, correct_by_layer: dict[str, np.ndarray], keep: bool = True):
    extra: dict = {}
    rows = []
    for layer, correct in correct_by_layer.items():
        rows.append(
            {
                "dataset": dataset,
                "layer": layer,
                "metric": "accuracy",
                "value": round(100 * correct.mean(), 2),
                "n": len(correct),
            }
        )
        if keep:
            keep_instances(extra, dataset, layer, correct)
    return ProbeResult(model, probe, rows, extra=extra)


def test_claim_verdicts_follow_the_paired_test():
    rng = np.random.default_rng(0)
    base = rng.random(4000) < 0.8
    better = base | (rng.random(4000) < 0.3)  # fixes many errors, breaks none
    same = base.copy()
    same[:2] = ~same[:2]  # two flips: no evidence either way
    results = [
        _result("a", "pos", "conll2000-test", {"0": base, "1": better, "2": base}),  # first > top: supported
        _result("b", "pos", "conll2000-test", {"0": base, "1": base, "2": better}),  # contradicted
        _result("c", "pos", "conll2000-test", {"0": base, "1": base, "2": same}),  # not significant
        _result("d", "pos", "conll2000-test", {"0": base, "1": base, "2": base}, keep=False),
        _result("static", "pos", "conll2000-test", {"0": base}),  # one layer: no row
    ]
    t = claims_table(results)
    got = dict(zip(t.model, t.verdict))
    assert got["a"] == "supported" and got["b"] == "contradicted" and got["c"] == "not significant"
    assert got["d"].startswith("n/a: no per-instance outcomes") and "static" not in got
    assert set(t.claim) == {CLAIMS[1].text}
    assert verdict(-1.0, 0.5) == "not significant" and verdict(2.0, 0.01) == "supported"


def test_seed_0_alone_is_the_plain_run_and_seeds_average(pos_runs):
    ctx, typed, spec, res = pos_runs
    one = run_with_seeds(spec, typed, "0,1,2", ctx)
    assert one.rows == res.rows  # --seeds 1: today's numbers, same rows
    three = run_with_seeds(spec, typed, "0,1,2", dataclasses.replace(ctx, seeds=3))
    per_seed = three.extra["seeds"]["values"]
    assert three.params["seeds"] == [0, 1, 2]
    for r0, r in zip(res.rows, three.rows):
        values = per_seed[f"{r['dataset']}|{r['layer']}|{r['metric']}"]
        assert values[0] == r0["value"] and len(values) == 3
        assert r["value"] == pytest.approx(np.mean(values), abs=0.006)
        assert r["std"] == pytest.approx(np.std(values, ddof=1), abs=0.006) and r["seeds"] == 3
        assert r["lo"] <= r["value"] <= r["hi"]
    assert len(set(map(tuple, per_seed.values()))) > 1 or any(np.std(v) > 0 for v in per_seed.values())


def test_a_probe_without_a_seed_runs_once():
    calls = []

    def run(embedder, layers, ctx, **_):
        calls.append(ctx.seed)
        return ProbeResult("m", "toy", [{"dataset": "d", "layer": "0", "metric": "F1", "value": 50.0}], params={})

    toy = ProbeSpec("toy", "toy", "toy", run, lambda ctx, **o: [], lambda df, e: {}, {}, ChartSpec(metrics=("F1",)))
    res = run_with_seeds(toy, None, None, RunContext(seeds=4))
    assert calls == [0] and "std" not in res.rows[0]
    with pytest.raises(ProbeInputError, match="--seeds"):
        RunContext(seeds=0)
    second = dataclasses.replace(res, rows=[{**res.rows[0], "value": 52.0}], extra={**res.extra, "total_s": 2.5})
    merged = merge_seeds([dataclasses.replace(res, extra={**res.extra, "total_s": 1.5}), second])
    assert merged.rows[0]["value"] == 51.0 and merged.rows[0]["std"] == pytest.approx(1.41, abs=0.01)
    # the run's time is every seed's (it was the first seed's alone), each seed's beside it
    assert merged.extra["total_s"] == 4.0 and merged.extra["seed_total_s"] == [1.5, 2.5]
    # a row with nothing to score (a structural test set of one-word sentences: value None) ended --seeds in a
    # TypeError after every seed had trained; it stays marked missing, and a seed that scored it counts alone
    missing = {**res.rows[0], "value": None, "lo": None, "hi": None}
    none = dataclasses.replace(res, rows=[missing])
    assert merge_seeds([none, dataclasses.replace(none)]).rows[0] | {"seeds": 0} == {**missing, "seeds": 0}
    partly = merge_seeds([none, second]).rows[0]
    assert (partly["value"], partly["seeds"]) == (52.0, 1) and partly.get("lo") is None


def test_a_layer_named_twice_is_refused():
    """``--layers 0,0 --seeds 2`` read as 4 seeds with a smaller spread (the repeated layer's rows piled up)."""
    from probes.layers import parse_layer_specs

    for text in ("0,0", "1,01", "mean,0,mean"):
        with pytest.raises(ProbeInputError, match="named more than once"):
            parse_layer_specs(text, 3)
    assert [s.label for s in parse_layer_specs("0,1,mean", 3)] == ["0", "1", "mean"]


def test_cli_seeds(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    assert main(["pos", "--model", "glove-6b-50d", "--limit", "30", "--seeds", "0", "--results", str(tmp_path)]) == 2
    assert "--seeds 0 selects nothing" in capsys.readouterr().err
    assert (
        main(
            [
                "pos",
                "--model",
                "glove-6b-50d",
                "--limit",
                "30",
                "--seeds",
                "2",
                "--threads",
                "1",
                "--results",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    assert "(2 seeds)" in capsys.readouterr().out
    df = load_results(tmp_path / "r")
    row = df[df.model == "glove-6b-50d"].iloc[0]
    assert row["std"] >= 0 and row["lo"] <= row["value"] <= row["hi"]


def test_best_layer_table_tests_the_best_against_runner_up_and_layer_0():
    from probes.reporting.rigor_tables import HELD_OUT, best_layer_table

    rng = np.random.default_rng(1)
    base = rng.random(3000) < 0.7
    best = base | (rng.random(3000) < 0.2)
    near = best.copy()
    near[np.flatnonzero(near)[:3]] = False  # runner-up: three fewer right
    res = _result("m", "pos", "conll2000-test", {"0": base, "1": near, "2": best})
    held_out = {"0": [0.5, 0.6], "1": [0.7, 0.92, 0.9], "2": [0.91]}  # the best epoch ranks: L1 > L2 > L0
    res.extra["history"] = {k: [{"epoch": i, "val_acc": a} for i, a in enumerate(v)] for k, v in held_out.items()}
    t = best_layer_table([res])
    # ranked on the held-out split (L1), not on the test set (which favours L2): L1 is tested against L2 and L0
    assert list(zip(t.best, t.against)) == [("m L1", "m L2"), ("m L1", "m L0")]
    assert t.iloc[0]["difference (points)"] < 0  # the held-out winner loses on test: reported, not hidden
    assert set(t["ranked on"]) == {HELD_OUT} and set(t["tie on the ranking set"]) == {"no"}
    # how far the held-out winner led (0.92 vs 0.91: 1 point) is stated, so a near tie is seen as one
    assert list(t["lead on the ranking set (points)"]) == [1.0, 1.0]
    # an exact tie on the ranking set goes to the lower layer, and the row says so (it read as a plain "best")
    res.extra["history"]["2"] = [{"epoch": 0, "val_acc": 0.92}]
    t = best_layer_table([res])
    assert (t.iloc[0].best, t.iloc[0].against) == ("m L1", "m L2")
    assert t.iloc[0]["tie on the ranking set"] == "yes: the lower layer taken"
    del res.extra["history"]  # a result that kept no training history cannot be ranked without the test set
    assert best_layer_table([res]) is None
    assert best_layer_table([_result("m", "pos", "conll2000-test", {"0": base}, keep=False)]) is None


def test_a_slice_run_never_mixes_with_the_full_run(tmp_path):
    """A newer ``--limit 20`` run of the same model and probe: every table, claim test and outcome lookup of the
    full data still reads the full run; the slice gets tables of its own, built from its results alone."""
    from probes.reporting.tables import build_tables, titles
    from probes.results import read_results, save_result

    rng = np.random.default_rng(5)
    base = rng.random(3000) < 0.7
    full = _result("a", "pos", "conll2000-test", {"0": base, "1": base | (rng.random(3000) < 0.3), "2": base})
    small = rng.random(60) < 0.5
    limited = _result("a", "pos", "conll2000-test", {"0": small, "1": small, "2": small | (rng.random(60) < 0.4)})
    for res, limit, selectivity in ((full, None, 20.0), (limited, 20, 5.0)):
        res.dataset, res.params = "conll2000-test", {"limit": limit}
        res.rows.append({"dataset": "conll2000-test", "layer": "1", "metric": "selectivity", "value": selectivity})
        res.timestamp = f"2026-11-28T0{1 if limit is None else 2}:00:00+00:00"  # the slice is the newer run
        save_result(res, tmp_path)
    value = {
        (res.params["limit"], row["layer"]): row["value"]
        for res in (full, limited)
        for row in res.rows
        if row["metric"] == "accuracy"
    }
    results = read_results(tmp_path)
    assert [r.params["limit"] for r in results] == [None, 20]

    assert outcome_table(results, "pos", "conll2000-test")[("a", "2")].tolist() == base.tolist()
    assert len(outcome_table(results, "pos", "conll2000-test (limit 20)")[("a", "2")]) == 60

    tables = build_tables(tmp_path)
    pos, sliced = tables["pos"], tables["pos (limit 20)"]
    assert dict(zip(pos.layer, pos["accuracy (CoNLL-2000 test)"])) == {
        layer: value[(None, layer)] for layer in ("0", "1", "2")
    }
    assert dict(zip(sliced.layer, sliced["accuracy (CoNLL-2000 test)"])) == {
        layer: value[(20, layer)] for layer in ("0", "1", "2")
    }
    claim = tables["claims"].set_index("claim").loc[CLAIMS[1].text]  # first > top, on the full run's outcomes
    assert claim[DIFF] == pytest.approx(value[(None, "1")] - value[(None, "2")], abs=0.01)
    assert tables["selectivity_mdl"].selectivity.tolist() == ["20.00"]
    assert tables["selectivity_mdl (limit 20)"].selectivity.tolist() == ["5.00"]
    assert "published_rigor (limit 20)" not in tables  # the papers' numbers sit beside the full runs only
    named = titles(tables)
    assert list(named)[-3:] == ["pos (limit 20)", "claims (limit 20)", "selectivity_mdl (limit 20)"]
    assert named["pos (limit 20)"].startswith(named["pos"]) and "--limit 20" in named["pos (limit 20)"]


def test_a_name_of_yours_that_holds_first_n_is_still_a_slice():
    """Only the lab's own slice names (ending "-first2000") say their slice; a --name "news-first1" run with
    --limit 1 read back under the full run's dataset and replaced it."""
    from probes.results import slice_label, sliced

    def read_back(dataset: str, limit: int) -> str:
        return sliced(dataset, slice_label({"limit": limit}, dataset))

    assert read_back("news-first1@1a2b3c4d:test:UPOS", 1) == "news-first1@1a2b3c4d:test:UPOS (limit 1)"
    assert read_back("semcor-first2000", 2000) == "semcor-first2000"
    assert read_back("semcor-first40 vs minilm", 40) == "semcor-first40 vs minilm"
    assert read_back("semcor-first2000", 20) == "semcor-first2000 (limit 20)"
