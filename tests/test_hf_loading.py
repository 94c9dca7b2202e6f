"""Any local Hugging Face checkpoint as a model (``models.transformer.auto``): class, specials, refusals, options.

Checkpoints are tiny random models written in the test session (``models.tiny.make_tiny_checkpoint``,
tokenizers trained on the fly on the sentences below), plus a few built here for families tiny.py
does not cover (ModernBERT, XLM-R, BART, GPT-Neo, Mistral, Gemma borrow a tokenizer of the same
kind; ByT5's Python-only tokenizer). Broken checkpoints are copies of good ones with one file edited.
Reference vectors come from a plain ``transformers`` forward pass pooled with a Python loop.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import CONFIG_MAPPING

from models.base import ModelLoadError
from models.tiny import make_tiny_checkpoint
from models.transformer import (
    BertEmbedder,
    GptEmbedder,
    architecture_role,
    estimate_memory,
    inspect_checkpoint,
    load_hf_checkpoint,
    memory as memory_mod,
)
from models.transformer.memory import resolve_dtype
from models.transformer.tokens import alignment_problems

torch.set_num_threads(1)

TEXT = [
    "The bank closed early today , and nobody knew why .",
    "She didn't want unbelievably crowded rooms in the old hotel .",
    "A quick brown fox jumps over the lazy dog near the river bank .",
    "Investors sold shares as the market fell for a third day .",
] * 10
WORDS = ["The", "bank", "didn't", "unbelievably", "crowded", "."]
BYTE_LEVEL = ("roberta", "gpt2", "gpt-neox", "opt", "qwen2")


# ----------------------------------------------------------------------------- checkpoints
@pytest.fixture(scope="session")
def ckpt(tmp_path_factory):
    """kind -> folder of a tiny checkpoint (built once per session on first use)."""
    root = tmp_path_factory.mktemp("tiny")
    made: dict[str, Path] = {}

    def get(kind: str, **sizes) -> Path:
        key = kind + "".join(f"-{k}{v}" for k, v in sorted(sizes.items()))
        if key not in made:
            vocab = 320 if kind in BYTE_LEVEL else 300
            made[key] = make_tiny_checkpoint(kind, root / key, corpus=TEXT, vocab_size=vocab, **sizes)
        return made[key]

    return get


# Families tiny.py does not make: (config overrides, auto class, kind whose tokenizer they borrow).
BORROWED = {
    "modernbert": ({"global_attn_every_n_layers": 1}, "AutoModel", "bert"),
    "xlm-roberta": ({}, "AutoModel", "roberta"),
    "bart": (
        {
            "encoder_layers": 2,
            "decoder_layers": 2,
            "encoder_attention_heads": 2,
            "decoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "decoder_ffn_dim": 64,
            "d_model": 32,
        },
        "AutoModelForSeq2SeqLM",
        "roberta",
    ),
    "gpt_neo": (
        {"num_layers": 2, "num_heads": 2, "attention_types": [[["global", "local"], 1]]},
        "AutoModelForCausalLM",
        "gpt2",
    ),
    "mistral": ({"num_key_value_heads": 1}, "AutoModelForCausalLM", "llama"),
    "gemma": ({"num_key_value_heads": 1, "head_dim": 16}, "AutoModelForCausalLM", "llama"),
}


def borrowed(ckpt, model_type: str, out: Path) -> Path:
    overrides, auto_class, tok_kind = BORROWED[model_type]
    src = ckpt(tok_kind)
    tok = transformers.AutoTokenizer.from_pretrained(src)
    ids = {f"{n}_token_id": getattr(tok, f"{n}_token_id") for n in ("pad", "bos", "eos")}
    ids.update(
        {"cls_token_id": tok.cls_token_id, "sep_token_id": tok.sep_token_id} if model_type == "modernbert" else {}
    )
    sizes = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
    }
    config = CONFIG_MAPPING[model_type](vocab_size=len(tok), **{**sizes, **ids, **overrides})
    torch.manual_seed(0)
    getattr(transformers, auto_class).from_config(config).save_pretrained(out)
    for f in src.iterdir():
        if "token" in f.name or f.name in ("vocab.json", "merges.txt", "vocab.txt"):
            shutil.copy(f, out / f.name)
    return out


def copy_ckpt(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def naive_vectors(emb, words: list[str], pooling: str = "mean") -> np.ndarray:
    """Our pieces (ids incl. specials) through a plain forward pass, pooled with a per-word loop: (L+1, W, D)."""
    pa = emb.piece_attention(words)
    ids = torch.tensor([emb.tokenizer.convert_tokens_to_ids(pa.pieces)])
    with torch.inference_mode():
        hs = torch.stack(emb.model(input_ids=ids, output_hidden_states=True).hidden_states)[:, 0].float().numpy()
    out = np.zeros((hs.shape[0], len(words), hs.shape[-1]), np.float32)
    for w in range(len(words)):
        idx = [i for i, x in enumerate(pa.word_ids) if x == w]
        out[:, w] = {"mean": hs[:, idx].mean(1), "first": hs[:, idx[0]], "last": hs[:, idx[-1]]}[pooling]
    return out


# ----------------------------------------------------------------------------- class from config
ROLES = {
    "bert": "encoder",
    "roberta": "encoder",
    "deberta-v2": "encoder",
    "electra": "encoder",
    "albert": "encoder",
    "distilbert": "encoder",
    "xlm-roberta": "encoder",
    "modernbert": "encoder",
    "xlnet": "encoder",  # an "XLNetLMHeadModel" that reads both sides
    "gpt2": "decoder",
    "gpt_neo": "decoder",
    "gpt_neox": "decoder",
    "opt": "decoder",
    "llama": "decoder",
    "mistral": "decoder",
    "qwen2": "decoder",
    "gemma": "decoder",
    "t5": "encoder-decoder",
    "bart": "encoder-decoder",
}


@pytest.mark.parametrize("model_type", sorted(ROLES))
def test_role_from_config(model_type):
    assert architecture_role(CONFIG_MAPPING[model_type]()) == ROLES[model_type]


def test_role_follows_the_config_not_the_name():
    assert architecture_role(CONFIG_MAPPING["roberta"](is_decoder=True)) == "decoder"  # RobertaForCausalLM
    assert architecture_role(CONFIG_MAPPING["bert"](architectures=["BertLMHeadModel"])) == "decoder"
    assert architecture_role(CONFIG_MAPPING["bert"](architectures=["BertForMaskedLM"])) == "encoder"
    # a raw config.json of a model transformers does not know: its architectures still tell
    assert architecture_role({"model_type": "nova", "architectures": ["NovaForCausalLM"]}) == "decoder"
    assert architecture_role({"model_type": "nova", "is_encoder_decoder": True}) == "encoder-decoder"


# ----------------------------------------------------------------------------- every family loads
# (specials the family's tokenizer adds around a window: first, last; None = nothing)
SPECIALS = {
    "bert": ("[CLS]", "[SEP]"),
    "electra": ("[CLS]", "[SEP]"),
    "distilbert": ("[CLS]", "[SEP]"),
    "albert": ("[CLS]", "[SEP]"),
    "deberta-v2": ("[CLS]", "[SEP]"),
    "modernbert": ("[CLS]", "[SEP]"),
    "roberta": ("<s>", "</s>"),
    "xlm-roberta": ("<s>", "</s>"),
    "bart": ("<s>", "</s>"),
    "t5": (None, "</s>"),
    # decoders: one leading token, never a trailing EOS
    "gpt2": ("<|endoftext|>", None),
    "gpt-neox": ("<|endoftext|>", None),
    "qwen2": ("<|endoftext|>", None),
    "gpt_neo": ("<|endoftext|>", None),
    "opt": ("</s>", None),
    "llama": ("<s>", None),
    "mistral": ("<s>", None),
    "gemma": ("<s>", None),
}


@pytest.mark.parametrize("kind", sorted(SPECIALS))
def test_every_family_loads_with_its_own_special_tokens(kind, ckpt, tmp_path):
    path = borrowed(ckpt, kind, tmp_path / kind) if kind in BORROWED else ckpt(kind)
    emb = load_hf_checkpoint(path)
    decoder = kind in ("gpt2", "gpt-neox", "qwen2", "gpt_neo", "opt", "llama", "mistral", "gemma")
    assert isinstance(emb, GptEmbedder if decoder else BertEmbedder)
    assert emb.info.family == ("gpt" if decoder else "bert") and emb.name == path.name
    assert emb.num_layers == 3 and emb.dim == 32 and emb.has_attention
    pa = emb.piece_attention(WORDS)
    first, last = SPECIALS[kind]
    content = [i for i, w in enumerate(pa.word_ids) if w is not None]
    head, tail = pa.pieces[: content[0]], pa.pieces[content[-1] + 1 :]
    assert head == ([first] if first else []) and tail == ([last] if last else [])
    assert sorted(set(w for w in pa.word_ids if w is not None)) == list(range(len(WORDS)))
    out = emb.embed([WORDS, WORDS[:2]], with_attention=True)
    assert out[0].vectors.shape == (3, len(WORDS), 32) and np.isfinite(out[0].vectors).all()
    np.testing.assert_allclose(out[0].attentions.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out[0].vectors, naive_vectors(emb, WORDS), atol=1e-5)
    if decoder:  # causal: a word's vectors do not depend on the words after it
        np.testing.assert_allclose(out[1].vectors, out[0].vectors[:, :2], atol=1e-5)


def test_a_model_type_with_several_base_models_is_refused_by_name(ckpt, tmp_path):
    """Funnel's layers pool the sequence; transformers maps it to two base classes, which failed as "cannot load
    the weights (AttributeError: 'tuple' object has no attribute 'from_pretrained')"."""
    src = ckpt("bert")
    config = CONFIG_MAPPING["funnel"](
        vocab_size=len(transformers.AutoTokenizer.from_pretrained(src)), block_sizes=[1, 1], d_model=32, n_head=2
    )
    config = config.__class__(**{**config.to_dict(), "d_head": 16, "d_inner": 64})
    transformers.FunnelModel(config).save_pretrained(tmp_path / "funnel")
    for f in src.iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            shutil.copy(f, tmp_path / "funnel" / f.name)
    with pytest.raises(ModelLoadError, match=r"'funnel' is not supported: .*FunnelModel, FunnelBaseModel"):
        load_hf_checkpoint(tmp_path / "funnel")


