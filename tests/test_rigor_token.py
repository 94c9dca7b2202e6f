"""The token probes' rigor options (probes/tasks/rigor_options.py): checked once, rows of a layer, and the
pos probe with --control / --mdl / --probe on a real CoNLL-2000 slice."""

from __future__ import annotations

import numpy as np
import pytest

from probes.errors import ProbeInputError
from probes.stats.units import Units
from probes.tasks.conll import conll_slice
from probes.tasks.rigor_options import RIGOR_OPTIONS, RigorOptions, layer_rows, row_offsets


def test_defaults_are_todays_probe_and_bad_options_fail_early():
    assert RigorOptions.from_options({}).is_default and RigorOptions.from_options({}).params() == {}
    opts = RigorOptions.from_options({"probe": "mlp", "hidden": "64,32", "dropout": 0.1, "control": True})
    assert opts.family.hidden == (64, 32) and opts.params()["probe_family"] == "mlp-64x32 (dropout 0.1)"
    for bad, flag in (
        ({"probe": "svm"}, "--probe"),
        ({"probe": "rank"}, "--rank"),
        ({"hidden": "x"}, "--hidden"),
        ({"dropout": 1.5}, "--dropout"),
    ):
        with pytest.raises(ProbeInputError, match=flag):
            RigorOptions.from_options(bad)
    assert {o.name for o in RIGOR_OPTIONS} >= {"control", "mdl", "probe", "hidden", "rank", "dropout", "weight_decay"}


def test_row_offsets_of_selected_rows():
    offsets = np.array([0, 3, 5, 9])
    assert list(row_offsets(offsets, None)) == [0, 3, 5, 9]
    assert list(row_offsets(offsets, np.array([0, 2, 5, 6, 8]))) == [0, 2, 2, 5]


def test_layer_rows_on_word_identity_vectors():
    train, test = conll_slice("train", 200), conll_slice("test", 100)
    words = np.array([w for s in train for w in s.words])
    tags = np.array([t for s in train for t in s.pos])
    twords = np.array([w for s in test for w in s.words])
    vocab = {w: i for i, w in enumerate(np.unique(np.concatenate([words, twords])))}
    emb = np.random.default_rng(0).standard_normal((len(vocab), 64)).astype(np.float32)
    X, Xt = emb[[vocab[w] for w in words]], emb[[vocab[w] for w in twords]]
    offsets = np.concatenate([[0], np.cumsum([len(s.words) for s in train])])
    task = np.random.default_rng(1).random(len(twords)) < 0.8
    seen = []
    rows, details = layer_rows(
        RigorOptions(control=True, mdl=True),
        "3",
        X,
        tags,
        words,
        offsets,
        "train-split",
        Xt,
        twords,
        task,
        [
            ("dev", slice(0, 50), Units.instances(50)),
            ("test", slice(50, len(twords)), Units.instances(len(twords) - 50)),
        ],
        seed=0,
        device="cpu",
        progress=lambda f, m: seen.append(f),
    )
    got = {(r["dataset"], r["metric"]): r for r in rows}
    assert set(got) == {
        ("dev", "control_accuracy"),
        ("dev", "selectivity"),
        ("test", "control_accuracy"),
        ("test", "selectivity"),
        ("train-split", "codelength_kbits"),
        ("train-split", "compression"),
        ("train-split", "control_codelength_kbits"),
        ("train-split", "control_compression"),
    }
    sel = got[("test", "selectivity")]
    assert sel["value"] == pytest.approx(
        round(100 * task[50:].mean(), 2) - got[("test", "control_accuracy")]["value"], abs=0.011
    )
    assert sel["lo"] <= sel["value"] <= sel["hi"] and got[("test", "selectivity")]["n"] == len(twords) - 50
    # Word identity is all these vectors hold: the control task (a function of the type) is coded
    # about as well as the real one, both far below the uniform code.
    assert (
        got[("train-split", "compression")]["value"] > 1.2
        and got[("train-split", "control_compression")]["value"] > 1.2
    )
    assert len(details["mdl"]["task"]) == details["mdl"]["orders"] == 3  # three data orders by default
    blocks = details["mdl"]["task"][0]
    assert sum(b["tokens"] for b in blocks) == len(tags) and len(blocks) == 8  # 200 sentences: 8 non-empty blocks
    code = got[("train-split", "codelength_kbits")]
    assert code["unit"] == "data order" and code["clusters"] == 3 and code["lo"] <= code["value"] <= code["hi"]
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def feature_root(tmp_path_factory):
    return tmp_path_factory.mktemp("features")


def test_pos_probe_with_control_and_mdl_keeps_its_accuracy_rows(feature_root):
    from probes.registry import RunContext, get_probe
    from tests.probe_helpers import RandomEmbedder

    spec = get_probe("pos")
    typed = RandomEmbedder(num_layers=2, dim=32, seed=3, version="typed", noise=0.3)
    ctx = RunContext(limit=120, device="cpu", show_progress=False, feature_root=feature_root)
    plain = spec.run(typed, "1", ctx, **spec.options_from({}))
    seen = []
    full = spec.run(
        typed,
        "1",
        RunContext(
            limit=120,
            device="cpu",
            show_progress=False,
            feature_root=feature_root,
            progress=lambda f, m: seen.append(f),
        ),
        **spec.options_from({"control": True, "mdl": True}),
    )
    by = {(r["dataset"], r["metric"]): r for r in full.rows}
    assert [r for r in full.rows if r["metric"] == "accuracy"] == plain.rows  # same numbers as before
    assert {m for d, m in by if d == "conll2000-test"} == {"accuracy", "control_accuracy", "selectivity"}
    assert {m for d, m in by if d == "conll2000-train"} == {
        "codelength_kbits",
        "compression",
        "control_codelength_kbits",
        "control_compression",
    }
    assert by[("conll2000-test", "selectivity")]["value"] == pytest.approx(
        by[("conll2000-test", "accuracy")]["value"] - by[("conll2000-test", "control_accuracy")]["value"], abs=0.011
    )
    assert full.params["control"] and full.params["mdl"] and "control" not in plain.params
    # Five control-label draws by default (issue 26), their interval over the test sentences.
    sel = by[("conll2000-test", "selectivity")]
    assert full.params["control_draws"] == 5 and sel["draws"] == 5 and sel["unit"] == "sentence"
    assert "1" in full.extra["rigor"] and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    for metric in ("selectivity", "codelength_kbits", "compression"):
        assert metric in spec.chart.metrics


