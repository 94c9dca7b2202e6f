"""features' entry API: the layers already built (has_layers, open_layer) and copying entries between
caches (entry_files, install_entry, local_entries) without naming their files."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from features import (
    FeatureCacheError,
    entry_files,
    get_features,
    has_layers,
    install_entry,
    local_entries,
    open_layer,
    read_meta,
)
from tests.probe_helpers import RandomEmbedder

SENTS = [["The", "bank", "closed", "."], ["He", "sat", "on", "the", "river", "bank"], ["Play", "!"]]


def _entry(root):
    emb = RandomEmbedder(num_layers=3, dim=8)
    return emb, get_features(emb, "toy", SENTS, root=root, show_progress=False)


def test_built_layers_are_found_and_opened_by_model_and_key(tmp_path):
    emb = RandomEmbedder(num_layers=3, dim=8)
    assert not has_layers(emb, "toy", [0], root=tmp_path)
    with pytest.raises(FeatureCacheError, match="layer 0 is not in the feature cache"):
        open_layer(emb, "toy", 0, root=tmp_path)
    feats = get_features(emb, "toy", SENTS, root=tmp_path, show_progress=False)
    assert has_layers(emb, "toy", range(3), root=tmp_path) and has_layers(emb.fingerprint(), "toy", [2], root=tmp_path)
    assert not has_layers(emb, "toy", [0, 3], root=tmp_path) and not has_layers(emb, "other", [0], root=tmp_path)
    layer = open_layer(emb.fingerprint(), "toy", 1, root=tmp_path)
    assert isinstance(layer, np.memmap) and not layer.flags.writeable
    np.testing.assert_array_equal(layer, feats.layer(1))


def test_an_entry_built_from_other_sentences_is_not_built_for_these(tmp_path):
    """Another data folder (a SemCor with one word edited) gives the same key: ``features index`` said "already
    built" and the estimate "cached", then ``get_features`` rebuilt the entry. Given the sentences (and the kept
    words), it is not built."""
    emb, _ = _entry(tmp_path)
    assert has_layers(emb, "toy", [0], root=tmp_path, sentences=SENTS)
    edited = [list(s) for s in SENTS]
    edited[0][0] = edited[0][0] + "x"
    assert not has_layers(emb, "toy", [0], root=tmp_path, sentences=edited)
    assert has_layers(emb, "toy", [0], root=tmp_path)  # the files alone are sound
    # the same sentences, other kept words (SemCor's resolved tags under another WordNet): rebuilt, so not built
    assert has_layers(emb, "toy", [0], root=tmp_path, sentences=SENTS, keep=None)
    assert not has_layers(emb, "toy", [0], root=tmp_path, sentences=SENTS, keep=np.array([0, 2]))


def test_words_holding_the_hashs_separators_never_share_an_entry_with_other_sentences(tmp_path):
    """Words are joined by U+001F and sentences by U+001E before hashing: ``bank\x1friver`` | ``loan money`` and
    ``bank`` | ``river\x1eloan money`` (the same word count) hashed alike, and the second was served the first's
    cached vectors (2.01 off at MiniLM's layer 6). Such words are refused, naming them."""
    from corpora.errors import RequestError

    emb = RandomEmbedder(num_layers=2, dim=4)
    a, b = [["bank", "river\x1eloan", "money"]], [["bank\x1friver"], ["loan", "money"]]
    for sentences, word in ((a, "word 2"), (b, "word 1")):
        with pytest.raises(RequestError, match=f"Sentence 1, {word} .* holds the control character U\\+001"):
            get_features(emb, "collide", sentences, root=tmp_path, show_progress=False)
    assert not list(tmp_path.rglob("meta.json"))  # nothing built for either


def test_a_broken_or_outdated_layer_is_not_served(tmp_path):
    emb, feats = _entry(tmp_path)
    (path,) = [p for p in feats.directory.iterdir() if p.name.startswith("layer_1")]
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # same size, other bytes: the checksum tells
    path.write_bytes(bytes(data))
    assert has_layers(emb, "toy", [0, 2], root=tmp_path) and not has_layers(emb, "toy", [1], root=tmp_path)
    with pytest.raises(FeatureCacheError, match="checksum mismatch"):
        open_layer(emb, "toy", 1, root=tmp_path)
    with pytest.raises(FeatureCacheError, match="layer 1 cannot be copied"):
        entry_files(feats.directory, read_meta(feats.directory))
    meta_path = next(p for p in feats.directory.iterdir() if p.suffix == ".json")
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "version": 1}))
    assert not has_layers(emb, "toy", [0], root=tmp_path)  # get_features would rebuild it: not served


def test_an_installed_copy_has_the_same_bytes_and_a_bad_copy_installs_nothing(tmp_path):
    emb, feats = _entry(tmp_path / "a")
    meta = read_meta(feats.directory)
    names = entry_files(feats.directory, meta)
    assert len(names) == 3
    fetched = []

    def fetch(name, path):
        fetched.append(name)
        shutil.copyfile(feats.directory / name, path)

    directory = install_entry(emb.fingerprint(), "toy", meta, fetch, tmp_path / "b")
    assert local_entries(emb.fingerprint(), tmp_path / "b") == [directory] and fetched == names
    assert {p.name: p.read_bytes() for p in directory.iterdir() if not p.name.startswith(".")} == {
        p.name: p.read_bytes() for p in feats.directory.iterdir() if not p.name.startswith(".")
    }
    install_entry(emb.fingerprint(), "toy", meta, fetch, tmp_path / "b")
    assert fetched == names  # already there: nothing fetched again

    def corrupt(name, path):
        fetch(name, path)
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))

    with pytest.raises(FeatureCacheError, match="from-test/layer_0.npy does not match"):
        install_entry(emb.fingerprint(), "toy", meta, corrupt, tmp_path / "c", source="from-test")
    assert local_entries(emb.fingerprint(), tmp_path / "c") == []
    assert [p.name for p in (tmp_path / "c").rglob("*") if p.is_file() and p.name != ".lock"] == []
