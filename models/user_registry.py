"""Models the user registered by name: a TOML file beside their work.

The file is ``$EMBPROBE_MODELS`` when set, else ``embprobe.toml`` in the working directory::

    # my models
    [models.bert-base]
    ref = "/data/models/bert-base-uncased"     # any reference: a folder, hf:ORG/NAME[@REV], elmo:…, a vectors file
    pooling = "first"
    layers = [0, 6, 12]

    [models.roberta]
    ref = "hf:FacebookAI/roberta-base"
    dtype = "bf16"

Options are those of :class:`models.options.ModelOptions`. A relative path in ``ref`` is relative to the
TOML file, so a project folder can be moved with its models. ``python -m models add/remove`` and the
app's Models page edit the file with ``tomlkit``, which keeps the user's comments and layout; every
write is atomic (temporary file + rename, under a file lock), so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from filelock import FileLock, Timeout
from tomlkit.exceptions import TOMLKitError

from corpora.temps import write_atomically
from models.errors import ModelLoadError
from models.options import ModelOptions

ENV_VAR = "EMBPROBE_MODELS"
DEFAULT_FILE = "embprobe.toml"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")  # fullmatch; also a safe file-name part (result files)


@dataclass(frozen=True)
class UserModel:
    name: str
    ref: str  # as resolved: relative paths made absolute against the file's folder
    options: ModelOptions
    file: Path  # the TOML file it is registered in


def registry_file() -> Path:
    return Path(os.environ.get(ENV_VAR) or Path.cwd() / DEFAULT_FILE).expanduser()


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise ModelLoadError(
            f"Model name {name!r}: use 1-64 letters, digits and . _ + - (starting with a letter "
            "or digit); it names result files and URLs."
        )
    return name


def _read_document(file: Path) -> tomlkit.TOMLDocument:
    if not file.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except TOMLKitError as exc:
        raise ModelLoadError(f"{file}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ModelLoadError(f"{file}: cannot read the model registry: {exc}") from None


def _absolute_ref(ref: str, base: Path) -> str:
    """A relative local path (or elmo:A,B paths) made absolute against ``base``; other refs unchanged."""
    if ref.startswith("hf:"):
        return ref
    if ref.startswith("elmo:"):
        parts = ref[len("elmo:") :].split(",")
        return "elmo:" + ",".join(str((base / Path(p).expanduser()).resolve()) if p else p for p in parts)
    candidate = Path(ref).expanduser()
    if candidate.is_absolute() or not (base / candidate).exists():
        return ref  # absolute already, or a registered name (never a relative path that does not exist)
    return str((base / candidate).resolve())


def read_user_models(file: Path | None = None) -> dict[str, UserModel]:
    """Every model of the registry file (none when there is no file); a malformed file or entry is an error."""
    file = file or registry_file()
    doc = _read_document(file)
    table = doc.get("models", {})
    if not isinstance(table, dict):
        raise ModelLoadError(f"{file}: 'models' must be a table of [models.NAME] entries.")
    out: dict[str, UserModel] = {}
    for name, entry in table.items():
        where = f"{file} [models.{name}]"
        check_name(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str) or not entry["ref"].strip():
            raise ModelLoadError(f'{where}: needs ref = "<folder, hf:ORG/NAME, elmo:OPTIONS,WEIGHTS or vectors file>".')
        options = ModelOptions.from_mapping({k: _plain(v) for k, v in entry.items() if k != "ref"}, where)
        out[name] = UserModel(name, _absolute_ref(entry["ref"].strip(), file.parent), options, file)
    return out


def _plain(value):
    return value.unwrap() if hasattr(value, "unwrap") else value


def _write_document(file: Path, doc: tomlkit.TOMLDocument) -> None:
    """Atomic write of the file a symlink points to (``embprobe.toml -> dotfiles/real.toml`` stays a link
    and the real file gets the change), keeping its mode; a new file gets the umask's (not mkstemp's 0600)."""
    file = file.resolve()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(file.stat().st_mode) if file.exists() else None
        write_atomically(file, tomlkit.dumps(doc), mode)
    except OSError as exc:  # a full disk, a folder made read-only: one line, and the registry as it was
        raise ModelLoadError(
            f"{file}: cannot write the model registry ({exc.strerror or exc}); it is as it was."
        ) from None


@contextmanager
def _editing(file: Path) -> Iterator[None]:
    """Hold the registry's lock while it is edited. A path that is not a regular file (``EMBPROBE_MODELS=/dev/null``:
    no registry) cannot be edited (the atomic write would replace the device with a TOML file), and a folder the
    lock cannot be made in is said as such, not as a traceback."""
    real = file.resolve()
    if real.exists() and not real.is_file():
        raise ModelLoadError(
            f"{file} is not a regular file, so no model can be registered in it (set {ENV_VAR} to a .toml file, "
            "or unset it to use embprobe.toml in the working folder)."
        )
    lock = FileLock(str(real) + ".lock", timeout=30)  # the file written: two links to it take one lock
    try:
        lock.acquire()
    except Timeout:
        raise ModelLoadError(f"{file}: another process has held its lock ({lock.lock_file}) for 30 s.") from None
    except OSError as exc:
        raise ModelLoadError(
            f"{file}: cannot lock the model registry for editing ({exc.strerror or exc}); is its folder writable?"
        ) from None
    try:
        yield
    finally:
        lock.release()


def add_user_model(
    name: str, ref: str, options: ModelOptions | None = None, file: Path | None = None, replace: bool = False
) -> UserModel:
    """Register ``name`` → ``ref`` with ``options`` (the caller validates the model first)."""
    file = file or registry_file()
    check_name(name)
    options = options or ModelOptions()
    with _editing(file):
        doc = _read_document(file)
        if "models" not in doc:
            doc["models"] = tomlkit.table(is_super_table=True)
        models = doc["models"]
        if name in models and not replace:
            raise ModelLoadError(
                f"{file}: a model named {name!r} is already registered "
                f"(python -m models add … --replace replaces it; or remove it first: python -m models remove {name}, "
                "or the Models page's Remove)."
            )
        entry = tomlkit.table()
        entry["ref"] = ref
        for key, value in options.to_mapping().items():
            entry[key] = value
        models[name] = entry
        _write_document(file, doc)
        return read_user_models(file)[name]  # under the lock: another process's edit may follow it


def remove_user_model(name: str, file: Path | None = None) -> None:
    file = file or registry_file()
    with _editing(file):
        doc = _read_document(file)
        models = doc.get("models", {})
        if name not in models:
            registered = ", ".join(sorted(models)) or "none"
            raise ModelLoadError(f"{file}: no model named {name!r} is registered (registered: {registered}).")
        del models[name]
        _write_document(file, doc)