def test_xlnet_reads_both_sides_and_has_no_position_limit(tmp_path):
    """XLNet's config says ``max_position_embeddings = -1`` (relative positions, no limit) and its class is an
    "LMHeadModel": it was refused with "stride must be in [1, -2]" after ``models add`` had said ok, and would have
    been windowed as a decoder. It is an encoder: its own pieces (``<sep> <cls>`` at the end), plain forward values,
    and a word's vectors depend on the words after it."""
    from models.tiny import _canonical

    base = transformers.XLNetTokenizer()
    trained = base.train_new_from_iterator(TEXT, vocab_size=300, show_progress=False)
    tok = _canonical(trained, transformers.XLNetTokenizer, {}, base.all_special_tokens)
    ids = {f"{n}_token_id": getattr(tok, f"{n}_token_id") for n in ("pad", "bos", "eos")}
    config = transformers.XLNetConfig(vocab_size=len(tok), d_model=32, n_layer=2, n_head=2, d_inner=64, **ids)
    assert config.max_position_embeddings == -1
    torch.manual_seed(0)
    transformers.XLNetLMHeadModel(config).save_pretrained(tmp_path / "xlnet")
    tok.save_pretrained(tmp_path / "xlnet")
    emb = load_hf_checkpoint(tmp_path / "xlnet")
    assert isinstance(emb, BertEmbedder) and emb.info.family == "bert" and emb.window > 100
    pa = emb.piece_attention(WORDS)
    assert pa.pieces[-2:] == ["<sep>", "<cls>"] and pa.word_ids[-2:] == [None, None]
    out = emb.embed([WORDS, WORDS[:2]])
    np.testing.assert_allclose(out[0].vectors, naive_vectors(emb, WORDS), atol=1e-5)
    assert np.abs(out[1].vectors[1:] - out[0].vectors[1:, :2]).max() > 1e-3  # the later words count


