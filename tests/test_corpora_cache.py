"""The reader cache stores data only: round trips of every supported kind, and planted pickles,
object arrays, truncated files and unlisted dataclass types are never loaded but rebuilt."""

from __future__ import annotations

import io
import json
import logging
import math
import os
import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest

from corpora import codec
from corpora.cache import cache_key, cached


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@dataclass(frozen=True)
class Token:
    text: str
    pos: str | None
    keys: tuple[str, ...] = ()


@dataclass
class Stats:
    files: int = 0
    ratio: float = 0.0
    names: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Slotted:
    a: int
    b: np.ndarray


# Look-alikes of probes.tasks.wsd's _semcor_view value: (PieceLayout, np.ndarray, SenseAssignments, int).
@dataclass
class PieceLayout:
    sentences: list[list[str]]
    rows: np.ndarray
    starts: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True)
class SenseAssignments:
    keys: tuple[str, ...]
    token: np.ndarray
    sense: np.ndarray
    num_tokens: int


TYPES = (Token, Stats, Slotted, PieceLayout, SenseAssignments)


def same(a, b) -> bool:
    """Equal values of exactly the same types all the way down (arrays: dtype, shape, content)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return all(same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


def roundtrip(value, name="thing"):
    """Store ``value`` and read it back through a second, fresh lookup (the build must not run)."""
    first = cached(name, 1, {}, lambda: value, types=TYPES)

    def fail():
        raise AssertionError("a stored entry must be read back, not rebuilt")

    return first, cached(name, 1, {}, fail, types=TYPES)


VALUES = {
    "none": None,
    "true": True,
    "false": False,
    "int": -7,
    "big int": 2**70,
    "float": 1.5,
    "nan": math.nan,
    "inf": -math.inf,
    "str": "héllo ☃ \x00 \ud800",
    "empty str": "",
    "list": [1, "a", None, 2.5, True, [1, 2], (3,)],
    "tuple": (1, (2, (3,)), []),
    "empty list": [],
    "empty tuple": (),
    "dict": {"a": 1, "b": [1, 2], "c": {"d": None}},
    "empty dict": {},
    "tuple keys": {("bank", "NOUN"): ("bank%1:14:00::", "bank%1:17:01::"), ("xyzzy", "NOUN"): ()},
    "ints": list(range(-5, 1000)),
    "int64 overflow": [2**64, *range(20)],
    "floats": [0.1 * i for i in range(50)],
    "bools": [True, False] * 20,
    "strs with None": ["a", None, "b", "a"] * 100,
    "ragged": [[["x", "y"], ["z"]], [], [["x"]]] * 10,
    "ragged tuples": [("a",), (), ("b", "c")] * 10,
    "mixed column": [1, 1.0, "1", None, True, 0] * 5,
    "float32 2-d": np.arange(12, dtype=np.float32).reshape(3, 4),
    "int64": np.array([1, -2], np.int64),
    "bool array": np.array([True, False]),
    "empty array": np.zeros((0, 5), np.float16),
    "unicode array": np.array(["ab", "c"]),
    "non-contiguous": np.arange(20).reshape(4, 5)[:, ::2],
    "numpy scalars": [np.float32(1.5), np.int64(3), np.bool_(True)],
    "dataclass": Stats(files=3, ratio=0.5, names=["a"]),
    "slots dataclass": Slotted(1, np.ones(3)),
    "dataclass column": [Token("bank", "NN", ("bank%1:14:00::",)), Token(".", None)] * 50,
    "dataclass in dict": {"stats": Stats(), "tokens": (Token("a", None),)},
    "short list": ["a", 1, None],
}


@pytest.mark.parametrize("kind", list(VALUES))
def test_round_trip_of_each_kind(cache, kind):
    value = VALUES[kind]
    first, again = roundtrip(value)
    assert first is value
    assert same(again, value), (again, value)
    assert [p.suffix for p in cache.iterdir()] == [".npz"]


def test_long_sequences_are_stored_column_wise():
    tokens = [Token("bank", "NN", ("bank%1:14:00::",)), Token(".", None)] * 500
    spec, arrays = codec.encode((tokens, list(range(100)), [["a", "b"]] * 100), codec.whitelist([Token]))
    kinds = [c["c"]["t"] for c in spec["c"]["v"]]
    assert kinds == ["dcs", "ints", "ragged"]
    assert spec["c"]["v"][0]["c"]["n"] == 2  # two distinct token objects stored
    assert len(json.dumps(spec)) < 1000 and len(arrays) < 12


def test_semcor_like_value_keeps_shared_objects_shared(cache):
    tok = Token("jury", "NN", ("jury%1:14:00::",))
    other = Token("the", "DT")
    sentences = [(tok, other, tok), (other,), ()] * 1000
    _, again = roundtrip((sentences, Stats(files=2)))
    assert same(again, (sentences, Stats(files=2)))
    assert again[0][0][0] is again[0][0][2] is again[0][3][0]  # one object per distinct token, as stored
    assert len({id(t) for s in again[0] for t in s}) == 2


def test_wsd_semcor_view_look_alike_round_trips(cache):
    layout = PieceLayout(
        sentences=[["The", "jury", "said"], ["It", "was", "n't"]] * 50,
        rows=np.arange(300, dtype=np.int64),
        starts=np.arange(300, dtype=np.int64),
        counts=np.ones(300, dtype=np.int32),
    )
    keys = SenseAssignments(
        keys=("jury%1:14:00::", "say%2:32:00::"),
        token=np.array([0, 1, 1], np.int64),
        sense=np.array([0, 1, 0], np.int64),
        num_tokens=2,
    )
    value = (layout, np.array([0, 2, 5], np.int64), keys, 100)
    _, again = roundtrip(value, name="wsd-semcor-view")
    assert same(again, value)
    assert type(again) is tuple and again[0].rows.flags.writeable


def _evil(sentinel):
    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {sentinel}",)

    return Evil()


def test_planted_pickle_is_never_loaded_and_is_replaced(cache, tmp_path, caplog):
    sentinel = tmp_path / "pwned"
    path = cache_key("thing", 1, {"a": 1})
    old = path.with_suffix(".pkl")  # an entry of the old pickle format ...
    for p in (path, old):  # ... and a pickle planted under the new name
        p.write_bytes(pickle.dumps((1, _evil(sentinel))))
    with caplog.at_level(logging.WARNING, logger="corpora.cache"):
        assert cached("thing", 1, {"a": 1}, lambda: {"value": 1}) == {"value": 1}
    assert not sentinel.exists()
    assert "rebuilding" in caplog.text
    assert not old.exists()
    with np.load(path, allow_pickle=False) as npz:  # replaced by a data-only entry
        assert npz["spec"].dtype == np.uint8


def test_planted_object_array_is_never_loaded(cache, tmp_path):
    sentinel = tmp_path / "pwned"
    path = cache_key("thing", 1, {})
    evil = np.empty(1, dtype=object)
    evil[0] = _evil(sentinel)
    head = {
        "format": "embprobe-cache",
        "format_version": 1,
        "name": "thing",
        "version": 1,
        "arrays": 1,
        "value": {"t": "nd", "a": 0},
    }
    with open(path, "wb") as fh:
        np.savez(fh, spec=np.frombuffer(json.dumps(head).encode(), np.uint8), a0=evil)
    assert cached("thing", 1, {}, lambda: "rebuilt") == "rebuilt"
    assert not sentinel.exists()
    with open(path, "wb") as fh:  # a bare .npy of objects under the entry's name
        np.save(fh, evil, allow_pickle=True)
    assert cached("thing", 1, {}, lambda: "rebuilt again") == "rebuilt again"
    assert not sentinel.exists()


def test_truncated_corrupt_and_unknown_format_entries_are_rebuilt(cache, caplog):
    big = {"x": list(range(10_000)), "s": [str(i) for i in range(5_000)]}
    cached("thing", 1, {}, lambda: big)
    path = cache_key("thing", 1, {})
    data = path.read_bytes()
    bad_entries = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": b"PK\x03\x04garbage",
        "other format": _npz_bytes(spec=np.frombuffer(b'{"format": "other"}', np.uint8)),
        "no spec": _npz_bytes(a0=np.arange(3)),
        "bad reference": _npz_bytes(
            spec=np.frombuffer(
                json.dumps(
                    {
                        "format": "embprobe-cache",
                        "format_version": 1,
                        "name": "thing",
                        "version": 1,
                        "arrays": 0,
                        "value": {"t": "nd", "a": 5},
                    }
                ).encode(),
                np.uint8,
            )
        ),
    }
    for what, blob in bad_entries.items():
        path.write_bytes(blob)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="corpora.cache"):
            assert cached("thing", 1, {}, lambda what=what: what) == what, what
        assert "rebuilding" in caplog.text, what
        assert cached("thing", 1, {}, lambda: "not again") == what  # the rebuilt entry is good
    assert list(cache.glob("*.tmp")) == []


def _npz_bytes(**members) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **members)
    return buf.getvalue()


def test_dataclass_types_must_be_whitelisted(cache):
    with pytest.raises(TypeError, match="whitelist"):  # storing one not listed: the caller's bug
        cached("thing", 1, {}, lambda: Stats(), types=(Token,))
    cached("thing", 1, {}, lambda: [Stats(files=1)], types=(Stats,))
    # Read by a caller that does not allow the type: refused, rebuilt with what it allows.
    assert cached("thing", 1, {}, lambda: [Token("a", None)], types=(Token,)) == [Token("a", None)]
    # A spec naming any other type (e.g. a callable) is refused before anything is built.
    d = codec._Decoder([], codec.whitelist([Stats]))
    for name in ("os.system", "builtins.eval", codec.type_name(Token), 3):
        with pytest.raises(codec.CorruptEntry, match="whitelist"):
            d.value({"t": "dc", "type": name, "f": [], "v": []})
    with pytest.raises(codec.CorruptEntry, match="fields"):  # fields that no longer match the class
        d.value({"t": "dc", "type": codec.type_name(Stats), "f": ["files"], "v": [1]})
    with pytest.raises(TypeError):
        codec.whitelist([os.system])


@pytest.mark.parametrize("value", [{1, 2}, np.array([object()], dtype=object), b"bytes", {1: "int key"}.items()])
def test_unsupported_values_are_refused_when_stored(cache, value):
    with pytest.raises(TypeError):
        cached("thing", 1, {}, lambda: value)
    assert list(cache.iterdir()) == []
