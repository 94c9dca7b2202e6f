"""1-nearest-neighbour word sense disambiguation of Peters et al. (2018, section 5.3).

- ``scoring``:   the evaluation framework's P/R/F1 and key files (Raganato et al. 2017).
- ``estimator``: ``NearestSenseWSD``, sense centroids and nearest-sense prediction (fit/predict/score).
- ``layout``:    multiword tokens -> the pieces fed to the model, and pooling back.
- ``data``:      the SemCor and ALL slices the probe reads.
- ``sources``:   any training / evaluation set as a ``WsdSplit`` (built-in, framework XML + keys, TSV).
- ``inventory``: WordNet or training-label sense inventory; first-sense and most-frequent baselines.
- ``runner``:    the one per-layer loop (held-out or k-fold) shared by built-in data and files.
- ``rows``:      F1/P/R rows with 95% intervals and kept per-instance outcomes.
- ``tables``:    the built-in table, F1 per POS, one table per user dataset.
- ``probe``:     ``run_wsd`` end to end, the baselines, the registry entry.
"""

from probes.tasks.wsd.estimator import NearestSenseWSD, SenseAssignments, first_sense_predictions
from probes.tasks.wsd.layout import PieceLayout, build_layout, eval_word_pieces
from probes.tasks.wsd.probe import run_first_sense, run_wsd
from probes.tasks.wsd.scoring import EVAL_LABELS, EVAL_SETS, PAPER_ALL, score, write_key_file

__all__ = [
    "NearestSenseWSD",
    "SenseAssignments",
    "first_sense_predictions",
    "PieceLayout",
    "build_layout",
    "eval_word_pieces",
    "run_first_sense",
    "run_wsd",
    "EVAL_LABELS",
    "EVAL_SETS",
    "PAPER_ALL",
    "score",
    "write_key_file",
]
