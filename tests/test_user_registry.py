"""Registering models by name (embprobe.toml), model references, options and the hub's offline message.

A real static model (300 words of the shipped word2vec-sg vectors, written in tmp_path) stands in for
"the user's model": registered, listed, loaded, used and removed; every refusal is a clear message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.base import ModelLoadError, UnknownModelError
from models.options import ModelOptions, parse_layers
from models.references import parse_reference, split_references

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def small_static(tmp_path_factory) -> Path:
    """A static model folder in this project's format (vectors.bin + model_card.json), 300 real words."""
    from models.static import load_static_asset, save_static_dir
    from models.static_embedder import StaticEmbedder

    full = load_static_asset("word2vec-sg")
    words = full.words[:300]
    emb = StaticEmbedder("w2v-300", words, full.vectors[:300].cpu().numpy(), source="test")
    return save_static_dir(
        emb,
        tmp_path_factory.mktemp("models") / "w2v-300",
        {"name": "w2v-300", "layers": 1, "dim": emb.dim, "params": 300 * emb.dim},
    )


@pytest.fixture()
def registry(tmp_path, monkeypatch) -> Path:
    file = tmp_path / "embprobe.toml"
    monkeypatch.setenv("EMBPROBE_MODELS", str(file))
    return file


def run_cli(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_options_are_checked_once_with_the_source_named():
    opts = ModelOptions.from_mapping({"pooling": "first", "layers": "0-2,6", "dtype": "bf16"}, "cli")
    assert opts.layers == (0, 1, 2, 6) and opts.to_mapping()["layers"] == [0, 1, 2, 6]
    assert parse_layers("3,1") == (3, 1)
    with pytest.raises(ModelLoadError, match=r"f\.toml \[models\.x\]: unknown option\(s\) poolng"):
        ModelOptions.from_mapping({"poolng": "mean"}, "f.toml [models.x]")
    with pytest.raises(ModelLoadError, match="pooling = 'max': must be one of first, mean, last"):
        ModelOptions.from_mapping({"pooling": "max"}, "cli")
    with pytest.raises(ModelLoadError, match="stride 600 is larger than window 512"):
        ModelOptions.from_mapping({"window": 512, "stride": 600}, "cli")
    with pytest.raises(ModelLoadError, match="repeats a layer"):
        ModelOptions.from_mapping({"layers": [1, 1]}, "cli")
    with pytest.raises(ModelLoadError, match="do not apply to a vectors model"):
        ModelOptions(pooling="first").check_applies("vectors", "model 'v'")


def test_reference_forms(small_static, tmp_path):
    from models.registry import get_spec

    assert parse_reference(str(small_static)).kind == "static-dir"
    assert split_references("minilm, elmo:a.json,b.hdf5 ,hf:x/y@v2") == ["minilm", "elmo:a.json,b.hdf5", "hf:x/y@v2"]
    with pytest.raises(UnknownModelError, match="no such file or folder"):
        parse_reference(str(tmp_path / "missing"))
    with pytest.raises(UnknownModelError, match=r"\(the zoo and .*embprobe\.toml\)"):  # where names are looked up
        get_spec("never-registered")
    with pytest.raises(ModelLoadError, match="not a hub id"):
        parse_reference("hf:org/name@")
    with pytest.raises(ModelLoadError, match="not a model folder"):
        parse_reference(str(tmp_path))
    for empty in ("", "  "):  # not the working directory
        with pytest.raises(ModelLoadError, match="no model given: write a folder, a file or a hub id"):
            parse_reference(empty)
    (tmp_path / "options.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="needs both files"):
        parse_reference(str(tmp_path / "options.json"))


def test_register_list_use_remove_round_trip(small_static, registry):
    from models import registry as reg
    from models.__main__ import main
    from models.listing import model_rows

    registry.write_text("# my models, kept across edits\n", encoding="utf-8")
    assert main(["add", "mine", str(small_static)]) == 0
    text = registry.read_text(encoding="utf-8")
    assert text.startswith("# my models, kept across edits") and 'ref = "' in text
    rows = {r.name: r for r in model_rows()}
    assert rows["mine"].state == "ok" and (rows["mine"].layers, rows["mine"].dim) == (1, 100)
    assert rows["mine"].params == 30_000 and rows["mine"].size_bytes > 100_000
    assert "minilm" in rows  # the zoo is still listed beside it
    emb = reg.load_embedder("mine")
    assert emb.name == "mine"
    vec = emb.embed([["the", "of", "zzzunknownzzz"]])[0].vectors
    from models.static import load_static_asset

    ref = load_static_asset("word2vec-sg")
    assert np.array_equal(vec[0, 0], ref.word_vector("the")) and not vec[0, 2].any()
    # The same content elsewhere has the same fingerprint (feature-cache key): no path in it.
    assert (
        emb.fingerprint()
        == reg.get_spec(str(small_static)).resolve_loader()(**reg.get_spec(str(small_static)).kwargs).fingerprint()
    )
    with pytest.raises(ModelLoadError, match="already registered"):
        from models.manage import add_model

        add_model("mine", str(small_static))
    assert main(["remove", "mine"]) == 0
    assert registry.read_text(encoding="utf-8").startswith("# my models, kept across edits")
    reg.unload_embedder("mine")
    with pytest.raises(UnknownModelError, match="Unknown model 'mine'"):
        reg.get_spec("mine")


def test_registry_refusals_leave_the_file_unchanged(small_static, registry, capsys):
    from models.__main__ import main

    assert main(["add", "minilm", str(small_static)]) == 2
    assert "built-in model" in capsys.readouterr().err
    assert main(["add", "bad/name", str(small_static)]) == 2
    assert "use 1-64 letters" in capsys.readouterr().err
    assert main(["add", "v", str(small_static), "--pooling", "first"]) == 2
    assert "do not apply to a vectors model" in capsys.readouterr().err
    assert main(["remove", "never-added"]) == 2
    assert "no model named 'never-added'" in capsys.readouterr().err
    assert not registry.exists()


def test_a_registry_path_that_is_no_regular_file_or_cannot_be_locked_is_one_error(
    small_static, tmp_path, monkeypatch, capsys
):
    """``EMBPROBE_MODELS=/dev/null`` (no registry) then ``models add``: the atomic write replaced the device with a
    TOML file (as root). A path that is not a regular file is refused and left as it is; a registry whose lock cannot
    be made (its folder is a file) was a traceback."""
    from models.__main__ import main

    pipe = tmp_path / "no-registry"
    os.mkfifo(pipe)
    monkeypatch.setenv("EMBPROBE_MODELS", str(pipe))
    assert main(["add", "v", str(small_static)]) == 2
    assert "is not a regular file, so no model can be registered in it" in capsys.readouterr().err
    assert pipe.is_fifo() and not Path(f"{pipe}.lock").exists()
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "a-file" / "embprobe.toml"))
    assert main(["add", "v", str(small_static)]) == 2
    err = capsys.readouterr().err
    assert "cannot lock the model registry for editing" in err and "Traceback" not in err


