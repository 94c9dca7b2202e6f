"""What a trainer leaves behind: a model folder written whole or not at all, checked before the training, and never
a diverged or unscorable model (docs/reliability.md, round twelve: an interrupted `models train` left a new
``vectors.bin`` beside the old n-grams and card, which the loader took for one model)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from corpora.errors import RequestError
from models.assets import ASSETS
from models.base import ModelLoadError
from models.static import load_static_asset, load_static_dir, save_static_dir
from models.static_embedder import StaticEmbedder

REPO = Path(__file__).resolve().parent.parent

# A child that writes a new model over ``FOLDER`` and is killed (SIGKILL) right after its vectors file is written.
KILLED_MID_SAVE = """
import sys, time
from pathlib import Path
import numpy as np
import models.static as static
from models.static_embedder import StaticEmbedder

folder, marker = Path(sys.argv[1]), Path(sys.argv[2])
written = static.write_word2vec_binary
def write_then_wait(path, words, vectors):
    written(path, words, vectors)
    marker.touch()
    time.sleep(60)
static.write_word2vec_binary = write_then_wait
new = StaticEmbedder("new", ["the", "bank"], np.full((2, 4), 7.0, np.float32), source="test")
static.save_static_dir(new, folder, {"name": "new", "layers": 1, "dim": 4})
"""


def test_a_model_folder_killed_while_saving_keeps_the_old_model(tmp_path):
    """The old fastText folder got the new ``vectors.bin`` while its card and n-grams stayed (5 of 5 real kills):
    the loader ran the mix as the old model."""
    folder = tmp_path / "fasttext"
    shutil.copytree(ASSETS / "fasttext", folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    marker = tmp_path / "written"
    child = subprocess.Popen([sys.executable, "-c", KILLED_MID_SAVE, str(folder), str(marker)], cwd=REPO)
    try:
        end = time.time() + 120
        while not marker.exists():
            assert child.poll() is None and time.time() < end
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # the old model, whole
    assert load_static_dir(folder).ngrams is not None
    new = StaticEmbedder("new", ["the", "bank"], np.full((2, 4), 7.0, np.float32), source="test")
    save_static_dir(new, folder, {"name": "new", "layers": 1, "dim": 4})
    assert sorted(p.name for p in folder.iterdir()) == ["model_card.json", "vectors.bin"]  # no old n-grams beside it
    assert load_static_dir(folder).dim == 4
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # the killed writer's folder removed


def test_a_folder_of_other_files_or_one_that_cannot_be_written_is_refused_before_training(tmp_path, capsys):
    """A trainer wrote into any --out (its files beside whatever was there) and found a read-only folder only after
    the training and evaluation, as an OSError traceback."""
    from models.__main__ import main

    mine = tmp_path / "my-notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me")
    t0 = time.perf_counter()
    assert main(["train", "cbow", "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "holds thesis.tex, which no model folder written here does" in err and time.perf_counter() - t0 < 5
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    (tmp_path / "a-file").write_text("x")  # a parent no folder can be made in (a read-only one would not stop root)
    assert main(["train", "glove", "--out", str(tmp_path / "a-file" / "glove")]) == 2
    assert "Cannot write a model to" in capsys.readouterr().err


def test_a_model_folder_holding_the_users_own_files_is_not_replaced(tmp_path):
    """A folder with a card counted as a model folder, and the swap removed it whole: notes and a runs/ folder beside
    the model were deleted with the old model."""
    from models.assets import check_replaceable

    folder = tmp_path / "m"
    shutil.copytree(ASSETS / "word2vec-sg", folder)
    (folder / "NOTES.md").write_text("keep me")
    (folder / "runs").mkdir()
    new = StaticEmbedder("new", ["the", "bank"], np.full((2, 4), 7.0, np.float32), source="test")
    with pytest.raises(RequestError, match="holds NOTES.md, runs, which no model folder written here does"):
        save_static_dir(new, folder, {"name": "new", "layers": 1, "dim": 4})
    assert (folder / "NOTES.md").read_text() == "keep me" and (folder / "runs").is_dir()
    (folder / "NOTES.md").unlink()
    (folder / "runs").rmdir()
    assert check_replaceable(folder) == folder  # the model's own files alone: replaced whole


def test_a_linked_output_folder_stays_a_link_to_the_new_model(tmp_path):
    """``assets/m -> /big/m``: the link itself was renamed aside and a real folder put in its place on the link's disk;
    the link's ``.old`` was never removed (rmtree refuses a link; its errors were ignored)."""
    target = tmp_path / "big" / "m"
    shutil.copytree(ASSETS / "word2vec-sg", target)
    link = tmp_path / "assets" / "m"
    link.parent.mkdir()
    link.symlink_to(target)
    new = StaticEmbedder("new", ["the", "bank"], np.full((2, 4), 7.0, np.float32), source="test")
    save_static_dir(new, link, {"name": "new", "layers": 1, "dim": 4})
    assert link.is_symlink() and load_static_dir(link).dim == 4 and load_static_dir(target).dim == 4
    assert sorted(p.name for p in link.parent.iterdir()) == ["m"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]


