"""Progress, the estimate, the summary table and ``--json`` of a probe command, as a person at a terminal
sees them; the progress of training, ``sweep`` and ``reproduce``; the app's quick probe.

``python -m probes pos --model glove-6b-50d --limit 200`` runs under a pseudo-terminal (``pty``), so
stderr is a terminal and the progress bar is drawn; with pipes (not a terminal) it is not.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cluster.plan import SweepTask
from cluster.sweep import run_sweep
from probes.estimators.classifier import EARLY_STOP, LinearProbe
from probes.progress import TerminalProgress, scaled

REPO = Path(__file__).resolve().parent.parent
POS = ["pos", "--model", "glove-6b-50d", "--limit", "200", "--threads", "1"]
HEADER = re.compile(r"^\s*layer\s+dataset\s+metric\s+score\s+95% interval\s+majority-tag\s+n\b")
ROW = re.compile(
    r"^\s*(\S+)\s+conll2000-test\s+accuracy\s+(\d+\.\d\d)\s+\[(\d+\.\d\d), (\d+\.\d\d)\]\s+(\d+\.\d\d)\s+(\d+)"
)


def _env(cache: Path) -> dict:
    return {**os.environ, "EMBPROBE_CACHE": str(cache), "PYTHONWARNINGS": "ignore", "COLUMNS": "160"}


def run_in_terminal(args: list[str], cache: Path, timeout: float = 300) -> tuple[int, str]:
    """Exit status and everything the command wrote to its terminal (stdout and stderr: one pty)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "probes", *args], cwd=REPO, env=_env(cache), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    out = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        code = proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return code, out.decode("utf-8", "replace").replace("\r\n", "\n")


def table_rows(lines: list[str]) -> list[re.Match]:
    return [m for m in map(ROW.match, lines) if m]


def test_terminal_shows_extraction_and_training_progress_then_the_table(tmp_path):
    code, out = run_in_terminal([*POS, "--results", str(tmp_path / "results")], tmp_path / "cache")
    assert code == 0, out
    lines = out.split("\n")
    head = next(i for i, line in enumerate(lines) if HEADER.match(line))
    progress = "\n".join(lines[:head])  # everything before the table: the estimate, then the bar's redraws
    estimate = re.search(
        r"estimate: glove-6b-50d: 400 sentences, [\d,]+ words in 2 datasets, not cached: ~\d+ s extraction "
        r"writing up to [\d.]+ [MG]B \+ ~\d+ s training \(1 fit × about 50 epochs\)",
        progress,
    )
    assert estimate and estimate.start() < progress.index("epoch 1/200"), progress[:2000]
    # Extraction of both slices (the cache is empty), with sentences per second; the cache key as a person reads it
    for key in ("conll2000-train", "conll2000-test"):
        said = rf"glove-6b-50d, {key}, --limit 200: 200/200 sentences, \d+ sentences/s"
        assert re.search(said, progress), progress[-2000:]
    rows = table_rows(lines[head + 1 :])
    assert rows, out
    for m in rows:  # training progress of every layer the table reports: epochs, learning rate, dev loss
        layer = m.group(1)
        epochs = re.findall(
            rf"POS probe layer {re.escape(layer)}: epoch (\d+)/200, lr [\d.e-]+, "
            rf"dev loss \d\.\d{{4}} \(best \d\.\d{{4}}\)",
            progress,
        )
        assert epochs and epochs[0][0] == "1", (layer, progress[-2000:])
        # the interval surrounds the score; the majority-tag baseline is in its column
        score, lo, hi = float(m.group(2)), float(m.group(3)), float(m.group(4))
        assert lo <= score <= hi and hi - lo < 10
    assert "%|" in progress  # a bar, with its percentage
    after = lines[head + 1 + len(rows) :]
    assert any(line.startswith("saved ") and line.strip().endswith(".json") for line in after), after
    assert "epoch" not in "\n".join(lines[head:])  # the bar is closed before the table


