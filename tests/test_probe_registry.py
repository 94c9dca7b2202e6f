"""Adding a probe is one new module plus one registry line, and it shows in the command line and the app.

The toy probes below are written as modules of their own into a temporary directory; the one registry
line is ``PROBES["toy"] = "toy_probe:PROBE"``. ``toy`` (mean vector norm per layer on CoNLL-2000 test)
runs on built-in data; ``toyfiles`` (the same on the words of the user's files) declares its input
files and preview, and is then a command, a ``reproduce`` and ``sweep`` probe, a saved-results tab on
the Probes page and a task of its upload tab.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from probes.cli import build_parser, main
from probes.registry import PROBES, all_probes, builtin_probe_names, get_probe
from probes.results import load_results

REPO = Path(__file__).resolve().parent.parent

TOY_MODULE = '''
"""A toy probe: the mean Euclidean norm of the word vectors of each layer spec, on CoNLL-2000 test."""
import numpy as np

from probes.tasks.conll import DATASET, conll_slice, feature_key
from features.extract import get_features
from probes.layers import as_layer_specs, needed_layers
from probes.registry import ChartSpec, ProbeSpec
from probes.results import ProbeResult


def run(embedder, layers, ctx, **options):
    specs = as_layer_specs(layers, embedder.num_layers)
    sents = conll_slice("test", ctx.limit)
    feats = get_features(embedder, feature_key("test", ctx.limit), [list(s.words) for s in sents],
                         needed_layers(specs, embedder.num_layers), show_progress=False, root=ctx.feature_root)
    layers = {j: np.asarray(feats.layer(j), np.float32) for j in needed_layers(specs, embedder.num_layers)}
    rows = [{"dataset": "conll2000-test", "layer": s.label, "metric": "norm",
             "value": round(float(np.linalg.norm(s.combine(layers, embedder.num_layers), axis=1).mean()), 4),
             "n": feats.num_words} for s in specs]
    return ProbeResult(embedder.name, "toy", rows, dataset=DATASET, fingerprint=embedder.fingerprint())


PROBE = ProbeSpec(name="toy", title="Toy — mean vector norm", description="mean vector norm per layer (toy)",
                  run=run, baselines=lambda ctx, **options: [], tables=lambda df, extras: {}, table_titles={},
                  chart=ChartSpec(metrics=("norm",)))
'''


TOY_FILES_MODULE = '''
"""A toy probe on the user's files: the mean vector norm per layer of the words of each file (one
sentence a line, words separated by spaces)."""
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from features.extract import get_features
from probes.inputs import InputFile, Preview
from probes.layers import as_layer_specs, needed_layers
from probes.registry import ChartSpec, Option, ProbeSpec
from probes.results import ProbeResult

ROLES = ("train", "test")


def sentences(path, limit):
    return [line.split() for line in Path(path).read_text().splitlines() if line.strip()][:limit]


def run(embedder, layers, ctx, train=None, test=None, norm="l2"):
    specs = as_layer_specs(layers, embedder.num_layers)
    needed = needed_layers(specs, embedder.num_layers)
    rows = []
    for role, path in (("train", train), ("test", test)):
        key = f"toyfiles-{role}-" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
        feats = get_features(embedder, key, sentences(path, ctx.limit), needed, show_progress=False,
                             root=ctx.feature_root)
        vecs = {j: np.asarray(feats.layer(j), np.float32) for j in needed}
        rows += [{"dataset": f"words:{role}", "layer": s.label, "metric": "norm", "n": feats.num_words,
                  "value": round(float(np.linalg.norm(s.combine(vecs, embedder.num_layers), ord=1 if norm == "l1"
                                                      else 2, axis=1).mean()), 4)} for s in specs]
    return ProbeResult(embedder.name, "toyfiles", rows, dataset="words", fingerprint=embedder.fingerprint(),
                       params={"train": train, "test": test, "norm": norm})


def preview(limit, options):
    counts = pd.DataFrame([{"file": r, "sentences": len(sentences(options[r], limit))} for r in ROLES])
    words = [w for s in sentences(options["train"], limit) for w in s]
    return Preview("words", f"{len(words)} training words", counts, pd.DataFrame({"label": []}),
                   pd.DataFrame({"word": words[:8]}))


PROBE = ProbeSpec(name="toyfiles", title="Toyfiles — mean vector norm of your words",
                  description="mean vector norm per layer of the words in your files (toy)",
                  run=run, baselines=lambda ctx, **options: [], tables=lambda df, extras: {}, table_titles={},
                  chart=ChartSpec(metrics=("norm",)), needs_files=True,
                  options=(Option("train", help="training file"), Option("test", help="test file"),
                           Option("norm", default="l2", choices=("l2", "l1"), help="which vector norm")),
                  inputs=(InputFile("train", ("words",)), InputFile("test", ("words",))), preview=preview)
'''
WORDS = b"the cat sat on the mat\nstocks fell sharply in early trading\n"


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_probe.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PROBES, "toy", "toy_probe:PROBE")  # the one registry line
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def toy_files(tmp_path, monkeypatch):
    (tmp_path / "toy_files_probe.py").write_text(textwrap.dedent(TOY_FILES_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PROBES, "toyfiles", "toy_files_probe:PROBE")  # the one registry line
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "words.txt").write_bytes(WORDS)
    return tmp_path


def test_registry_lists_the_paper_probes_in_order():
    assert [spec.name for spec in all_probes()] == [
        "wsd",
        "pos",
        "mix",
        "tag",
        "span",
        "contextuality",
        "cka",
        "structural",
        "head_syntax",
    ]
    assert builtin_probe_names() == ["wsd", "pos", "mix"]  # tag, span: the user's files; the analyses on request
    with pytest.raises(ValueError, match="Unknown probe 'ner'"):
        get_probe("ner")


def test_a_new_probe_is_a_command(toy, capsys):
    assert "toy" in build_parser().format_help()
    out = toy / "results"
    assert main(["toy", "--model", "glove-6b-50d", "--limit", "5", "--results", str(out)]) == 0
    df = load_results(out)
    assert list(df["probe"].unique()) == ["toy"] and list(df["layer"]) == ["0"]
    assert df["value"].iloc[0] > 0 and df["n"].iloc[0] > 50
    assert "glove-6b-50d" in capsys.readouterr().out


def test_a_new_probe_is_on_the_probes_page(toy):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300).run()
    at.query_params["tab"] = "Run a quick probe"
    at.switch_page("app_pages/probes.py").run()
    assert "Toy — mean vector norm" in at.selectbox(key="probe_kind").options  # shown by title
    from tests.test_app import quick_run

    quick_run(at, "toy", "glove-6b-50d", 5)
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert any("Toy on glove-6b-50d" in s.value for s in at.success)
    at.session_state["quick_toy_table_open"] = True  # the model × layer table opens on demand (issue 30)
    at.run()
    assert any(list(d.value.columns) == ["0"] for d in at.dataframe)


def test_every_declared_input_file_is_an_option_of_its_probe():
    """The upload tab passes a file as the option named by its role: without that option it would be lost."""
    with_files = [spec for spec in all_probes() if spec.inputs]
    assert {"tag", "span", "wsd"} <= {spec.name for spec in with_files}
    for spec in with_files:
        assert {f.role for f in spec.inputs} <= {o.name for o in spec.options}, spec.name
        # a file is optional only where the probe has data of its own (contextuality: SemCor)
        assert spec.preview is not None and (any(f.required for f in spec.inputs) or not spec.needs_files), spec.name


def _norms(results) -> dict[tuple[str, str], float]:
    """(model, dataset) -> the toy's norm, from saved toyfiles results."""
    return {
        (r["model"], row["dataset"]): row["value"] for r in results if r["probe"] == "toyfiles" for row in r["rows"]
    }


