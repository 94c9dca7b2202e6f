"""Edge-probing JSON lines (Tenney et al., 2019) as a stream of sentences with span targets.

One JSON object per line::

    {"text": "The cat sat on the mat .",
     "targets": [{"span1": [0, 2], "label": "NP"},
                 {"span1": [1, 2], "span2": [2, 3], "label": "nsubj"}]}

``text`` is split on whitespace into words (the edge-probing data is pre-tokenised, words joined by
single spaces); ``span1``/``span2`` are ``[start, end)`` word offsets, end exclusive; ``label`` is a
string (a one-element list, as some of the released files write it, is taken as that string).
Other keys (``info``, ``source``…) are ignored. Blank lines are skipped.

A span outside the text — past its last word, ending before it starts, or empty — is an error,
not a silently dropped target: a span crossing the end of the sentence usually means the offsets
were written for another tokenisation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora.format_errors import DataFormatError
from corpora.labelled import SpanSentence, SpanTarget, numbered_lines


def _span(path: str | Path, number: int, value: Any, name: str, length: int) -> tuple[int, int]:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )
    if not ok:
        raise DataFormatError(
            path, number, f"{name} must be [start, end] word offsets (two integers), not {json.dumps(value)}."
        )
    start, end = value
    if not 0 <= start < end <= length:
        raise DataFormatError(
            path,
            number,
            f"{name} [{start}, {end}) is out of range for a text of {length} "
            f"word(s): spans are [start, end) with 0 <= start < end <= {length}.",
        )
    return start, end


def _label(path: str | Path, number: int, value: Any) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, list):
        raise DataFormatError(
            path,
            number,
            f"label {json.dumps(value)} has {len(value)} labels; the span probe takes one label per target.",
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(path, number, f"label must be a non-empty string, not {json.dumps(value)}.")
    return value


def parse_record(path: str | Path, number: int, record: Any) -> SpanSentence:
    """One decoded line as a SpanSentence; DataFormatError for a missing key or a bad span or label."""
    if not isinstance(record, dict):
        raise DataFormatError(path, number, "each line must be a JSON object with 'text' and 'targets'.")
    text, targets = record.get("text"), record.get("targets")
    if not isinstance(text, str) or not text.split():
        raise DataFormatError(path, number, "'text' must be a non-empty string of space-separated words.")
    if not isinstance(targets, list):
        raise DataFormatError(path, number, '\'targets\' must be a list of {"span1", ["span2"], "label"}.')
    words = tuple(text.split())
    out = []
    for t in targets:
        if not isinstance(t, dict) or "span1" not in t or "label" not in t:
            raise DataFormatError(path, number, "each target needs 'span1' and 'label'.")
        span2 = _span(path, number, t["span2"], "span2", len(words)) if t.get("span2") is not None else None
        out.append(
            SpanTarget(_span(path, number, t["span1"], "span1", len(words)), _label(path, number, t["label"]), span2)
        )
    return SpanSentence(words, tuple(out), number)


def iter_edge_probing(path: str | Path) -> Iterator[SpanSentence]:
    """The lines of an edge-probing file, read as a stream.

    DataFormatError (file and line) for a line that is not JSON, a record without ``text`` or
    ``targets``, a span out of range, a missing or multi-valued label; also for a file without
    targets, and for one that mixes single spans and span pairs.
    """
    count = 0
    pairs: tuple[bool, int] | None = None
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = " Each line holds one JSON object (JSON Lines), not a pretty-printed file." if number == 1 else ""
            raise DataFormatError(path, number, f"not JSON ({exc.msg}, column {exc.colno}).{hint}") from None
        if "\\u" in line:  # an escape may decode to a lone surrogate: not text (issue 27, fault 8)
            try:
                json.dumps(record, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = f"U+{ord(exc.object[exc.start]):04X}"
                raise DataFormatError(path, number, f"lone surrogate {bad} (a \\u escape): not Unicode text.") from None
        sent = parse_record(path, number, record)
        for t in sent.targets:
            if pairs is None:
                pairs = (t.span2 is not None, number)
            elif pairs[0] != (t.span2 is not None):
                kind = lambda pair: "a span pair (span2)" if pair else "a single span"
                raise DataFormatError(
                    path,
                    number,
                    f"this target is {kind(not pairs[0])} but the first one "
                    f"(line {pairs[1]}) is {kind(pairs[0])}: a file holds either "
                    "single spans or span pairs.",
                )
        count += len(sent.targets)
        yield sent
    if count == 0:
        raise DataFormatError(path, None, "no targets: the file has no line with a non-empty 'targets' list.")
