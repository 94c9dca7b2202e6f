"""Transformer embedders (MiniLM = BERT family, a small GPT-2 built here) and the GPT trainer.

Real weights (MiniLM from its pip package) and real sentences (Brown corpus from the data dir).
Reference values come from independent computations: a plain ``transformers`` forward pass per
sentence, pooled with a Python loop over ``word_ids()``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from models import DEFAULT_MODEL
from models.base import ModelLoadError
from models.registry import get_spec, load_spec
from models.transformer import BertEmbedder, GptEmbedder

torch.set_num_threads(2)


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def brown_sents(data_root) -> list[list[str]]:
    from corpora.paths import setup_nltk

    setup_nltk()
    from nltk.corpus import brown

    return [list(s) for s in brown.sents(fileids=["ca01", "cb01"])[:80]]


@pytest.fixture(scope="module")
def minilm() -> BertEmbedder:
    return load_spec(get_spec(DEFAULT_MODEL))


@pytest.fixture(scope="module")
def minilm_first() -> BertEmbedder:
    return load_spec(get_spec(DEFAULT_MODEL), pooling="first")


def naive_word_vectors(emb, words: list[str], pooling: str = "mean") -> np.ndarray:
    """One sentence through plain transformers, pieces pooled with a per-word loop: (L+1, W, D)."""
    enc = emb.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    wids = enc.word_ids()
    if emb.family == "gpt":  # our GPT embedder prepends BOS
        bos = emb.tokenizer.bos_token_id
        enc = {"input_ids": torch.cat([torch.tensor([[bos]]), enc["input_ids"]], 1)}
        wids = [None] + wids
    with torch.inference_mode():
        hs = torch.stack(emb.model(**enc, output_hidden_states=True).hidden_states)[:, 0].numpy()
    out = np.zeros((hs.shape[0], len(words), hs.shape[-1]), np.float32)
    for w in range(len(words)):
        idx = [i for i, x in enumerate(wids) if x == w]
        out[:, w] = hs[:, idx].mean(1) if pooling == "mean" else hs[:, idx[0]]
    return out


def single_piece_words(emb, sents: list[list[str]], n: int) -> list[str]:
    """n corpus words (in order, repeated if needed) that the tokenizer keeps as one piece."""
    flat = [w for s in sents for w in s]
    ok = [w for w, ids in zip(flat, emb.tokenizer(flat, add_special_tokens=False)["input_ids"]) if len(ids) == 1]
    return (ok * (n // len(ok) + 1))[:n]


# ----------------------------------------------------------------------------- MiniLM
def test_minilm_shapes_and_info(minilm, brown_sents):
    out = minilm.embed(brown_sents[:3])
    assert minilm.num_layers == 7 and minilm.dim == 384 and minilm.info.family == "bert"
    for sent, o in zip(brown_sents[:3], out):
        assert o.vectors.shape == (7, len(sent), 384)
        assert o.vectors.dtype == np.float32 and np.isfinite(o.vectors).all()
        assert o.words == sent
    # layers differ (layer 0 is the embedding output, not a copy of a later layer)
    v = out[0].vectors
    assert not np.allclose(v[0], v[1]) and not np.allclose(v[5], v[6])


def test_multi_piece_word_gets_one_vector(minilm, minilm_first):
    words = ["The", "bank", "was", "unbelievably", "crowded", "."]
    pieces = minilm.tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    n_pieces = [sum(1 for w in pieces.word_ids() if w == i) for i in range(len(words))]
    assert n_pieces[3] > 1 and n_pieces[1] == 1  # "unbelievably" is split, "bank" is not
    mean = minilm.embed([words])[0].vectors
    first = minilm_first.embed([words])[0].vectors
    assert mean.shape == first.shape == (7, len(words), 384)
    # pooling matters only for the split word
    assert not np.allclose(mean[:, 3], first[:, 3], atol=1e-3)
    single = [i for i, n in enumerate(n_pieces) if n == 1]
    np.testing.assert_allclose(mean[:, single], first[:, single], atol=1e-5)
    # and both agree with an independent pooling of a plain transformers forward pass
    np.testing.assert_allclose(mean, naive_word_vectors(minilm, words, "mean"), atol=1e-4)
    np.testing.assert_allclose(first, naive_word_vectors(minilm, words, "first"), atol=1e-4)
    assert minilm.fingerprint() != minilm_first.fingerprint()


def test_word_attention_shapes_rows_and_mapping(minilm):
    words = ["The", "bank", "was", "unbelievably", "crowded", "."]
    att = minilm.embed([words], with_attention=True)[0].attentions
    assert att.shape == (6, 12, len(words), len(words))
    assert (att >= 0).all()
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    # recompute from the piece view: sum over key pieces, mean over query pieces, drop specials, renormalise
    pa = minilm.piece_attention(words)
    assert pa.pieces[0] == "[CLS]" and pa.pieces[-1] == "[SEP]"
    assert pa.word_ids[0] is None and pa.word_ids[-1] is None
    assert pa.attentions.shape == (6, 12, len(pa.pieces), len(pa.pieces))
    np.testing.assert_allclose(pa.attentions.sum(-1), 1.0, atol=1e-5)
    ref = np.zeros_like(att)
    for qw in range(len(words)):
        q = [i for i, w in enumerate(pa.word_ids) if w == qw]
        for kw in range(len(words)):
            k = [i for i, w in enumerate(pa.word_ids) if w == kw]
            ref[:, :, qw, kw] = pa.attentions[:, :, q][:, :, :, k].sum(-1).mean(-1)
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(att, ref, atol=1e-5)


def test_deterministic_and_batch_independent(minilm, brown_sents):
    a = minilm.embed(brown_sents[:6])
    b = minilm.embed(brown_sents[:6])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.vectors, y.vectors)
    alone = minilm.embed([brown_sents[4]])[0].vectors
    np.testing.assert_allclose(alone, a[4].vectors, atol=1e-5)


def test_batched_equals_naive_one_sentence_at_a_time(brown_sents):
    # a small token budget forces several padded batches of mixed lengths; results must come back in order
    emb = load_spec(get_spec(DEFAULT_MODEL))
    emb.max_tokens = 200
    sents = brown_sents[:16]
    rows, _ = emb._rows(sents)
    assert len(emb._batches(rows, False)) >= 3
    out = emb.embed(sents)
    worst = max(np.abs(o.vectors - naive_word_vectors(emb, s)).max() for o, s in zip(out, sents))
    assert worst < 1e-4, worst


def test_long_input_windowed_and_stitched(minilm, brown_sents):
    words = single_piece_words(minilm, brown_sents, 600)  # 600 pieces > 510: two windows, starts 0 and 90
    assert minilm.window == 510
    out = minilm.embed([words])[0].vectors
    assert out.shape == (7, 600, 384) and np.isfinite(out).all()
    first = minilm.embed([words[:510]])[0].vectors  # window 1 run on its own
    second = minilm.embed([words[90:]])[0].vectors  # window 2 run on its own
    # each piece comes from the window where it has more context on its poorer side: the cut is mid-overlap (~300)
    np.testing.assert_allclose(out[:, :295], first[:, :295], atol=1e-4)
    np.testing.assert_allclose(out[:, 305:], second[:, 305 - 90 :], atol=1e-4)
    with pytest.raises(ValueError, match="window"):
        minilm.embed([words], with_attention=True)
    with pytest.raises(ValueError, match="window"):
        minilm.piece_attention(words)


def test_empty_inputs(minilm):
    assert minilm.embed([]) == []
    out = minilm.embed([[], ["A", "bank", "."], []], with_attention=True)
    assert out[0].vectors.shape == (7, 0, 384) and out[2].vectors.shape == (7, 0, 384)
    assert out[1].vectors.shape == (7, 3, 384) and out[1].attentions.shape == (6, 12, 3, 3)
    with pytest.raises(ValueError):
        minilm.piece_attention([])


def test_unicode_emoji_rtl_and_dropped_characters(minilm):
    words = ["I", "😀", "שלום", "مرحبا", "日本語", "cafe\u0301", "\u200b", "\x00", "ok"]
    out = minilm.embed([words], with_attention=True)[0]
    assert out.vectors.shape == (7, len(words), 384) and np.isfinite(out.vectors).all()
    np.testing.assert_allclose(out.attentions.sum(-1), 1.0, atol=1e-5)
    pa = minilm.piece_attention(words)
    assert set(w for w in pa.word_ids if w is not None) == set(range(len(words)))
    # a zero-width space or NUL vanishes in the tokenizer: it is given the [UNK] piece, not skipped
    for i in (6, 7):
        assert [p for p, w in zip(pa.pieces, pa.word_ids) if w == i] == ["[UNK]"]


def test_bad_arguments(minilm):
    with pytest.raises(ValueError, match="pooling"):
        BertEmbedder(minilm.path, name="x", pooling="max")
    with pytest.raises(ValueError, match="max_length"):
        BertEmbedder(minilm.path, name="x", max_length=100_000)


def _copy_small_files(src: Path, dst: Path) -> None:
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file() and f.suffix != ".safetensors":
            shutil.copy(f, dst / f.name)


def test_corrupted_checkpoints_raise_model_load_error(minilm, tmp_path):
    src = Path(minilm.path)
    with pytest.raises(ModelLoadError, match="does not exist"):
        BertEmbedder(tmp_path / "nope", name="x")
    # truncated weights
    trunc = tmp_path / "trunc"
    _copy_small_files(src, trunc)
    with open(src / "model.safetensors", "rb") as fh:
        (trunc / "model.safetensors").write_bytes(fh.read(1_000_000))
    with pytest.raises(ModelLoadError, match=r"model\.safetensors.*truncated"):
        BertEmbedder(trunc, name="x")
    # garbage header
    (trunc / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ModelLoadError, match=r"model\.safetensors"):
        BertEmbedder(trunc, name="x")
    # truncated config
    bad_cfg = tmp_path / "badcfg"
    _copy_small_files(src, bad_cfg)
    text = (src / "config.json").read_text()
    (bad_cfg / "config.json").write_text(text[: len(text) // 2])
    with pytest.raises(ModelLoadError, match=r"config\.json"):
        BertEmbedder(bad_cfg, name="x")
    # a good config but no weights file at all
    shutil.copy(src / "config.json", bad_cfg / "config.json")
    with pytest.raises(ModelLoadError, match="no weights"):
        BertEmbedder(bad_cfg, name="x")


# ----------------------------------------------------------------------------- GPT
@pytest.fixture(scope="module")
def tiny_gpt_dir(tmp_path_factory, brown_sents) -> Path:
    """A random 2-layer GPT-2 with a word-level tokenizer built from a Brown slice, saved to disk."""
    from collections import Counter

    from models.train.gpt_lm import build_model, build_word_tokenizer

    torch.manual_seed(0)
    tok = build_word_tokenizer(Counter(w for s in brown_sents for w in s), max_size=600)
    model = build_model(len(tok), d_model=32, n_layer=2, n_head=2, context=32, dropout=0.0, tokenizer=tok)
    out = tmp_path_factory.mktemp("gpt") / "tiny"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_gpt_save_load_round_trip(tiny_gpt_dir, brown_sents):
    from transformers import AutoTokenizer, GPT2LMHeadModel

    emb = GptEmbedder(tiny_gpt_dir, name="tiny")
    assert emb.info.family == "gpt" and emb.num_layers == 3 and emb.dim == 32 and emb.window == 31
    tok = AutoTokenizer.from_pretrained(tiny_gpt_dir)
    assert tok.tokenize("The JURY said zzzqx") == ["the", "jury", "said", "<unk>"]  # lowercasing word-level
    model = GPT2LMHeadModel.from_pretrained(tiny_gpt_dir).eval()
    sent = brown_sents[1][:20]
    ids = torch.tensor([[tok.bos_token_id] + tok.convert_tokens_to_ids([w.lower() for w in sent])])
    with torch.inference_mode():
        ref = torch.stack(model(input_ids=ids, output_hidden_states=True).hidden_states)[:, 0, 1:].numpy()
    got = emb.embed([sent])[0].vectors
    np.testing.assert_allclose(got, ref, atol=1e-5)
    np.testing.assert_allclose(got, naive_word_vectors(emb, sent), atol=1e-5)


def test_gpt_is_causal_and_attention_is_lower_triangular(tiny_gpt_dir, brown_sents):
    emb = GptEmbedder(tiny_gpt_dir, name="tiny")
    sent = brown_sents[2][:15]
    k = 6
    changed = list(sent)
    changed[k + 1] = "government" if sent[k + 1] != "government" else "jury"
    a, b = emb.embed([sent, changed], with_attention=True)
    np.testing.assert_allclose(a.vectors[:, : k + 1], b.vectors[:, : k + 1], atol=1e-6)
    assert not np.allclose(a.vectors[1:, k + 1], b.vectors[1:, k + 1], atol=1e-4)
    att = a.attentions
    assert att.shape == (2, 2, len(sent), len(sent))
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    assert np.abs(np.triu(att, k=1)).max() == 0.0  # no word attends to a later word


def test_gpt_windows_match_unwindowed_on_first_window(tiny_gpt_dir, brown_sents):
    words = [w for s in brown_sents for w in s][:30]
    full = GptEmbedder(tiny_gpt_dir, name="tiny").embed([words])[0].vectors  # 31 pieces: one window
    small = GptEmbedder(tiny_gpt_dir, name="tiny", max_length=12)  # 11 pieces a window
    win = small.embed([words])[0].vectors
    assert win.shape == full.shape
    # causal: the first window sees exactly what the full run sees
    np.testing.assert_allclose(win[:, :11], full[:, :11], atol=1e-5)
    # later pieces have ≥ stride words of left context but not all of it: they differ from the full run
    assert not np.allclose(win[-1], full[-1], atol=1e-4)


def test_gpt_ten_thousand_words(tiny_gpt_dir, brown_sents):
    emb = GptEmbedder(tiny_gpt_dir, name="tiny")
    words = ([w for s in brown_sents for w in s] * 10)[:10_000]
    out = emb.embed([words])[0]
    assert out.vectors.shape == (3, 10_000, 32) and np.isfinite(out.vectors).all()
    with pytest.raises(ValueError, match="windows"):
        emb.embed([words], with_attention=True)


def test_gpt_training_steps_lower_the_loss(brown_sents):
    from collections import Counter

    from models.train.gpt_lm import build_model, build_word_tokenizer, encode_stream, evaluate, train_steps

    torch.manual_seed(0)
    tok = build_word_tokenizer(Counter(w for s in brown_sents for w in s), max_size=500)
    stream = encode_stream(brown_sents, tok)
    model = build_model(len(tok), d_model=32, n_layer=2, n_head=2, context=32, dropout=0.0, tokenizer=tok)
    before, n = evaluate(model, stream, 32, torch.device("cpu"))
    losses = train_steps(model, stream, 25, batch_size=8, context=32, lr=3e-3, warmup=5, seed=0, log_every=0)
    after, _ = evaluate(model, stream, 32, torch.device("cpu"))
    assert n > 1000 and len(losses) == 25
    assert after < before - 0.5, (before, after)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_gpt_trainer_cli_writes_loadable_asset(tmp_path, monkeypatch):
    from models.train import gpt as train_gpt

    out = tmp_path / "gpt-cli"
    rc = train_gpt.main(
        [
            "--out",
            str(out),
            "--max-sentences",
            "400",
            "--vocab-size",
            "300",
            "--d-model",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--context",
            "16",
            "--batch-size",
            "4",
            "--steps",
            "6",
            "--warmup",
            "2",
            "--checkpoint-every",
            "3",
            "--log-every",
            "0",
            "--threads",
            "1",
        ]
    )
    assert rc == 0
    card = json.loads((out / "model_card.json").read_text())
    for key in (
        "name",
        "family",
        "corpus",
        "corpus_tokens",
        "vocab_size",
        "params",
        "dim",
        "layers",
        "steps",
        "wall_time_s",
        "final_loss",
        "perplexity",
        "command",
        "date",
        "machine",
    ):
        assert key in card, key
    assert card["steps"] == 6 and card["perplexity"] > 1 and not (out / "checkpoint.pt").exists()
    # one date and machine format in every trainer's card (GPT's said "2026-11-22 12:45 UTC", ELMo's another way)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", card["date"]) and "torch threads" in card["machine"]
    emb = GptEmbedder(out, name="gpt-cli")
    assert emb.embed([["the", "cat"]])[0].vectors.shape == (2, 2, 16)


# ----------------------------------------------------------------------------- listing
def test_model_list_without_assets(tmp_path, capsys):
    from models import listing
    from models.registry import REGISTRY

    (tmp_path / "gpt-small").mkdir()
    (tmp_path / "gpt-small" / "checkpoint.pt").write_bytes(b"x")
    assert listing.print_model_table(assets_dir=tmp_path) == 0
    text = capsys.readouterr().out
    for name in REGISTRY:
        assert name in text
    rows = {r.name: r for r in listing.model_rows(assets_dir=tmp_path)}
    assert rows["minilm"].layers == 7 and rows["minilm"].dim == 384 and rows["minilm"].status == "ok"
    assert (
        rows["gpt-small"].status.startswith("not trained") and "python -m models train gpt" in rows["gpt-small"].status
    )
    assert "checkpoint" in rows["gpt-small"].status


def test_cpu_token_budget_default_and_bf16_option(minilm, brown_sents):
    assert minilm.max_tokens == (2048 if minilm.device.type == "cpu" else 8192)
    bf = BertEmbedder(minilm.path, name="minilm", cpu_bf16=True, max_tokens=300, device="cpu")
    assert bf.dtype == torch.bfloat16 and bf.max_tokens == 300
    assert bf.fingerprint() != BertEmbedder(minilm.path, name="minilm", device="cpu").fingerprint()
    ref = BertEmbedder(minilm.path, name="minilm", device="cpu").embed(brown_sents[:4])
    out = bf.embed(brown_sents[:4])
    for r, o in zip(ref, out):
        assert o.vectors.dtype == np.float32 and o.vectors.shape == r.vectors.shape
        cos = (r.vectors * o.vectors).sum(-1) / np.linalg.norm(r.vectors, axis=-1) / np.linalg.norm(o.vectors, axis=-1)
        assert cos.min() > 0.99, cos.min()  # close to fp32, not equal: bf16 keeps 8 mantissa bits
        assert not np.array_equal(r.vectors, o.vectors)


def test_reuse_freed_memory_applies_on_glibc_and_changes_no_vector(minilm, brown_sents):
    import platform

    from models.allocator import reuse_freed_memory

    before = minilm.embed(brown_sents[:6])
    assert reuse_freed_memory() is (platform.libc_ver()[0] == "glibc")
    after = minilm.embed(brown_sents[:6])
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.vectors, b.vectors)
