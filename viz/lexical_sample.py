"""An uploaded lexical-sample TSV as the occurrence source of the Polysemy explorer and Embedding space.

SemCor gives those pages occurrences of a lemma with WordNet senses (``viz.polysemy.semcor_occurrences``).
A user's lexical sample (``sentence<TAB>target word index<TAB>label[<TAB>lemma]``, the format of
``corpora.lexical_sample``) gives the same ``Occurrence`` objects, coloured by the file's labels:

    from viz.lexical_sample import LexicalSampleSource

    source = LexicalSampleSource.from_upload(uploaded.getvalue(), uploaded.name, max_mb=10)  # the app's limit
    source.words()                          # [("bank", 120), ("play", 48), ...] targets, most frequent first
    occs, total = source.occurrences("bank", cap=150, seed=0)    # like semcor_occurrences(...)
    X = occurrence_vectors(embed_fn, occs)                          # unchanged: (layers, len(occs), dim)
    layer_agreement(X, [o.group for o in occs])                     # groups are the file's labels
    source.summary()                        # {"occurrences", "targets", "labels", "sentences"} for the page

An ``Occurrence`` from a file has ``label`` set (its ``group``, what points are coloured by), ``keys``
too when the label is a WordNet sense key (so the page can show its gloss), and ``source`` =
``"<file> line N"``. Targets are matched case-insensitively on the lemma column (default: the target
word lower-cased). Nothing here imports streamlit; the page caches ``from_upload`` by the bytes.
"""

from __future__ import annotations

import io
import random
from collections import Counter
from dataclasses import dataclass

from corpora.errors import RequestError
from corpora.lexical_sample import LexicalItem, read_lexical_sample
from viz.polysemy import Occurrence


class UploadTooLarge(RequestError):
    """An upload over the app's limit (``app_pages.common.MAX_UPLOAD_MB``, passed as ``max_mb``)."""


def _is_sense_key(label: str) -> bool:
    return "%" in label and ":" in label.split("%", 1)[1]


def to_occurrence(item: LexicalItem, name: str) -> Occurrence:
    keys = (item.label,) if _is_sense_key(item.label) else ()
    return Occurrence(
        item.words, item.index, item.index + 1, keys=keys, label=item.label, source=f"{name} line {item.line}"
    )


@dataclass(frozen=True)
class LexicalSampleSource:
    """The occurrences of an uploaded lexical sample, indexed by target (lemma)."""

    name: str
    items: tuple[LexicalItem, ...]

    @classmethod
    def from_upload(cls, data: bytes, name: str, max_mb: float) -> LexicalSampleSource:
        """Parse uploaded bytes; ``DataFormatError`` (``name:line: …``) when malformed, UploadTooLarge when big."""
        if len(data) > max_mb * 2**20:
            raise UploadTooLarge(f"{name} is {len(data) / 2**20:.1f} MB; the limit is {max_mb:g} MB.")
        return cls(name, tuple(read_lexical_sample(io.BytesIO(data), name)))

    def words(self) -> list[tuple[str, int]]:
        """Targets (lemmas) with their number of occurrences, most frequent first (ties alphabetical)."""
        counts = Counter(it.lemma.lower() for it in self.items)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def occurrences(self, word: str, cap: int = 300, seed: int = 0) -> tuple[list[Occurrence], int]:
        """Occurrences of target ``word``, a seeded sample of at most ``cap`` in file order; and the total."""
        word = word.strip().lower()
        hits = [it for it in self.items if it.lemma.lower() == word]
        total = len(hits)
        if total > cap:
            keep = set(random.Random(seed).sample(range(total), cap))
            hits = [it for i, it in enumerate(hits) if i in keep]
        return [to_occurrence(it, self.name) for it in hits], total

    def all_occurrences(self, cap: int = 2000, seed: int = 0) -> tuple[list[Occurrence], int]:
        """Every occurrence (all targets; for the Embedding space), sampled like ``occurrences``."""
        items = list(self.items)
        if len(items) > cap:
            keep = set(random.Random(seed).sample(range(len(items)), cap))
            items = [it for i, it in enumerate(items) if i in keep]
        return [to_occurrence(it, self.name) for it in items], len(self.items)

    def summary(self) -> dict[str, int]:
        """What was parsed, for the page to show before embedding anything."""
        return {
            "occurrences": len(self.items),
            "targets": len({it.lemma.lower() for it in self.items}),
            "labels": len({it.label for it in self.items}),
            "sentences": len({it.words for it in self.items}),
        }

    def sample(self, n: int = 5) -> list[dict[str, str]]:
        """The first ``n`` occurrences as rows (line, target, label, context) for a preview table."""
        return [
            {
                "line": str(it.line),
                "target": it.target,
                "label": it.label,
                "context": to_occurrence(it, self.name).context(),
            }
            for it in self.items[:n]
        ]