def test_an_elmo_run_folder_inside_its_output_folder_is_refused_before_training(tmp_path, capsys):
    """``--out m --run-dir m/run`` passed the check, trained, and was refused at the end ("holds other files (run)");
    ``--run-dir`` equal to ``--out`` lost the run's checkpoint and softmax with the swap."""
    from models.__main__ import main

    for run in (tmp_path / "m" / "run", tmp_path / "m"):
        argv = ["train", "elmo", "--out", str(tmp_path / "m"), "--run-dir", str(run), "--steps", "2"]
        assert main([*argv, "--max-sentences", "100", "--threads", "1", "--device", "cpu"]) == 2
        assert "is inside --out" in capsys.readouterr().err and not (tmp_path / "m").exists()


def test_a_zoo_model_without_its_card_is_not_loaded(tmp_path):
    """``models list`` said "not trained" for a folder without its card (an interrupted run's), while every page
    loaded its files as the model."""
    folder = tmp_path / "word2vec-sg"
    shutil.copytree(ASSETS / "word2vec-sg", folder)
    assert load_static_asset("word2vec-sg", assets_dir=tmp_path).dim > 0
    (folder / "model_card.json").unlink()
    with pytest.raises(ModelLoadError, match="has no model_card.json: its training did not finish"):
        load_static_asset("word2vec-sg", assets_dir=tmp_path)


@pytest.mark.parametrize("damage", ["nan", "int"])
def test_an_elmo_checkpoint_with_non_finite_or_integer_weights_is_refused(damage, tmp_path):
    """One NaN in a projection gave NaN vectors at layer 2; an int32 tensor was cast (values ×1000), both loaded."""
    from safetensors.torch import load_file, save_file

    from models.elmo.embedder import load_elmo_asset

    folder = tmp_path / "elmo-small"
    shutil.copytree(ASSETS / "elmo-small", folder)
    state = load_file(str(folder / "model.safetensors"))
    key = next(k for k in sorted(state) if k.endswith("state_projection.weight"))
    if damage == "nan":
        state[key][0, 0] = float("nan")
    else:
        state[key] = (state[key] * 1000).to(torch.int32)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(
        ModelLoadError, match=f"tensor '{key}' " + ("holds non-finite" if damage == "nan" else "is torch.int32")
    ):
        load_elmo_asset("elmo-small", assets_dir=tmp_path)