@pytest.mark.parametrize("kind", ["bert", "deberta-v2", "roberta", "gpt2", "gpt-neox", "opt", "qwen2", "t5"])
def test_pre_split_words_tokenize_as_in_running_text(kind, ckpt):
    emb = load_hf_checkpoint(ckpt(kind))
    assert alignment_problems(emb.tokenizer, emb._prefix) == []
    assert "word_alignment" not in emb.info.card


@pytest.mark.parametrize("kind", ["gpt2", "roberta"])
def test_byte_level_words_each_get_their_own_space_marker(kind, ckpt, tmp_path):
    # as GPT-2 and RoBERTa ship on the hub: add_prefix_space false
    path = copy_ckpt(ckpt(kind), tmp_path / kind)
    cfg = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**cfg, "add_prefix_space": False}))
    plain = transformers.AutoTokenizer.from_pretrained(path)
    enc = plain(WORDS, is_split_into_words=True, add_special_tokens=False)
    assert not plain.convert_ids_to_tokens(enc["input_ids"])[0].startswith("Ġ")  # the problem being fixed
    pa = load_hf_checkpoint(path).piece_attention(WORDS)
    starts = [pa.pieces[pa.word_ids.index(w)] for w in range(len(WORDS))]
    assert all(p.startswith("Ġ") for p in starts), starts
    inner = [p for i, p in enumerate(pa.pieces) if pa.word_ids[i] is not None and p not in starts]
    assert not any(p.startswith("Ġ") for p in inner), inner


