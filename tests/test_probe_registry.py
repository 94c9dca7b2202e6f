"""Adding a probe is one new module plus one registry line, and it shows in the command line and the app.

The toy probe below (mean vector norm per layer on CoNLL-2000 test) is written as a module of its
own into a temporary directory; the one registry line is ``PROBES["toy"] = "toy_probe:PROBE"``.
"""
from __future__ import annotations

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


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_probe.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PROBES, "toy", "toy_probe:PROBE")   # the one registry line
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_registry_lists_the_paper_probes_in_order():
    assert [spec.name for spec in all_probes()] == ["wsd", "pos", "mix", "tag", "span"]
    assert builtin_probe_names() == ["wsd", "pos", "mix"]      # tag and span run only on the user's files
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
    assert "Toy — mean vector norm" in at.selectbox(key="probe_kind").options   # shown by title
    at.selectbox(key="probe_kind").set_value("toy").run()
    at.selectbox(key="probe_model").set_value("glove-6b-50d").run()
    at.number_input(key="probe_limit").set_value(5).run()
    at.button(key="probe_run").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert any("Toy on glove-6b-50d" in s.value for s in at.success)
    assert any(list(d.value.columns) == ["0"] for d in at.dataframe)
