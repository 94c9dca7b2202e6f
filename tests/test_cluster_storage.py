"""cluster.storage: feature-cache entries published to and pulled from fsspec stores (memory://, file://),
with the cache's atomic-publication and checksum guarantees. No Ray, no network."""

from __future__ import annotations

import uuid

import fsspec
import numpy as np
import pytest

from cluster.storage import Store, local_entries, pull_entry, push_entry, remote_keys
from features import FeatureCacheError, entry_rel
from features.extract import get_features
from tests.probe_helpers import RandomEmbedder

SENTS = [["The", "bank", "closed", "."], ["A", "river", "bank"], ["Money", "in", "the", "bank", "."]] * 40


@pytest.fixture
def store():
    url = f"memory://embprobe-{uuid.uuid4().hex[:8]}"
    yield Store(url)
    fs = fsspec.filesystem("memory")
    if fs.exists(url):
        fs.rm(url, recursive=True)


def entry(root):
    emb = RandomEmbedder(num_layers=3, dim=8)
    feats = get_features(emb, "toy", SENTS, root=root, show_progress=False)
    return emb, feats


def files(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name.startswith(("layer_", "meta"))}


def test_push_then_pull_installs_the_same_bytes_and_the_cache_serves_them(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    assert push_entry(store, feats.directory)
    assert not push_entry(store, feats.directory)  # already there: nothing uploaded
    assert remote_keys(store, emb.fingerprint()) == ["toy"]
    assert pull_entry(store, emb.fingerprint(), "toy", tmp_path / "b")
    pulled = local_entries(emb.fingerprint(), tmp_path / "b")
    assert [p.name for p in pulled] == ["toy"] and files(pulled[0]) == files(feats.directory)
    calls = emb.calls
    again = get_features(emb, "toy", SENTS, root=tmp_path / "b", show_progress=False)
    assert emb.calls == calls  # served from the pulled entry, not extracted
    np.testing.assert_array_equal(again.layer(2), feats.layer(2))
    assert not pull_entry(store, emb.fingerprint(), "other", tmp_path / "b")


def test_a_corrupted_remote_layer_is_refused_and_nothing_is_installed(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    push_entry(store, feats.directory)
    remote = store.path(entry_rel(emb.fingerprint(), "toy") + "/layer_1.npy")
    data = bytearray(store.fs.cat_file(remote))
    data[-5] ^= 0xFF
    store.fs.pipe_file(remote, bytes(data))
    with pytest.raises(FeatureCacheError, match="layer_1.npy does not match"):
        pull_entry(store, emb.fingerprint(), "toy", tmp_path / "c")
    target = tmp_path / "c" / "features" / emb.fingerprint() / "toy"
    assert not any(p.suffix in (".npy", ".json", ".tmp") for p in target.iterdir())


def test_a_broken_local_entry_is_never_published(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    layer = feats.directory / "layer_2.npy"
    layer.write_bytes(layer.read_bytes()[:-16])  # truncated
    with pytest.raises(FeatureCacheError, match="layer 2 cannot be copied"):
        push_entry(store, feats.directory)
    assert remote_keys(store, emb.fingerprint()) == []


def test_an_entry_without_its_meta_is_invisible(tmp_path, store):
    """Publication is layers first, meta.json last: an interrupted push leaves nothing a reader uses."""
    emb, feats = entry(tmp_path / "a")
    rel = entry_rel(emb.fingerprint(), "toy")
    store.put_file(feats.directory / "layer_0.npy", f"{rel}/layer_0.npy")
    assert remote_keys(store, emb.fingerprint()) == []
    assert not pull_entry(store, emb.fingerprint(), "toy", tmp_path / "b")


def test_file_urls_and_plain_paths_are_stores_too(tmp_path):
    emb, feats = entry(tmp_path / "a")
    for url in (f"file://{tmp_path}/shared", str(tmp_path / "plain")):
        s = Store(url)
        assert push_entry(s, feats.directory)
        assert pull_entry(s, emb.fingerprint(), "toy", tmp_path / f"pulled-{len(url)}")
    assert files(tmp_path / "shared" / "features" / emb.fingerprint() / "toy") == files(feats.directory)
    assert not list((tmp_path / "shared").rglob("*.tmp"))  # uploads were moved into place