def test_regex_split_byte_level_gets_one_marker_per_word(ckpt):
    # Qwen2 / Llama-3 style: ByteLevel after a regex Split; add_prefix_space there would mark "'t" too
    emb = load_hf_checkpoint(ckpt("qwen2"))
    assert emb._prefix == " "
    pa = emb.piece_attention(WORDS)
    word = [p for p, w in zip(pa.pieces, pa.word_ids) if w == 2]  # didn't
    assert word[0].startswith("Ġ") and not any(p.startswith("Ġ") for p in word[1:]), word


def test_unfixable_alignment_is_flagged(ckpt, tmp_path, caplog):
    # Metaspace that never marks a word start: pre-split words lose the ▁ they have in running text
    path = copy_ckpt(ckpt("llama"), tmp_path / "never")
    tok = json.loads((path / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}
    tok["normalizer"] = None
    (path / "tokenizer.json").write_text(json.dumps(tok))
    cfg = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**cfg, "tokenizer_class": "TokenizersBackend"}))
    with caplog.at_level(logging.WARNING, logger="models.transformer.embedder"):
        emb = load_hf_checkpoint(path)
    assert "running text" in emb.info.card["word_alignment"] and "running text" in emb.info.description
    assert any("running text" in r.getMessage() for r in caplog.records)


def test_slow_tokenizer_falls_back_to_one_word_at_a_time(tmp_path, caplog):
    # ByT5: a T5 with a Python-only byte tokenizer (no tokenizer.json, nothing to convert)
    path = tmp_path / "byt5"
    config = CONFIG_MAPPING["t5"](
        vocab_size=384,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    transformers.T5ForConditionalGeneration(config).save_pretrained(path)
    (path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "ByT5Tokenizer"}))
    with caplog.at_level(logging.WARNING, logger="models.transformer.embedder"):
        emb = load_hf_checkpoint(path)
    assert not emb.tokenizer.is_fast and emb.info.family == "bert"
    assert "per-word" in emb.info.card["word_alignment"] and "per-word" in emb.info.description
    assert any("per-word" in r.getMessage() for r in caplog.records)
    words = ["Zoë", "didn't", "go"]
    pa = emb.piece_attention(words)
    for w, word in enumerate(words):  # each word's pieces: the word tokenized on its own
        assert [p for p, i in zip(pa.pieces, pa.word_ids) if i == w] == emb.tokenizer.tokenize(word)
    assert pa.pieces[-1] == "</s>"
    np.testing.assert_allclose(emb.embed([words])[0].vectors, naive_vectors(emb, words), atol=1e-5)


def test_token_type_ids_only_for_encoders_that_take_them(ckpt):
    seen = {}
    for kind in ("bert", "distilbert", "gpt2"):  # GPT-2's forward takes them too, but they would add an embedding
        emb = load_hf_checkpoint(ckpt(kind))
        forward = emb.model.forward
        emb.model.forward = lambda *a, _f=forward, _k=kind, **kw: seen.setdefault(_k, set(kw)) and _f(*a, **kw)
        emb.embed([WORDS])
    assert "token_type_ids" in seen["bert"]
    assert "token_type_ids" not in seen["distilbert"] and "token_type_ids" not in seen["gpt2"]


@pytest.mark.parametrize("pooling", ["first", "last"])
def test_first_and_last_piece_pooling(pooling, ckpt):
    emb = load_hf_checkpoint(ckpt("roberta"), pooling=pooling)
    np.testing.assert_allclose(emb.embed([WORDS])[0].vectors, naive_vectors(emb, WORDS, pooling), atol=1e-5)
    with pytest.raises(ValueError, match="pooling"):
        load_hf_checkpoint(ckpt("roberta"), pooling="max")


# ----------------------------------------------------------------------------- refusals
def _edit_config(path: Path, **changes) -> None:
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


