"""Published numbers of Peters et al. (2018), "Deep contextualized word representations", NAACL,
and of the probing papers whose checks the lab runs (control tasks, MDL).

Peters et al.: transcribed from the paper's text (arXiv:1802.05365v2; Tables 2, 3, 5, 6) and checked
against a full-text copy of the paper; ``reproduce`` prints them beside our measurements. A value
the paper does not give is ``None`` (shown as "n/a"). ``RIGOR_PUBLISHED`` holds only numbers we could
read in a source (named per entry); a finding we could not find as a number is quoted as text.
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


#: Control tasks and MDL. Sources: Hewitt & Liang (2019), "Designing and Interpreting Probes with
#: Control Tasks", EMNLP (arXiv:1909.03368) — its abstract; Voita & Titov (2020), "Information-Theoretic
#: Probing with Minimum Description Length", EMNLP (arXiv:2003.12298) — the output of the authors'
#: evaluation notebook (github.com/lena-voita/description-length-probing,
#: control_tasks/mdl_eval_notebooks/Eval_MDL_online_code.ipynb), not a table of the paper.
#: Entries: (source, setting, what, value or None, how it differs from our runs).
HEWITT_LIANG = "Hewitt & Liang 2019 (arXiv:1909.03368, abstract)"
VOITA_TITOV = "Voita & Titov 2020, authors' repo notebook Eval_MDL_online_code.ipynb"
RIGOR_PUBLISHED: tuple[tuple[str, str, str, float | None, str], ...] = (
    (HEWITT_LIANG, "ELMo layers 1 vs 2, PTB POS", "finding: layer 1 slightly more accurate, layer 2 "
     "substantially more selective", None, "their tables' numbers could not be read from a stored copy; "
     "only the abstract's finding is given"),
    (HEWITT_LIANG, "ELMo, PTB POS, linear vs MLP probes", "finding: popular (MLP) probes are not selective; "
     "dropout does not improve MLP selectivity, other regularisation does", None, "as above"),
    (VOITA_TITOV, "ELMo layer 1, PTB POS (45 tags), MLP-2 probe", "accuracy (%)", 97.48,
     "their PTB WSJ train/test and the original ELMo; ours: CoNLL-2000 (WSJ 15–18 / 20), our models, "
     "a linear probe by default"),
    (VOITA_TITOV, "ELMo layer 1, PTB POS (45 tags), MLP-2 probe", "online codelength (kbits, 1 kbit = 1,024 bits)",
     96.02, "as above; codelength grows with the training set (theirs up to 40,000 sentences, ours 8,936)"),
    (VOITA_TITOV, "ELMo layer 1, PTB POS (45 tags), MLP-2 probe", "compression (uniform / online)", 53.06,
     "as above; compression compares across data sizes only roughly"),
)


def fmt(value: float | None, digits: int = 1) -> str:
    """A table cell: the number, or "n/a" when the paper gives none."""
    return "n/a" if value is None else f"{value:.{digits}f}"
