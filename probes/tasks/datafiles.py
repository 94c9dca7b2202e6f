"""A user's dataset as the probes see it: train / optional dev / test files, a name and a content hash.

Two datasets must never mix — not in a results table, not in the feature cache — even when they
share a file name. So a dataset is labelled ``NAME@HASH``: NAME from ``--name`` (default: what the
train and test file names share, e.g. ``en_ewt-ud`` for ``en_ewt-ud-train.conllu`` and
``en_ewt-ud-test.conllu``), HASH the first 8 hex digits of a SHA-256 over the files' contents
(``corpora.digests``) and the settings that decide what the words are (format, word column). The
label column is not part of the hash: it is named separately in every row, and UPOS, XPOS and
DEPREL of one treebank share their extracted vectors. The feature cache is keyed per file
(``feature_key``): by that file's content and the word settings, never by the name or the other files.

    files = DataFiles.checked("tag", "train.conllu", "test.conllu", dev=None, settings="conllu")
    files.label                              # "train@1a2b3c4d" … or "en_ewt-ud@1a2b3c4d"
    files.row_dataset("test", "UPOS")        # "en_ewt-ud@1a2b3c4d:test:UPOS"
    files.feature_key("train", limit=200)    # "file-<hash of the train file and settings>-limit200"
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from itertools import islice
from pathlib import Path
from typing import TypeVar

from corpora.digests import file_digest
from corpora.format_errors import DataFormatError
from probes.errors import ProbeInputError, no_file
from probes.inputs import InputFile
from probes.registry import Option

T = TypeVar("T")
ROLES = ("train", "dev", "test")


def file_options(formats: tuple[str, ...]) -> tuple[Option, ...]:
    """The options every probe on the user's files shares: ``--train``, ``--dev``, ``--test`` (files in
    ``formats``) and ``--name``."""
    return (
        Option("train", help=f"training file ({' or '.join(formats)})"),
        Option("dev", help="development file, scored like --test (optional)"),
        Option("test", help="test file"),
        Option("name", help="the dataset's name in results and tables (default: from the file names)"),
    )


def file_inputs(formats: tuple[str, ...]) -> tuple[InputFile, ...]:
    """The files of ``file_options`` as the app's upload tab offers them: train and test, dev optional."""
    return (
        InputFile("train", formats),
        InputFile("dev", formats, required=False, help="scored like the test file"),
        InputFile("test", formats),
    )


def _common_name(a: Path, b: Path) -> str:
    """What two file names share, cut at a separator ("en_ewt-ud-train", "en_ewt-ud-test" -> "en_ewt-ud")."""
    prefix = os.path.commonprefix([a.stem, b.stem])
    if prefix != a.stem or prefix != b.stem:
        prefix = re.sub(r"[^-_. ]*$", "", prefix)
    return prefix.rstrip("-_. ") or b.stem


@dataclass(frozen=True)
class DataFiles:
    """train / dev / test paths of one dataset, its name and the settings that shape its words."""

    train: Path
    test: Path
    dev: Path | None = None
    name: str = ""
    settings: str = ""
    limited: int | None = None  # the --limit that left records of some file out (``read_roles``); None: all whole

    @classmethod
    def checked(
        cls,
        probe: str,
        train: str | Path | None,
        test: str | Path | None,
        dev: str | Path | None = None,
        name: str | None = None,
        settings: str = "",
        flags: dict[str, str] | None = None,
        default: str | None = None,
    ) -> DataFiles:
        """The files of a ``probe`` run; ProbeInputError when --train/--test is missing or a file is absent.
        ``flags``: the command's flag of a role where it is not ``--ROLE`` (head_syntax's selection file is
        ``--select``); ``default``: what the probe reads when no file is given (said when only some are)."""
        if not train or not test:
            raise ProbeInputError(
                f"The {probe} probe reads your files: give --train FILE and --test FILE "
                "(and optionally --dev FILE)" + (f", or none of them for {default}" if default else "")
                + "; see docs/datasets.md."
            )  # fmt: skip
        paths = {}
        for role, p in (("train", train), ("test", test), ("dev", dev)):
            if p is None or p == "":
                continue
            path = Path(p).expanduser()
            if not path.is_file():
                raise no_file((flags or {}).get(role, f"--{role}"), p)
            paths[role] = path
        clean = re.sub(r"[^0-9A-Za-z._-]+", "_", name.strip()) if name else ""
        return cls(
            paths["train"],
            paths["test"],
            paths.get("dev"),
            clean or _common_name(paths["train"], paths["test"]),
            settings,
        )

    def paths(self) -> dict[str, Path]:
        """Role -> file, in the order train, dev, test (dev only when given)."""
        return {r: p for r, p in (("train", self.train), ("dev", self.dev), ("test", self.test)) if p is not None}

    @cached_property
    def digest(self) -> str:
        h = hashlib.sha256(self.settings.encode())
        for role, path in self.paths().items():
            h.update(f"\0{role}:{file_digest(path)}".encode())
        return h.hexdigest()[:8]

    @property
    def label(self) -> str:
        """The dataset as a whole (``ProbeResult.dataset``): ``NAME@HASH``."""
        return f"{self.name}@{self.digest}"

    def row_dataset(self, role: str, what: str) -> str:
        """The ``dataset`` of result rows scored on ``role`` for label column / task ``what``."""
        return f"{self.label}:{role}:{what}"

    def feature_key(self, role: str, limit: int | None) -> str:
        """Feature-cache key of ``role``'s file, first ``limit`` sentences: that file's content and the word
        settings alone. Not the label column, nor ``--name``, the role or the run's other files: the same file
        under another name, or beside another test file, reuses its vectors."""
        h = hashlib.sha256(f"{file_digest(self.paths()[role])}\0{self.settings}".encode()).hexdigest()[:12]
        return f"file-{h}" + ("" if limit is None else f"-limit{limit}")