def test_missing_tensor_is_refused_by_name(ckpt, tmp_path):
    path = copy_ckpt(ckpt("bert"), tmp_path / "missing")
    tensors = load_file(path / "model.safetensors")
    gone = next(k for k in tensors if "layer.1.output.dense.weight" in k)
    del tensors[gone]
    save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=r"missing from the weights: encoder\.layer\.1\.output\.dense\.weight"):
        load_hf_checkpoint(path)


def test_extra_layers_are_refused_but_head_tensors_are_fine(ckpt, tmp_path):
    path = copy_ckpt(ckpt("bert", layers=3), tmp_path / "extra")
    _edit_config(path, num_hidden_layers=2)  # the file has one layer more than the config
    with pytest.raises(ModelLoadError, match=r"num_hidden_layers=2.*encoder\.layer\.2\."):
        load_hf_checkpoint(path)
    # a masked-LM checkpoint: cls.* head tensors and the pooler are not part of the hidden states
    head = tmp_path / "mlm"
    config = transformers.AutoConfig.from_pretrained(ckpt("bert"))
    torch.manual_seed(0)
    transformers.BertForMaskedLM(config).save_pretrained(head)
    assert any(k.startswith("cls.") for k in load_file(head / "model.safetensors"))
    for f in ckpt("bert").iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            shutil.copy(f, head / f.name)
    emb = load_hf_checkpoint(head)
    assert np.isfinite(emb.embed([WORDS])[0].vectors).all()


def test_shape_mismatch_is_refused_with_shapes(ckpt, tmp_path):
    path = copy_ckpt(ckpt("bert"), tmp_path / "shapes")
    _edit_config(path, intermediate_size=64)  # the weights have 4 x 32 = 128
    with pytest.raises(
        ModelLoadError, match=r"disagree.*intermediate\.dense\.weight \(weights \(128, 32\) vs config \(64, 32\)\)"
    ):
        load_hf_checkpoint(path)


@pytest.mark.parametrize("change", [{"auto_map": {"AutoModel": "modeling_nova.NovaModel"}}, {"model_type": "nova"}])
def test_custom_code_is_refused(change, ckpt, tmp_path):
    path = copy_ckpt(ckpt("gpt2"), tmp_path / "custom")
    _edit_config(path, **change)
    with pytest.raises(ModelLoadError, match=r"config\.json.*trust_remote_code.*never enables"):
        load_hf_checkpoint(path)
    facts = inspect_checkpoint(path)  # still described from its files
    assert facts["needs_remote_code"] and facts["family"] == "gpt" and facts["layers"] == 3


def test_trust_remote_code_is_never_enabled():
    root = Path(__file__).resolve().parent.parent / "models"
    text = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py"))
    assert "trust_remote_code=True" not in text.replace(" ", "")


