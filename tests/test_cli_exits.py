"""Every ``python -m …`` ends the same way (``corpora.errors.run_command``): a request the lab cannot serve is one
``error:`` line and exit 2, Ctrl-C one ``interrupted:`` line saying what was kept and exit 130 (docs/reliability.md,
round eleven: ``probes`` and ``models`` printed a KeyboardInterrupt traceback, ``models train`` any missing-data
traceback)."""

from __future__ import annotations

import pytest


def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "module, patched, argv, kept",
    [
        ("probes.cli", "cmd_stats", ["stats"], "runs saved before it are kept"),
        ("features.__main__", "cmd_index", ["index", "--model", "glove-6b-50d"], "nothing partial is kept"),
        ("cluster.__main__", "run", ["store", "/tmp/x", "list"], "as said above"),
        ("models.__main__", "print_model_table", ["list"], "the model registry is as it was"),
    ],
)
def test_ctrl_c_is_one_line_and_exit_130(module, patched, argv, kept, monkeypatch, capsys):
    import importlib

    cli = importlib.import_module(module)
    monkeypatch.setattr(cli, patched, interrupt)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: ") and kept in err and "Traceback" not in err and err.count("\n") == 1


def test_running_out_of_memory_is_one_error_line_saying_what_to_do(monkeypatch, capsys):
    """A 2-million-sentence CoNLL-U file without ``--limit`` ended, after minutes, in numpy's _ArrayMemoryError
    traceback."""
    import numpy as np

    from probes import cli

    monkeypatch.setattr(cli, "cmd_stats", lambda args: np.empty((10**8, 10**8), dtype=np.float32))  # 40 PB
    assert cli.main(["stats"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory (Unable to allocate") and "--limit N" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_trainer_without_its_data_is_one_error_line(tmp_path, monkeypatch, capsys):
    from models.__main__ import main

    (tmp_path / "nltk_data").mkdir()
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    assert main(["train", "word2vec", "--out", str(tmp_path / "w2v"), "--max-sentences", "100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Missing or unreadable data item 'nltk_data/corpora/brown.zip'")
    assert not (tmp_path / "w2v").exists()


def test_models_train_help_lists_the_trainers(capsys):
    from models.__main__ import main

    assert main(["train", "--help"]) == 0  # was exit 2: "the following arguments are required: kind"
    out = capsys.readouterr().out
    assert "{cbow,elmo,fasttext,glove,gpt,word2vec}" in out and "python -m models train KIND --help" in out


def test_reproduce_writes_its_tables_where_a_tilde_out_points(tmp_path, monkeypatch, capsys):
    """``--out=~/rep`` (a shell leaves it as it is): the runs went to $HOME/rep (the results folder expands ~), the
    tables were read from a literal "./~/rep" and none were written, though the command said they were."""
    from corpora.paths import REPO_ROOT
    from probes.cli import main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    runs = REPO_ROOT / "docs" / "results" / "runs"
    assert main(["reproduce", "--tables-only", "--out", "~/rep", "--results", str(runs)]) == 0
    assert (tmp_path / "home" / "rep" / "tables.md").is_file() and not (tmp_path / "~").exists()


def test_a_sigterm_is_taken_as_ctrl_c_is_its_clean_ups_run_and_it_says_so(capsys):
    """What a scheduler or ``kill`` sends killed every command at once (exit 143, no line): temporaries in ``$TMPDIR``
    and a feature build's "running" stayed (an audit of interrupts). It now unwinds as Ctrl-C does, with exit 143."""
    import os
    import signal

    from corpora.errors import run_command

    cleaned = []

    def body() -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            return 0
        finally:
            cleaned.append(True)

    before = signal.getsignal(signal.SIGTERM)
    assert run_command(body, "nothing partial is kept.") == 143
    assert cleaned and capsys.readouterr().err == "interrupted (SIGTERM): nothing partial is kept.\n"
    assert signal.getsignal(signal.SIGTERM) == before  # the caller's handler again (a notebook, this test runner)
