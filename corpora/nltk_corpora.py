"""NLTK corpus readers bound explicitly to the *current* data dir's zips.

``nltk.corpus.brown`` and friends are process-wide lazy singletons that stay bound to whichever
``nltk_data`` folder they first loaded from, so a changed ``EMBPROBE_DATA`` (tests, a second data
set) would silently keep reading the old files. These factories build the same readers, with
the same arguments as ``nltk/corpus/__init__.py``, on ``<data>/nltk_data/corpora/<name>.zip``.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any

from corpora.paths import DataMissingError, data_path, nltk_module, setup_nltk

#: What reading a damaged zip raises: a bad header (BadZipFile), compressed data flipped inside a member (zlib's
#: error, with no file name), a member cut short (EOFError), a missing member (LookupError, KeyError), text that
#: does not decode (ValueError). Each reader turns it into a DataMissingError naming the zip.
UNREADABLE_ZIP: tuple[type[BaseException], ...] = (
    OSError,
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    LookupError,
    ValueError,
)


def _specs() -> dict[str, tuple[type, str, tuple, dict[str, Any]]]:
    reader = nltk_module().corpus.reader
    txt = r"(?!\.).*\.txt"
    return {
        # name: (reader class, folder inside the zip, positional args, keyword args)
        "brown": (
            reader.CategorizedTaggedCorpusReader,
            "brown/",
            (r"c[a-z]\d\d",),
            dict(cat_file="cats.txt", tagset="brown", encoding="ascii"),
        ),
        "abc": (
            reader.PlaintextCorpusReader,
            "abc/",
            (txt,),
            dict(encoding=[("science", "latin_1"), ("rural", "utf8")]),
        ),
        "webtext": (reader.PlaintextCorpusReader, "webtext/", (r"(?!README|\.).*\.txt",), dict(encoding="ISO-8859-2")),
        "movie_reviews": (
            reader.CategorizedPlaintextCorpusReader,
            "movie_reviews/",
            (txt,),
            dict(cat_pattern=r"(neg|pos)/.*", encoding="ascii"),
        ),
        "state_union": (reader.PlaintextCorpusReader, "state_union/", (txt,), dict(encoding="ISO-8859-2")),
        "inaugural": (reader.PlaintextCorpusReader, "inaugural/", (txt,), dict(encoding="latin1")),
        "conll2000": (
            reader.ConllChunkCorpusReader,
            "conll2000/",
            (["train.txt", "test.txt"], ("NP", "VP", "PP")),
            dict(tagset="wsj", encoding="ascii"),
        ),
        "treebank": (
            reader.BracketParseCorpusReader,
            "treebank/combined/",
            (r"wsj_.*\.mrg",),
            dict(tagset="wsj", encoding="ascii"),
        ),
    }


def nltk_corpus(name: str):
    """A fresh NLTK reader for corpus ``name`` on the data dir's zip.

    Raises:
        DataMissingError: the zip is missing, not a zip, or lacks the corpus folder.
    """
    specs = _specs()
    if name not in specs:
        raise ValueError(f"no NLTK reader defined for {name!r}; known: {', '.join(specs)}")
    item = f"nltk_data/corpora/{name}.zip"
    path = data_path(item)
    setup_nltk()  # tag mappings and other lookups go through nltk.data.path
    cls, folder, args, kwargs = specs[name]
    try:
        # The real path: NLTK opens no link (its path security), and a data folder may be assembled from links.
        return cls(nltk_module().data.ZipFilePathPointer(str(path.resolve()), folder), *args, **kwargs)
    except UNREADABLE_ZIP as exc:
        raise DataMissingError(item, f"Could not open it as an NLTK corpus: {exc}.") from exc
