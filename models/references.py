"""Model references: every way a user can name a model, turned into a :class:`~models.spec.ModelSpec`.

Accepted wherever a model name is (``--model``/``--models``, ``load_embedder``, the app's pickers):

    minilm                              a registered name: the built-in zoo or the user's embprobe.toml
    ./bert-base-uncased                 a local Hugging Face checkpoint folder (config.json + weights)
    hf:FacebookAI/roberta-base@main     a hub id, downloaded into the hub cache (models.hub)
    elmo:options.json,weights.hdf5      the original AllenNLP/bilm-tf ELMo files (or their folder)
    ./glove.840B.300d.txt               a static vector file: word2vec text/binary, GloVe, fastText .vec/.bin
    ./assets-like-folder                a folder this project wrote (ELMo options.json + model.safetensors,
                                        or vectors.bin + model_card.json)

``parse_reference`` decides the kind from the text and the files (never from the network);
``spec_for_reference`` wraps it in a ModelSpec whose loader is :func:`load_reference`. The kinds'
loaders live with their families (``models.transformer.auto``, ``models.elmo.embedder``,
``models.static``); this module only dispatches. The transformer modules are imported only for a
transformer reference: importing transformers takes seconds, and listing models should not.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from corpora.errors import RequestError
from models.assets import CARD_FILE, read_model_card
from models.base import Embedder, check_device
from models.elmo.embedder import find_allennlp_files, inspect_allennlp_elmo, load_allennlp_elmo, load_elmo_asset
from models.errors import ModelLoadError, UnknownModelError
from models.hub import PREFIX as HUB_PREFIX, cached_snapshot, download, parse_hub_id
from models.options import ModelOptions
from models.spec import ELMO, HUB, STATIC, ModelSpec, Source
from models.static import VECTORS_FILE, find_vector_file, inspect_vectors, load_static_dir, load_vectors_file

ELMO_PREFIX = "elmo:"
# kind → the option group of models.options.APPLIES_TO
OPTION_GROUP = {
    "hf": "hf",
    "hub": "hf",
    "elmo": "elmo",
    "elmo-dir": "elmo",
    "vectors": "vectors",
    "static-dir": "vectors",
}
FORMS = (
    "a registered name, a Hugging Face checkpoint folder, hf:ORG/NAME[@REVISION], "
    "elmo:OPTIONS_JSON,WEIGHTS_HDF5 (or its folder), a vectors file (.txt/.vec/.bin/.kv), "
    "or random:NAME[@SEED] (NAME's architecture with random weights)"
)


@dataclass(frozen=True)
class Reference:
    """What a reference points at. kind: hf | hub | elmo | elmo-dir | vectors | static-dir."""

    text: str
    kind: str
    path: Path | None = None  # folder or file (hub: the cached snapshot, if any)
    weights: Path | None = None  # elmo: the weights.hdf5 (path = options.json)
    repo_id: str | None = None
    revision: str | None = None

    @property
    def default_name(self) -> str:
        if self.kind == "hub":
            return str(self.repo_id).split("/")[-1] + (f"@{self.revision}" if self.revision else "")
        if self.kind == "elmo" and self.path is not None and self.path.name.endswith(".json"):
            return self.path.parent.name if self.path.name == "options.json" else self.path.stem.replace("_options", "")
        assert self.path is not None
        return self.path.name if self.path.is_dir() else self.path.stem


def split_references(text: str) -> list[str]:
    """A comma-separated ``--models`` list; ``elmo:A,B`` keeps its own comma."""
    parts = [p.strip() for p in text.split(",")]
    out: list[str] = []
    for part in parts:
        if out and out[-1].startswith(ELMO_PREFIX) and "," not in out[-1]:
            out[-1] += "," + part
        elif part:
            out.append(part)
    return out


def looks_like_reference(text: str) -> bool:
    """True for text that is not a plain name: a hub id, an elmo: pair, or a path (existing or written as one)."""
    return (
        text.startswith((HUB_PREFIX, ELMO_PREFIX, ".", "~", "/"))
        or "/" in text
        or "\\" in text
        or Path(text).expanduser().exists()
    )


def parse_reference(text: str) -> Reference:
    """The kind of model ``text`` points at, from its form and its files (no network, no weights read)."""
    text = text.strip()
    if not text:  # Path("") is the working directory: it would be judged as a model folder
        raise ModelLoadError(f"no model given: write a folder, a file or a hub id ({HUB_PREFIX}ORG/NAME).")
    if text.startswith(HUB_PREFIX):
        repo_id, revision = parse_hub_id(text)
        return Reference(text, "hub", cached_snapshot(repo_id, revision), repo_id=repo_id, revision=revision)
    if text.startswith(ELMO_PREFIX):
        options, _, weights = text[len(ELMO_PREFIX) :].partition(",")
        if not options or not weights:
            raise ModelLoadError(f"{text!r}: write elmo:OPTIONS_JSON,WEIGHTS_HDF5 (two paths, one comma).")
        for f in (options, weights):
            if not Path(f).expanduser().is_file():
                raise ModelLoadError(f"{text!r}: {f} is not a file.")
        return Reference(text, "elmo", Path(options).expanduser(), weights=Path(weights).expanduser())
    path = Path(text).expanduser()
    if not path.exists():
        raise UnknownModelError(
            f"Unknown model {text!r}: not a registered name and no such file or folder. A model is {FORMS}."
        )
    if path.is_file():
        if path.suffix in (".json", ".hdf5", ".h5"):
            raise ModelLoadError(f"{path}: an ELMo needs both files: elmo:OPTIONS_JSON,WEIGHTS_HDF5, or their folder.")
        return Reference(text, "vectors", path)
    return _parse_directory(text, path)


def _parse_directory(text: str, path: Path) -> Reference:
    if (path / "config.json").is_file():
        return Reference(text, "hf", path)
    if (path / "options.json").is_file() and (path / "model.safetensors").is_file():
        return Reference(text, "elmo-dir", path)
    if (path / CARD_FILE).is_file() and (path / VECTORS_FILE).is_file():
        return Reference(text, "static-dir", path)
    elmo = find_allennlp_files(path)
    if elmo is not None:
        return Reference(text, "elmo", elmo[0], weights=elmo[1])
    vectors = find_vector_file(path)
    if vectors is not None:
        return Reference(text, "vectors", vectors)
    raise ModelLoadError(
        f"{path}: not a model folder. Expected config.json (a Hugging Face checkpoint), "
        "options.json + weights.hdf5 (the original ELMo), or one vectors file."
    )


def family_of(ref: Reference) -> str:
    """ "bert" (encoders), "gpt" (decoders), "elmo" or "static"; a hub model not yet downloaded: "hf"."""
    if ref.kind in ("vectors", "static-dir"):
        return STATIC.name
    if ref.kind in ("elmo", "elmo-dir"):
        return ELMO.name
    if ref.path is None:
        return HUB.name
    # lazy: transformers (seconds to import), only for a transformer checkpoint; the role is read from config.json
    from models.transformer.auto import family_of_config

    return family_of_config(ref.path)


def spec_for_reference(
    text: str, name: str | None = None, options: ModelOptions | None = None, description: str = ""
) -> ModelSpec:
    """A ModelSpec for any reference; ``name`` defaults to the folder/file/repo name."""
    ref = parse_reference(text)
    options = options or ModelOptions()
    options.check_applies(OPTION_GROUP[ref.kind], f"model {name or text!r}")
    if options.revision is not None and ref.kind != "hub":
        raise ModelLoadError(f"model {name or text!r}: revision applies to hf: hub ids only.")
    if ref.kind == "hub":
        source = Source.hub(str(ref.repo_id), ref.revision or options.revision)
    else:
        source = Source.path(ref.path) if ref.kind != "elmo" else elmo_source(ref)
    return ModelSpec(
        name or ref.default_name,
        family_of(ref),
        "models.references:load_reference",
        {"ref": text, "name": name, "options": options.to_mapping()},
        description=description or f"user model ({ref.kind}): {text}",
        source=source,
    )


def elmo_source(ref: Reference) -> Source:
    """An ELMo pair's files: the options' folder, and the weights wherever they are (both decide its content)."""
    folder = Path(ref.path).parent
    weights = Path(ref.weights) if ref.weights is not None else None
    outside = weights is not None and weights.resolve().parent != folder.resolve()
    return Source.path(folder, also=(weights,) if outside else ())


def moved_model(name: str, ref: str) -> str:
    """What is wrong with a registered model whose reference no longer resolves, and the two ways out."""
    return (
        f"Model {name!r} is registered as {ref}, which no longer exists (moved or deleted?). "
        f"Register it again (python -m models add {name} NEW_PATH --replace) or remove it."
    )


def load_reference(ref: str, name: str | None = None, options: dict[str, Any] | None = None) -> Embedder:
    """Load any reference with its options (the loader of every spec made by ``spec_for_reference``)."""
    try:
        parsed = parse_reference(ref)
    except UnknownModelError:
        if name is None:
            raise
        raise ModelLoadError(moved_model(name, ref)) from None  # a registered model's files moved (issue 27)
    opts = dict(options or {})
    name = name or parsed.default_name
    device = opts.pop("device", None)
    if device not in (None, "auto"):  # registered for a machine with a GPU, say: one line here, not torch's assert
        try:
            check_device(device)
        except RequestError as exc:
            raise ModelLoadError(
                f"{name} is registered with device {exc}; give another (--device), or register it again without one."
            ) from None
    kind = parsed.kind
    if kind in ("hf", "hub"):
        if "layers" in opts:
            opts["layers"] = list(opts["layers"])
        # lazy: transformers (seconds to import), only for a transformer checkpoint
        from models.transformer.auto import load_hf_checkpoint

        if kind == "hub":
            revision = opts.pop("revision", None) or parsed.revision
            at = f"@{revision}" if revision else ""
            return load_hf_checkpoint(
                download(str(parsed.repo_id), revision),
                name=name,
                device=device,
                revision=revision,
                source_label=f"hf:{parsed.repo_id}{at}",
                **opts,
            )
        return load_hf_checkpoint(parsed.path, name=name, device=device, **opts)
    if kind == "elmo":
        emb = load_allennlp_elmo(parsed.path, parsed.weights, name=name, device=device, **opts)
    elif kind == "elmo-dir":
        assert parsed.path is not None
        emb = load_elmo_asset(parsed.path.name, device=device, assets_dir=parsed.path.parent, **opts)
    elif kind == "static-dir":
        emb = load_static_dir(parsed.path, name=name, device=device)
    else:
        emb = load_vectors_file(parsed.path, name=name, device=device, allow_pickle=bool(opts.get("allow_pickle")))
    emb.info.name = name  # the registered name is the model's name in results and the app
    return emb


def inspect_reference(text: str) -> dict[str, Any]:
    """Shape and size of a referenced model from its config and file headers, without loading weights.

    Keys: layers (incl. layer 0), dim, params, size_bytes, positions, refused (None where unknown or none:
    ``inspect_checkpoint``). A hub model not in
    the cache gives ``{"downloaded": False}``. Malformed files raise ModelLoadError.
    """
    ref = parse_reference(text)
    if ref.kind == "hub" and ref.path is None:
        return {"downloaded": False}
    return dict(_facts(ref, _signature(ref))) | {"downloaded": True}


def _signature(ref: Reference) -> tuple:
    """(file, size, mtime_ns) of every file the reference reads: a changed file means new facts."""
    assert ref.path is not None
    files = [f for f in ref.path.iterdir() if f.is_file()] if ref.path.is_dir() else [ref.path]
    files += [ref.weights] if ref.weights is not None else []
    return tuple(sorted((str(f), st.st_size, st.st_mtime_ns) for f in files for st in [f.stat()]))


@lru_cache(maxsize=64)
def _facts(ref: Reference, signature: tuple) -> dict[str, Any]:
    """The inspection itself, once per reference and file state: the app asks on every rerun, and a
    checkpoint's memory estimate (a meta-device model) or a GloVe text's line count takes seconds."""
    if ref.kind in ("hf", "hub"):
        from models.transformer.auto import inspect_checkpoint  # lazy: transformers, only for a checkpoint

        facts = inspect_checkpoint(ref.path)
    elif ref.kind == "elmo":
        facts = inspect_allennlp_elmo(ref.path, ref.weights)
    elif ref.kind == "vectors":
        facts = inspect_vectors(ref.path)
        facts.setdefault("layers", 1)
    else:  # a folder this project wrote: its model card says it all
        card = read_model_card(ref.path) or {}
        facts = {
            "layers": card.get("layers"),
            "dim": card.get("dim"),
            "params": card.get("params"),
            "size_bytes": sum(f.stat().st_size for f in Path(ref.path).iterdir() if f.is_file()),
        }
    return {k: facts.get(k) for k in ("layers", "dim", "params", "size_bytes", "positions", "refused")}
