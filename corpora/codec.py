"""Data-only encoding of cached values: a JSON structure plus numpy arrays, never pickle.

:func:`encode` turns a value into ``(spec, arrays)``: ``spec`` is JSON-serialisable and refers to
``arrays`` (numeric numpy arrays) by index; :func:`decode` rebuilds the value from them.
Supported values: None, bool, int, float, str, list, tuple, dict (keys of any supported hashable
kind), numpy arrays and scalars (not of object dtype), and dataclass instances whose type is in
the ``types`` whitelist. Decoding never runs code from the file: it only builds those kinds, and
rebuilds a dataclass by setting its fields on ``cls.__new__(cls)`` (as pickle would, without
``__init__``), for whitelisted types only.

Large sequences are stored column-wise so a warm SemCor load (838k tokens) stays fast:

- a list of str/None: its distinct values once plus an index array (equal strings then share one
  object again after loading, as the readers' interning intends);
- a list of bool / int / float: one numpy array;
- a list of lists (or of tuples): the flattened items plus a lengths array;
- a list of dataclasses of one type: the distinct objects (by identity, so shared objects stay
  shared) field by field, each field again a column, plus an index array.

Short sequences and anything else are stored item by item. A malformed spec raises an exception (``CorruptEntry``
for the checks made here); the cache treats every exception as a corrupt entry.
"""

from __future__ import annotations

import dataclasses
import gc
from collections import deque
from collections.abc import Iterable
from itertools import islice, repeat
from typing import Any

import numpy as np

_SCALARS = (type(None), bool, int, float, str)
_INT64 = (-(2**63), 2**63 - 1)
_SMALL = 16  # shorter sequences are stored item by item


class CorruptEntry(ValueError):
    """The stored structure is not one :func:`encode` writes (or names a type not whitelisted)."""


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def whitelist(types: Iterable[type]) -> dict[str, type]:
    """``name -> class`` of the dataclass types a caller allows; TypeError for a non-dataclass."""
    out = {}
    for cls in types:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"cache types must be dataclass classes, got {cls!r}")
        out[type_name(cls)] = cls
    return out


# --------------------------------------------------------------------------- encoding


