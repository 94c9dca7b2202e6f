"""The ``span`` probe on edge-probing files made from a real UD EWT slice: single spans (UPOS of each word)
and span pairs (dependency arcs labelled with DEPREL), both poolings, baselines and bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from corpora.format_errors import DataFormatError
from probes.errors import ProbeInputError
from probes.registry import RunContext
from probes.tasks.span import pool, run_span, span_baselines
from tests.probe_helpers import RandomEmbedder


def ewt_records(data_root: Path, split: str, n: int) -> list[dict]:
    """The first ``n`` sentences of a UD EWT file as edge-probing records: every word a span labelled with
    its UPOS, every dependency arc a (dependent, head) pair labelled with its DEPREL."""
    out, rows = [], []
    with open(data_root / "ud_english_ewt" / f"en_ewt-ud-{split}.conllu", encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) == 10 and cols[0].isdigit():
                rows.append(cols)
            elif not line.strip() and rows:
                out.append({"text": " ".join(r[1] for r in rows), "words": rows})
                rows = []
                if len(out) == n:
                    break
    return out


def write(path: Path, records: list[dict], pairs: bool) -> Path:
    lines = []
    for rec in records:
        rows = rec["words"]
        if pairs:
            targets = [
                {"span1": [i, i + 1], "span2": [int(r[6]) - 1, int(r[6])], "label": r[7]}
                for i, r in enumerate(rows)
                if r[6] != "0"
            ]
        else:
            targets = [{"span1": [i, i + 1], "label": r[3]} for i, r in enumerate(rows)]
        lines.append(json.dumps({"text": rec["text"], "targets": targets}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_pooling_is_the_mean_or_the_endpoints():
    X = np.arange(24, dtype=np.float16).reshape(6, 4)
    spans = np.array([[0, 3], [4, 5]])
    np.testing.assert_allclose(pool(X, spans, "mean"), [X[0:3].astype(np.float32).mean(0), X[4]])
    np.testing.assert_array_equal(pool(X, spans, "endpoints"), [np.r_[X[0], X[2]], np.r_[X[4], X[4]]])


@pytest.mark.parametrize("pairs, pooling", [(False, "mean"), (True, "endpoints")])
def test_span_probe_on_ewt_spans_and_arcs(data_root, tmp_path, pairs, pooling):
    train = write(tmp_path / "train.jsonl", ewt_records(data_root, "train", 80), pairs)
    test = write(tmp_path / "test.jsonl", ewt_records(data_root, "test", 40), pairs)
    typed = RandomEmbedder(num_layers=2, dim=32, seed=2, version="typed")
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "f")
    res = run_span(typed, "0,1", ctx, train=str(train), test=str(test), pooling=pooling)
    targets = [t for line in test.read_text().splitlines() for t in json.loads(line)["targets"]]
    assert [(r["layer"], r["n"], r["metric"]) for r in res.rows] == [
        ("0", len(targets), "accuracy"),
        ("1", len(targets), "accuracy"),
    ]
    # another pooling is another task: its rows never replace the mean pooling's in a table
    task = "span" if pooling == "mean" else "span (endpoints pooling)"
    assert res.rows[0]["dataset"] == f"{res.dataset}:test:{task}" and res.extra["pairs"] is pairs
    (base,) = span_baselines(ctx, train=str(train), test=str(test), pooling=pooling)
    assert base.rows[0]["dataset"] == res.rows[0]["dataset"]  # its table has its baseline
    share = 100 * Counter(t["label"] for t in targets).most_common(1)[0][1] / len(targets)
    # Word-identity vectors carry the word's UPOS (and the arc's two words its DEPREL) far better than the
    # most frequent label does; so does the span-text baseline, but a pair's text is rarely seen twice.
    assert res.rows[0]["value"] > share + 10 and base.rows[0]["value"] > share
    assert (res.rows[0]["value"] > base.rows[0]["value"]) if pairs else (base.rows[0]["value"] > share + 10)
    assert all(r["lo"] <= r["value"] <= r["hi"] for r in res.rows + base.rows)


def test_span_bad_input(data_root, tmp_path):
    single = write(tmp_path / "single.jsonl", ewt_records(data_root, "dev", 5), False)
    pairs = write(tmp_path / "pairs.jsonl", ewt_records(data_root, "dev", 5), True)
    with pytest.raises(ProbeInputError, match="mix single spans and span pairs"):
        span_baselines(RunContext(), train=str(single), test=str(pairs))
    # a file whose first line has no target is judged by its first target (it was a traceback in the probe)
    no_target = json.dumps({"text": "Nothing here .", "targets": []})
    late = tmp_path / "late.jsonl"
    late.write_text(no_target + "\n" + single.read_text(), encoding="utf-8")
    with pytest.raises(ProbeInputError, match="mix single spans and span pairs"):
        span_baselines(RunContext(), train=str(pairs), test=str(late))
    with pytest.raises(ProbeInputError, match="--pooling 'max'"):
        span_baselines(RunContext(), train=str(single), test=str(single), pooling="max")
    broken = tmp_path / "broken.jsonl"
    lines = single.read_text().splitlines()
    rec = json.loads(lines[2])
    rec["targets"][0]["span1"] = [0, len(rec["text"].split()) + 1]
    broken.write_text("\n".join(lines[:2] + [json.dumps(rec)] + lines[3:]))
    with pytest.raises(DataFormatError, match=r"broken\.jsonl:3: span1 \[0, \d+\) is out of range"):
        span_baselines(RunContext(), train=str(single), test=str(broken))
    # test labels in another case than training's: every probe and the baseline scored 0.00, said nowhere
    lower = tmp_path / "lower.jsonl"
    lower.write_text(single.read_text().replace('"label": "NOUN"', '"label": "noun"').lower(), encoding="utf-8")
    with pytest.raises(ProbeInputError, match=r"labels \(.*\) never occur in the training.*'noun' \(train: 'NOUN'\)"):
        span_baselines(RunContext(), train=str(single), test=str(lower))


def test_span_is_a_command_with_its_options():
    from probes.cli import build_parser

    args = build_parser().parse_args(
        [
            "span",
            "--model",
            "minilm",
            "--train",
            "a.jsonl",
            "--test",
            "b.jsonl",
            "--pooling",
            "endpoints",
            "--name",
            "arcs",
        ]
    )
    assert (args.train, args.test, args.dev, args.pooling, args.name) == (
        "a.jsonl",
        "b.jsonl",
        None,
        "endpoints",
        "arcs",
    )


def test_test_labels_training_never_has_are_said_with_the_accuracy_they_cap(data_root, tmp_path):
    """Up to half the test targets could carry labels training never has: scored wrong by every probe, kept only
    in ``extra["unseen_test_labels"]``, printed nowhere (a command printed "accuracy 66.67" that could be no more)."""
    train = write(tmp_path / "train.jsonl", ewt_records(data_root, "train", 40), False)
    records = [json.loads(line) for line in write(tmp_path / "t.jsonl", ewt_records(data_root, "test", 10), False)
               .read_text().splitlines()]  # fmt: skip
    records[0]["targets"][0]["label"] = "ZZZ"
    records[1]["targets"][0]["label"] = "ZZZ"
    test = tmp_path / "test.jsonl"
    test.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    n = sum(len(r["targets"]) for r in records)
    ctx = RunContext(device="cpu", show_progress=False, feature_root=tmp_path / "f")
    res = run_span(RandomEmbedder(num_layers=1, dim=16, seed=2), "0", ctx, train=str(train), test=str(test))
    cap = 100 * (n - 2) / n
    assert res.extra["warning"] == (
        f"2 of the test file's {n:,} labels ('ZZZ') never occur in training: no probe can predict them, so its "
        f"accuracy is at most {cap:.2f} %."
    )
    assert res.rows[0]["value"] <= cap
    (base,) = span_baselines(ctx, train=str(train), test=str(train))
    assert (
        "warning" not in base.extra
        and "warning"
        not in run_span(RandomEmbedder(num_layers=1, dim=16, seed=2), "0", ctx, train=str(train), test=str(train)).extra
    )


def test_a_pretty_printed_json_file_is_told_to_be_json_lines(tmp_path):
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"text": "a b", "targets": [{"span1": [0, 1], "label": "X"}]}, indent=2))
    with pytest.raises(DataFormatError, match=r"pretty\.json:1: not JSON \(Expecting .*, column 2\)\. Each line holds"):
        span_baselines(RunContext(), train=str(pretty), test=str(pretty))
