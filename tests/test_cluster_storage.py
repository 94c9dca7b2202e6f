"""cluster.storage: feature-cache entries published to and pulled from fsspec stores (memory://, file://),
with the cache's atomic-publication and checksum guarantees: a pointer names each entry's version, a
damaged remote entry is found before a push skips it and is repaired, ``python -m cluster store``
verifies, re-publishes and drops entries. No Ray, no network (S3: tests/test_cluster_s3.py)."""

from __future__ import annotations

import json
import uuid

import fsspec
import numpy as np
import pytest

from cluster.__main__ import main as store_main
from cluster.storage import (
    POINTER,
    Store,
    drop_entry,
    entry_problems,
    evict_local,
    local_entries,
    pull_entry,
    push_entry,
    remote_keys,
)
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


def remote_object(store, fingerprint, name, key="toy"):
    """The store path of one published file of the entry (under the version its pointer names)."""
    rel = entry_rel(fingerprint, key)
    return store.path(f"{rel}/{store.read_json(f'{rel}/{POINTER}')['version']}/{name}")


def corrupt(store, path):
    data = bytearray(store.fs.cat_file(path))
    data[-5] ^= 0xFF  # same size: only the bytes tell
    store.fs.pipe_file(path, bytes(data))


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


def test_an_entry_computed_under_other_releases_is_not_pulled_over_a_good_one(tmp_path, store):
    """Another node's entry, computed under other library releases, replaced this node's valid one at every pull
    (then rebuilt, pushed back: the nodes took turns), and ``store verify`` called it ok."""
    from features.entries import has_layers

    emb, feats = entry(tmp_path / "a")
    meta = json.loads((feats.directory / "meta.json").read_text())
    other = tmp_path / "node-b" / feats.directory.relative_to(tmp_path / "a")
    other.parent.mkdir(parents=True)
    other.mkdir()
    for name, data in files(feats.directory).items():
        (other / name).write_bytes(data)
    (other / "meta.json").write_text(json.dumps({**meta, "libraries": {"torch": "1.0.0"}}))
    assert push_entry(store, other)
    assert not pull_entry(store, emb.fingerprint(), "toy", tmp_path / "a")  # not this node's to serve
    assert has_layers(emb, "toy", [0, 1, 2], root=tmp_path / "a")  # the good local entry is kept
    assert any("computed under torch 1.0.0" in p for p in entry_problems(store, emb.fingerprint(), "toy"))


def test_a_corrupted_remote_layer_is_refused_and_nothing_is_installed(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    push_entry(store, feats.directory)
    corrupt(store, remote_object(store, emb.fingerprint(), "layer_1.npy"))
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
    assert files(local_entries(emb.fingerprint(), tmp_path / f"pulled-{len(str(tmp_path / 'plain'))}")[0]) == files(
        feats.directory
    )
    assert not list((tmp_path / "shared").rglob("*.tmp"))  # uploads were moved into place


def test_a_damaged_remote_entry_is_found_before_a_push_skips_it_and_is_repaired(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    fp = emb.fingerprint()
    assert push_entry(store, feats.directory)
    assert entry_problems(store, fp, "toy") == [] and not push_entry(store, feats.directory)
    corrupt(store, remote_object(store, fp, "layer_2.npy"))
    assert "does not match" in " ".join(entry_problems(store, fp, "toy"))  # memory:// has no ETags: the bytes
    assert push_entry(store, feats.directory)  # not skipped: published again
    assert entry_problems(store, fp, "toy", full=True) == []
    assert pull_entry(store, fp, "toy", tmp_path / "b")
    assert files(local_entries(fp, tmp_path / "b")[0]) == files(feats.directory)
    store.fs.rm(remote_object(store, fp, "layer_0.npy"))
    assert "missing" in " ".join(entry_problems(store, fp, "toy")) and push_entry(store, feats.directory)


def test_publication_is_a_new_version_then_one_pointer(tmp_path, store, monkeypatch):
    """Each publish writes a fresh prefix; until the pointer moves, readers get the old version whole."""
    emb, feats = entry(tmp_path / "a")
    fp, rel = emb.fingerprint(), entry_rel(emb.fingerprint(), "toy")
    push_entry(store, feats.directory)
    first = store.read_json(f"{rel}/{POINTER}")
    assert first["meta"] == json.loads((feats.directory / "meta.json").read_text())
    assert sorted(first["objects"]) == ["layer_0.npy", "layer_1.npy", "layer_2.npy"]

    def interrupted(rel_path, text):
        raise OSError("publisher killed before its pointer")

    monkeypatch.setattr(store, "put_text", interrupted)
    with pytest.raises(OSError):
        push_entry(store, feats.directory, force=True)
    monkeypatch.undo()
    assert store.read_json(f"{rel}/{POINTER}") == first and entry_problems(store, fp, "toy", full=True) == []
    assert len(store.listdir(rel)) == 3  # the pointer, the published version, the orphaned upload
    assert push_entry(store, feats.directory, force=True)
    second = store.read_json(f"{rel}/{POINTER}")
    assert second["version"] != first["version"] and first["version"] not in store.listdir(rel)
    assert drop_entry(store, fp, "toy") and remote_keys(store, fp) == [] and not drop_entry(store, fp, "toy")


def test_the_store_command_verifies_republishes_and_drops(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    emb, feats = entry(None)  # the local cache of EMBPROBE_CACHE: what `push` re-publishes from
    url, name = f"file://{tmp_path}/shared", f"{emb.fingerprint()}/toy"
    assert push_entry(Store(url), feats.directory)
    assert store_main(["store", url, "list"]) == 0 and capsys.readouterr().out.split() == [name]
    corrupt(Store(url), remote_object(Store(url), emb.fingerprint(), "layer_1.npy"))
    assert store_main(["store", url, "verify"]) == 1 and "does not match" in capsys.readouterr().out
    assert store_main(["store", url, "push", name]) == 0
    assert store_main(["store", url, "verify", name]) == 0 and capsys.readouterr().out.endswith(": ok\n")
    assert store_main(["store", url, "drop", name]) == 0 and store_main(["store", url, "list"]) == 0
    assert "dropped" in capsys.readouterr().out and remote_keys(Store(url), emb.fingerprint()) == []
    assert store_main(["store", url, "push", "no-slash"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    # a store it cannot use is named as the command names it (its URL), not as the sweep's --cache-url
    assert store_main(["store", "nosuchscheme://x", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: store URL nosuchscheme://x") and "--cache-url" not in err
    # a mistyped folder is no store: verify passed (exit 0) and made the folder with its check object
    typo = tmp_path / "sharde"
    assert store_main(["store", f"file://{typo}", "verify"]) == 2 and not typo.exists()
    assert "no store there" in capsys.readouterr().err


def test_local_entries_are_evicted_only_when_the_store_holds_them_intact(tmp_path, store):
    emb, feats = entry(tmp_path / "a")
    fp = emb.fingerprint()
    assert evict_local(store, fp, tmp_path / "a") == [] and local_entries(fp, tmp_path / "a")  # not published
    push_entry(store, feats.directory)
    corrupt(store, remote_object(store, fp, "layer_0.npy"))
    assert evict_local(store, fp, tmp_path / "a") == [] and local_entries(fp, tmp_path / "a")  # remote damaged
    push_entry(store, feats.directory)
    assert evict_local(store, fp, tmp_path / "a") == ["toy"] and local_entries(fp, tmp_path / "a") == []
    assert pull_entry(store, fp, "toy", tmp_path / "a")  # the next node that needs it pulls it back
