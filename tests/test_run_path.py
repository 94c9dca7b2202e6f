"""The one run path (``probes.run.run_probe``): every check before any extraction or file, the Python
API of the README, and the program's entry point (``python -m probes``) composing the commands."""

from __future__ import annotations

import pytest

from probes.__main__ import main as program
from probes.cli import build_parser, main
from probes.errors import ProbeInputError
from probes.registry import get_probe
from probes.run import load_model, run_probe


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dropout", "1.5"], "--dropout 1.5"),  # an option (checked before the baselines)
        (["--probe", "svm"], "--probe 'svm'"),
        (["--probe", "rank"], "--rank"),  # a combination only the runner checks
        (["--layers", "0,7"], "out of range"),  # the layers, against the model
    ],
)
def test_a_bad_request_writes_no_file(extra, message, tmp_path, cache, capsys):
    out = tmp_path / "results"
    assert main(["pos", "--model", "glove-6b-50d", "--limit", "10", "--results", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not out.exists() or list(out.iterdir()) == []  # the old CLI had saved majority-tag first


def test_options_are_checked_before_the_baselines_run(monkeypatch, cache):
    ran = []
    monkeypatch.setattr("probes.tasks.pos.conll_splits", lambda limit: ran.append(limit))
    with pytest.raises(ProbeInputError, match="--dropout"):
        run_probe("pos", "glove-6b-50d", limit=10, options={"dropout": 1.5})
    assert ran == []  # no data read, no baseline computed


def test_a_registered_models_bad_layers_are_one_error_line(tmp_path, monkeypatch, cache, capsys):
    from models.tiny import make_tiny_checkpoint

    ckpt = make_tiny_checkpoint("bert", tmp_path / "tiny", layers=2, hidden=32, heads=2)
    capsys.readouterr()  # the checkpoint writer's progress bars
    toml = tmp_path / "embprobe.toml"
    toml.write_text(f'[models.mine]\nref = "{ckpt}"\nlayers = [0, 7]\n')
    monkeypatch.setenv("EMBPROBE_MODELS", str(toml))
    assert main(["pos", "--model", "mine", "--limit", "5", "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "\nerror: layers: 7 is not a layer of mine" in "\n" + err and "Traceback" not in err
    assert not (tmp_path / "res").exists()


def test_the_python_api_of_the_readme(tmp_path, cache):
    from probes import run_probe as lazy_run_probe

    df = lazy_run_probe("pos", "glove-6b-50d", limit=20).to_frame()
    assert set(df.model) == {"glove-6b-50d", "majority-tag"} and (df.metric == "accuracy").all()
    emb = load_model("glove-6b-50d")
    run = run_probe("pos", emb, limit=20, results_dir=tmp_path / "res", command="notebook")
    assert run.result.rows == run_probe(get_probe("pos"), "glove-6b-50d", limit=20).result.rows  # same numbers
    assert [p.name.split("__")[0] for p in run.saved] == ["majority-tag", "glove-6b-50d"]
    assert {r.command for r in run.results} == {"notebook"} and all(r.timestamp for r in run.results)
    only = run_probe("pos", None, limit=20)  # baselines only
    assert only.result is None and [r.model for r in only.results] == ["majority-tag"] and only.saved == []
    with pytest.raises(ProbeInputError, match="Nothing to run"):
        run_probe("pos", None, baselines=False)


def test_the_program_adds_sweep_and_extract_and_the_probes_cli_does_not(capsys):
    commands = lambda parser: set(parser._subparsers._group_actions[0].choices)
    assert {"pos", "reproduce", "stats"} <= commands(build_parser()) and "sweep" not in commands(build_parser())
    assert program(["sweep", "--models", "glove-6b-50d", "--probes", "nope"]) == 2
    assert "Unknown probe 'nope'" in capsys.readouterr().err


def test_tables_only_rerenders_every_committed_report_byte_identical(tmp_path, capsys):
    import filecmp
    import shutil

    from corpora.paths import REPO_ROOT

    out = tmp_path / "results"
    shutil.copytree(REPO_ROOT / "docs" / "results", out)
    assert main(["reproduce", "--out", str(out), "--tables-only"]) == 0
    printed = capsys.readouterr().out
    assert f"{out}/tables.md" in printed and f"{out}/contextuality/tables.md" in printed  # a probe's own report
    for folder in ("", "contextuality"):
        cmp = filecmp.dircmp(REPO_ROOT / "docs" / "results" / folder, out / folder)
        assert cmp.diff_files == [] and cmp.left_only == cmp.right_only == []


def test_a_missing_dataset_is_said_before_the_model_loads(monkeypatch, tmp_path, cache):
    """``probes pos --model minilm`` without the data loaded the model (a "Loading weights" bar, 5 s) and only then
    said what was missing: the run reads what it will embed first."""
    from corpora.paths import DataMissingError

    loaded = []
    monkeypatch.setattr("probes.run.load_model", lambda *a, **k: loaded.append(a))
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "no-data"))
    (tmp_path / "no-data").mkdir()
    for probe in ("pos", "wsd", "structural", "head_syntax"):
        with pytest.raises(DataMissingError):
            run_probe(probe, "minilm", limit=5)
    assert loaded == []


def test_every_probe_that_reads_data_says_what_it_embeds(cache):
    """A probe without ``embeds`` loaded the model before its data was read (row 119 did not reach the structural,
    head-syntax and span probes) and gave no estimate; every probe that embeds a dataset declares it, and its sentences
    are the ones the run reads."""
    from probes.registry import all_probes

    without = [s.name for s in all_probes() if s.embeds is None]
    assert without == [], without
    structural = get_probe("structural").embeds(3, get_probe("structural").options_from({}))
    assert [len(sentences) for _, sentences in structural] == [3, 3, 3]
    assert all(key and key.endswith("-limit3") for key, _ in structural)
    heads = get_probe("head_syntax").embeds(4, get_probe("head_syntax").options_from({}))
    assert [(key, len(sentences)) for key, sentences in heads] == [(None, 4)]


def test_an_estimate_promises_no_cache_writes_for_data_it_does_not_keep(tmp_path, cache):
    """The head-syntax and CKA probes embed without the feature cache (their key is None): the estimate said
    "writing up to 2.5 MB" for them, a disk cost that never comes. A probe that keeps its vectors still says it."""
    from probes.estimate import estimate_run
    from tests.probe_helpers import RandomEmbedder

    model = RandomEmbedder(num_layers=2, dim=16, seed=3)
    cka = estimate_run(get_probe("cka"), model, limit=5, feature_root=tmp_path)
    assert cka.words_to_embed > 0 and cka.feature_bytes == 0
    assert "extraction" in cka.text() and "writing" not in cka.text()
    pos = estimate_run(get_probe("pos"), model, layers="0", limit=5, feature_root=tmp_path / "empty")
    assert pos.feature_bytes == pos.words_to_embed * 2 * 16 * 2 > 0 and "writing up to" in pos.text()


@pytest.mark.parametrize("command", [["reproduce", "--out", "OUT"], ["sweep", "--models", "glove-6b-50d"]])
def test_one_run_of_pos_and_structural_sets_each_probes_rank(command, tmp_path, cache, capsys):
    """``--rank`` is pos's rank-limited classifier and structural's projection: under one flag a run of both could
    not set structural's (pos refused it without ``--probe rank``); structural's is ``--structural-rank`` there."""
    from probes.__main__ import COMMANDS
    from probes.registry import check_options_heard

    parser = build_parser(commands=COMMANDS)
    both = vars(parser.parse_args([*command, "--probes", "pos,structural", "--structural-rank", "8"]))
    pos, structural = get_probe("pos"), get_probe("structural")
    check_options_heard(both, [pos, structural])
    assert pos.options_from(both)["rank"] is None and structural.options_from(both)["rank"] == 8
    both = vars(parser.parse_args([*command, "--probe", "rank", "--rank", "4", "--structural-rank", "8"]))
    assert pos.options_from(both)["rank"] == 4 and structural.options_from(both)["rank"] == 8
    assert structural.options_from({"rank": 8})["rank"] == 8  # its own command and the app: --rank
    with pytest.raises(ProbeInputError, match="--structural-rank 0"):
        structural.options_from(vars(parser.parse_args([*command, "--structural-rank", "0"])))
    alone = vars(parser.parse_args([*command, "--probes", "structural", "--rank", "8"]))
    with pytest.raises(ProbeInputError, match="--rank is an option of pos, tag; --probes structural would not"):
        check_options_heard(alone, [structural])
    out = str(tmp_path / "out")
    args = [*[out if a == "OUT" else a for a in command], "--probes", "structural", "--rank", "8"]
    assert program(args) == 2 and "--rank is an option of pos, tag" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
