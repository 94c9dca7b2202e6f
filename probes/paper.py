"""Published numbers of Peters et al. (2018), "Deep contextualized word representations", NAACL.

Transcribed from the paper's text (arXiv:1802.05365v2; Tables 2, 3, 5, 6) and checked against a
full-text copy of the paper; ``reproduce`` prints them beside our measurements. A value the
paper does not give is ``None`` (shown as "n/a").
"""
from __future__ import annotations

SOURCE = "Peters et al. (2018), Deep contextualized word representations, NAACL-HLT (arXiv:1802.05365v2)"

#: Table 5 — all-words fine-grained WSD F1 on the framework's ALL set (SE2, SE3, SE13, SE15).
WSD_TABLE5: dict[str, float] = {
    "WordNet 1st Sense Baseline": 65.9,
    "Raganato et al. (2017a)": 69.9,
    "Iacobacci et al. (2016)": 70.1,
    "CoVe, First Layer": 59.4,
    "CoVe, Second Layer": 64.7,
    "biLM, First layer": 67.4,
    "biLM, Second layer": 69.0,
}

#: Table 6 — test-set POS tagging accuracy on the PTB (WSJ), linear classifier on frozen layers.
POS_TABLE6: dict[str, float] = {
    "Collobert et al. (2011)": 97.3,
    "Ma and Hovy (2016)": 97.6,
    "Ling et al. (2015)": 97.8,
    "CoVe, First Layer": 93.3,
    "CoVe, Second Layer": 92.8,
    "biLM, First Layer": 97.3,
    "biLM, Second Layer": 96.8,
}

#: Table 2 — development-set results: baseline, last biLM layer only, all layers with λ=1 / λ=0.001.
LAMBDA_COLUMNS = ("Baseline", "Last Only", "All layers λ=1", "All layers λ=0.001")
LAMBDA_TABLE2: dict[str, tuple[float | None, ...]] = {
    "SQuAD (F1)": (80.8, 84.7, 85.0, 85.2),
    "SNLI (acc.)": (88.1, 89.1, 89.3, 89.5),
    "SRL (F1)": (81.6, 84.1, 84.6, 84.8),
}

#: Table 3 — where ELMo is included in the task model (development set).
WHERE_COLUMNS = ("Input Only", "Input & Output", "Output Only")
WHERE_TABLE3: dict[str, tuple[float, float, float]] = {
    "SQuAD": (85.1, 85.6, 84.8),
    "SNLI": (88.9, 89.5, 88.7),
    "SRL": (84.7, 84.3, 80.9),
}


def fmt(value: float | None, digits: int = 1) -> str:
    """A table cell: the number, or "n/a" when the paper gives none."""
    return "n/a" if value is None else f"{value:.{digits}f}"
