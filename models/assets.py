"""A model's files on disk: read without loading any weights, and written whole.

``ASSETS`` is the folder of the checkpoints trained here (``assets/<name>/``, one per model).

**Model cards.** :func:`read_model_card` is the one reader of ``model_card.json``, used by every
loader, ``python -m models list`` and the app. One behaviour everywhere:

- no ``model_card.json`` in the folder → ``None`` (pip packages have none); every trainer writes its
  folder whole, card included, so a model trained here without one is a run that has not finished:
  :func:`require_card` refuses it for the zoo's own loaders;
- a card that cannot be read, is not UTF-8, is not JSON, or is JSON but not an object (e.g. a
  list) → :class:`~models.base.ModelLoadError` ``"Corrupt model card <path>: <why>"``.

**Weight files.** :func:`check_weight_file` is a cheap integrity check that reads headers, never
tensors: a safetensors header against the file size, a ``.npy`` header's shape against the file
size, a word2vec binary walked entry by entry (word lengths, no float parsing). A truncated or
malformed file raises ``ModelLoadError`` naming the file and why. Results are memoised per
(path, size, mtime), so the app can ask on every page render.

**Writing a model folder.** :func:`writing_folder` is how every trainer (and ``models.static.save_static_dir``)
writes one: into a temporary folder beside it, then moved into its place, so a run killed while saving leaves the old
model or none, never a mix; :func:`check_replaceable` (also called before a trainer trains) refuses a folder that
holds anything but a model's own files (``MODEL_FOLDER_FILES``).
"""

from __future__ import annotations

import glob
import json
import logging
import math
import mmap
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from corpora.errors import RequestError
from corpora.paths import REPO_ROOT
from corpora.temps import remove_stale_temps, temp_name, umask
from models.errors import ModelLoadError
from models.formats import parse_vectors_header

ASSETS = REPO_ROOT / "assets"
CARD_FILE = "model_card.json"


