"""Degenerate data and degenerate numbers (an outside audit, docs/reliability.md round seventeen): each is a clear
error or a value marked n/a, never a traceback, a NaN in a result file, or a number that cannot mean anything."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from probes.__main__ import main
from probes.stats.intervals import accuracy_interval, categorical_interval, paired_test, seed_cluster_interval
from probes.stats.units import SENTENCE, Units


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))  # no entry of another run's stands in


VECTORS = {"the": [1, 0.2, 0], "cat": [0.1, 2, 0.3], "sat": [-1, 0.5, 1], "dog": [0.3, 1.5, 0.2], "ran": [-0.7, 0, 2]}


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _vectors(path: Path, scale: float = 1.0) -> str:
    return _write(path, "".join(f"{w} {' '.join(str(scale * x) for x in v)}\n" for w, v in VECTORS.items()))


def _columns(path: Path, sentences: list[list[tuple[str, str]]]) -> str:
    return _write(path, "\n".join("".join(f"{w} {t}\n" for w, t in s) for s in sentences))


TRAIN = [[("the", "DT"), ("cat", "NN"), ("sat", "VB")], [("dog", "NN"), ("ran", "VB")]] * 4
TEST = [[("the", "DT"), ("dog", "NN"), ("ran", "VB")], [("cat", "NN"), ("sat", "VB")]]


def _tag(tmp_path: Path, capsys, train, test, *flags: str, vectors: str | None = None) -> tuple[int, str, list]:
    results = tmp_path / "results"
    argv = ["tag", "--model", vectors or _vectors(tmp_path / "v.txt"), "--train", _columns(tmp_path / "tr.txt", train)]
    argv += ["--test", _columns(tmp_path / "te.txt", test), "--results", str(results), "-q", *flags]
    code = main(argv)
    saved = [json.loads(p.read_text()) for p in results.glob("*.json")] if results.exists() else []
    return code, capsys.readouterr().err, saved


def test_mdl_and_the_control_task_refuse_a_training_set_of_one_label_or_one_word_type(tmp_path, capsys) -> None:
    """MDL with one label crashed (0/0 in its compression); the control task on one word type or one label gave
    a control accuracy of 100 and a selectivity of −50 or 0 as if they measured something."""
    one_label = [[(w, "X") for w, _ in s] for s in TRAIN]
    code, err, saved = _tag(tmp_path, capsys, one_label, [[("the", "X"), ("cat", "X")]], "--mdl")
    assert code == 2 and "MDL needs at least two labels" in err and "Traceback" not in err and not saved
    one_type = [[("cat", "NN")], [("cat", "VB")]] * 4
    code, err, saved = _tag(tmp_path, capsys, one_type, [[("cat", "NN")], [("cat", "VB")]], "--control")
    assert code == 2 and "two labels and two word types" in err and not saved
    assert not list((tmp_path / "cache").rglob("layer_*.npy"))  # refused before anything was embedded


def test_vectors_too_small_for_the_float16_cache_are_refused_not_scored_as_zeros(tmp_path, capsys) -> None:
    """1e-9-scaled vectors became zeros in the float16 feature cache: accuracy 33 where the same vectors at scale
    1 give 100, and contextuality n/a everywhere; cosine measures do not depend on scale."""
    small = _vectors(tmp_path / "small.txt", 1e-9)
    code, err, saved = _tag(tmp_path, capsys, TRAIN, TEST, vectors=small)
    assert code == 2 and "scale the vectors up" in err and "5 of its 5 word vectors" in err and not saved
    code, err, saved = _tag(tmp_path, capsys, TRAIN, TEST, vectors=_vectors(tmp_path / "big.txt", 1e-3))
    assert code == 0 and saved  # small but normal numbers are fine


def test_a_test_file_that_no_model_word_is_in_is_refused_however_small(tmp_path, capsys) -> None:
    unknown = [[("zebra", "NN"), ("runs", "VB")], [("xylophone", "NN"), ("plays", "VB")]]
    code, err, saved = _tag(tmp_path, capsys, TRAIN, unknown)
    assert code == 2 and not saved and "Traceback" not in err, err


def test_weights_and_decays_that_overflow_are_refused_before_a_run(tmp_path, capsys) -> None:
    code, err, _ = _tag(tmp_path, capsys, TRAIN, TEST, "--weight-decay", "inf")
    assert code == 2 and "--weight-decay inf: give a finite number" in err
    code, err, _ = _tag(tmp_path, capsys, TRAIN, TEST, "--layers", "mix:1e308")  # one layer: a sum of one weight
    assert code == 0
    from probes.layers import parse_layer_specs

    with pytest.raises(ValueError, match="sum overflows"):
        parse_layer_specs("mix:1e308,1e308,1e308", 3)


def test_a_structural_probe_needs_sentences_of_two_words(tmp_path, capsys) -> None:
    """Trained on one-word sentences (no word pair: a training loss of 0 every epoch) it reported UUAS 100."""
    one = "".join("1\tcat\tcat\tNOUN\tNN\t_\t0\troot\t_\t_\n\n" for _ in range(6))
    two = "1\tdogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n" * 3
    argv = ["structural", "--model", _vectors(tmp_path / "v.txt"), "--train", _write(tmp_path / "one.conllu", one)]
    argv += ["--test", _write(tmp_path / "two.conllu", two), "--results", str(tmp_path / "r"), "-q", "--epochs", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no sentence of two words or more" in err and "one.conllu" in err and not (tmp_path / "r").exists()


def test_one_resampling_unit_gives_no_interval_anywhere() -> None:
    """A zero-width interval from one unit claims certainty: ``grouped_interval`` refused it, these paths did not
    (WSD's instance path, per-word rows, seeds × clusters, paired tests)."""
    assert accuracy_interval([True]) == (None, None)
    assert categorical_interval([1, 0, 0], lambda c: 100.0 * c[:, 0] / c.sum(1)) == (None, None)
    assert accuracy_interval([True, False]) != (None, None)
    one = Units.from_sizes(SENTENCE, [3])
    assert seed_cluster_interval(np.array([[1, 1, 0], [1, 0, 0]], bool), one) == (None, None)
    test = paired_test([True], [False])
    assert (test["lo"], test["hi"]) == (None, None) and test["diff"] == 100.0


def test_span_f1_is_undefined_without_chunks_and_resamples_without_any_are_left_out() -> None:
    from probes.estimators.bio import span_f1_row

    none = span_f1_row("test", "0", [["O", "O"], ["O"]], [["O", "O"], ["O"]])
    assert none["value"] is None and none["lo"] is None and none["n"] == 0  # it read "F1 0.00 [0.00, 0.00]"
    gold = [["B-LOC", "O"]] + [["O", "O"]] * 9  # one entity in ten sentences, found
    row = span_f1_row("test", "0", gold, gold)
    assert (row["value"], row["lo"], row["hi"]) == (100.0, 100.0, 100.0)  # was [0.0, 100.0]


def test_cka_refuses_too_few_words_and_a_one_layer_model_against_itself(tmp_path, capsys, monkeypatch) -> None:
    """Two words gave CKA 1.00 between every pair of layers and NaN bounds in the result file."""
    from probes.estimators.cka import cka_interval

    layers = [np.random.default_rng(0).normal(size=(6, 4)) for _ in range(2)]
    lo, hi = cka_interval(layers, None, np.zeros(6, int), resamples=20)  # one sentence
    assert np.isnan(lo).all() and np.isnan(hi).all()
    import probes.tasks.cka as cka_task

    embedded = []  # the refusal comes before the embedding (and the other model's loading), which costs minutes
    monkeypatch.setattr(cka_task, "layer_vectors", lambda *args: embedded.append(args) or [])
    monkeypatch.setattr(cka_task, "load_embedder", lambda *args: embedded.append(args))
    code = main(
        ["cka", "--model", "random:gpt-small@0", "--limit", "3", "--max-vectors", "2", "--results", str(tmp_path)]
        + ["--against", "minilm"]
    )
    assert code == 2 and "CKA needs at least 10" in capsys.readouterr().err and not list(tmp_path.glob("*.json"))
    assert not embedded
    monkeypatch.undo()
    code = main(["cka", "--model", "glove-6b-50d", "--limit", "3", "--results", str(tmp_path)])
    assert code == 2 and "--against" in capsys.readouterr().err
    # reproduce says which model's run its data cannot serve and goes on (it had stopped at the first)
    argv = ["reproduce", "--models", "elmo-small", "--probes", "cka", "--limit", "3", "--max-vectors", "5"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    assert "skipped cka: semcor-first3: 5 word(s)" in capsys.readouterr().out
    # one sentence: no interval, and the printout says the value alone (it had crashed on the stored None bounds)
    assert main(["cka", "--model", "elmo-small", "--limit", "1", "--results", str(tmp_path / "one")]) == 0
    out = capsys.readouterr().out
    assert "1.000" in out and "[" not in out.split("CKA, layer × layer")[1].split("\n")[2], out


def test_non_finite_numbers_never_reach_a_result_file() -> None:
    from probes.run import finite

    rows = [{"value": 1.0, "lo": float("nan"), "hi": np.float32("inf"), "n": 3}]
    assert finite(rows) == [{"value": 1.0, "lo": None, "hi": None, "n": 3}]
    assert finite({"m": np.array([[1.0, np.nan]]), "ok": np.ones(2), "t": (1.5, float("-inf"))})["m"] == [[1.0, None]]
    kept = finite({"ok": np.ones(2)})["ok"]
    assert isinstance(kept, np.ndarray)  # finite arrays are left as they are


def test_a_pos_slice_says_which_test_tags_training_never_has(tmp_path, capsys) -> None:
    """``tag`` warned of test labels training lacks (the accuracy they cap); ``pos`` on a slice did not (an audit:
    --limit 200 leaves WP$, UH and FW out of training)."""
    code = main(["pos", "--model", "glove-6b-50d", "--limit", "200", "--results", str(tmp_path / "r"), "-q"])
    err = capsys.readouterr().err
    assert code == 0 and "never occur in training" in err and "'UH'" in err
    (saved,) = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("glove*.json")]
    assert saved["extra"]["unseen_test_labels"] == {"WP$": 1, "UH": 1, "FW": 1}
