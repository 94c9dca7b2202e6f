"""Scoring of the unified WSD evaluation framework (Raganato et al. 2017) and its ``Scorer.java``.

P = correct/answered, R = correct/total, F1; an instance with several gold keys is correct when the
answer is any of them. ``write_key_file`` writes predictions in the framework's key format; ``KeyFiles``
writes a run's, and a full disk costs those files, not the run's results.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from corpora.temps import write_atomically
from probes.errors import ProbeInputError, writable_dir

#: The framework's five test sets, in the paper's order, then their concatenation.
EVAL_SETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015", "ALL")
EVAL_LABELS = {
    "senseval2": "SE2",
    "senseval3": "SE3",
    "semeval2007": "SE07",
    "semeval2013": "SE13",
    "semeval2015": "SE15",
    "ALL": "ALL",
    "ALL-noSE07": "ALL w/o SE07",
}
#: Peters et al. (2018, Table 5) report the four test sets of Raganato et al. (2017a) together:
#: ALL without SemEval-07 (their development set). WordNet's first sense scores 65.9 there.
PAPER_ALL = "ALL-noSE07"
#: The framework's development set: where a layer is chosen without the test set, this set ranks the layers.
DEV_SET = "semeval2007"
#: The built-in set scored per part of speech: the paper's column, so that a layer chosen on :data:`DEV_SET` is
#: judged on instances it never saw (ALL holds SemEval-07's; its per-POS rows until 2026-12-06 did too).
BY_POS_SET = PAPER_ALL
UPOS = ("NOUN", "VERB", "ADJ", "ADV")


def set_groups(sets: Sequence[str]) -> dict[str, list[int]]:
    """Instance indices of each evaluation set, ALL and ALL w/o SE07, from each instance's set name (in
    :data:`EVAL_SETS` order, then :data:`PAPER_ALL`)."""
    return {
        name: [i for i, s in enumerate(sets) if name == "ALL" or s == name or (name == PAPER_ALL and s != DEV_SET)]
        for name in EVAL_SETS + (PAPER_ALL,)
    }


def score(predictions: Sequence[str | None], golds: Sequence[Sequence[str]]) -> dict:
    """Framework scoring of one answer (or None = no answer) per instance.

    Returns {"P", "R", "F1"} in percent plus counts n (instances), answered, correct.
    """
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold instances.")
    n = len(golds)
    answered = sum(p is not None for p in predictions)
    correct = sum(p is not None and p in set(g) for p, g in zip(predictions, golds))
    p = correct / answered if answered else 0.0
    r = correct / n if n else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"P": 100 * p, "R": 100 * r, "F1": 100 * f1, "n": n, "answered": answered, "correct": correct}


def key_dir(raw: str | Path) -> str:
    """``--keys DIR`` (the option's parse, so checked before any extraction): a directory the key files
    can be written to, created if needed (``writable_dir``)."""
    return str(writable_dir(raw, "--keys"))


def _write_keys(path: Path, ids: Sequence[str], predictions: Sequence[str | None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # whole or not at all: a key file cut mid-line would score a wrong F1 in Scorer.java, and say nothing
    write_atomically(path, "".join(f"{i} {p}\n" for i, p in zip(ids, predictions) if p is not None))


def write_key_file(path: Path, ids: Sequence[str], predictions: Sequence[str | None]) -> Path:
    """The framework's key format, one ``id key`` line per answered instance (input to Scorer.java)."""
    path = Path(path)
    try:
        _write_keys(path, ids, predictions)
    except OSError as exc:  # e.g. the disk filled up after key_dir checked the folder
        raise ProbeInputError(
            f"{path}: cannot write the key file ({exc.strerror or exc}); an older one there is as it was."
        ) from None
    return path


class KeyFiles:
    """One run's ``--keys DIR`` files (None: none asked for), kept as the run predicts them and written together
    when it is done (``commit``): a run stopped half way (Ctrl-C, a scheduler) had left one layer's file of the new
    run beside the others of an older run, with nothing to tell them apart. A file that cannot be written (a full
    disk) is remembered, not raised: the key files are a by-product, and the run's results must still be saved;
    ``commit`` says which files are missing, and that older ones of those names are not this run's."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = None if folder is None else Path(folder)
        self.pending: dict[str, tuple[Sequence[str], Sequence[str | None]]] = {}
        self.unwritten: list[str] = []
        self.reason = ""

    def write(self, name: str, ids: Sequence[str], predictions: Sequence[str | None]) -> None:
        if self.folder is not None:
            self.pending[name] = (list(ids), list(predictions))

    def commit(self) -> dict[str, str]:
        """Write every pending file (each whole or not at all); ``{"warning": …}`` for a result's extra when a file
        was not written, else ``{}``."""
        for name, (ids, predictions) in self.pending.items():
            try:
                _write_keys(self.folder / name, ids, predictions)
            except OSError as exc:  # e.g. the disk filled up after key_dir checked the folder
                self.unwritten.append(name)
                self.reason = f"cannot write the key files ({exc.strerror or exc})"
        self.pending = {}
        if not self.unwritten:
            return {}
        return {
            "warning": f"{self.folder}: {self.reason}: {', '.join(self.unwritten)} not written; any older file of "
            "such a name there is an earlier run's, not this one's. The run went on without them."
        }