def test_corrupt_weight_files_are_refused(ckpt, tmp_path):
    src = ckpt("bert")
    path = copy_ckpt(src, tmp_path / "trunc")
    data = (src / "model.safetensors").read_bytes()
    (path / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"model\.safetensors.*truncated"):
        load_hf_checkpoint(path)
    (path / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weights"):
        load_hf_checkpoint(path)


def test_sharded_checkpoint_loads_and_broken_shards_are_refused(ckpt, tmp_path):
    src = ckpt("bert")
    path = tmp_path / "sharded"
    model = transformers.BertModel.from_pretrained(src)
    model.save_pretrained(path, max_shard_size="40KB")
    for f in src.iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            shutil.copy(f, path / f.name)
    shards = sorted(path.glob("model-*.safetensors"))
    assert len(shards) > 1 and (path / "model.safetensors.index.json").is_file()
    whole, split = load_hf_checkpoint(src), load_hf_checkpoint(path)
    np.testing.assert_array_equal(whole.embed([WORDS])[0].vectors, split.embed([WORDS])[0].vectors)
    data = shards[-1].read_bytes()
    shards[-1].write_bytes(data[:-100])
    with pytest.raises(ModelLoadError, match=rf"{shards[-1].name}.*truncated"):
        load_hf_checkpoint(path)
    shards[-1].unlink()
    with pytest.raises(ModelLoadError, match=rf"index\.json lists {len(shards)} shards; missing: {shards[-1].name}"):
        load_hf_checkpoint(path)


class _Planted:
    def __reduce__(self):
        return (print, ("code ran",))


def test_torch_pickles_are_read_weights_only(ckpt, tmp_path):
    src = ckpt("bert")
    path = copy_ckpt(src, tmp_path / "bin")
    (path / "model.safetensors").unlink()
    torch.save(load_file(src / "model.safetensors"), path / "pytorch_model.bin")
    np.testing.assert_array_equal(
        load_hf_checkpoint(path).embed([WORDS])[0].vectors, load_hf_checkpoint(src).embed([WORDS])[0].vectors
    )
    data = (path / "pytorch_model.bin").read_bytes()
    (path / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"pytorch_model\.bin: corrupt or truncated"):
        load_hf_checkpoint(path)
    torch.save({**load_file(src / "model.safetensors"), "extra": _Planted()}, path / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match=r"pytorch_model\.bin: this pickle needs code"):
        load_hf_checkpoint(path)


# ----------------------------------------------------------------------------- dtype, layers, device
def test_resolve_dtype(monkeypatch):
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert resolve_dtype("bf16", "cpu") == torch.bfloat16 and resolve_dtype("fp16", "cuda") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_dtype("auto", "cuda") == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_dtype("auto", "cuda:0") == torch.float16
    with pytest.raises(ValueError, match="dtype"):
        resolve_dtype("int8", "cpu")


def test_dtype_options(ckpt):
    path = ckpt("bert")
    auto = load_hf_checkpoint(path)  # CPU: fp32, the built-in rule's numbers
    legacy = BertEmbedder(path, name="x")
    np.testing.assert_array_equal(auto.embed([WORDS])[0].vectors, legacy.embed([WORDS])[0].vectors)
    assert auto.fingerprint() == legacy.fingerprint()
    ref = auto.embed([WORDS])[0].vectors
    for dtype, torch_dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        emb = load_hf_checkpoint(path, dtype=dtype, device="cpu")
        assert emb.dtype == torch_dtype and next(emb.model.parameters()).dtype == torch_dtype
        got = emb.embed([WORDS])[0].vectors
        assert got.dtype == np.float32 and not np.array_equal(got, ref)
        cos = (got * ref).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(ref, axis=-1)
        assert cos.min() > 0.99, (dtype, cos.min())
        assert emb.fingerprint() != auto.fingerprint()


def test_layers_option(ckpt):
    path = ckpt("llama")
    full = load_hf_checkpoint(path)
    some = load_hf_checkpoint(path, layers=[0, -1])
    assert some.num_layers == 2 and some.info.layer_ids == (0, 2) and full.info.layer_ids is None
    out = some.embed([WORDS, []])
    np.testing.assert_array_equal(out[0].vectors, full.embed([WORDS])[0].vectors[[0, 2]])
    assert out[1].vectors.shape == (2, 0, 32)
    assert some.fingerprint() != load_hf_checkpoint(path, layers=[0, 1]).fingerprint()
    for bad in ([3], [-4], [1, 1], []):
        with pytest.raises(ValueError, match="layer"):
            load_hf_checkpoint(path, layers=bad)


def test_window_and_stride_options(ckpt):
    emb = load_hf_checkpoint(ckpt("gpt2"), window=8, stride=4)
    assert emb.window == 8 and emb.stride == 4
    long = (WORDS * 4)[:20]
    out = emb.embed([long])[0].vectors
    word_of = emb._pieces([long])[0][1]
    k = int(word_of[7]) + int(word_of[8] != word_of[7])  # words whose pieces all lie in the first window
    assert 0 < k < len(long) and len(word_of) > 8
    # causal, first window: those words get what they get on their own
    np.testing.assert_allclose(out[:, :k], emb.embed([long[:k]])[0].vectors, atol=1e-5)
    assert not np.allclose(out[:, -1], emb.embed([long])[0].vectors[:, -1] * 0)  # later windows ran too
    with pytest.raises(ValueError, match="window"):
        load_hf_checkpoint(ckpt("gpt2"), window=10_000)


def test_device_auto_without_gpus_runs_on_the_cpu(ckpt):
    emb = load_hf_checkpoint(ckpt("gpt2"), device="auto")
    assert emb.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    np.testing.assert_array_equal(
        emb.embed([WORDS])[0].vectors, load_hf_checkpoint(ckpt("gpt2")).embed([WORDS])[0].vectors
    )
    with pytest.raises(ValueError, match="cannot be moved"):
        emb.to("cpu")


def test_fingerprint_content_not_path_and_source_label(ckpt, tmp_path):
    src = ckpt("bert")
    moved = copy_ckpt(src, tmp_path / "elsewhere")
    a = load_hf_checkpoint(src)
    b = load_hf_checkpoint(moved, name="mine", revision="abc123", source_label="hf:org/tiny-bert")
    assert b.name == "mine" and b.info.source == "hf:org/tiny-bert" and "abc123" in b.info.description
    assert load_hf_checkpoint(moved).fingerprint() == a.fingerprint() != b.fingerprint()  # revision counts


# ----------------------------------------------------------------------------- memory
@pytest.mark.parametrize("kind", ["bert", "llama", "t5"])
def test_memory_estimate_matches_the_loaded_model(kind, ckpt):
    path = ckpt(kind)
    config = transformers.AutoConfig.from_pretrained(path)
    cls = transformers.AutoModel._model_mapping[type(config)]
    extra = {"add_pooling_layer": False} if kind == "bert" else {}
    model = cls.from_pretrained(path, **extra)  # what the embedder loads (T5: the whole model)
    assert estimate_memory(path, "fp32", "cpu") == model.get_memory_footprint()
    params = model.num_parameters()
    buffers = model.get_memory_footprint() - 4 * params
    assert estimate_memory(config, "bf16", "cpu") == 2 * params + buffers


def test_inspect_checkpoint_reads_files_only(ckpt, monkeypatch):
    path = ckpt("gpt2")
    tensors = load_file(path / "model.safetensors")
    real = transformers.PreTrainedModel.from_pretrained.__func__

    def meta_only(cls, name, *args, state_dict=None, **kwargs):  # the tensor check: headers as meta tensors
        if name is not None or not all(t.is_meta for t in state_dict.values()):
            pytest.fail("inspect loaded weights")
        return real(cls, name, *args, state_dict=state_dict, **kwargs)

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(meta_only))
    facts = inspect_checkpoint(path)
    assert facts["family"] == "gpt" and facts["role"] == "decoder" and facts["model_type"] == "gpt2"
    assert (facts["layers"], facts["dim"], facts["heads"]) == (3, 32, 2) and not facts["needs_remote_code"]
    assert facts["params"] == sum(t.numel() for t in tensors.values())
    assert facts["size_bytes"] == (path / "model.safetensors").stat().st_size
    assert facts["memory_bytes"] == estimate_memory(path, "auto", facts["device"])
    assert inspect_checkpoint(ckpt("t5"))["family"] == "bert"


