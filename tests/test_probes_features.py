"""Feature cache: exact round trip, reuse, rebuild on truncation / corruption / staleness."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from features.extract import get_features
from features.store import FORMAT_VERSION
from tests.probe_helpers import RandomEmbedder

SENTS = [["The", "bank", "closed", "."], ["He", "sat", "on", "the", "river", "bank"], [], ["Play", "!"]]


def _expected(emb, sents, layer):
    rows = [emb._word_vec(w)[layer] for s in sents for w in s]
    return np.stack(rows)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cache_returns_what_it_stored(tmp_path, dtype):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", SENTS, dtype=dtype, root=tmp_path, show_progress=False)
    assert emb.calls == 1
    assert list(f.offsets) == [0, 4, 10, 10, 12]
    for j in range(emb.num_layers):
        want = _expected(emb, SENTS, j).astype(dtype)
        assert f.layer(j).dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(f.layer(j)), want)
    np.testing.assert_array_equal(f.sentence(1, 1), _expected(emb, [SENTS[1]], 1).astype(dtype))
    # Second call: no extraction, identical bytes, memory-mapped.
    g = get_features(emb, "toy", SENTS, dtype=dtype, root=tmp_path, show_progress=False)
    assert emb.calls == 1
    assert isinstance(g.layer(0), np.memmap)
    for j in range(emb.num_layers):
        np.testing.assert_array_equal(np.asarray(g.layer(j)), np.asarray(f.layer(j)))


def test_chunking_and_length_sorting_do_not_change_vectors(tmp_path):
    emb = RandomEmbedder()
    a = get_features(emb, "a", SENTS, chunk_size=1, root=tmp_path, show_progress=False, dtype="float32")
    b = get_features(emb, "b", SENTS, chunk_size=1000, root=tmp_path, show_progress=False, dtype="float32")
    np.testing.assert_array_equal(np.asarray(a.layer(2)), np.asarray(b.layer(2)))


def test_truncated_file_is_rebuilt(tmp_path, caplog):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    path = f.directory / "layer_1.npy"
    want = np.asarray(f.layer(1)).copy()
    del f
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        g = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 2
    assert "truncated" in caplog.text
    np.testing.assert_array_equal(np.asarray(g.layer(1)), want)


def test_corrupt_header_and_meta_are_rebuilt(tmp_path, caplog):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    (f.directory / "layer_0.npy").write_bytes(b"garbage" * 100)
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 2 and "layer 0 invalid" in caplog.text
    (f.directory / "meta.json").write_text("{not json")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 3
    assert "is damaged (meta.json is unreadable" in caplog.text and "stale" not in caplog.text  # not another request's
    assert json.loads((f.directory / "meta.json").read_text())["num_words"] == 12


def test_other_model_version_or_other_sentences_is_stale(tmp_path, caplog):
    old = RandomEmbedder(version="v1")
    get_features(old, "toy", SENTS, root=tmp_path, show_progress=False)
    new = RandomEmbedder(version="v2", seed=1)
    assert new.fingerprint() != old.fingerprint()
    # Simulate an entry written by the old weights in the new fingerprint's directory
    # (e.g. a model file replaced in place): the meta's fingerprint gives it away.
    src = tmp_path / "features" / old.fingerprint() / "toy"
    dst = tmp_path / "features" / new.fingerprint() / "toy"
    dst.parent.mkdir(parents=True)
    src.rename(dst)
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        g = get_features(new, "toy", SENTS, root=tmp_path, show_progress=False, dtype="float16")
    assert "another model version" in caplog.text and new.calls == 1
    np.testing.assert_array_equal(np.asarray(g.layer(0)), _expected(new, SENTS, 0).astype(np.float16))
    caplog.clear()
    other = [s + ["extra"] for s in SENTS]
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        h = get_features(new, "toy", other, root=tmp_path, show_progress=False)
    assert "other sentences" in caplog.text and new.calls == 2
    assert h.num_words == 16


def test_entries_of_the_previous_format_are_rebuilt_once(tmp_path, caplog):
    emb = RandomEmbedder()
    f = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    meta = json.loads((f.directory / "meta.json").read_text())
    for entry in meta["layers"].values():  # version 1 had no checksums
        del entry["checksum"]
    (f.directory / "meta.json").write_text(json.dumps({**meta, "version": 1}))
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 2 and caplog.text.count(f"format version 1 != {FORMAT_VERSION}") == 1


def test_an_entry_computed_under_another_library_release_is_rebuilt(tmp_path, caplog):
    """The model's files name the entry, not the tokenizer or kernels that turned them into vectors: features a
    transformers upgrade would compute otherwise were served as they were. An entry records the releases of its
    embedder's ``computed_with`` and is rebuilt under others, once."""
    from features.entries import has_layers
    from features.store import library_versions

    emb = RandomEmbedder()
    emb.computed_with = ("torch", "numpy")
    f = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    meta = json.loads((f.directory / "meta.json").read_text())
    assert (
        meta["libraries"] == library_versions(["torch", "numpy"]) and "not installed" not in meta["libraries"].values()
    )
    assert has_layers(emb, "toy", [0, 1], root=tmp_path)
    (f.directory / "meta.json").write_text(json.dumps({**meta, "libraries": {**meta["libraries"], "torch": "1.0.0"}}))
    assert not has_layers(emb, "toy", [0, 1], root=tmp_path)
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
        get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 2 and caplog.text.count("computed under torch 1.0.0 (now ") == 1
    assert has_layers(emb, "toy", [0, 1], root=tmp_path)
    # a model that now names a library more (a release of which can change its vectors): the entry is rebuilt too
    emb.computed_with = ("torch", "numpy", "scipy")
    assert not has_layers(emb, "toy", [0, 1], root=tmp_path)
    get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert emb.calls == 3 and has_layers(emb, "toy", [0, 1], root=tmp_path)


