"""The WSD probe's data: SemCor's sense-tagged tokens (training) and the framework's ALL (evaluation).

Slices take the first N sentences (of SemCor; of each evaluation set). The SemCor view that the
probe reads — a piece layout restricted to the tagged tokens and their sense assignments — is
cached on disk under SemCor's fingerprint, because building it walks 838k tokens in Python (~4 s).
"""

from __future__ import annotations

import numpy as np

from corpora.cache import cached
from corpora.semcor import load_semcor, semcor_fingerprint
from corpora.types import SemcorSentence, WsdInstance, WsdSentence
from corpora.wsd_eval import load_wsd_dataset
from probes.errors import ProbeInputError
from probes.tasks.wsd.estimator import SenseAssignments
from probes.tasks.wsd.layout import PieceLayout, build_layout

#: Bump when ``semcor_view``'s output changes.
SEMCOR_VIEW_VERSION = 1


def semcor_slice(limit: int | None) -> tuple[list[SemcorSentence], list[list[int]]]:
    """SemCor sentences with at least one sense-tagged token (of the first ``limit``), and those tokens."""
    sentences, _ = load_semcor()
    if limit is not None:
        sentences = sentences[:limit]
    selected = [[t for t, tok in enumerate(s.tokens) if tok.sense_keys] for s in sentences]
    keep = [i for i, sel in enumerate(selected) if sel]
    return [sentences[i] for i in keep], [selected[i] for i in keep]


def semcor_view(limit: int | None) -> tuple[PieceLayout, np.ndarray, SenseAssignments, int]:
    """SemCor as the WSD probe reads it: (layout restricted to the tagged tokens, the piece rows to
    keep, their sense assignments, number of sentences)."""

    def build():
        sentences, selected = semcor_slice(limit)
        if not sentences:
            raise ProbeInputError("No sense-tagged SemCor tokens in this slice.")
        layout = build_layout([[tok.pieces for tok in s.tokens] for s in sentences], selected)
        keys = SenseAssignments.from_keys([s.tokens[t].sense_keys for s, sel in zip(sentences, selected) for t in sel])
        keep, layout = layout.restrict()
        return layout, keep, keys, len(sentences)

    return cached(
        "wsd-semcor-view",
        SEMCOR_VIEW_VERSION,
        {"semcor": semcor_fingerprint(), "limit": limit},
        build,
        types=(PieceLayout, SenseAssignments),
    )


def eval_slice(limit: int | None) -> list[WsdSentence]:
    """Sentences of ALL (the concatenation of the five sets) with instances, first ``limit`` of each set."""
    data = load_wsd_dataset("ALL")
    if limit is None:
        return [s for s in data.sentences if s.instances]
    per_set: dict[str, int] = {}
    out = []
    for s in data.sentences:
        name = s.id.split(".")[0]
        if s.instances and per_set.get(name, 0) < limit:
            per_set[name] = per_set.get(name, 0) + 1
            out.append(s)
    return out


def semcor_as_wsd(limit: int | None) -> list[WsdSentence]:
    """SemCor's sentences with sense-tagged tokens (of the first ``limit``) as framework sentences:
    a multiword token's pieces joined by spaces (the framework's "prime minister"), every tagged token
    an instance with all its keys. Written out with ``corpora.wsd_eval.write_wsd_files`` and given
    as ``--train``, it trains exactly the built-in probe's sense centroids."""
    sentences, selected = semcor_slice(limit)
    out = []
    for i, (s, sel) in enumerate(zip(sentences, selected)):
        sid = f"semcor.s{i:06d}"
        instances = tuple(
            WsdInstance(
                id=f"{sid}.t{t:03d}",
                index=t,
                lemma=s.tokens[t].lemma or s.tokens[t].text,
                pos=s.tokens[t].pos or "X",
                gold_keys=s.tokens[t].sense_keys,
            )
            for t in sel
        )
        out.append(
            WsdSentence(
                id=sid,
                words=tuple(" ".join(tok.pieces) for tok in s.tokens),
                lemmas=tuple(tok.lemma or tok.text for tok in s.tokens),
                pos=tuple(tok.pos or "X" for tok in s.tokens),
                instances=instances,
            )
        )
    return out