def first(records: Iterator[T], limit: int | None) -> list[T]:
    """The first ``limit`` records of a stream (all when None); reading stops there."""
    return list(records if limit is None else islice(records, limit))


# A run reads its files up to three times (``run_probe``'s check before the model loads, the command
# line's estimate, the run itself): UD EWT's trees take ~2 s a read. The records are immutable (frozen
# dataclasses of tuples), so the last few reads are kept, each keyed by the reader and its arguments and
# the file's state (size, modification and change times, inode): a file changed in between is read again.
_READS: OrderedDict[tuple, tuple] = OrderedDict()
_READS_LOCK = threading.Lock()
KEPT_READS = 6


def _reader_key(reader: Callable) -> tuple | None:
    """What identifies a reader: its function and, for a ``functools.partial``, its arguments (None: unknown,
    a lambda or closure whose arguments cannot be seen; such a reader is never cached)."""
    func, args, kwargs = reader, (), {}
    if isinstance(reader, partial):
        func, args, kwargs = reader.func, reader.args, reader.keywords
    name = getattr(func, "__qualname__", "")
    if "<" in name:  # "<lambda>", "<locals>"
        return None
    return (func.__module__, name, args, tuple(sorted(kwargs.items())))


def read_file(reader: Callable[[Path], Iterator[T]], path: Path, limit: int | None) -> list[T]:
    """The first ``limit`` records of ``path`` as ``reader`` reads them; a recent identical read is reused."""
    who = _reader_key(reader)
    if who is None:
        return first(reader(path), limit)
    st = path.stat()
    key = (who, str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, limit)
    with _READS_LOCK:  # the app's sessions are threads
        kept = _READS.get(key)
        if kept is not None:
            _READS.move_to_end(key)
    if kept is None:
        kept = tuple(first(reader(path), limit))  # read outside the lock: another session's read need not wait
        with _READS_LOCK:
            _READS[key] = kept
            while len(_READS) > KEPT_READS:
                _READS.popitem(last=False)
    return list(kept)


def unseen_labels(train: Sequence[str], labels: Sequence[str]) -> Counter:
    """The labels of ``labels`` that ``train`` never has, with their counts (in order of first occurrence)."""
    seen = {str(label) for label in train}
    return Counter(str(label) for label in labels if str(label) not in seen)


def _named(unseen: Counter) -> str:
    """The first five labels of ``unseen``, quoted ("'NP', 'VP'", "…" after them when there are more)."""
    return ", ".join(map(repr, list(unseen)[:5])) + ("…" if len(unseen) > 5 else "")


def label_counts(train: Sequence[str], test: Sequence[str]) -> dict:
    """A tag or span run's label counts (its ``extra``): training's and the test file's by frequency, and the test
    labels training never has (a probe cannot predict them), said as a ``warning`` (the command line and the app
    print it; a file with more than half of them is refused, ``check_labels_seen``)."""
    counts = Counter(str(label) for label in test)
    unseen = unseen_labels(train, test)
    n, k = len(test), sum(unseen.values())
    out = {
        "labels": dict(Counter(str(label) for label in train).most_common()),
        "test_labels": dict(counts.most_common()),
        "unseen_test_labels": dict(unseen),
    }
    if k:  # so n ≥ k ≥ 1
        out["warning"] = (
            f"{k:,} of the test file's {n:,} labels ({_named(unseen)}) never occur in training: no probe can predict "
            f"them, so its accuracy is at most {100 * (n - k) / n:.2f} %."
        )
    return out


def check_labels_seen(files: DataFiles, train: Sequence[str], evaluated: dict[str, Sequence[str]]) -> None:
    """Refuse evaluation files whose labels are mostly unseen in training (``evaluated``: role -> its labels): a probe
    can never predict them, so it scored 0.00 [0.00, 0.00] and its majority baseline too, said nowhere (``noun`` in
    the test file, ``NOUN`` in train). A few unseen labels (rare tags) are normal and kept."""
    seen = {str(label) for label in train}
    for role, labels in evaluated.items():
        unseen = unseen_labels(train, labels)
        if 2 * sum(unseen.values()) <= len(labels):
            continue
        folded = {label.strip().casefold(): label for label in seen}
        like = [f"{u!r} (train: {folded[u.strip().casefold()]!r})" for u in unseen if u.strip().casefold() in folded]
        raise ProbeInputError(
            f"--{role} {files.paths()[role]}: {sum(unseen.values()):,} of its {len(labels):,} labels "
            f"({_named(unseen)}) never occur in the training file, so no probe could score them. "
            + (f"They match training labels in another case or spacing: {', '.join(like[:5])}. " if like else "")
            + "Use the same label set in every file."
        )


def read_roles(
    files: DataFiles, reader: Callable[[Path], Iterator[T]], limit: int | None
) -> tuple[DataFiles, dict[str, list[T]]]:
    """Each role's first ``limit`` records, every file read (and checked) before any work starts, and the files
    with ``limited`` set when the limit left a record out: a limit that cut nothing is the full run (an upload of
    60 sentences under the app's 300 was named "(limit 300)", a slice, and kept apart from the full run)."""
    data, cut = {}, False
    for role, path in files.paths().items():
        if limit is None:
            data[role] = read_file(reader, path, None)
            continue
        try:  # one record past the limit tells whether it cut
            records = read_file(reader, path, limit + 1)
        except DataFormatError:  # a malformed record past the limit: something is there, and no run reads it
            records = [*read_file(reader, path, limit), None]
        data[role], cut = records[:limit], cut or len(records) > limit
    return replace(files, limited=limit if cut else None), data