def test_bad_arguments(tmp_path):
    emb = RandomEmbedder(num_layers=2)
    with pytest.raises(ValueError, match="out of range"):
        get_features(emb, "toy", SENTS, layers=[2], root=tmp_path)
    with pytest.raises(ValueError, match="dataset key"):
        get_features(emb, "../x", SENTS, root=tmp_path)
    f = get_features(emb, "toy", SENTS, layers=[1], root=tmp_path, show_progress=False)
    with pytest.raises(KeyError, match="not loaded"):
        f.layer(0)


def test_progress_callback(tmp_path):
    seen = []
    get_features(
        RandomEmbedder(),
        "toy",
        SENTS,
        chunk_size=2,
        root=tmp_path,
        show_progress=False,
        progress=lambda frac, msg: seen.append(frac),
    )
    assert seen and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)


def test_keep_stores_only_the_selected_rows_and_a_new_selection_rebuilds(tmp_path, caplog):
    emb = RandomEmbedder()
    keep = np.array([1, 5, 8, 11])  # "bank" twice, "bank" again, "!" (across three sentences)
    f = get_features(emb, "toy", SENTS, keep=keep, root=tmp_path, show_progress=False, dtype="float32")
    full = np.concatenate([_expected(emb, [s], 2) for s in SENTS if s])
    assert f.layer(2).shape == (4, emb.dim)
    np.testing.assert_array_equal(np.asarray(f.layer(2)), full[keep])
    with pytest.raises(ValueError, match="only selected words"):
        f.sentence(2, 0)
    get_features(emb, "toy", SENTS, keep=keep, root=tmp_path, show_progress=False, dtype="float32")
    assert emb.calls == 1  # same selection: from the cache
    with caplog.at_level(logging.WARNING, logger="features.extract"):
        g = get_features(emb, "toy", SENTS, keep=keep[:2], root=tmp_path, show_progress=False, dtype="float32")
    assert emb.calls == 2 and "another selection" in caplog.text
    np.testing.assert_array_equal(np.asarray(g.layer(2)), full[keep[:2]])
    for bad in ([5, 1], [1, 1], [-1], [12]):
        with pytest.raises(ValueError, match="sorted unique"):
            get_features(emb, "toy", SENTS, keep=np.array(bad), root=tmp_path, show_progress=False)


def test_restricted_wsd_layout_reads_the_same_token_vectors():
    from probes.tasks.wsd import build_layout

    rng = np.random.default_rng(0)
    pieces = [[["New", "York"], ["is"], ["big"]], [["a"], ["b", "c", "d"]]]
    layout = build_layout(pieces, [[0, 2], [1]])
    layer = rng.normal(size=(8, 3)).astype(np.float32)  # 8 pieces in all
    keep, restricted = layout.restrict()
    assert list(keep) == [0, 1, 3, 5, 6, 7]  # "is" and "a" are not read
    np.testing.assert_allclose(restricted.token_vectors(layer[keep]), layout.token_vectors(layer), rtol=1e-6)
    np.testing.assert_allclose(
        layout.token_vectors(layer)[[0, 2]], [layer[[0, 1]].mean(0), layer[5:].mean(0)], rtol=1e-6
    )


def test_a_sharded_entry_is_refused_when_the_workers_ran_other_library_releases():
    """Shard workers compute the vectors, the driver writes the entry and its record of the releases: under other
    releases on the workers that record would be wrong, so the driver says so instead of writing it."""
    from cluster.shards import ShardedEmbedder
    from features import FeatureCacheError
    from features.store import library_versions

    info = {"name": "m", "num_layers": 2, "dim": 4, "fingerprint": "f" * 16, "stateful": False}
    same = ShardedEmbedder({**info, "libraries": library_versions(["torch"])}, None, [])
    assert same.computed_with == ("torch",)
    with pytest.raises(FeatureCacheError, match=r"under torch 1\.0\.0 \(here "):
        ShardedEmbedder({**info, "libraries": {"torch": "1.0.0"}}, None, [])