def test_quiet_prints_only_the_table(tmp_path):
    code, out = run_in_terminal([*POS, "--quiet", "--results", str(tmp_path / "results")], tmp_path / "cache")
    assert code == 0, out
    lines = [line for line in out.split("\n") if line.strip() and not line.startswith("warning: ")]  # said, always
    assert HEADER.match(lines[0]), out
    assert len(table_rows(lines[1:])) == len(lines) - 1, out  # nothing but the table: no estimate, bar, "saved"


def test_json_is_the_result_alone_on_stdout_and_no_bar_without_a_terminal(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "probes", *POS, "--json", "--results", str(tmp_path / "results")],
        cwd=REPO,
        env=_env(tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)  # stdout is the JSON and nothing else
    assert data["model"] == "glove-6b-50d" and data["probe"] == "pos"
    rows = [r for r in data["rows"] if r["metric"] == "accuracy"]
    assert rows and all({"layer", "value", "lo", "hi", "n"} <= set(r) for r in rows)
    # The table and the result file go to stderr; stderr is not a terminal, so no progress bar.
    assert any(HEADER.match(line) for line in res.stderr.splitlines()), res.stderr
    saved = [line.split(" ", 1)[1] for line in res.stderr.splitlines() if line.startswith("saved ")]
    assert saved and json.loads(Path(saved[0]).read_text())["rows"] == data["rows"]
    assert "epoch 1/" not in res.stderr and "sentences/s" not in res.stderr and "%|" not in res.stderr
    assert res.stderr.startswith("estimate: glove-6b-50d: 400 sentences")  # the notes are on stderr too


class _Terminal:
    """A stream that says it is a terminal and keeps what is written."""

    def __init__(self, tty: bool = True) -> None:
        self.text, self.tty = "", tty

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty, quiet, drawn", [(True, False, True), (True, True, False), (False, False, False)])
def test_bar_is_drawn_only_on_a_terminal_without_quiet(tty, quiet, drawn):
    stream = _Terminal(tty)
    with TerminalProgress("pos minilm", quiet=quiet, stream=stream) as bar:
        assert (bar.callback is not None) == drawn
        told = scaled(bar, 0.5, 1.0, "layer 2: ")
        told(0.5, "epoch 3/10")
        told(0.0, "epoch 1/10")  # a step restarting at 0 does not move the bar back
    assert ("layer 2: epoch 3/10" in stream.text) == drawn
    if drawn:
        assert " 75%|" in stream.text and "layer 2: epoch 1/10" in stream.text
        assert stream.text.rstrip().endswith("layer 2: epoch 1/10") and " 75%|" in stream.text.split("\r")[-1]


