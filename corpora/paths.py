"""Where the project finds its data, and the one error it raises when something is missing.

Resolution order: ``$EMBPROBE_DATA``, else ``../shared/data`` next to the repository root.
Nothing under the data directory is ever copied into the repository.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

from corpora.errors import LabError

REPO_ROOT = Path(__file__).resolve().parent.parent

#: NLTK packages the project reads: (path under nltk_data, the downloader's id, what it is).
NLTK_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("corpora/wordnet", "wordnet", "WordNet 3.0 for NLTK"),
    ("corpora/conll2000.zip", "conll2000", "CoNLL-2000"),
    ("corpora/treebank.zip", "treebank", "Penn Treebank sample"),
    ("corpora/brown.zip", "brown", "Brown corpus"),
    ("taggers/universal_tagset.zip", "universal_tagset", "Universal tagset"),
    # the language-model corpora beside Brown (``corpora.lm_sources``)
    ("corpora/abc.zip", "abc", "ABC (Australian Broadcasting Commission) corpus"),
    ("corpora/webtext.zip", "webtext", "NLTK web text corpus"),
    ("corpora/movie_reviews.zip", "movie_reviews", "Movie reviews corpus (Pang & Lee)"),
    ("corpora/state_union.zip", "state_union", "State of the Union addresses"),
    ("corpora/inaugural.zip", "inaugural", "US presidential inaugural addresses"),
)

# What each item is and where a user gets it upstream (shown in error messages and the README).
DATA_SOURCES: dict[str, str] = {
    "semcor3.0": "SemCor 3.0 (WordNet 3.0 mapping): http://web.eecs.umich.edu/~mihalcea/downloads.html",
    "wsd_eval": "WSD Evaluation Framework (Raganato et al., 2017): http://lcl.uniroma1.it/wsdeval",
    **{
        f"nltk_data/{path}": f"{what}: python -m nltk.downloader -d $EMBPROBE_DATA/nltk_data {package}"
        for path, package, what in NLTK_PACKAGES
    },
    "ud_english_ewt": "Universal Dependencies English Web Treebank (CC BY-SA 4.0): en_ewt-ud-{train,dev,test}.conllu "
    "from https://github.com/UniversalDependencies/UD_English-EWT (or https://universaldependencies.org)",
    "lm_corpus/wikitext-103": "WikiText-103 (Merity et al., 2016): wiki.valid.tokens and wiki.test.tokens "
    "from https://www.salesforce.com/blog/the-wikitext-long-term-dependency-language-modeling-dataset/",
}


class DataMissingError(LabError, RuntimeError):
    """A dataset is missing or unreadable. The message names the item and how to obtain it."""

    def __init__(self, item: str, detail: str = "") -> None:
        source = next((src for key, src in DATA_SOURCES.items() if item.startswith(key)), None)
        msg = f"Missing or unreadable data item '{item}' in data directory {data_dir_or_none() or '<none>'}."
        if detail:
            msg += f" {detail}"
        if source:
            msg += f" Obtain it from: {source}."
        msg += ' Point the project at your data with EMBPROBE_DATA=/path/to/data (README, "Data").'
        super().__init__(msg)
        self.item = item


def data_dir_or_none() -> Path | None:
    env = os.environ.get("EMBPROBE_DATA")
    if env:
        try:
            return Path(env).expanduser().resolve()
        except (OSError, RuntimeError):  # a symlink loop: data_dir() then says it is not a directory
            return Path(os.path.abspath(Path(env).expanduser()))
    default = (REPO_ROOT.parent / "shared" / "data").resolve()
    return default if default.is_dir() else None


def _no_data_dir() -> str:
    """Why there is no data directory, and where the project looks."""
    env = os.environ.get("EMBPROBE_DATA")
    if env:
        return f"No data directory: EMBPROBE_DATA={env} is not a directory."
    return f"No data directory: EMBPROBE_DATA is not set and {REPO_ROOT.parent / 'shared' / 'data'} does not exist."


def data_dir(item: str = "data directory") -> Path:
    """The data directory; raises DataMissingError when there is none, naming ``item`` (what the caller was
    about to read, so that the message says which dataset and where to get it)."""
    root = data_dir_or_none()
    if root is None or not root.is_dir():
        raise DataMissingError(item, _no_data_dir())
    return root


def data_path(item: str) -> Path:
    """Absolute path of ``item`` (relative to the data dir); raises DataMissingError if absent."""
    path = data_dir(item) / item
    if not path.exists():
        raise DataMissingError(item)
    return path


def nltk_module():
    """The ``nltk`` package, imported on first use: it takes seconds to import (all its subpackages,
    ``nltk.corpus.reader`` and ``nltk.tokenize`` among them), which ``import corpora``,
    ``python -m probes stats`` and a warm probe run never pay."""
    import nltk  # lazy: nltk takes seconds to import

    return nltk


def setup_nltk() -> Path:
    """Point NLTK at the data dir's ``nltk_data`` (idempotent) and return that folder."""
    nltk = nltk_module()
    nltk_dir = data_path("nltk_data")
    os.environ["NLTK_DATA"] = str(nltk_dir)
    if str(nltk_dir) not in nltk.data.path:
        nltk.data.path.insert(0, str(nltk_dir))
    nltk.data.path.extend(p for p in linked_out(str(nltk_dir)) if p not in nltk.data.path)
    return nltk_dir


@functools.lru_cache(maxsize=8)
def linked_out(nltk_dir: str) -> tuple[str, ...]:
    """The real paths of the items in ``nltk_dir`` (``corpora/wordnet``, ``corpora/brown.zip`` …) that are links to
    somewhere outside it. NLTK refuses to read a file whose real path lies outside its data folders (its path
    security: "Unauthorized path"), so a data folder assembled from links would read as missing; these are the
    user's own data, allowed by their real paths."""

    def listing(folder: Path) -> list[Path]:
        try:
            return sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError:  # unreadable: what NLTK then cannot read is said where it is read
            return []

    root, out = Path(nltk_dir).resolve(), []
    top = listing(Path(nltk_dir))
    for item in [*top, *(p for folder in top for p in listing(folder))]:
        try:
            real = item.resolve()  # a linked folder (taggers -> …) comes before what is in it
        except (OSError, RuntimeError):  # a link loop: nothing to read there
            continue
        if not real.is_relative_to(root) and not any(real.is_relative_to(o) for o in out):
            out.append(real)
    return tuple(map(str, out))


def cache_dir() -> Path:
    """Project cache (parsed datasets, features): ``$EMBPROBE_CACHE`` or ``<repo>/cache``.

    When it cannot be created (a file, under a file, a dangling link, a symlink loop) one warning says
    so and the path is returned as it is: the feature cache then computes in memory, the reader cache
    and the digest memo go on without caching, and a results folder under it is refused with one error.
    """
    path = Path(os.environ.get("EMBPROBE_CACHE") or REPO_ROOT / "cache").expanduser()  # set but empty: unset
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _warn_unusable_cache(str(path), f"{type(exc).__name__}: {exc.strerror or exc}")
    return path


@functools.cache
def _warn_unusable_cache(path: str, reason: str) -> None:
    logging.getLogger(__name__).warning(
        "Cache directory %s cannot be created (%s); nothing is cached in this run. Set EMBPROBE_CACHE to a "
        "writable directory.",
        path,
        reason,
    )
