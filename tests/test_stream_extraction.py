"""The feature cache's streamed transformer path (``models.transformer.stream``) gives exactly ``embed``'s values.

Issue 33: pooling on the device, one copy per batch, only kept words pooled, the next chunk planned in a
thread. Checked on real text (Treebank sentences) through tiny random checkpoints of an encoder (WordPiece,
first/last/mean pooling) and a decoder (byte-level BPE), with sentences longer than one window, empty
sentences and a ``keep`` selection; then the feature cache built through it, and its failure paths.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from features import NonFiniteFeaturesError, get_features, read_meta
from models.tiny import make_tiny_checkpoint
from models.transformer.auto import load_hf_checkpoint
from models.transformer.stream import stream_rows


@pytest.fixture(scope="module")
def sentences(data_root) -> list[list[str]]:
    from corpora.wsj import load_treebank

    sents = [list(s.words) for s in load_treebank()[:150]]
    # an empty sentence, a one-word one, and one longer than any window below (several rows)
    return sents[:60] + [[], ["Hello"], sents[5] * 6] + sents[60:]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, sentences) -> dict[str, object]:
    root = tmp_path_factory.mktemp("stream")
    corpus = [s for s in sentences if s]
    return {
        kind: make_tiny_checkpoint(kind, root / kind, corpus=corpus, layers=2, hidden=32, heads=2, vocab_size=300)
        for kind in ("bert", "gpt2")
    }


def streamed(emb, sentences, keep=None, dtype=torch.float16, chunk=40, ahead=None) -> np.ndarray:
    """Rows of every sentence in sentence order (keep: per-sentence word indices), via ``stream_rows``
    (``embed_rows``; ``ahead``: plan the next chunk in a thread, as on a GPU)."""
    chunks = [(sentences[i : i + chunk], None if keep is None else keep[i : i + chunk]) for i in range(0, 400, chunk)]
    chunks = [c for c in chunks if c[0]]
    parts: dict[int, np.ndarray] = {}
    for c, block in stream_rows(emb, iter(chunks), dtype, ahead):
        assert block.rows.dtype == dtype and block.rows.device.type == "cpu"
        ends = np.cumsum(block.counts)
        for k, s in enumerate(block.sentences):
            i = c * chunk + int(s)
            assert i not in parts, "a sentence handed over twice"
            parts[i] = block.rows[:, ends[k] - block.counts[k] : ends[k]].numpy()
    L, D = emb.num_layers, emb.dim
    return np.concatenate([parts.get(i, np.zeros((L, 0, D), np.float16)) for i in range(len(sentences))], 1)


def reference(emb, sentences, keep=None, dtype=np.float16) -> np.ndarray:
    outs = emb.embed(sentences)
    rows = [o.vectors if keep is None else o.vectors[:, keep[i]] for i, o in enumerate(outs)]
    return np.concatenate(rows, 1).astype(dtype)


@pytest.mark.parametrize("kind, pooling", [("bert", "mean"), ("bert", "first"), ("bert", "last"), ("gpt2", "mean")])
def test_streamed_rows_equal_embed_bit_for_bit(checkpoints, sentences, kind, pooling):
    emb = load_hf_checkpoint(checkpoints[kind], pooling=pooling, dtype="fp32", window=24, device="cpu")
    assert any(len(r.ids) > 20 for r in emb._rows([sentences[62]])[0]), "the long sentence needs several windows"
    rng = np.random.default_rng(0)
    keep = [np.sort(rng.choice(len(s), len(s) // 3, replace=False)) for s in sentences]
    for sel, ahead in ((None, 0), (keep, 0), (keep, 3)):
        got, want = streamed(emb, sentences, sel, ahead=ahead), reference(emb, sentences, sel)
        assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(streamed(emb, sentences, dtype=torch.float32), reference(emb, sentences, dtype=np.float32))


def test_out_of_memory_repacks_and_gives_the_same_rows(checkpoints, sentences, monkeypatch):
    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", window=24, device="cpu")
    want = streamed(emb, sentences)
    budget, run, calls = emb.max_tokens, emb._run_tensors, []

    def flaky(ids, mask, with_attention):
        calls.append(ids.numel())
        if len(calls) in (1, 5):  # the first batch of a chunk, then one in the middle of a chunk
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return run(ids, mask, with_attention)

    monkeypatch.setattr(emb, "_run_tensors", flaky)
    assert np.array_equal(streamed(emb, sentences), want)
    assert emb.max_tokens == budget // 4  # halved twice, as embed does


def test_the_streams_failed_batch_is_free_before_the_budget_is_halved(checkpoints, sentences, monkeypatch):
    """As ``embed``'s: the re-pack (and its ``torch.cuda.empty_cache``) ran while the handler's traceback held the
    failed batch's tensors."""
    import weakref

    import models.transformer.stream as stream_mod

    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", window=24, device="cpu")
    run, held, seen = emb._run_tensors, [], []

    def failing_once(ids, mask, with_attention):
        if not held:
            activation = torch.ones(256, 1024)
            held.append(weakref.ref(activation))
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return run(ids, mask, with_attention)

    real = stream_mod.repack_after_oom

    def repack(*args, **kwargs):
        seen.append(held[0]() is None)
        return real(*args, **kwargs)

    monkeypatch.setattr(emb, "_run_tensors", failing_once)
    monkeypatch.setattr(stream_mod, "repack_after_oom", repack)
    streamed(emb, sentences)
    assert seen == [True]