class _Encoder:
    def __init__(self, types: dict[str, type]) -> None:
        self.types = types
        self.arrays: list[np.ndarray] = []

    def array(self, arr: np.ndarray) -> int:
        if arr.dtype.hasobject:
            raise TypeError("the cache cannot store numpy arrays of object dtype")
        self.arrays.append(arr)
        return len(self.arrays) - 1

    def index(self, idx: list[int], size: int) -> int:
        dtype = np.uint8 if size <= 2**8 else np.uint16 if size <= 2**16 else np.int32 if size < 2**31 else np.int64
        return self.array(np.asarray(idx, dtype=dtype))

    def dc_type(self, cls: type) -> str:
        name = type_name(cls)
        if self.types.get(name) is not cls:
            raise TypeError(f"dataclass {name} is not in the cache's types whitelist; pass types=(..., {cls.__name__})")
        return name

    def value(self, v: Any) -> Any:
        t = type(v)
        if t in _SCALARS:
            return v
        if t is list or t is tuple:
            return {"t": "list" if t is list else "tuple", "c": self.column(v)}
        if t is dict:
            return {"t": "dict", "k": self.column(list(v)), "v": self.column(list(v.values()))}
        if isinstance(v, np.ndarray):
            return {"t": "nd", "a": self.array(v)}
        if isinstance(v, np.generic):
            return {"t": "np", "a": self.array(np.asarray(v))}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            names = [f.name for f in dataclasses.fields(v)]
            return {"t": "dc", "type": self.dc_type(t), "f": names, "v": [self.value(getattr(v, n)) for n in names]}
        raise TypeError(f"the cache cannot store a value of type {t.__module__}.{t.__qualname__}")

    def column(self, values: list | tuple) -> dict:
        """A sequence of values, decoded as a list (see the module doc for the layouts)."""
        if len(values) < _SMALL:  # inline JSON is cheaper than an array member
            return {"t": "items", "v": [self.value(v) for v in values]}
        kinds = {type(v) for v in values}
        if kinds <= {str, type(None)}:
            pool: dict[str | None, int] = {}
            idx = [pool.setdefault(v, len(pool)) for v in values]
            return {"t": "strs", "vocab": list(pool), "i": self.index(idx, len(pool))}
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if kind is bool:
                return {"t": "bools", "a": self.array(np.asarray(values, dtype=bool))}
            if kind is int and _INT64[0] <= min(values) and max(values) <= _INT64[1]:
                return {"t": "ints", "a": self.array(np.asarray(values, dtype=np.int64))}
            if kind is float:
                return {"t": "floats", "a": self.array(np.asarray(values, dtype=np.float64))}
            if kind is list or kind is tuple:
                flat = [x for v in values for x in v]
                lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
                return {
                    "t": "ragged",
                    "seq": "list" if kind is list else "tuple",
                    "n": self.array(lengths),
                    "c": self.column(flat),
                }
            if dataclasses.is_dataclass(kind):
                return self.dataclasses(kind, values)
        return {"t": "items", "v": [self.value(v) for v in values]}

    def dataclasses(self, cls: type, values: list | tuple) -> dict:
        name = self.dc_type(cls)
        pool: dict[int, int] = {}
        unique = []
        idx = []
        for v in values:
            i = pool.get(id(v))
            if i is None:
                i = pool[id(v)] = len(unique)
                unique.append(v)
            idx.append(i)
        names = [f.name for f in dataclasses.fields(cls)]
        cols = [self.column([getattr(v, n) for v in unique]) for n in names]
        out = {"t": "dcs", "type": name, "f": names, "v": cols, "n": len(unique), "i": None}
        if len(unique) < len(values):
            out["i"] = self.index(idx, len(unique))
        return out


def encode(value: Any, types: dict[str, type]) -> tuple[Any, list[np.ndarray]]:
    """``(spec, arrays)`` of ``value``; TypeError for a value the cache cannot store."""
    enc = _Encoder(types)
    return enc.value(value), enc.arrays


# --------------------------------------------------------------------------- decoding