def test_too_big_for_memory_is_refused_before_loading(ckpt, monkeypatch):
    monkeypatch.setattr(memory_mod, "available_memory", lambda device: 1000)
    monkeypatch.setattr(
        transformers.PreTrainedModel, "from_pretrained", classmethod(lambda *a, **k: pytest.fail("weights loaded"))
    )
    with pytest.raises(ModelLoadError, match=r"weights need about .* GiB in float32, but only .* free"):
        load_hf_checkpoint(ckpt("bert"))


# ----------------------------------------------------------------------------- out of memory
def _oom_when(emb, fails):
    """Make the model's forward raise torch.OutOfMemoryError while ``fails(batch_rows)``; returns the calls' rows."""
    calls = []
    forward = emb.model.forward

    def patched(*args, **kwargs):
        rows = kwargs["input_ids"].shape[0]
        calls.append(rows)
        if fails(rows):
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(*args, **kwargs)

    emb.model.forward = patched
    return calls


def test_out_of_memory_halves_the_budget_and_gives_the_same_vectors(ckpt, caplog):
    path = ckpt("bert")
    sents = [(WORDS * 3)[: 4 + i % 7] for i in range(12)]
    ref = load_hf_checkpoint(path).embed(sents)
    emb = load_hf_checkpoint(path)
    budget = emb.max_tokens
    first = [True]
    calls = _oom_when(emb, lambda rows: first.pop() if first else False)  # once, on the first batch
    with caplog.at_level(logging.WARNING, logger="models.transformer.memory"):
        out = emb.embed(sents)
    assert emb.max_tokens == budget // 2 and len(calls) >= 2
    warnings = [r.getMessage() for r in caplog.records if "halved" in r.getMessage()]
    assert len(warnings) == 1 and f"halved to {budget // 2}" in warnings[0]
    half = load_hf_checkpoint(path)
    half.max_tokens = budget // 2
    for o, h, r in zip(out, half.embed(sents), ref):  # all rows re-packed: exactly the half-budget run
        np.testing.assert_array_equal(o.vectors, h.vectors)
        np.testing.assert_allclose(o.vectors, r.vectors, atol=1e-5)


