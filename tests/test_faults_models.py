"""Fault injection, round two (issue 27), for the models users bring: each test breaks a checkpoint or a
registration the way it broke in practice and checks the lab refuses it with one clear message instead
of a silently wrong number. The rest of the round is tests/test_faults_round2.py; docs/reliability.md
maps every fault to its test."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from models.base import ModelLoadError
from models.tiny import make_tiny_checkpoint

TEXT = [
    "The bank closed early today , and nobody knew why .",
    "She didn't want unbelievably crowded rooms in the old hotel .",
    "A quick brown fox jumps over the lazy dog near the river bank .",
] * 10


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return make_tiny_checkpoint("bert", tmp_path_factory.mktemp("tiny") / "bert", corpus=TEXT, vocab_size=300)


# Fault 1: a checkpoint without its tokenizer ------------------------------------------------------


def test_checkpoint_without_tokenizer_is_refused(tiny_bert, tmp_path):
    from models.transformer import load_hf_checkpoint

    assert load_hf_checkpoint(tiny_bert).embed([TEXT[0].split()])[0].vectors.shape[1] == 11  # the intact one runs
    broken = shutil.copytree(tiny_bert, tmp_path / "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (broken / name).unlink()
    # transformers would build a 5-token tokenizer from config.json: every word [UNK]
    with pytest.raises(ModelLoadError, match=r"tokenizer \(files: none\) does not match the model: 5 tokens"):
        load_hf_checkpoint(broken)


def test_another_models_tokenizer_of_the_same_size_is_refused_by_its_special_ids(tmp_path):
    """A Llama-shaped checkpoint given a GPT-2 tokenizer of the same vocabulary size: the sizes fit, the
    start and end ids (0 against the config's 1 and 2) do not; `models add`'s file checks say the same."""
    from corpora.wsj import load_treebank
    from models.transformer import load_hf_checkpoint
    from models.transformer.auto import inspect_checkpoint

    corpus = [" ".join(s.words) for s in load_treebank()[:300]]
    gpt2 = make_tiny_checkpoint("gpt2", tmp_path / "gpt2", corpus=corpus, vocab_size=400)
    llama = make_tiny_checkpoint("llama", tmp_path / "llama", corpus=corpus, vocab_size=400)
    assert load_hf_checkpoint(llama).embed([TEXT[0].split()])[0].vectors.shape[1] == 11  # its own runs
    foreign = shutil.copytree(llama, tmp_path / "foreign")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(gpt2 / name, foreign / name)
    sizes = [len(json.loads((p / "tokenizer.json").read_text())["model"]["vocab"]) for p in (gpt2, llama)]
    assert sizes[0] == sizes[1]  # the size checks cannot tell
    expected = r"its bos_token_id is 0, the model's config says 1; its eos_token_id is 0, the model's config says 2"
    with pytest.raises(ModelLoadError, match=expected):
        load_hf_checkpoint(foreign)
    assert re.search(expected, inspect_checkpoint(foreign)["refused"])


def test_a_batch_of_mostly_unknown_words_is_refused(tiny_bert):
    from models.transformer import load_hf_checkpoint

    emb = load_hf_checkpoint(tiny_bert)
    greek = ["αβγ", "δεζ", "ηθι", "κλμ", "νξο", "πρσ", "τυφ", "χψω", "bank"]  # an alphabet it never saw
    # the text is named first (a foreign tokenizer is refused at load): it had said "the tokenizer does not match"
    with pytest.raises(ModelLoadError, match=r"8 of 9 words of a batch are the unknown token '\[UNK\]'.*cannot read"):
        emb.embed([greek])
    assert emb.embed([["The", "bank"] + greek[:2]])[0].vectors.shape[1] == 4  # a short one, or a few unknown: fine


# Faults 5 and 11: models add / list run the loader's checks (no weights loaded) ----------------------


def test_models_add_refuses_what_the_loader_would_refuse(tiny_bert, tmp_path):
    from corpora.errors import LabError
    from models.manage import check_model
    from models.transformer import load_hf_checkpoint

    assert check_model("tiny", str(tiny_bert)).status == "ok"
    with pytest.raises(ModelLoadError, match=r"layers \[0, 7\]: the model has layers 0\.\.2"):
        check_model("tiny", str(tiny_bert), {"layers": "0,7"})
    with pytest.raises(ModelLoadError, match="window 1000: the model reads at most"):
        check_model("tiny", str(tiny_bert), {"window": 1000})
    with pytest.raises(LabError, match="window must be in"):  # at load: a LabError (one line), not a traceback
        load_hf_checkpoint(tiny_bert, window=1000)
    no_tok = shutil.copytree(tiny_bert, tmp_path / "no-tokenizer")
    (no_tok / "tokenizer.json").unlink()
    (no_tok / "tokenizer_config.json").unlink()
    with pytest.raises(ModelLoadError, match="does not match the model"):
        check_model("tiny", str(no_tok))
    custom = shutil.copytree(tiny_bert, tmp_path / "custom-code")
    config = json.loads((custom / "config.json").read_text())
    (custom / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "modeling.MyModel"}}))
    with pytest.raises(ModelLoadError, match="trust_remote_code"):
        check_model("tiny", str(custom))


# Fault 5b: models add / list check the weights' tensor names and shapes, reading no tensor data -------

TENSOR_FAULTS = {  # name: (how the weights are broken, what add, list and load all say)
    "missing": (
        lambda t: t.pop("encoder.layer.1.output.dense.weight"),
        r"1 tensor\(s\) the model needs are missing from the weights: encoder\.layer\.1\.output\.dense\.weight\. ",
    ),
    "extra": (
        lambda t: t.update({"encoder.layer.2.output.dense.weight": torch.zeros(32, 128)}),
        r"the weights hold 1 tensor\(s\) of the model's own submodules that config\.json does not declare "
        r"\(more layers than num_hidden_layers=2, or another size\?\): encoder\.layer\.2\.output\.dense\.weight\.",
    ),
    "shape": (
        lambda t: t.update({"encoder.layer.0.intermediate.dense.weight": torch.zeros(64, 32)}),
        r"config\.json and the weights disagree on 1 tensor shape\(s\): "
        r"encoder\.layer\.0\.intermediate\.dense\.weight \(weights \(64, 32\) vs config \(128, 32\)\)\.",
    ),
}


def _write_weights(folder: Path, tensors: dict, layout: str) -> None:
    """The weights as one safetensors file, two shards with their index, or a torch pickle."""
    from safetensors.torch import save_file

    for old in [*folder.glob("*.safetensors"), *folder.glob("*.index.json"), *folder.glob("*.bin")]:
        old.unlink()
    if layout == "safetensors":
        save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    elif layout == "sharded":
        names, weight_map = sorted(tensors), {}
        for i, part in enumerate((names[::2], names[1::2]), 1):
            shard = f"model-0000{i}-of-00002.safetensors"
            save_file({k: tensors[k] for k in part}, folder / shard, metadata={"format": "pt"})
            weight_map |= dict.fromkeys(part, shard)
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    else:
        torch.save(tensors, folder / "pytorch_model.bin")


class _HeadersOnly:
    """``safe_open`` that gives tensor names, shapes and dtypes, and fails the test on any tensor data read."""

    def __init__(self, *args, **kwargs):
        from safetensors import safe_open

        self._file = safe_open(*args, **kwargs)

    def __enter__(self):
        self._file.__enter__()
        return self

    def __exit__(self, *exc):
        return self._file.__exit__(*exc)

    def keys(self):
        return self._file.keys()

    def metadata(self):
        return self._file.metadata()

    def get_slice(self, key):
        piece = self._file.get_slice(key)
        return type(
            "Header", (), {"get_shape": lambda _: piece.get_shape(), "get_dtype": lambda _: piece.get_dtype()}
        )()

    def get_tensor(self, key):
        raise AssertionError(f"tensor data read: {key}")


def _read_no_tensor_data(patch: pytest.MonkeyPatch) -> None:
    import safetensors.torch
    import transformers.modeling_utils

    import models.transformer.memory

    real_load = torch.load

    def meta_only(file, *args, map_location=None, **kwargs):
        assert map_location == "meta", f"torch.load({file}) read tensor data"
        return real_load(file, *args, map_location=map_location, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("tensor data read")

    patch.setattr(torch, "load", meta_only)
    patch.setattr(safetensors.torch, "load_file", refuse)
    patch.setattr(safetensors.torch, "load", refuse)
    patch.setattr(transformers.modeling_utils, "safe_open", _HeadersOnly)
    patch.setattr(models.transformer.memory, "safe_open", _HeadersOnly)


@pytest.mark.parametrize(
    "fault, layout",
    [
        ("missing", "safetensors"),
        ("extra", "safetensors"),
        ("shape", "safetensors"),
        ("missing", "sharded"),
        ("extra", "sharded"),
        ("shape", "bin"),
    ],
)
def test_models_add_and_list_refuse_tensors_the_loader_refuses_reading_headers_only(
    fault, layout, tiny_bert, tmp_path, monkeypatch, capsys
):
    from safetensors.torch import load_file

    from models.__main__ import main
    from models.transformer import load_hf_checkpoint

    registry = tmp_path / "embprobe.toml"
    monkeypatch.setenv("EMBPROBE_MODELS", str(registry))
    folder = shutil.copytree(tiny_bert, tmp_path / "mine")
    tensors = load_file(folder / "model.safetensors")
    tensors["cls.predictions.bias"] = torch.zeros(300)  # a task head's tensor: ignored by the loader, so by add
    _write_weights(folder, tensors, layout)
    breaks, says = TENSOR_FAULTS[fault]
    with monkeypatch.context() as patch:
        _read_no_tensor_data(patch)
        assert main(["add", "mine", str(folder)]) == 0, capsys.readouterr().err  # the intact checkpoint passes
        breaks(tensors)
        _write_weights(folder, tensors, layout)
        capsys.readouterr()
        assert main(["add", "mine-again", str(folder)]) == 2
        refusal = capsys.readouterr().err.strip()
        assert main(["list"]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mine "))
    assert re.fullmatch(rf"error: mine-again: {re.escape(str(folder))}: {says}.*", refusal), refusal
    assert "\n" not in refusal and "mine-again" not in registry.read_text()  # one line, nothing written
    assert re.search(rf"cpu +{re.escape(str(folder))}: {says}", row), row  # list: broken, with the same reason
    with pytest.raises(ModelLoadError) as err:  # and the loader, reading the weights, says the very same
        load_hf_checkpoint(folder)
    assert refusal == f"error: mine-again: {err.value}"


# Fault 14: the gensim pickle refusal never recommends an unrestricted unpickler --------------------


def test_the_pickle_refusal_recommends_the_restricted_loader(tmp_path):
    import pickle

    from models.vector_files import load_vectors_file

    path = tmp_path / "planted.kv"
    path.write_bytes(pickle.dumps({"planted": 1}, protocol=4))
    with pytest.raises(ModelLoadError) as err:
        load_vectors_file(path)
    message = str(err.value)
    assert "--allow-pickle" in message and "only from sources you trust" in message
    assert f"SaveLoad.load('{path}')" not in message  # old advice: a command that runs the payload


# "Also": NaN weights in fp32 are not told to try fp32 ---------------------------------------------


def test_nan_weights_in_fp32_are_named_as_such(tiny_bert, tmp_path):
    from safetensors.torch import load_file, save_file

    from models.transformer import load_hf_checkpoint

    broken = shutil.copytree(tiny_bert, tmp_path / "nan")
    tensors = load_file(broken / "model.safetensors")
    name = next(k for k in tensors if k.endswith("word_embeddings.weight"))
    tensors[name][:] = float("nan")
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        ModelLoadError, match=r"NaN/inf in the hidden states in torch.float32 \(the weights hold"
    ) as err:
        load_hf_checkpoint(broken, dtype="fp32", device="cpu")
    assert "try dtype='fp32'" not in str(err.value)


def test_a_word_that_is_a_special_token_is_text(tiny_bert):
    from models.transformer import load_hf_checkpoint

    emb = load_hf_checkpoint(tiny_bert)
    ((ids, word_of),) = emb._pieces([["bank", "[SEP]", "[CLS]", "bank"]])
    specials = {emb.tokenizer.sep_token_id, emb.tokenizer.cls_token_id}
    assert not specials & set(ids) and sorted(set(word_of.tolist())) == [0, 1, 2, 3]


# "Also": a registered model whose folder was deleted is named as such ----------------------------


def test_a_deleted_registered_model_names_its_registration(tiny_bert, tmp_path, monkeypatch):
    from models.manage import add_model
    from models.registry import load_embedder

    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    folder = shutil.copytree(tiny_bert, tmp_path / "mine")
    add_model("mine-gone", str(folder))
    shutil.rmtree(folder)
    with pytest.raises(ModelLoadError, match=r"'mine-gone' is registered as .*mine, which no longer exists"):
        load_embedder("mine-gone")
    # `python -m models list` says the same, not "Unknown model '/…/mine': not a registered name …"
    from models.registry import user_specs

    problem = user_specs()[1]
    assert "'mine-gone' is registered as" in problem and "no longer exists" in problem
    assert "Unknown model" not in problem


def test_a_static_model_that_knows_almost_none_of_the_words_is_refused(tmp_path):
    """A word2vec file whose words carry their POS (``the_NOUN``, as NLPL's are) matched none of a probe's words:
    it ran on all-zero vectors and scored 15.74 against the majority baseline's 67.50, exit 0. An extraction of
    ≥ 8 words, more than half unknown, is now refused before it starts; a few unknown words still pass."""
    from features import get_features
    from models.vector_files import load_vectors_file

    words = ["the", "bank", "river", "money", "a", "of", "and", "to", "in", "is"]
    rows = [f"{w}_NOUN " + " ".join(f"{(i * 7 + j) % 5 / 10:.1f}" for j in range(4)) for i, w in enumerate(words)]
    tagged = tmp_path / "tagged.vec"
    tagged.write_text(f"{len(rows)} 4\n" + "\n".join(rows) + "\n", encoding="utf-8")
    emb = load_vectors_file(tagged)
    with pytest.raises(ModelLoadError, match=r"9 of the 9 words to embed are not in its vocabulary.*'the_NOUN'"):
        get_features(emb, "tagged-test", [words[:5], words[5:9]], root=tmp_path / "cache", show_progress=False)
    plain = tmp_path / "plain.vec"
    plain.write_text(tagged.read_text(encoding="utf-8").replace("_NOUN", ""), encoding="utf-8")
    sentence = words[:7] + ["zyxxy", "qwpq"]  # two unknown words of nine: zeros for them, as before
    known = load_vectors_file(plain)
    feats = get_features(known, "plain-test", [sentence], root=tmp_path / "cache", show_progress=False)
    assert feats.layer(0).shape == (9, 4) and not np.asarray(feats.layer(0)[-1]).any()
    zeros = tmp_path / "zeros.vec"
    zeros.write_text("3 2\na 0 0\nb 0 0\nc 0.0 -0.0\n", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="every vector in .*zeros.vec is all zeros"):
        load_vectors_file(zeros)
