"""Corpora as plain sentences of words, for the measures that read running text rather than labels: the
contextuality probe and linear CKA.

- :func:`semcor_sentences`: SemCor's first ``limit`` sentences, every word (tagged or not; a multiword token is its
  words), named ``semcor-first{limit}``.
- :func:`corpus_sentences`: a UTF-8 text file, one sentence a line, words split at white space (read as every data
  file is, ``corpora.labelled.numbered_lines``: not UTF-8, unreadable or empty is one message naming the line),
  named by its stem and content hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from corpora.format_errors import DataFormatError
from corpora.labelled import numbered_lines
from corpora.semcor import load_semcor
from probes.errors import ProbeInputError, no_file


def semcor_sentences(limit: int | None) -> tuple[str, list[list[str]]]:
    """(dataset name, words of SemCor's first ``limit`` sentences)."""
    sentences, _ = load_semcor()
    sentences = sentences[:limit] if limit is not None else sentences
    words = [[p for tok in s.tokens for p in tok.pieces] for s in sentences]
    return (f"semcor-first{limit}" if limit is not None else "semcor"), [w for w in words if w]


def corpus_sentences(path: str | Path, limit: int | None) -> tuple[str, list[list[str]]]:
    """(dataset name, sentences) of a UTF-8 text file, one sentence a line (read as every data file is:
    ``corpora.labelled.numbered_lines``), the first ``limit``; ProbeInputError for a bad file. The name ends in
    ``-firstN`` only when the file has more than N sentences."""
    path = Path(path)
    if not path.exists():  # a pipe (<(zcat corpus.gz)) exists without being a regular file
        raise no_file("--corpus", path)
    try:
        lines = [line for _, line in numbered_lines(path)]  # read once: a pipe cannot be read again
    except DataFormatError as exc:  # names the line: not UTF-8, unreadable, empty
        raise ProbeInputError(f"--corpus {exc}") from None
    sentences = [line.split() for line in lines if line.strip()]
    if not sentences:
        raise ProbeInputError(f"--corpus {path}: no sentences (one sentence a line, words split at spaces).")
    sliced = limit is not None and limit < len(sentences)
    # the text's hash with its line ends as "\n": a file's earlier runs keep their name whatever its line ends
    digest = hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()[:8]
    return f"{path.stem}-{digest}" + (f"-first{limit}" if sliced else ""), sentences[:limit]