def test_cli_probe_family_options(tmp_path, capsys, monkeypatch):
    from probes.cli import main

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path))
    base = ["pos", "--model", "glove-6b-50d", "--limit", "60", "--threads", "1", "--results", str(tmp_path / "r")]
    assert main(base + ["--probe", "rank"]) == 2
    assert "--rank" in capsys.readouterr().err
    assert main(base + ["--probe", "mlp", "--hidden", "16", "--control"]) == 0
    out = capsys.readouterr().out
    assert "selectivity" in out and "control_accuracy" in out
    # Another probe family is its own probe: its rows never replace the linear probe's in the POS table.
    from probes.reporting.rigor_tables import selectivity_mdl_table
    from probes.results import load_results
    from probes.tasks.pos import pos_tables

    assert main(base) == 0
    df = load_results(tmp_path / "r")
    assert set(df[df.model == "glove-6b-50d"].probe) == {"pos", "pos+mlp-16"}
    linear = df[(df.probe == "pos") & (df.model == "glove-6b-50d") & (df.metric == "accuracy")].value.item()
    mlp = df[(df.probe == "pos+mlp-16") & (df.metric == "accuracy")].value.item()
    assert linear != mlp
    table = pos_tables(df, [])["pos"]
    assert table[table.model == "glove-6b-50d"]["accuracy (CoNLL-2000 test)"].tolist() == [linear]
    # ... and the other family's rows have a table of their own (they were in no per-layer table)
    from probes.reporting.tables import build_tables, titles

    tables = build_tables(tmp_path / "r")
    family = tables["pos+mlp-16 (limit 60)"]  # a --limit run: its slice's table
    assert family[family.model == "glove-6b-50d"]["accuracy (CoNLL-2000 test)"].tolist() == [mlp]
    assert titles(tables)["pos+mlp-16 (limit 60)"].startswith(titles(tables)["pos (limit 60)"].split(" — runs")[0])
    assert "— mlp-16 probe" in titles(tables)["pos+mlp-16 (limit 60)"]
    sel = selectivity_mdl_table(df)
    assert set(sel.probe) == {"pos+mlp-16"}
    # Each cell says what its interval resamples and how many random repeats it averages.
    assert set(sel["control draws"]) == {"5"} and set(sel["MDL orders"]) == {"n/a"}
    assert set(sel["control/selectivity CI over"]) == {"60 sentences"}


def test_reproduce_rigor_writes_every_rigor_table(tmp_path, monkeypatch):
    """`reproduce --rigor`: control task and MDL rows, the random-weight twin of each contextual model
    (none for a static one), and the contextuality tables, from one command."""
    from probes.cli import main
    from probes.results import load_results

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert (
        main(
            [
                "reproduce",
                "--models",
                "glove-6b-50d,gpt-small",
                "--probes",
                "pos",
                "--rigor",
                "--limit",
                "30",
                "--threads",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    df = load_results(out / "runs")
    assert set(df.model) == {"glove-6b-50d", "gpt-small", "random:gpt-small@0", "majority-tag"}
    measured = set(df[df.metric == "selectivity"].model)
    assert measured == {"glove-6b-50d", "gpt-small", "random:gpt-small@0"}
    assert {"codelength_kbits", "control_codelength_kbits"} <= set(df[df.model == "gpt-small"].metric)
    tables = (out / "tables.md").read_text()
    assert "Control task selectivity" in tables and "random:gpt-small@0" in tables
    ctx = load_results(out / "contextuality" / "runs")
    assert set(ctx.model) == {"glove-6b-50d", "gpt-small"}  # the trained models, not the twins
    assert (out / "contextuality" / "tables.md").is_file()


def test_the_estimate_counts_a_fit_per_mdl_order_of_both_codes():
    """``--mdl`` fits a task and a control code in each of its data orders (``mdl_orders``, 3 by default): the
    estimate printed before a run counted two fits in all, a third of the training time of a default MDL run."""
    from probes.estimate import estimate_run
    from probes.registry import get_probe
    from tests.probe_helpers import RandomEmbedder

    spec = get_probe("pos")
    model = RandomEmbedder(num_layers=2, dim=16, seed=3)
    options = {"control": True, "mdl": True, "mdl_orders": 4}
    est = estimate_run(spec, model, layers="0,1", limit=20, options=options, device="cpu")
    assert est.fits == 2 * (1 + 5 + 2 * 4)  # two layers × (the task, five control draws, task + control × 4 orders)
    plain = estimate_run(spec, model, layers="0,1", limit=20, options={}, device="cpu")
    assert plain.fits == 2