def test_a_probe_on_files_is_a_command_a_reproduce_and_a_sweep_probe(toy_files):
    from probes.__main__ import main  # the program: probes.cli's commands and cluster's sweep

    words = str(toy_files / "words.txt")
    files = ["--train", words, "--test", words]
    assert main(["toyfiles", "--model", "glove-6b-50d", *files, "--results", str(toy_files / "cli")]) == 0
    cli = _norms(json.loads(p.read_text()) for p in (toy_files / "cli").glob("*.json"))
    assert set(cli) == {("glove-6b-50d", "words:train"), ("glove-6b-50d", "words:test")}
    assert cli["glove-6b-50d", "words:train"] == cli["glove-6b-50d", "words:test"] > 0  # the same file twice
    assert main(["toyfiles", "--model", "glove-6b-50d", *files, "--norm", "l3"]) == 2  # a choice is checked

    assert (
        main(
            ["reproduce", "--models", "glove-6b-50d", "--probes", "toyfiles", *files, "--out", str(toy_files / "repro")]
        )
        == 0
    )
    assert _norms(json.loads(p.read_text()) for p in (toy_files / "repro" / "runs").glob("*.json")) == cli

    assert (
        main(
            ["sweep", "--models", "glove-6b-50d", "--probes", "toyfiles", *files, "--results", str(toy_files / "sweep")]
        )
        == 0
    )
    assert _norms(json.loads(p.read_text()) for p in (toy_files / "sweep").glob("*.json")) == cli


def test_a_probe_on_files_is_an_upload_task_and_a_saved_results_tab(toy_files):
    from tests.test_app import open_page

    at = open_page("probes", tab="Your data")
    assert "Toyfiles (words)" in at.radio(key="up_task").options  # its short title and formats
    at.radio(key="up_task").set_value("toyfiles").run()
    # Its uploaders are its declared inputs, its options are widgets (choices: a selectbox).
    assert [(u.key, u.label) for u in at.file_uploader] == [
        ("up_toyfiles_train", "Train file"),
        ("up_toyfiles_test", "Test file"),
    ]
    assert at.selectbox(key="up_toyfiles_norm").options == ["l2", "l1"]
    for role in ("train", "test"):
        at.file_uploader(key=f"up_toyfiles_{role}").upload(f"{role}.txt", WORDS)
    at.run()
    assert any(d.value["word"].tolist()[:3] == ["the", "cat", "sat"] for d in at.dataframe if "word" in d.value)
    at.selectbox(key="up_model").set_value("glove-6b-50d")
    at.button(key="up_run").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    saved = [json.loads(p.read_text()) for p in (toy_files / "cache" / "results").glob("*.json")]
    assert set(_norms(saved)) == {("glove-6b-50d", "words:train"), ("glove-6b-50d", "words:test")}

    at = open_page("probes", saved="Toyfiles")  # the run is a tab of the saved results
    mine = next(o for o in at.selectbox(key="probe_results_dir").options if str(toy_files) in o)
    at.selectbox(key="probe_results_dir").set_value(mine).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    at.session_state["saved_toyfiles_table_open"] = True  # the table opens on demand
    at.run()
    table = next(d.value for d in at.dataframe if "glove-6b-50d" in d.value.index)
    assert list(table.columns) == ["0"] and float(table.loc["glove-6b-50d", "0"]) > 0
