"""The Embedding space's projector (after TensorFlow's Embedding Projector): points with metadata from
SemCor, a lexical sample or the user's own vectors, coloured by any column, searched and isolated.

Uploads use the Projector's own formats, so files exported from it (or from gensim's
``word2vec2tensor``) load unchanged:

- vectors: one point per line, its numbers separated by tabs (spaces and commas are accepted too);
- metadata (optional): one line per point; with more than one column the first line is a header.

    vectors = parse_vectors(data)                     # (n, dim) float32, InputError naming the bad line
    meta = parse_metadata(text, n)                    # DataFrame with n rows ("label" column if one)
    X, meta = stack_layers(X_layers, meta)            # all layers as one cloud, with a "layer" column

Nothing here imports streamlit.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from viz.text import InputError, counted

MAX_POINTS = 20_000
MAX_DIM = 4096
MAX_COLUMNS = 100  # metadata columns: each is a colour-by choice (a 1 MB header held 100,000: minutes a run)
MAX_MB = 50  # a file's size for callers that do not give theirs (the app gives its upload limit)
_SPLIT = re.compile(r"[\t ,]+")


def _text(data: bytes | str, what: str, max_mb: float) -> str:
    if isinstance(data, str):
        return data
    if len(data) > max_mb * 2**20:
        raise InputError(f"The {what} file is {len(data) / 2**20:.1f} MB; the limit is {max_mb:g} MB.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # worded as every data file's reader words it (``corpora.labelled``)
        line, start = data.count(b"\n", 0, exc.start) + 1, data.rfind(b"\n", 0, exc.start) + 1
        raise InputError(
            f"The {what} file, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column "
            f"{exc.start - start + 1}); save the file as UTF-8."
        ) from None


def parse_vectors(data: bytes | str, max_mb: float = MAX_MB) -> np.ndarray:
    """(n, dim) float32 from a vectors TSV; every line must have the same number of finite numbers."""
    rows: list[list[float]] = []
    dim = None
    for ln, line in enumerate(_text(data, "vectors", max_mb).splitlines(), start=1):
        if not line.strip():
            continue
        parts = _SPLIT.split(line.strip())
        try:
            row = [float(p) for p in parts]
        except ValueError:
            bad = next(p for p in parts if not _is_number(p))
            raise InputError(
                f"Vectors line {ln}: “{bad[:30]}” is not a number (one vector per line, numbers separated by tabs)."
            ) from None
        if not all(np.isfinite(row)):
            raise InputError(f"Vectors line {ln}: NaN or infinity is not a vector component.")
        if dim is None:
            dim = len(row)
            if dim > MAX_DIM:
                raise InputError(f"Vectors of {dim} dimensions; at most {MAX_DIM} are supported.")
        elif len(row) != dim:
            raise InputError(
                f"Vectors line {ln} has {len(row)} numbers; line 1 has {dim}. Every vector needs the same dimension."
            )
        rows.append(row)
        if len(rows) > MAX_POINTS:
            raise InputError(f"More than {MAX_POINTS:,} vectors; upload a sample.")
    if len(rows) < 2:
        raise InputError("The vectors file needs at least two vectors (one per line).")
    return np.asarray(rows, np.float32)


def _is_number(p: str) -> bool:
    try:
        float(p)
        return True
    except ValueError:
        return False


def parse_metadata(data: bytes | str | None, n: int, max_mb: float = MAX_MB) -> pd.DataFrame:
    """Metadata for ``n`` points: one line each; a header line when there is more than one column."""
    if data is None:
        return pd.DataFrame({"label": [f"point {i + 1}" for i in range(n)]})
    lines = [ln for ln in _text(data, "metadata", max_mb).splitlines() if ln.strip()]
    if not lines:
        raise InputError("The metadata file is empty.")
    multi = "\t" in lines[0]
    if (columns := lines[0].count("\t") + 1) > MAX_COLUMNS:
        raise InputError(f"The metadata has {columns:,} columns; at most {MAX_COLUMNS} are supported.")
    if multi:
        try:
            df = pd.read_csv(io.StringIO("\n".join(lines)), sep="\t", dtype=str, keep_default_na=False)
        except Exception as exc:  # noqa: BLE001 — pandas' parser errors are many kinds; one message
            raise InputError(f"The metadata file could not be read as a table with a header line ({exc}).") from None
    else:
        df = pd.DataFrame({"label": lines})
    if len(df) != n:
        raise InputError(
            f"The metadata has {counted(len(df), 'row')}{' (after its header)' if multi else ''} but there "
            f"are {n} vectors; give one metadata line per vector."
        )
    for col in df.columns:  # numeric columns become numbers (coloured by range)
        num = pd.to_numeric(df[col], errors="coerce")
        if num.notna().all():
            df[col] = num
    return df.reset_index(drop=True)


def stack_layers(X: np.ndarray, meta: pd.DataFrame, layers: list[int] | None = None) -> tuple[np.ndarray, pd.DataFrame]:
    """Occurrences at several layers as one cloud: (len(layers)·n, dim) and the metadata with a "layer"."""
    X = np.asarray(X)
    layers = list(range(X.shape[0])) if layers is None else list(layers)
    out = np.concatenate([X[j] for j in layers], axis=0)
    frames = [meta.assign(layer=j) for j in layers]
    return out, pd.concat(frames, ignore_index=True)