def test_app_quick_probe_shows_the_estimate_before_and_progress_during_the_run(tmp_path, monkeypatch):
    """The Probes page's quick run: the estimate is on the page before "Run probe"; the run feeds a
    progress element (every message it was given is one the run path sent), left at 100% when done."""
    from streamlit.testing.v1 import AppTest

    from app_pages import probe_quick

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))  # nothing cached: the estimate says so
    told: list[tuple[float, str]] = []
    real = probe_quick.run_probe

    def recording_run_probe(*args, progress=None, **kwargs):
        def tell(fraction: float, message: str) -> None:
            told.append((fraction, message))
            progress(fraction, message)

        return real(*args, progress=tell, **kwargs)

    monkeypatch.setattr(probe_quick, "run_probe", recording_run_probe)  # the quick tab's module runs it
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300).run()
    at.query_params.clear()
    at.query_params["tab"] = "Run a quick probe"
    at.switch_page("app_pages/probes.py").run()
    at.selectbox(key="probe_kind").set_value("pos").run()
    at.selectbox(key="probe_model").set_value("glove-6b-50d").run()
    at.number_input(key="probe_limit").set_value(7).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    before = "\n".join(c.value for c in at.caption)
    assert re.search(
        r"Estimate: glove-6b-50d: 14 sentences, [\d,]+ words in 2 datasets, not cached: ~\d+ s extraction", before
    )
    assert not at.get("progress") and not told  # nothing ran yet
    at.button(key="probe_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    bars = at.get("progress")
    assert len(bars) == 1 and bars[0].value == 100, bars
    assert bars[0].text.startswith("Done in ") and told[-1][1] in bars[0].text
    messages = [m for _, m in told]
    assert any("sentences/s" in m for m in messages) and any("POS probe layer 0: epoch 1/200" in m for m in messages)
    assert min(f for f, _ in told) == 0.0 and max(f for f, _ in told) == 1.0
    # After the run the features are cached, and the next estimate says so.
    at.run()
    after = "\n".join(c.value for c in at.caption)
    assert "Estimate: glove-6b-50d: 14 sentences" in after and "all cached: no extraction" in after


def test_training_reports_each_epoch_and_its_patience_without_changing_the_fit():
    """``LinearProbe.fit(progress=…)``: one message per epoch (dev score, patience), the same fit as without."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 8)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + 2 * (rng.random(600) < 0.3)  # learnable, with noise: early stopping can end it
    told: list[tuple[float, str]] = []
    early = {"epochs": 30, "patience": 2, "schedule": EARLY_STOP}
    quiet = LinearProbe(seed=3, device="cpu", **early).fit(X, y)
    loud = LinearProbe(seed=3, device="cpu", **early).fit(X, y, progress=lambda f, m: told.append((f, m)))
    assert loud.history_ == quiet.history_ and (loud.predict(X) == quiet.predict(X)).all()
    assert len(told) == len(loud.history_) and [f for f, _ in told] == [e["epoch"] / 30 for e in loud.history_]
    patience = [int(re.search(r"patience (\d)/2", m).group(1)) for _, m in told]
    assert patience[0] == 0 and all(b in (0, a + 1) for a, b in zip(patience, patience[1:]))
    if len(told) < 30:  # stopped early: the last epoch used up the patience
        assert patience[-1] == 2
    assert all(f"dev {100 * e['val_acc']:.1f}%" in m for (_, m), e in zip(told, loud.history_))


def test_sweep_tells_tasks_done_failed_and_remaining(tmp_path):
    tasks = [SweepTask("pos", "a", 0, 20), SweepTask("pos", "b", 0, 20), SweepTask("pos", "c", 0, 20)]

    class Executor:  # runs the first task, fails the second (the executors' FAILED line), runs the third
        name = "test"

        def run(self, todo, env, command, on_done, say):
            on_done(todo[0], {"results": [], "seconds": 0.1})
            say(f"   FAILED {todo[1].label}: ValueError: boom")
            on_done(todo[2], {"results": [], "seconds": 0.1})

    told: list[tuple[float, str]] = []
    run_sweep(tasks, Executor(), None, tmp_path, progress=lambda f, m: told.append((f, m)), say=lambda line: None)
    assert [f for f, _ in told] == [0.0, 1 / 3, 2 / 3, 1.0]
    assert [m.split(" (")[0] for _, m in told] == [
        "0 done, 0 failed, 3 remaining",
        "1 done, 0 failed, 2 remaining",
        "1 done, 1 failed, 1 remaining",
        "2 done, 1 failed, 0 remaining",
    ]


def test_reproduce_tells_model_and_probe_of_each_run(tmp_path, monkeypatch):
    from models.registry import load_embedder
    from probes.registry import get_probe
    from probes.reproduce import reproduce

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    told: list[tuple[float, str]] = []
    glove = load_embedder("glove-6b-50d")
    specs = [get_probe("pos"), get_probe("mix")]  # mix is skipped for a static model: its step still counts
    reproduce(
        {"glove-6b-50d": glove},
        specs,
        tmp_path / "out",
        options={},
        limit=5,
        show_progress=False,
        progress=lambda f, m: told.append((f, m)),
        say=lambda line: None,
    )
    messages = [m for _, m in told]
    assert messages[0].startswith("baselines 1/2 pos: ") and any(m.startswith("baselines 2/2 mix: ") for m in messages)
    ours = [m for m in messages if m.startswith("model 1/1 glove-6b-50d · probe 1/2 pos: ")]
    assert any("features from cache" in m for m in ours)  # the mix baseline embedded the same slices with GloVe
    assert any("POS probe layer 0: epoch 1/200" in m for m in ours)
    fractions = [f for f, _ in told]
    assert all(0.0 <= f <= 1.0 for f in fractions) and max(fractions) <= 3 / 4  # pos is run 3 of 4 (mix skipped)