class _Decoder:
    def __init__(self, arrays: list[np.ndarray], types: dict[str, type]) -> None:
        self.arrays = arrays
        self.types = types
        self.makers: dict[str, Any] = {}

    def array(self, i: Any) -> np.ndarray:
        if type(i) is not int or not 0 <= i < len(self.arrays):
            raise CorruptEntry(f"bad array reference {i!r}")
        return self.arrays[i]

    def index(self, i: Any, size: int, length: int | None = None) -> list[int]:
        idx = self.array(i)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or (length is not None and len(idx) != length):
            raise CorruptEntry("bad index array")
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= size):
            raise CorruptEntry("index out of range")
        return idx.tolist()

    def value(self, node: Any) -> Any:
        if type(node) is not dict:
            if type(node) in _SCALARS:
                return node
            raise CorruptEntry(f"unexpected node {type(node).__name__}")
        t = node["t"]
        if t == "list":
            return self.column(node["c"])
        if t == "tuple":
            return tuple(self.column(node["c"]))
        if t == "dict":
            keys, values = self.column(node["k"]), self.column(node["v"])
            if len(keys) != len(values):
                raise CorruptEntry("dict keys and values differ in length")
            return dict(zip(keys, values))
        if t == "nd":
            return self.array(node["a"])
        if t == "np":
            arr = self.array(node["a"])
            if arr.ndim != 0:
                raise CorruptEntry("numpy scalar stored with a shape")
            return arr[()]
        if t == "dc":
            names, values = node["f"], node["v"]
            if type(values) is not list or len(values) != len(names):
                raise CorruptEntry("dataclass fields and values differ")
            make = self.maker(node["type"], names)
            return make([[self.value(v) for v in values]], 1)[0]
        raise CorruptEntry(f"unknown node type {t!r}")

    def column(self, node: Any) -> list:
        t = node["t"]
        if t == "items":
            if type(node["v"]) is not list:
                raise CorruptEntry("items is not a list")
            return [self.value(v) for v in node["v"]]
        if t == "strs":
            vocab = node["vocab"]
            if type(vocab) is not list or not set(map(type, vocab)) <= {str, type(None)}:
                raise CorruptEntry("bad string vocabulary")
            return list(map(vocab.__getitem__, self.index(node["i"], len(vocab))))
        if t in ("bools", "ints", "floats"):
            arr = self.array(node["a"])
            if arr.ndim != 1 or arr.dtype.kind != {"bools": "b", "ints": "i", "floats": "f"}[t]:
                raise CorruptEntry(f"bad {t} column")
            return arr.tolist()
        if t == "ragged":
            lengths = self.array(node["n"])
            if lengths.ndim != 1 or lengths.dtype.kind not in "iu" or (len(lengths) and int(lengths.min()) < 0):
                raise CorruptEntry("bad lengths")
            seq = {"tuple": tuple, "list": list}.get(node["seq"])
            flat = self.column(node["c"])
            if seq is None or int(lengths.sum()) != len(flat):
                raise CorruptEntry("bad sequence kind or lengths")
            it = iter(flat)  # consecutive runs of the given lengths, split without a Python loop
            return list(map(seq, map(islice, repeat(it), lengths.tolist())))
        if t == "dcs":
            names, cols, n = node["f"], node["v"], node["n"]
            if type(cols) is not list or len(cols) != len(names) or type(n) is not int:
                raise CorruptEntry("dataclass columns and fields differ")
            make = self.maker(node["type"], names)
            columns = [self.column(c) for c in cols]
            if any(len(c) != n for c in columns):
                raise CorruptEntry("dataclass columns differ in length")
            unique = make(zip(*columns) if columns else repeat((), n), n)
            if node["i"] is None:
                return unique
            return list(map(unique.__getitem__, self.index(node["i"], n)))
        raise CorruptEntry(f"unknown column type {t!r}")

    def maker(self, name: Any, names: Any):
        """A function: (rows of field values in the stored order, count) -> list of instances of a
        whitelisted dataclass, built as pickle restores objects: no ``__init__``, fields set directly."""
        key = f"{name}|{names}"
        make = self.makers.get(key)
        if make is not None:
            return make
        cls = self.types.get(name) if type(name) is str else None
        if cls is None:
            raise CorruptEntry(f"dataclass type {name!r} is not in the whitelist")
        if type(names) is not list or sorted(names) != sorted(f.name for f in dataclasses.fields(cls)):
            raise CorruptEntry(f"stored fields of {name} do not match the class")
        new, set_attr, names = cls.__new__, object.__setattr__, tuple(names)
        if hasattr(new(cls), "__dict__"):

            def make(rows, n):  # C-level loops only: ~125k SemCor objects per warm load
                objs = list(map(new, repeat(cls, n)))
                dicts = map(dict, map(zip, repeat(names), rows))
                deque(map(set_attr, objs, repeat("__dict__"), dicts), maxlen=0)
                return objs
        else:  # a slots dataclass

            def make(rows, n):
                objs = list(map(new, repeat(cls, n)))
                for obj, values in zip(objs, rows):
                    for field, v in zip(names, values):
                        set_attr(obj, field, v)
                return objs

        self.makers[key] = make
        return make


def decode(spec: Any, arrays: list[np.ndarray], types: dict[str, type]) -> Any:
    """The value :func:`encode` described; CorruptEntry (or another exception) when malformed."""
    enabled = gc.isenabled()
    gc.disable()  # decoding allocates ~10^6 containers at once; collecting meanwhile tripled the time
    try:
        return _Decoder(arrays, types).value(spec)
    finally:
        if enabled:
            gc.enable()
