"""Register and unregister user models, validated first: shared by ``python -m models add/remove`` and the app.

Validation resolves the reference and reads its config and file headers (``models.listing``) — a
folder that is not a model, a truncated weight file, a checkpoint that needs custom code, an option
that does not apply: each is refused before anything is written, with the reason. A text or word2vec
binary vectors file up to ``ROW_CHECK_BYTES`` is read whole as well (a short or cut row, a value that is
not a number, nan: the file and line); a larger one has its rows checked when it first loads. Loading a
checkpoint's weights happens on first use, where missing tensors are refused (``models.transformer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from models.base import ModelLoadError, UnknownModelError
from models.formats import FORMATS, guess_format, read_vectors
from models.listing import BROKEN, ModelRow, describe
from models.options import ModelOptions
from models.references import parse_reference, spec_for_reference
from models.registry import REGISTRY, unload_embedder
from models.user_registry import (
    UserModel,
    add_user_model,
    check_name,
    read_user_models,
    registry_file,
    remove_user_model,
)
from models.vector_files import PICKLE_REFUSAL


def check_model(name: str, ref: str, options: Mapping[str, Any] | ModelOptions | None = None) -> ModelRow:
    """The facts ``models list`` would show for ``name`` → ``ref``; ModelLoadError when it cannot be used."""
    check_name(name)
    if name in REGISTRY:
        raise ModelLoadError(f"{name!r} is a built-in model; choose another name.")
    if not isinstance(options, ModelOptions):
        options = ModelOptions.from_mapping(dict(options or {}), f"model {name!r}")
    try:
        spec = spec_for_reference(ref, name, options)
    except UnknownModelError as exc:
        raise ModelLoadError(str(exc)) from None
    row = describe(spec)
    if row.state == BROKEN:
        raise ModelLoadError(f"{name}: {row.status}")
    check_vector_rows(ref, options.allow_pickle)
    return row


#: Vectors files read whole when registered (≈ 15 s at the parser's ~30 MB/s); larger ones on first load.
ROW_CHECK_BYTES = 512 * 2**20


def check_vector_rows(ref: str, allow_pickle: bool | None = None) -> None:
    """Every row of a text or word2vec binary vectors file ``ref`` up to ``ROW_CHECK_BYTES``, read as loading
    would (ModelLoadError naming the file and line); a gensim pickle refused without ``allow_pickle``, as loading
    would refuse it (it was registered as "ok", then never loaded); anything else: nothing to do here."""
    reference = parse_reference(ref)
    if reference.kind != "vectors" or reference.path is None:
        return
    fmt = guess_format(reference.path)
    if fmt == "gensim" and not allow_pickle:
        raise ModelLoadError(PICKLE_REFUSAL.format(path=reference.path))
    if fmt in FORMATS and reference.path.stat().st_size <= ROW_CHECK_BYTES:
        read_vectors(reference.path, fmt)


def add_model(
    name: str, ref: str, options: Mapping[str, Any] | None = None, file: Path | None = None, replace: bool = False
) -> tuple[UserModel, ModelRow]:
    """Validate, then register (a relative path is stored as an absolute one)."""
    opts = ModelOptions.from_mapping(dict(options or {}), f"model {name!r}")
    row = check_model(name, ref, opts)
    if not ref.startswith(("hf:", "elmo:")) and Path(ref).expanduser().exists():
        ref = str(Path(ref).expanduser().resolve())
    elif ref.startswith("elmo:"):
        ref = "elmo:" + ",".join(str(Path(p).expanduser().resolve()) for p in ref[5:].split(","))
    return add_user_model(name, ref, opts, file, replace=replace), row


def remove_model(name: str, file: Path | None = None) -> None:
    if name in REGISTRY:
        raise ModelLoadError(f"{name!r} is a built-in model; only models you registered can be removed.")
    remove_user_model(name, file)
    unload_embedder(name)  # a loaded instance would go on answering for a name that no longer exists


def registered(file: Path | None = None) -> dict[str, UserModel]:
    return read_user_models(file or registry_file())