def test_feature_cache_through_the_stream_equals_embed(checkpoints, sentences, tmp_path):
    emb = load_hf_checkpoint(checkpoints["gpt2"], dtype="fp32", window=24, device="cpu")
    total = sum(map(len, sentences))
    keep = np.sort(np.random.default_rng(1).choice(total, total // 4, replace=False))
    feats = get_features(emb, "toy", sentences, root=tmp_path, keep=keep, chunk_size=16, show_progress=False)
    flat = np.concatenate([o.vectors for o in emb.embed(sentences)], 1)[:, keep].astype(np.float16)
    assert np.array_equal(feats.stacked(dtype=np.float16), flat)


def test_non_finite_hidden_states_name_the_sentence_and_cache_nothing(checkpoints, sentences, tmp_path):
    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", device="cpu")
    with torch.no_grad():
        emb.model.embeddings.word_embeddings.weight[emb.tokenizer.convert_tokens_to_ids("the")] = float("nan")
    with pytest.raises(NonFiniteFeaturesError, match=r"NaN or inf values at layer 0 .*sentence \d+: "):
        get_features(emb, "toy", sentences, root=tmp_path, show_progress=False)
    assert not list(tmp_path.glob("features/*/toy/*.npy"))


def test_a_bad_sentence_in_a_later_chunk_is_refused_as_embed_refuses_it(checkpoints, sentences, tmp_path):
    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", device="cpu")
    bad = sentences[:100] + [["ok", "\ud800"]]
    with pytest.raises(ValueError, match="lone surrogate"):
        get_features(emb, "toy", bad, root=tmp_path, chunk_size=16, show_progress=False)


def test_a_disk_too_small_keeps_the_layers_asked_for_or_refuses_before_embedding(
    checkpoints, sentences, tmp_path, monkeypatch, caplog
):
    import logging
    import shutil
    from collections import namedtuple

    from features import DISK_SHARE, FeatureCacheError

    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", device="cpu")
    per_layer = sum(map(len, sentences)) * emb.dim * 2
    usage, real, calls = namedtuple("usage", "total used free"), shutil.disk_usage, []
    free = {"bytes": int(2.5 * per_layer / DISK_SHARE)}  # room for two of the three layers
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(real(path).total, 0, free["bytes"]))
    monkeypatch.setattr(emb, "embed_rows", lambda *a: calls.append(1) or type(emb).embed_rows(emb, *a))
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        feats = get_features(emb, "toy", sentences, layers=[0, 2], root=tmp_path, show_progress=False)
    assert sorted(feats.layers) == [0, 2] and len(calls) == 1
    assert sorted(p.name for p in feats.directory.glob("layer_*.npy")) == ["layer_0.npy", "layer_2.npy"]
    assert "the 3 layers not stored yet need" in caplog.text
    assert "writing only the requested layers [0, 2]" in caplog.text
    before = feats.stacked()
    # Another layer later, room for one: it is added to the entry, the two stored ones stay (not embedded
    # again as files, not dropped from meta.json), and the entry now serves every layer from the cache.
    free["bytes"] = int(1.5 * per_layer / DISK_SHARE)
    feats = get_features(emb, "toy", sentences, layers=[1], root=tmp_path, show_progress=False)
    assert len(calls) == 2 and sorted(read_meta(feats.directory)["layers"]) == ["0", "1", "2"]
    every = get_features(emb, "toy", sentences, root=tmp_path, show_progress=False)
    assert len(calls) == 2 and np.array_equal(every.stacked([0, 2]), before)
    assert np.array_equal(every.layer(1), feats.layer(1))
    free["bytes"] = per_layer // 2
    # one layer asked for: no "ask for fewer layers" (it cannot be fewer), free space or another disk
    with pytest.raises(FeatureCacheError, match=r"needs .* for the 1 layer asked for .* is free in [^ ]+\. Free some"):
        get_features(emb, "toy2", sentences, layers=[1], root=tmp_path, show_progress=False)
    assert len(calls) == 2 and not list(tmp_path.glob("features/*/toy2/*.npy"))


def test_layers_written_by_several_threads_equal_one_thread(checkpoints, sentences, tmp_path, monkeypatch):
    """A GPU machine's path on this one: big blocks written a layer per thread, checksums in parallel."""
    import features.build as build

    emb = load_hf_checkpoint(checkpoints["bert"], dtype="fp32", device="cpu")
    one = get_features(emb, "toy", sentences, root=tmp_path / "one", show_progress=False).stacked(dtype=np.float16)
    monkeypatch.setattr(build.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(build.LayerFiles, "PARALLEL_BYTES", 0)
    feats = get_features(emb, "toy", sentences, root=tmp_path / "many", show_progress=False)
    assert np.array_equal(feats.stacked(dtype=np.float16), one)
    meta = (feats.directory / "meta.json").read_text()
    assert all(build.file_checksum(feats.directory / f"layer_{j}.npy") in meta for j in range(emb.num_layers))
