"""Issue 17 for models/: nothing silently wrong, no code from a planted file.

Resumable training checkpoints load with ``weights_only=True`` (a planted pickle is refused and
runs nothing); unknown CLI options and bad trainer arguments are argparse errors (exit 2, no
traceback); a lone surrogate in an embedder's input is a clear ValueError for every family.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from corpora.paths import REPO_ROOT
from models.__main__ import main as models_main
from models.train.common import CheckpointError, load_checkpoint, save_checkpoint


# ----------------------------------------------------------------------------- checkpoints
class _Planted:
    """Unpickling this runs ``touch SENTINEL``: what a malicious checkpoint.pt would do."""

    def __init__(self, sentinel):
        self.sentinel = str(sentinel)

    def __reduce__(self):
        return (os.system, (f"touch {self.sentinel}",))


def _plant(path, sentinel) -> None:
    torch.save({"model": _Planted(sentinel), "step": 1}, path)
    assert not sentinel.exists()


def _tiny_gpt():
    from models.train.gpt_lm import build_model, build_word_tokenizer, make_optimizer

    tok = build_word_tokenizer({w: 10 - i for i, w in enumerate(["the", "cat", "sat", "on", "a", "mat"])}, 50)
    torch.manual_seed(0)
    model = build_model(len(tok), 8, 1, 2, 8, 0.0, tok)
    opt = make_optimizer(model, 1e-3, 0.01)
    ids = torch.randint(0, len(tok), (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    return model, opt


def _tiny_elmo():
    from models.elmo.lm import BiLMLanguageModel
    from models.train.elmo_data import BatchEncoder, build_vocab

    options = {
        "lstm": {
            "use_skip_connections": True,
            "projection_dim": 4,
            "cell_clip": None,
            "proj_clip": None,
            "dim": 8,
            "n_layers": 1,
        },
        "char_cnn": {
            "activation": "relu",
            "filters": [[1, 4], [2, 4]],
            "n_highway": 1,
            "embedding": {"dim": 4},
            "n_characters": 262,
            "max_characters_per_token": 50,
        },
    }
    vocab = build_vocab({"the": 3, "cat": 2, "sat": 1}, 10)
    torch.manual_seed(0)
    lm = BiLMLanguageModel(options, len(vocab), dropout=0.0)
    opt = torch.optim.Adam(lm.parameters(), lr=1e-3)
    chars, words = BatchEncoder(vocab)([["the", "cat", "sat"], ["cat"]])
    lm(chars, words)["loss"].backward()
    opt.step()
    return lm, opt, vocab, options


def test_gpt_checkpoint_loads_weights_only_and_restores(tmp_path):
    from models.train import gpt as train_gpt

    model, opt = _tiny_gpt()
    rng = np.random.default_rng(3)
    rng.random(5)
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, train_gpt.checkpoint_state(model, opt, rng, step=7, wall_time_s=1.5))
    state = torch.load(path, weights_only=True)  # the strict loader accepts it
    assert state["step"] == 7 and state["wall_time_s"] == 1.5
    again = np.random.default_rng(0)
    again.bit_generator.state = load_checkpoint(path)["rng"]
    assert again.random() == rng.random()
    fresh, fresh_opt = _tiny_gpt()
    fresh.load_state_dict(state["model"])
    fresh_opt.load_state_dict(state["optimizer"])
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)


def test_elmo_checkpoint_loads_weights_only(tmp_path):
    from models.train import elmo as train_elmo

    lm, opt, vocab, options = _tiny_elmo()
    path = tmp_path / "checkpoint.pt"
    cfg = {"options": options, "vocab_size": 10, "batch_tokens": 100, "lr": 1e-3, "dropout": 0.0}
    save_checkpoint(
        path,
        train_elmo.checkpoint_state(
            lm, opt, step=2, epoch=0, position=2, tokens_seen=8, wall_time_s=0.1, config=cfg, vocab=vocab
        ),
    )
    state = torch.load(path, weights_only=True)
    assert state["vocab"] == vocab and state["config"] == cfg and state["position"] == 2
    lm2, opt2, _, _ = _tiny_elmo()
    lm2.load_state_dict(state["model"])
    opt2.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])


def test_planted_checkpoint_is_refused_and_runs_nothing(tmp_path):
    path, sentinel = tmp_path / "checkpoint.pt", tmp_path / "PWNED"
    _plant(path, sentinel)
    with pytest.raises(CheckpointError, match="refusing to load .*checkpoint.pt"):
        load_checkpoint(path)
    assert not sentinel.exists()
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_checkpoint(tmp_path / "broken.pt")


def test_trainers_resume_refuses_a_planted_checkpoint(tmp_path, capsys, data_root):
    from models.train import elmo as train_elmo, gpt as train_gpt

    out, sentinel = tmp_path / "gpt", tmp_path / "PWNED"
    out.mkdir()
    _plant(out / "checkpoint.pt", sentinel)
    rc = train_gpt.main(
        [
            "--out",
            str(out),
            "--max-sentences",
            "200",
            "--vocab-size",
            "100",
            "--d-model",
            "8",
            "--layers",
            "1",
            "--heads",
            "2",
            "--context",
            "8",
            "--steps",
            "2",
            "--threads",
            "1",
            "--device",
            "cpu",
            "--resume",
            "--log-every",
            "0",
        ]
    )
    assert rc == 2 and not sentinel.exists()
    assert "refusing to load" in capsys.readouterr().err

    run = tmp_path / "run"
    run.mkdir()
    _plant(run / "checkpoint.pt", sentinel)
    rc = train_elmo.main(
        [
            "--max-sentences",
            "100",
            "--vocab-size",
            "50",
            "--batch-tokens",
            "200",
            "--steps",
            "2",
            "--threads",
            "1",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "asset"),
            "--run-dir",
            str(run),
            "--resume",
        ]
    )
    assert rc == 2 and not sentinel.exists()
    assert "refusing to load" in capsys.readouterr().err


def test_gpt_resume_with_other_data_options_is_refused(tmp_path, capsys, data_root):
    """``models train gpt --resume`` with another --max-sentences, --cased or --seed rebuilt the tokenizer from the new
    options beside the checkpoint's weights (286 of 300 token ids then meant other words), exit 0. The checkpoint now
    keeps the options it was trained with, and a resume with others is refused, naming them."""
    from models.train import gpt as train_gpt
    from models.train.common import save_checkpoint, training_setup

    out = tmp_path / "gpt"
    out.mkdir()
    argv = ["--out", str(out), "--max-sentences", "200", "--vocab-size", "100", "--d-model", "8", "--layers", "1"]
    argv += ["--heads", "2", "--context", "8", "--steps", "4", "--threads", "1", "--device", "cpu", "--log-every", "0"]
    trained = train_gpt.parse_args([*argv, "--cased", "--seed", "7"])
    save_checkpoint(out / "checkpoint.pt", {"setup": training_setup(trained, ["<unk>", "the"]), "step": 2})
    assert train_gpt.main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "trained with other options than this run's (--cased True → False; --seed 7 → 0)" in err
    assert not (out / "model_card.json").exists()
    # a checkpoint of a version that kept no options (before 2026-12-06): nothing to check this run's against
    save_checkpoint(out / "checkpoint.pt", {"step": 2})
    assert train_gpt.main([*argv, "--resume"]) == 2
    assert "written by an earlier version of the lab" in capsys.readouterr().err
    assert not (out / "model_card.json").exists()


# ----------------------------------------------------------------------------- command line
def test_models_list_rejects_unknown_options(capsys):
    with pytest.raises(SystemExit) as exc:
        models_main(["list", "--bogus"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_train_help_still_reaches_the_trainer(capsys):
    with pytest.raises(SystemExit) as exc:
        models_main(["train", "gpt", "--help"])
    assert exc.value.code == 0
    assert "--resume" in capsys.readouterr().out


@pytest.mark.parametrize(
    "kind, args, option",
    [
        ("gpt", ["--steps", "0"], "--steps"),
        ("gpt", ["--steps", "-5"], "--steps"),
        ("gpt", ["--threads", "-2"], "--threads"),
        ("gpt", ["--d-model", "10", "--heads", "4"], "--d-model"),
        ("elmo", ["--steps", "-1"], "--steps"),
        ("elmo", ["--threads", "-2"], "--threads"),
        ("elmo", ["--log-every", "0"], "--log-every"),
        ("glove", ["--epochs", "0"], "--epochs"),
        ("glove", ["--threads", "-2"], "--threads"),
        ("word2vec", ["--epochs", "0"], "--epochs"),
        ("fasttext", ["--workers", "-2"], "--workers"),
        ("gpt", ["--device", "nonsense"], "--device"),
    ],
)
def test_bad_trainer_arguments_are_argparse_errors(kind, args, option, capsys):
    with pytest.raises(SystemExit) as exc:
        models_main(["train", kind, *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and option in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["gpt", "elmo", "glove"])
def test_cuda_without_cuda_is_an_argparse_error(kind, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as exc:
        models_main(["train", kind, "--device", "cuda"])
    assert exc.value.code == 2
    assert "has no CUDA GPU" in capsys.readouterr().err


def test_every_command_line_refuses_a_device_it_cannot_use_in_the_same_words(capsys, monkeypatch):
    """``--device`` was checked three ways: ``probes`` let ``cuda:7`` through on a one-GPU machine (torch failed
    later, mid-run), ``features index`` checked nothing and read ``--threads 0`` as 1. One check
    (``models.base.check_device``) for all three, before any model loads."""
    from features.__main__ import main as features_main
    from probes.cli import main as probes_main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert probes_main(["pos", "--model", "no-such-model", "--device", "cuda:7"]) == 2
    assert "this machine has 1 CUDA device(s)" in capsys.readouterr().err
    assert features_main(["index", "--model", "no-such-model", "--device", "cuda:7"]) == 2
    assert "this machine has 1 CUDA device(s)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        models_main(["train", "gpt", "--device", "cuda:7"])
    assert "this machine has 1 CUDA device(s)" in capsys.readouterr().err
    assert features_main(["index", "--model", "no-such-model", "--threads", "0"]) == 2
    assert "--threads 0" in capsys.readouterr().err


def test_bad_argument_from_the_shell_has_no_traceback():
    out = subprocess.run(
        [sys.executable, "-m", "models", "train", "glove", "--epochs", "0"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "argument --epochs: must be a positive integer" in out.stderr and "Traceback" not in out.stderr


# ----------------------------------------------------------------------------- input text
@pytest.mark.parametrize("name", ["minilm", "gpt-small", "glove-6b-50d"])
def test_lone_surrogate_is_a_clear_value_error(name):
    from models.registry import load_embedder

    emb = load_embedder(name)
    with pytest.raises(ValueError, match=r"Sentence 2, word 3 \('\\ud800'\).*lone surrogate U\+D800"):
        emb.embed([["fine"], ["The", "bank", "\ud800", "closed"]])
    with pytest.raises(ValueError, match=r"word 1 .*U\+DC00"):
        emb.embed([["a\udc00b"]])
    ok = emb.embed([["The", "bank", "😀", "closed"]])[0]  # valid astral characters are fine
    assert ok.vectors.shape == (emb.num_layers, 4, emb.dim)
    if emb.has_attention:
        with pytest.raises(ValueError, match="lone surrogate"):
            emb.piece_attention(["The", "\ud800"])
