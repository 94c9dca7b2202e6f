"""The on-disk cache of parsed datasets: hits, misses, corrupt entries, stale versions."""

from __future__ import annotations

import pytest

from corpora.cache import cached, files_fingerprint


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_hit_miss_corrupt_and_stale_versions(cache):
    builds = []

    def build(value):
        def _b():
            builds.append(value)
            return {"value": value}

        return _b

    assert cached("thing", 1, {"a": 1}, build(1)) == {"value": 1}
    assert cached("thing", 1, {"a": 1}, build(99)) == {"value": 1}  # hit: not rebuilt
    assert cached("thing", 1, {"a": 2}, build(2)) == {"value": 2}  # other params: own entry
    assert builds == [1, 2]
    entry = next(p for p in cache.glob("thing-v1-*.npz"))
    for p in cache.glob("thing-v1-*.npz"):
        p.write_bytes(b"\x80\x05garbage")
    assert cached("thing", 1, {"a": 1}, build(3)) == {"value": 3}  # corrupt: rebuilt
    assert cached("thing", 2, {"a": 1}, build(4)) == {"value": 4}  # new version ...
    assert not entry.exists() and not list(cache.glob("thing-v1-*"))  # ... removes old versions
    assert list(cache.glob("*.tmp")) == []


def test_files_fingerprint_changes_with_content(tmp_path):
    f = tmp_path / "data.txt"
    f.write_text("one")
    before = files_fingerprint([f])
    f.write_text("two!")
    assert files_fingerprint([f]) != before


def test_files_fingerprint_sees_an_edit_that_keeps_size_and_mtime(tmp_path):
    """A same-size fix copied with its times kept (`cp -p`, rsync -a, tar) left SemCor's parse stale: "Friday" and
    say%2:32:00 after the file said "Monday" and say%2:32:01 (an audit). The inode and ctime count too now, as they
    do for models' digests (``corpora.digests``)."""
    import os

    f = tmp_path / "br-a01"
    f.write_text("said Friday")
    before, st = files_fingerprint([f]), f.stat()
    fixed = tmp_path / "fixed"
    fixed.write_text("said Monday")
    os.utime(fixed, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(fixed, f)  # as `cp -p` of a fixed file over the old one: same size, same mtime
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert files_fingerprint([f]) != before
    assert files_fingerprint([f]) == files_fingerprint([f])  # and stable while nothing changes