def test_models_add_checks_the_pickle_opt_in_and_the_device_as_loading_does(small_static, registry, tmp_path, capsys):
    """``models add`` registered a gensim pickle without --allow-pickle ("ok" in the list, refused at every use), and
    any --device string ("bogus", "cuda" on a machine without one), after which every run was a torch traceback; and
    a command's ``--device`` did not replace the registered one (every run refused)."""
    import pickle

    import torch

    from models.__main__ import main
    from models.base import ModelLoadError
    from models.registry import load_embedder

    planted = tmp_path / "planted.kv"
    planted.write_bytes(pickle.dumps({"planted": 1}, protocol=4))
    assert main(["add", "kv", str(planted)]) == 2
    assert "--allow-pickle" in capsys.readouterr().err and not registry.exists()
    assert main(["add", "v", str(small_static), "--device", "bogus"]) == 2
    assert "device = 'bogus': must be cpu, cuda, cuda:N, mps or auto" in capsys.readouterr().err
    if not torch.cuda.is_available():  # a registry may serve a GPU machine: kept, and said at load
        assert main(["add", "v", str(small_static), "--device", "cuda"]) == 0
        with pytest.raises(ModelLoadError, match=r"v is registered with device 'cuda': .*no CUDA GPU.*--device"):
            load_embedder("v")
        from probes.run import load_model  # a command's --device: the registered one gives way (it did not)

        assert str(load_model("v", "cpu").device) == "cpu" and str(load_embedder("v", "cpu").device) == "cpu"
        from models.assets import ASSETS  # and as the model a CKA run compares against (it did not)
        from probes.registry import RunContext
        from probes.tasks.cka import run_cka

        assert main(["add", "w2v", str(ASSETS / "word2vec-sg"), "--device", "cuda"]) == 0
        ctx = RunContext(limit=3, device="cpu")
        assert run_cka(load_embedder("word2vec-sg"), None, ctx, against="w2v", resamples=2).rows


