"""`python -m probes stats`: the counts table on the real data, one clear message without it."""

from __future__ import annotations

import os
import subprocess
import sys

from corpora.paths import REPO_ROOT


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "probes", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )


def test_stats_prints_every_dataset():
    # --no-lm keeps this fast on a cold cache; the LM corpus has its own tests.
    proc = _run("stats", "--no-lm")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("  ")[0].strip(): line for line in proc.stdout.splitlines()}
    assert "352" in rows["SemCor 3.0"] and "226,695" in rows["SemCor 3.0"] and "234,843" in rows["SemCor 3.0"]
    assert "7,253" in rows["WSD ALL"]
    for name in ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015"):
        assert f"WSD {name}" in rows
    conll = [line for line in proc.stdout.splitlines() if line.startswith("CoNLL-2000")]
    assert "8,936" in conll[0] and "2,012" in conll[1]
    assert "3,914" in rows["Treebank sample"]
    assert "Traceback" not in proc.stderr
    # a cold cache parses every corpus (about a minute, silent before): stderr says what it reads
    assert "reading SemCor 3.0 …" in proc.stderr and "reading UD English EWT …" in proc.stderr


def test_stats_without_data_exits_2_with_one_clear_message(tmp_path):
    for data in ("/nonexistent/embprobe-data", str(tmp_path)):
        proc = _run("stats", EMBPROBE_DATA=data, EMBPROBE_CACHE=str(tmp_path / "cache"))
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert "Traceback" not in proc.stderr
        lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("reading ")]
        assert len(lines) == 1 and lines[0].startswith("error: Missing or unreadable data item")
        assert "EMBPROBE_DATA" in lines[0]
    assert "semcor3.0" in lines[0] and "mihalcea" in lines[0]  # names the item and where to get it


def test_unknown_command_is_a_usage_error():
    proc = _run("frobnicate")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_a_missing_treebank_split_is_a_row_saying_so(data_root, tmp_path, monkeypatch):
    """Without UD EWT the table dropped its rows without a word (the README says stats fails clearly when a dataset
    is missing; EWT is optional, so its rows say MISSING)."""
    from corpora.stats import ud_ewt_rows

    (tmp_path / "ud_english_ewt").mkdir()
    (tmp_path / "ud_english_ewt" / "en_ewt-ud-dev.conllu").symlink_to(data_root / "ud_english_ewt/en_ewt-ud-dev.conllu")
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    rows = {r["split"]: r for r in ud_ewt_rows()}
    assert rows["dev"]["sentences"] == 2001 and rows["train"]["files"] == rows["test"]["files"] == 0
    assert rows["train"]["notes"].startswith("MISSING: ud_english_ewt/en_ewt-ud-train.conllu not in the data")