# ----------------------------------------------------------------------------- JSON
def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``; ``what`` names the file in errors ("model card", "config").

    Raises:
        FileNotFoundError: the file does not exist (callers decide what that means).
        ModelLoadError: unreadable, not UTF-8, not JSON, or not a JSON object.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ModelLoadError(f"Corrupt {what} {path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"Corrupt {what} {path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"Corrupt {what} {path}: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"Corrupt {what} {path}: expected a JSON object, found a JSON {type(data).__name__}")
    return data


def read_model_card(directory: str | Path) -> dict[str, Any] | None:
    """``<directory>/model_card.json`` as a dict; None when there is no card (see the module doc).

    Raises:
        ModelLoadError: the card exists but is unreadable, not UTF-8, not JSON or not an object.
    """
    path = Path(directory) / CARD_FILE
    if path.is_dir():
        raise ModelLoadError(f"Corrupt model card {path}: a directory, not a file")
    try:
        return read_json_object(path, "model card")
    except FileNotFoundError:
        return None


def require_card(directory: Path, name: str) -> dict[str, Any]:
    """The card of a model trained here (``assets/<name>/``); ModelLoadError without one: every trainer writes its
    folder whole, card included, so a folder without a card is an interrupted or unfinished run's, whose files may
    not be one model (``python -m models list`` says "not trained")."""
    card = read_model_card(directory)
    if card is None:
        raise ModelLoadError(
            f"{directory} has no {CARD_FILE}: its training did not finish (interrupted, or still running), so its "
            f"files are not taken for {name}."
        )
    return card


# ----------------------------------------------------------------------------- writing a model folder
#: The files a model folder written here holds (each trainer's, transformers' ``save_pretrained``'s, a training run's
#: checkpoint): a folder holding anything else is never replaced, since its other files would go with it.
MODEL_FOLDER_FILES = frozenset(
    {
        CARD_FILE,
        *("vectors.bin", "ngrams.safetensors"),  # static
        *("options.json", "model.safetensors", "softmax.safetensors", "softmax.json", "vocab.txt"),  # ELMo
        *("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"),  # transformers
        *("special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt"),
        *("checkpoint.pt", "checkpoint.tmp"),  # a run writing into its output folder (GPT)
    }
)


def check_replaceable(final: str | Path) -> Path:
    """The folder a model will be written to (``writing_folder``), absolute, a link's target; ``RequestError`` unless it
    is missing, empty or a model folder (only ``MODEL_FOLDER_FILES``), is no mount point, and its parent takes a new
    folder. A trainer checks this before it trains, so that none of it is found after the training."""
    final = Path(os.path.abspath(final))  # "--out ." has a name, and a parent to write beside it
    if final.is_symlink():
        final = final.resolve()  # the link keeps pointing at the model
    if final.exists() and not final.is_dir():
        raise RequestError(f"{final} is a file, not a folder for a model.")
    if os.path.ismount(final):
        raise RequestError(f"{final} is a mount point: a model is written to a folder inside it.")
    entries = list(final.iterdir()) if final.is_dir() else []
    others = sorted(e.name for e in entries if e.is_dir() or e.name not in MODEL_FOLDER_FILES)
    if others:
        raise RequestError(
            f"{final} holds {', '.join(others[:3])}{', …' if len(others) > 3 else ''}, which no model folder written "
            "here does: a model is written to a new or empty folder, or replaces a model folder whole (choose another "
            "--out, or move those away)."
        )
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        trial = temp_name(final.with_name(f".{final.name}"))
        trial.mkdir()
        trial.rmdir()
    except OSError as exc:
        raise RequestError(f"Cannot write a model to {final}: {exc.strerror or exc}.") from None
    return final


@contextmanager
def writing_folder(final: str | Path) -> Iterator[Path]:
    """A model folder written whole or not at all. The block writes into the folder yielded (a temporary beside
    ``final``, named after this writer); when it ends, its files get the umask's mode (safetensors writes 0600) and it
    takes ``final``'s place, the old folder removed. A run killed or failing before leaves ``final`` as it was; killed
    between the two renames, ``final`` is missing (the old one beside it) — never a mix of two runs' files, which a
    loader would take for one model (a new ``vectors.bin`` beside the old n-grams and card). A killed writer's
    temporaries beside ``final`` are removed by the next (``corpora.temps.remove_stale_temps``)."""
    final = check_replaceable(final)
    remove_stale_temps(final.parent, logging.getLogger(__name__), f".{glob.escape(final.name)}.*.tmp")
    hidden = final.with_name(f".{final.name}")
    tmp, old = temp_name(hidden), temp_name(hidden, "old")
    tmp.mkdir()
    try:
        yield tmp
        mode = 0o666 & ~umask()  # on a lab server the app may run as another user
        for file in tmp.rglob("*"):
            if file.is_file():
                file.chmod(mode)
        if final.exists():
            os.rename(final, old)
        os.rename(tmp, final)
    except BaseException as exc:
        if old.exists() and not final.exists():
            os.rename(old, final)  # a failed swap puts the old model back
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):  # a full disk after the training: one line, not a traceback
            raise RequestError(
                f"Could not write the model to {final} ({exc.strerror or exc}): the folder is as it was before this "
                "run, and the trained model is lost. Free some space and train again."
            ) from None
        raise
    shutil.rmtree(old, ignore_errors=True)


# ----------------------------------------------------------------------------- weight files
def check_safetensors(file: Path) -> None:
    """Validate a safetensors header and that the data section covers every tensor (catches truncation)."""
    size = file.stat().st_size
    try:
        with open(file, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError(f"file is {size} bytes, too short for a safetensors header")
            n = int.from_bytes(head, "little")
            if n <= 0 or 8 + n > size:
                raise ValueError(f"header length {n} exceeds the file size {size} (truncated?)")
            header = json.loads(fh.read(n))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError, IndexError) as exc:
        raise ModelLoadError(f"{file}: corrupted safetensors file ({exc}).") from exc
    if 8 + n + end > size:
        raise ModelLoadError(
            f"{file}: truncated safetensors file: tensors need {8 + n + end} bytes, the file has {size}."
        )


def check_npy(file: Path) -> None:
    """A ``.npy`` file: header readable and header + shape × itemsize == file size."""
    size = file.stat().st_size
    try:
        with open(file, "rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(fh)
            offset = fh.tell()
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{file}: corrupted .npy file ({exc}).") from exc
    need = offset + math.prod(shape) * dtype.itemsize
    if need != size:
        raise ModelLoadError(
            f"{file}: {'truncated' if size < need else 'oversized'} .npy file: "
            f"header declares shape {shape} ({need} bytes), the file has {size}."
        )


def check_word2vec_binary(file: Path) -> None:
    """Walk a word2vec binary entry by entry (word, space, 4·dim bytes) without parsing floats."""
    size = file.stat().st_size
    if size == 0:
        raise ModelLoadError(f"{file}: empty word2vec file.")
    with open(file, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        nl = data.find(b"\n")
        if nl < 0:
            raise ModelLoadError(f"{file}: no word2vec header line '<count> <dim>'.")
        count, dim = parse_vectors_header(file, data[:nl])
        width, pos = 4 * dim, nl + 1
        for i in range(count):
            while pos < size and data[pos] in (10, 13):  # "\n" / "\r" between entries
                pos += 1
            sp = data.find(b" ", pos, pos + 10_000)
            if pos >= size or sp < 0 or sp + 1 + width > size:
                raise ModelLoadError(
                    f"{file}: truncated word2vec file: the header declares {count} vectors, "
                    f"the file ends inside vector {i + 1} (at byte {size})."
                )
            pos = sp + 1 + width
        if data[pos:].strip(b"\r\n"):
            raise ModelLoadError(f"{file}: data after the {count} vectors the header declares (byte {pos}).")


_CHECKED: dict[tuple[str, int, int], str | None] = {}  # (path, size, mtime_ns) -> error message or None
_CHECKED_LOCK = threading.Lock()


def check_weight_file(file: str | Path) -> None:
    """Cheap integrity check of one file by suffix (.safetensors, .npy, word2vec .bin); others: exists.

    Raises:
        ModelLoadError: missing, truncated or malformed (the message names the file and why).
    """
    file = Path(file)
    try:
        st = file.stat()
    except OSError:
        raise ModelLoadError(f"{file}: missing.") from None
    if not file.is_file():
        raise ModelLoadError(f"{file}: not a file.")
    key = (str(file), st.st_size, st.st_mtime_ns)
    with _CHECKED_LOCK:
        if key in _CHECKED:
            error = _CHECKED[key]
            if error is not None:
                raise ModelLoadError(error)
            return
    check = {".safetensors": check_safetensors, ".npy": check_npy, ".bin": check_word2vec_binary}.get(file.suffix)
    if file.name.startswith("pytorch_model"):  # a torch pickle, not word2vec: existence only
        check = None
    error = None
    if check is not None:
        try:
            check(file)
        except ModelLoadError as exc:
            error = str(exc)
    with _CHECKED_LOCK:
        _CHECKED[key] = error
    if error is not None:
        raise ModelLoadError(error)