@pytest.mark.parametrize(
    "text, problem",
    [
        ("3 2\na 0.1 0.2\nb 0.3\nc 0.5 0.6\n", "line 3: expected 2 values"),  # a short row
        ("2 2\na 0.1 0.2\nb 0.3", "line 3: expected 2 values"),  # cut inside its last row
        ("2 2\na 0.1 abc\nb 0.3 0.4\n", "line 2: value 2 (field 3) is not a number"),
        ("2 2\na 0.1 nan\nb 0.3 0.4\n", "line 2: non-finite value"),
    ],
)
def test_a_vectors_file_with_a_bad_row_is_not_registered(text, problem, registry, tmp_path, capsys):
    """The header alone said "ok" for each: the rows are read when it is added, not first when a probe runs."""
    from models.__main__ import main

    (tmp_path / "mine.vec").write_text(text, encoding="utf-8")
    assert main(["add", "mine", str(tmp_path / "mine.vec")]) == 2
    err = capsys.readouterr().err
    assert problem in err and "mine.vec" in err and len(err.strip().splitlines()) == 1
    assert not registry.exists()


def test_a_name_registered_again_loads_its_new_model(small_static, registry, tmp_path):
    """``models add NAME NEW_REF --replace`` kept handing out the model loaded before under that name."""
    from models.manage import add_model, remove_model
    from models.registry import load_embedder, loaded_models

    other = tmp_path / "other.vec"
    other.write_text("2 3\nbank 0.1 0.2 0.3\nriver 0.4 0.5 0.6\n", encoding="utf-8")
    add_model("swap", str(small_static))
    before = load_embedder("swap")
    add_model("swap", str(other), replace=True)
    after = load_embedder("swap")
    assert after is not before and (after.dim, after.fingerprint()) != (before.dim, before.fingerprint())
    assert load_embedder("swap") is after  # loaded once per registration
    remove_model("swap")
    assert "swap" not in loaded_models()


def test_a_model_replaced_on_disk_is_loaded_again(registry, tmp_path):
    """The file under a registered name replaced (word2vec-sg's vectors by -cbow's at the same path): a running app
    kept serving the old vectors under the old fingerprint, and its runs were saved so (an audit). The held model is
    loaded again when its files' state changed, and stays loaded while nothing changes."""
    from models.manage import add_model, remove_model
    from models.registry import load_embedder

    path = tmp_path / "mine.vec"
    path.write_text("2 3\nbank 0.1 0.2 0.3\nriver 0.4 0.5 0.6\n", encoding="utf-8")
    add_model("held", str(path))
    before = load_embedder("held")
    assert load_embedder("held") is before
    fresh = tmp_path / "fresh.vec"
    fresh.write_text("2 3\nbank 0.9 0.2 0.3\nriver 0.4 0.5 0.6\n", encoding="utf-8")  # same size
    os.replace(fresh, path)
    after = load_embedder("held")
    assert after is not before and after.fingerprint() != before.fingerprint()
    assert after.embed([["bank"]])[0].vectors[0, 0, 0] == pytest.approx(0.9)
    remove_model("held")


def download_then_load(folder: str):
    """A loader that first fetches its files, as a hub model not in the cache does (the review of round ten)."""
    from models.static import load_vectors_file

    Path(folder).mkdir(exist_ok=True)
    with open(Path(folder) / "loads.log", "a") as log:  # a log no loader reads: not in the files' state
        log.write("loaded\n")
    (Path(folder) / "v.vec").write_text("2 3\nbank 0.1 0.2 0.3\nriver 0.4 0.5 0.6\n", encoding="utf-8")
    return load_vectors_file(Path(folder) / "v.vec", name="fetched")


