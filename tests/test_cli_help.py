"""Every command line's ``--help`` states its options' defaults (``corpora.cli_help.state_defaults``): most options
left theirs unsaid, subcommands included, while the ones that said theirs in words must not say it twice."""

from __future__ import annotations

import argparse

import pytest

from corpora.cli_help import state_defaults


def test_defaults_are_added_to_subcommands_once_and_never_to_switches_or_options_without_one() -> None:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--top", type=int, default=3, help="a count")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", aliases=["r"])
    run.add_argument("--epochs", type=int, default=10, help="passes over the data")
    run.add_argument("--device", default=None, help="torch device")
    run.add_argument("--layers", default="all", help="which layers (default: every layer and their mean)")
    run.add_argument("--quiet", action="store_true", help="say less")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("data", nargs="?", default="x.txt", help="a positional's default is its own business")
    state_defaults(state_defaults(parser))  # twice: still once
    helps = {a.dest: a.help for a in run._actions}
    assert helps["epochs"] == "passes over the data (default: %(default)s)"
    assert helps["seed"] == "default: %(default)s"
    assert helps["device"] == "torch device" and helps["quiet"] == "say less"
    assert helps["layers"] == "which layers (default: every layer and their mean)"
    assert helps["data"] == "a positional's default is its own business"
    assert "a count (default: 3)" in parser.format_help()
    assert "passes over the data (default: 10)" in " ".join(run.format_help().split())


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["pos", "--help"], "(default: 1e-06)"),  # --weight-decay, a probe's own option
        (["reproduce", "--help"], "(default: 0)"),  # --seed
        (["sweep", "--help"], "(default: linear)"),  # --probe, in a command of a higher layer (probes/__main__)
    ],
)
def test_the_probe_commands_help_states_the_defaults(argv, said, capsys) -> None:
    from probes.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    assert said in " ".join(capsys.readouterr().out.split())