def test_a_held_out_split_with_nothing_to_score_is_refused_before_training(tmp_path, capsys, data_root):
    """ELMo with --max-sentences 60 wrote a card with perplexity 1.0 "over 0 targets"; GPT trained, then failed."""
    from models.__main__ import main

    tiny = ["--max-sentences", "60", "--threads", "1", "--device", "cpu", "--steps", "2"]
    assert main(["train", "elmo", *tiny, "--out", str(tmp_path / "e"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "held-out split has no targets" in capsys.readouterr().err and not (tmp_path / "e").exists()
    assert main(["train", "gpt", *tiny, "--out", str(tmp_path / "g")]) == 2
    assert "held-out split has no targets" in capsys.readouterr().err and not (tmp_path / "g").exists()


@pytest.mark.parametrize("kind", ["word2vec", "fasttext", "glove"])
def test_a_corpus_too_small_for_a_static_model_is_one_line_and_its_synonym_check_is_said_not_measured(
    kind, tmp_path, capsys, data_root
):
    """One sentence: gensim's "you must first build vocabulary" or GloVe's "co-occurrence matrix is empty" traceback;
    with --min-count 1 the model trained, then the WordNet check's ValueError lost it."""
    from models.__main__ import main

    tiny = ["--max-sentences", "1", "--epochs", "1", "--out", str(tmp_path / kind)]
    assert main(["train", kind, *tiny]) == 2
    err = capsys.readouterr().err
    assert "too small to train on: no word of it occurs --min-count times" in err and "Traceback" not in err
    assert not (tmp_path / kind).exists()
    assert main(["train", kind, *tiny, "--min-count", "1"]) == 0
    quality = json.loads((tmp_path / kind / "model_card.json").read_text())["quality"]
    assert quality["wordnet_synonym_auc"] is None and "0 WordNet synonym pairs" in quality["note"]


def test_a_diverged_model_is_not_written():
    """The trainers saved a model whose held-out loss was NaN (exit 0; the card said "perplexity NaN")."""
    from models.train.common import check_trained

    model = torch.nn.Linear(3, 2)
    check_trained(model, [4.2, 4.3])
    with pytest.raises(RequestError, match=r"diverged \(held-out loss nan"):
        check_trained(model, [float("nan")])
    with torch.no_grad():
        model.weight[0, 0] = float("inf")
    with pytest.raises(RequestError, match="non-finite weights in weight"):
        check_trained(model, [4.2])


def test_the_card_commands_default_output_is_the_projects_assets_from_any_folder(tmp_path, monkeypatch):
    """``models train gpt`` run from another folder wrote ``./assets/gpt-small`` there."""
    from models.train import gpt as train_gpt

    monkeypatch.chdir(tmp_path)
    assert train_gpt.output_folder(train_gpt.parse_args([])) == ASSETS / "gpt-small"
    assert train_gpt.output_folder(train_gpt.parse_args(["--out", "mine"])) == Path("mine")


def test_a_fasttext_card_or_table_that_cannot_be_right_is_refused(tmp_path, capsys):
    """A card's ``min_n: 0, max_n: -1`` was an OverflowError nine frames deep in gensim's Cython; an int32 n-gram table
    was cast to floats; ``train fasttext --min-n 6 --max-n 3`` trained without a single subword."""
    from safetensors.numpy import load_file, save_file

    from models.__main__ import main

    folder = tmp_path / "fasttext"
    shutil.copytree(ASSETS / "fasttext", folder)
    card_file = folder / "model_card.json"
    card = json.loads(card_file.read_text())
    card_file.write_text(json.dumps({**card, "fasttext": {**card["fasttext"], "min_n": 0, "max_n": -1}}))
    with pytest.raises(ModelLoadError, match=r"n-gram lengths 0\.\.-1"):
        load_static_dir(folder)
    card_file.write_text(json.dumps(card))
    table = load_file(str(folder / "ngrams.safetensors"))["ngrams"]
    save_file({"ngrams": (table * 1000).astype(np.int32)}, str(folder / "ngrams.safetensors"))
    with pytest.raises(ModelLoadError, match="n-grams stored as int32"):
        load_static_dir(folder)
    with pytest.raises(SystemExit):
        main(["train", "fasttext", "--min-n", "6", "--max-n", "3", "--out", str(tmp_path / "ft")])
    assert "--min-n 6 is above --max-n 3" in capsys.readouterr().err


def test_a_model_folder_is_readable_as_any_file_the_umask_allows(tmp_path):
    """GPT's and ELMo's safetensors files were written 0600: on a lab server the app, run as another user, could not
    read the model a colleague trained."""
    from corpora.temps import umask
    from models.assets import writing_folder

    with writing_folder(tmp_path / "m") as folder:
        (folder / "model.safetensors").write_bytes(b"x")
        (folder / "model.safetensors").chmod(0o600)
        (folder / "model_card.json").write_text("{}")
    assert (tmp_path / "m" / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~umask()


def test_a_resumed_gpt_runs_card_reports_the_losses_an_uninterrupted_one_does(tmp_path, data_root, monkeypatch):
    """The card's ``final_loss`` (mean of the last 100 steps) averaged only the steps after the resume: 6.3759 against
    6.7536 for the same run uninterrupted."""
    from models.train import gpt as train_gpt

    tiny = ["--max-sentences", "200", "--vocab-size", "100", "--d-model", "8", "--layers", "1", "--heads", "2"]
    tiny += ["--context", "8", "--threads", "1", "--device", "cpu", "--log-every", "0", "--checkpoint-every", "3"]
    tiny += ["--steps", "6"]
    assert train_gpt.main([*tiny, "--out", str(tmp_path / "whole")]) == 0
    saved = train_gpt.save_checkpoint

    def save_then_stop(path, state):  # Ctrl-C right after the step-3 checkpoint
        saved(path, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(train_gpt, "save_checkpoint", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        train_gpt.main([*tiny, "--out", str(tmp_path / "resumed")])
    monkeypatch.setattr(train_gpt, "save_checkpoint", saved)
    assert train_gpt.main([*tiny, "--out", str(tmp_path / "resumed"), "--resume"]) == 0
    whole, resumed = (json.loads((tmp_path / f / "model_card.json").read_text()) for f in ("whole", "resumed"))
    assert resumed["final_loss"] == whole["final_loss"] and resumed["steps"] == whole["steps"] == 6


def test_a_checkpoint_keeps_the_gpu_generators_and_a_resume_restores_them(tmp_path, monkeypatch, capsys):
    """A checkpoint kept the CPU generator only: a run resumed on a GPU drew other dropout masks than an
    uninterrupted one. (No GPU here: CUDA's generator calls are stood in for; the checkpoint round trip is real.)"""
    from models.train.common import load_checkpoint, restore_rng_states, rng_states, save_checkpoint

    gpu_state, restored = torch.arange(16, dtype=torch.uint8), []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [gpu_state.clone()])
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.extend)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    save_checkpoint(tmp_path / "checkpoint.pt", {"step": 3, **rng_states()})
    state = load_checkpoint(tmp_path / "checkpoint.pt")  # weights_only: the GPU states are plain tensors
    restore_rng_states(state)
    assert len(restored) == 1 and torch.equal(restored[0], gpu_state)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)  # resumed where those GPUs are not
    restore_rng_states(state)
    assert len(restored) == 1 and "GPU draws (dropout) differ" in capsys.readouterr().out


def test_gpt_held_out_perplexity_scores_no_free_sentence_start():
    """``<s>`` always follows ``</s>`` in the stream: the held-out perplexity counted it as a target (0.0003 nats
    each, 2,293 of gpt-small's 52,832), 172.8 where the words and sentence ends alone give more. It is skipped."""
    import torch

    from models.train.gpt_lm import build_model, evaluate

    torch.manual_seed(0)
    model = build_model(12, d_model=16, n_layer=1, n_head=2, context=8, dropout=0.0)
    bos, eos = 2, 3
    stream = np.array([bos, 5, 6, 7, eos, bos, 8, eos, bos, 9, 10, eos, bos, 11, 5, eos], dtype=np.int32)
    nll, count = evaluate(model, stream, 8, torch.device("cpu"), skip=bos)
    blocks = torch.from_numpy(stream.astype(np.int64)).view(2, 8)
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=blocks).logits.float(), -1)
    targets = blocks[:, 1:]
    picked = logp[:, :-1].gather(-1, targets[..., None])[..., 0]
    keep = targets != bos
    assert count == int(keep.sum()) == 12  # 14 targets, 2 of them <s>
    assert nll == pytest.approx(float(-picked[keep].mean()), rel=1e-6)
    assert evaluate(model, stream, 8, torch.device("cpu"))[1] == 14  # without skip: every target, as before


def test_a_resumed_time_budgeted_gpt_run_goes_on_where_its_schedule_was():
    """``--max-minutes`` then ``--resume``: the time left was mapped onto the whole schedule again, so a run stopped
    half-way through its time at step 300 of 1,000 resumed at lr(300) — back up from lr(500) — on another curve."""
    import torch

    from models.train.gpt_lm import build_model, lr_at, train_steps

    torch.manual_seed(0)
    model = build_model(12, d_model=16, n_layer=1, n_head=2, context=8, dropout=0.0)
    stream = np.arange(200, dtype=np.int32) % 12
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    kwargs = dict(batch_size=2, context=8, lr=1e-3, warmup=10, start_step=300, total_steps=1000, optimizer=optimizer)
    train_steps(model, stream, 1, **kwargs, max_seconds=100.0, prior_seconds=50.0, log_every=0)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(lr_at(500, 1000, 10, 1e-3))


def test_a_warm_up_as_long_as_the_run_is_said(capsys):
    """``--steps 60`` with the default ``--warmup 200``: the rate never reached its peak nor decayed, without a word."""
    from models.train.common import warn_short_schedule

    warn_short_schedule(60, 200)
    assert "--warmup 200 is not below the run's 60 steps" in capsys.readouterr().err
    warn_short_schedule(1500, 100)
    assert capsys.readouterr().err == ""


def test_gpt_training_uses_bf16_only_where_the_gpu_has_it(monkeypatch, capsys):
    """GPT training ran every CUDA forward under bf16 autocast: a V100 or T4 has no bf16 in hardware (emulated,
    slowly, or refused). It now trains those in float32 and says so; a CPU never autocasts."""
    from models.train.gpt_lm import autocast_bf16

    assert autocast_bf16(torch.device("cpu")) is False
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla V100-SXM2-16GB")
    asked = []
    monkeypatch.setattr(
        torch.cuda, "is_bf16_supported", lambda including_emulation=True: asked.append(including_emulation) or False
    )
    assert autocast_bf16(torch.device("cuda")) is False and asked == [False]
    assert "Tesla V100-SXM2-16GB has no bf16 in hardware: training in float32" in capsys.readouterr().out
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert autocast_bf16(torch.device("cuda")) is True


@pytest.mark.parametrize("config, message", [("{bad", "not an options.json (Expect"), ("[1]", "holds one JSON object")])
def test_a_bad_elmo_config_file_is_one_error_line(tmp_path, config, message):
    """``--config`` naming an options.json that is not one was a JSONDecodeError traceback (exit 1), and an unknown
    name a bare line without ``error:`` (exit 1): the trainers promise one ``error:`` line and exit 2."""
    bad = tmp_path / "options.json"
    bad.write_text(config)
    for arg, said in ((str(bad), message), ("nosuch", "'nosuch' is neither small")):
        out = subprocess.run(
            [sys.executable, "-m", "models", "train", "elmo", "--config", arg, "--out", str(tmp_path / "x")],
            capture_output=True, text=True, cwd=REPO,
        )  # fmt: skip
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --config") and said in lines[0]
    assert not (tmp_path / "x").exists()


def test_a_run_started_without_resume_says_it_replaces_the_earlier_checkpoint(tmp_path, capsys):
    """A rerun without --resume after an interruption started over and overwrote the checkpoint at its first save,
    saying nothing (an audit of interrupts)."""
    from models.train.common import note_earlier_checkpoint

    ckpt = tmp_path / "checkpoint.pt"
    note_earlier_checkpoint(ckpt, resume=False)
    assert capsys.readouterr().out == ""
    ckpt.write_bytes(b"x")
    note_earlier_checkpoint(ckpt, resume=True)
    assert capsys.readouterr().out == ""
    note_earlier_checkpoint(ckpt, resume=False)
    assert "holds an earlier run's checkpoint; this run starts over" in capsys.readouterr().out