def test_a_model_whose_load_fetches_its_files_is_loaded_once(tmp_path):
    """Its files' state was read before the load fetched them, so the next lookup saw other files and loaded the
    whole model again; the state is read after the load. A README written beside it later reloads nothing."""
    from models.registry import REGISTRY, load_embedder, register, unload_embedder
    from models.spec import ModelSpec, Source

    folder = tmp_path / "fetched"
    spec = ModelSpec(
        "fetched", "static", "tests.test_user_registry:download_then_load", {"folder": str(folder)},
        source=Source.path(folder),
    )  # fmt: skip
    register(spec)
    try:
        first = load_embedder("fetched")
        (folder / "README.md").write_text("notes", encoding="utf-8")
        assert load_embedder("fetched") is first and load_embedder("fetched") is first
        assert (folder / "loads.log").read_text().count("loaded") == 1
    finally:
        unload_embedder("fetched")
        REGISTRY.pop("fetched", None)


def test_relative_paths_are_relative_to_the_registry_file(small_static, registry):
    from models.registry import get_spec

    registry.write_text(f'[models.rel]\nref = "{os.path.relpath(small_static, registry.parent)}"\n', encoding="utf-8")
    spec = get_spec("rel")
    assert Path(spec.kwargs["ref"]) == small_static.resolve()


def test_a_broken_registry_file_is_reported_and_the_zoo_still_works(registry):
    registry.write_text("[models.x\nref = 1\n", encoding="utf-8")
    out = run_cli("models", "list", env={"EMBPROBE_MODELS": str(registry)})
    assert out.returncode == 0, out.stderr
    assert "minilm" in out.stdout and "not valid TOML" in out.stdout
    registry.write_text('[models.x]\npooling = "first"\n', encoding="utf-8")
    out = run_cli("models", "list", env={"EMBPROBE_MODELS": str(registry)})
    assert "needs ref" in out.stdout


def test_hub_id_offline_is_one_clear_message(tmp_path):
    # No network: an endpoint nothing listens on (refused at once, with or without internet), and
    # HF_HUB_OFFLINE=1; an empty hub cache either way.
    for offline in ("0", "1"):
        out = run_cli(
            "probes",
            "pos",
            "--model",
            "hf:FacebookAI/roberta-base",
            "--limit",
            "5",
            env={"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": offline},
        )
        assert out.returncode == 2
        err = out.stderr.strip()
        assert err.startswith("error: hf:FacebookAI/roberta-base: the Hugging Face Hub cannot be reached")
        assert "hf download FacebookAI/roberta-base" in err and "Traceback" not in err
        assert ("HF_HUB_OFFLINE=1 is set" in err) == (offline == "1")


def test_a_path_named_like_a_registered_model_is_refused_and_a_renamed_version_is_said(
    small_static, registry, tmp_path
):
    """A model given by its path is named after its file or folder: ``mine/glove-6b-50d.txt`` was saved as
    'glove-6b-50d' and its 84.27 replaced the real GloVe's 62.60 in every table, said nowhere. Now such a path is
    refused unless it is the registered model's own; and a run whose results folder holds runs of another version
    under its name (two files both called vectors.txt) says that the tables now show its own."""
    import shutil

    from models import registry as reg
    from models.__main__ import main
    from probes import run_probe
    from probes.results import read_results

    clash = tmp_path / "mine" / "glove-6b-50d"
    shutil.copytree(small_static, clash)
    with pytest.raises(ModelLoadError, match="named 'glove-6b-50d', the name of a registered model"):
        reg.get_spec(str(clash))
    assert main(["add", "w2v-300", str(small_static)]) == 0
    assert reg.get_spec(str(small_static)).name == "w2v-300"  # its own path: the registered model itself
    other = tmp_path / "other" / "w2v-300"
    shutil.copytree(small_static, other)
    (other / "vectors.bin").write_bytes((other / "vectors.bin").read_bytes()[:-8] + bytes(8))  # another version
    with pytest.raises(ModelLoadError, match="name of a registered model"):
        reg.get_spec(str(other))
    assert main(["remove", "w2v-300"]) == 0
    # an ELMo pair: the built-in's options with other weights is another model, not the built-in (its weights
    # were silently the built-in's: only the options' folder was compared)
    weights = tmp_path / "other.hdf5"
    weights.write_bytes(b"")
    with pytest.raises(ModelLoadError, match="name of a registered model"):
        reg.get_spec(f"elmo:{REPO / 'assets' / 'elmo-small' / 'options.json'},{weights}")
    results = tmp_path / "results"
    first = run_probe("pos", str(small_static), limit=20, layers="0", results_dir=results, show_progress=False)
    assert first.notes == []
    second = run_probe("pos", str(other), limit=20, layers="0", results_dir=results, show_progress=False)
    assert len(second.notes) == 1 and "1 run(s) of 'w2v-300' (pos) with another fingerprint" in second.notes[0]
    assert {r.model for r in read_results(results)} >= {"w2v-300"}