def test_a_library_out_of_memory_runtime_error_is_re_packed_and_any_other_runtime_error_raised(ckpt):
    """cuBLAS and cuDNN report running out of GPU memory as a plain RuntimeError (``CUBLAS_STATUS_ALLOC_FAILED``),
    not as ``torch.OutOfMemoryError``: the run ended where torch's own error would have been re-packed."""
    path = ckpt("bert")
    sents = [(WORDS * 3)[: 4 + i % 7] for i in range(12)]
    ref = load_hf_checkpoint(path).embed(sents)
    emb = load_hf_checkpoint(path)
    budget, forward, calls = emb.max_tokens, emb.model.forward, []

    def cublas_once(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if len(calls) == 1:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return forward(*args, **kwargs)

    emb.model.forward = cublas_once
    for o, r in zip(emb.embed(sents), ref):
        np.testing.assert_allclose(o.vectors, r.vectors, atol=1e-5)
    assert emb.max_tokens == budget // 2 and len(calls) >= 2
    emb.model.forward = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        emb.embed(sents)
    assert emb.max_tokens == budget // 2  # a bug is not an out-of-memory: no budget halved


def test_the_failed_batchs_memory_is_free_before_the_budget_is_halved(ckpt, monkeypatch):
    """``repack_after_oom`` (and its ``torch.cuda.empty_cache``) ran inside the ``except``, whose traceback kept
    the failed forward's tensors alive: on a GPU the cache was emptied of nothing."""
    import weakref

    import models.transformer.embedder as embedder_mod

    emb = load_hf_checkpoint(ckpt("bert"))
    forward, held, seen = emb.model.forward, [], []

    def failing_once(*args, **kwargs):
        if not held:
            activation = torch.ones(256, 1024)  # what the failed forward had allocated
            held.append(weakref.ref(activation))
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(*args, **kwargs)

    real = embedder_mod.repack_after_oom

    def repack(*args, **kwargs):
        seen.append(held[0]() is None)
        return real(*args, **kwargs)

    emb.model.forward = failing_once
    monkeypatch.setattr(embedder_mod, "repack_after_oom", repack)
    emb.embed([WORDS, WORDS[:4]])
    assert seen == [True]


def test_out_of_memory_until_batches_are_small_then_a_lone_row_fails(ckpt, caplog):
    path = ckpt("bert")
    sents = [(WORDS * 3)[: 4 + i % 7] for i in range(12)]
    ref = load_hf_checkpoint(path).embed(sents)
    emb = load_hf_checkpoint(path, device="cpu")
    emb.max_tokens = 400
    _oom_when(emb, lambda rows: rows > 2)
    with caplog.at_level(logging.WARNING, logger="models.transformer.memory"):
        out = emb.embed(sents)
    assert emb.max_tokens < 400 and sum("halved" in r.getMessage() for r in caplog.records) >= 2
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o.vectors, r.vectors, atol=1e-5)
    _oom_when(emb, lambda rows: True)
    with pytest.raises(torch.OutOfMemoryError, match=r"one window of \d+ pieces does not fit.*GiB.*window"):
        emb.embed([WORDS])


def test_the_fingerprint_counts_every_file_the_tokenizer_reads(ckpt, tmp_path):
    """An ``added_tokens.json`` beside a checkpoint changes its tokenizer ("unhappiness": 4 pieces -> 1), and a
    DeBERTa-v2's ``spm.model`` is its vocabulary, but neither was in the fingerprint: features cached before such a
    change were reused (an audit). The fixed list now has ``added_tokens.json``, and the loaded tokenizer's own
    ``vocab_files_names`` count too."""
    from models.transformer.checkpoint import fingerprint_files

    folder = copy_ckpt(ckpt("bert"), tmp_path / "copy")
    before = fingerprint_files(folder)
    assert fingerprint_files(folder, ("spm.model",)) == before  # a name without its file changes nothing
    (folder / "added_tokens.json").write_text('{"unhappiness": 1000}')
    with_added = fingerprint_files(folder)
    assert with_added != before
    (folder / "spm.model").write_bytes(b"\x0a\x05piece")
    assert fingerprint_files(folder, ("spm.model",)) != with_added == fingerprint_files(folder)
    emb = load_hf_checkpoint(ckpt("bert"))
    assert emb.fingerprint() == load_hf_checkpoint(ckpt("bert")).fingerprint()  # a checkpoint without them: as before