def test_two_links_to_one_registry_take_one_lock_and_a_name_is_one_line(small_static, tmp_path):
    """``w1/embprobe.toml`` and ``w2/embprobe.toml`` linked to one file locked two lock files: two processes adding
    models kept 40 of 80 and one ended in a KeyError traceback. And ``models add $'nl\\n' …`` registered a name
    with a newline (``$`` matches before a final one)."""
    import threading

    from filelock import FileLock

    from models.user_registry import add_user_model, check_name, read_user_models

    real = tmp_path / "dotfiles" / "real.toml"
    real.parent.mkdir()
    real.write_text("")
    link = tmp_path / "w1" / "embprobe.toml"
    link.parent.mkdir()
    link.symlink_to(real)
    added = threading.Event()
    with FileLock(str(real) + ".lock"):  # another process editing through the real path (or another link)
        adding = threading.Thread(target=lambda: (add_user_model("a", str(small_static), file=link), added.set()))
        adding.start()
        assert not added.wait(1.0)  # it waits for the lock rather than editing beside the other process
    adding.join(timeout=60)
    assert added.is_set() and set(read_user_models(real)) == {"a"} and link.is_symlink()
    for name in ("nl\n", "a\nb", "x" * 65):
        with pytest.raises(ModelLoadError, match="use 1-64 letters"):
            check_name(name)


@pytest.mark.parametrize("name", ["gpt-small", "elmo-small"])
def test_a_commands_cpu_loads_the_model_on_the_cpu_on_a_machine_with_a_gpu(name, monkeypatch):
    """``--device cpu`` loaded a zoo model onto the default device first (a GPU there, in half precision) and moved
    it after: back in float32 with the half-precision rounding kept, under the float32 fingerprint, and on a GPU the
    run was not given. The model now loads straight onto the asked device: on a machine that says it has CUDA
    (patched here), a CPU load never touches it."""
    import torch

    from models.registry import get_spec, load_embedder, load_spec, unload_embedder

    plain = load_spec(get_spec(name))  # no GPU here: float32 on the CPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        emb = load_embedder(name, "cpu")  # it had tried CUDA: "Torch not compiled with CUDA enabled"
        assert emb.device.type == "cpu" and emb.fingerprint() == plain.fingerprint()
    finally:
        unload_embedder(name)


def test_a_commands_device_replaces_a_registered_auto():
    """A model registered with ``device=auto`` (spread over the GPUs) kept it under ``--device cpu``: loaded over
    the GPUs, then refused ("spread over several devices … cannot be moved")."""
    from models.assets import ASSETS
    from models.references import spec_for_reference
    from models.registry import with_device

    spec = spec_for_reference(str(ASSETS / "word2vec-sg"), "w", options=ModelOptions(device="auto"))
    assert with_device(spec, "cpu").kwargs["options"]["device"] == "cpu"
    assert with_device(spec, None) is spec


def test_float32_on_a_gpu_that_may_use_tf32_has_a_fingerprint_of_its_own(monkeypatch):
    """cuDNN runs ELMo's convolutions and LSTMs in TF32 by default (~1e-3 from float32): an ELMo or transformer run
    in float32 on a GPU shared the CPU's fingerprint, and so its feature-cache entries and results. The device is
    set by hand here (no GPU): the fingerprint is all that is read."""
    import torch

    from models.registry import get_spec, load_spec

    for name in ("elmo-small", "gpt-small"):
        emb = load_spec(get_spec(name))
        on_cpu = emb.fingerprint()
        emb.device = torch.device("cuda")  # as .to("cuda") with half precision off would leave it
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
        assert emb.fingerprint() != on_cpu
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
        matmul = torch.backends.cuda.matmul.allow_tf32  # a property of torch's: set and restored by hand
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            assert emb.fingerprint() == on_cpu  # true float32: the CPU's key
        finally:
            torch.backends.cuda.matmul.allow_tf32 = matmul
