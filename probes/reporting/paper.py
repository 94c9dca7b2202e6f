"""Published numbers of Peters et al. (2018), "Deep contextualized word representations", NAACL,
and of the probing papers whose checks the lab runs (control tasks, MDL, the structural probe).

Peters et al.: transcribed from the paper's text (arXiv:1802.05365v2; Tables 2, 5, 6) and checked
against a full-text copy of the paper; ``reproduce`` prints them beside our measurements. A value
the paper does not give is ``None`` (shown as "n/a"). ``RIGOR_PUBLISHED`` holds only numbers transcribed
from the probing papers' tables (named per entry) on 2026-11-24 and not re-checked against the printed tables
since (the stored material reaches only the papers' openings); nothing is derived from them. Hewitt &
Manning's ``STRUCTURAL_TABLE1`` is not compared with its printed table either (its comment). Voita & Titov's
kbits are not in our unit (their code counts blocks 2+ in nats and the first block in bits; ours are bits
throughout, ``probes.estimators.mdl``): compare orderings and ratios with ours, not values.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.random_init import random_name

SOURCE = "Peters et al. (2018), Deep contextualized word representations, NAACL-HLT (arXiv:1802.05365v2)"

#: Table 5 — all-words fine-grained WSD F1 on the framework's four test sets (SE2, SE3, SE13, SE15): its ALL set
#: without SemEval-07 (the framework's ALL holds SE07 too; ours is "ALL w/o SE07").
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


#: Control tasks and MDL, per layer of the original ELMo on PTB POS tagging: transcribed on 2026-11-24 from
#: Hewitt & Liang 2019, Tables 1–2 and Voita & Titov 2020, Table 1, and not re-checked against the printed
#: tables since (the stored material reaches only the papers' openings). They are internally consistent
#: (V&T: codelength × compression ≈ 5,100 kbits in all six cells; H&L: selectivity = accuracy − control in
#: both rows that give both), and V&T's layer 1 (96.02 kbits, compression 53.06, 97.48 %) appears in their
#: evaluation notebook. V&T's kbits mix nats (blocks 2+) and bits (first block), ours are bits: compare
#: orderings and ratios, not values. ``None``: the table gives no such number (we do not derive one).
#: Hewitt & Liang's accuracies are on the PTB development set, Voita & Titov's on the test set; both use the
#: 45 PTB tags and sample control labels from the empirical tag distribution.
HEWITT_LIANG = "Hewitt & Liang 2019 (arXiv:1909.03368), Table 2; layer 1 control acc.: Table 1"
VOITA_TITOV = "Voita & Titov 2020 (arXiv:2003.12298), Table 1, online code"


@dataclass(frozen=True)
class PublishedProbe:
    """One published layer: accuracies in %, codelengths in kbits as the paper prints them (V&T's: nats and
    bits over 1,024, not our bits over 1,024; see above), compression ×."""

    source: str
    representation: str
    probe: str
    our_layer: str | None  # the layer of ``our_model`` it is compared with (None: no counterpart)
    accuracy: float
    control_accuracy: float | None = None
    selectivity: float | None = None
    codelength_kbits: float | None = None
    control_codelength_kbits: float | None = None
    compression: float | None = None
    control_compression: float | None = None
    our_model: str = "elmo-small"  # our closest model (Proj0's: our ELMo with random weights)


PROJ0 = "Proj0 (untrained BiLSTM over ELMo's char-CNN)"
RANDOM_ELMO = random_name("elmo-small", 0)  # ours is random all through, its char-CNN too (Proj0's is trained)
RIGOR_PUBLISHED: tuple[PublishedProbe, ...] = (
    PublishedProbe(HEWITT_LIANG, PROJ0, "linear", "2", 96.3, selectivity=20.6, our_model=RANDOM_ELMO),
    PublishedProbe(HEWITT_LIANG, "ELMo layer 1", "linear", "1", 97.2, 71.2, 26.0),
    PublishedProbe(HEWITT_LIANG, "ELMo layer 2", "linear", "2", 96.6, selectivity=31.4),
    PublishedProbe(HEWITT_LIANG, PROJ0, "MLP-1", "2", 97.1, selectivity=1.6, our_model=RANDOM_ELMO),
    PublishedProbe(HEWITT_LIANG, "ELMo layer 1", "MLP-1", "1", 97.3, 92.8, 4.5),
    PublishedProbe(HEWITT_LIANG, "ELMo layer 2", "MLP-1", "2", 97.0, selectivity=8.8),
    PublishedProbe(
        VOITA_TITOV, "ELMo layer 0 (char-CNN)", "MLP-2 (h=1000)", "0", 93.7, 96.3, None, 173, 302, 29.5, 16.87
    ),
    PublishedProbe(VOITA_TITOV, "ELMo layer 1", "MLP-2 (h=1000)", "1", 97.5, 91.9, None, 96, 515, 53.06, 9.89),
    PublishedProbe(VOITA_TITOV, "ELMo layer 2", "MLP-2 (h=1000)", "2", 97.3, 89.4, None, 115, 717, 44.3, 7.11),
)
#: How their setting differs from ours (printed under the table).
RIGOR_DIFFERENCES = (
    "Theirs: the original ELMo (2 × 4,096-unit LSTMs, 1B Word Benchmark), PTB WSJ with the standard parsing "
    "splits (≈ 40k training sentences), 1,000-wide probes. Ours: elmo-small (512-unit LSTMs: ≈ 1/37 of the "
    "biLM's parameters; 4.7M training tokens), CoNLL-2000 (WSJ 15–18, 8,936 sentences / WSJ 20), a linear probe "
    "unless the probe column says otherwise. Proj0's counterpart, our ELMo with random weights, is random in its "
    "char-CNN too (Proj0 keeps ELMo's trained one). Codelengths grow with the number of tokens coded, and Voita & "
    "Titov's kbits are not in our unit (blocks 2+ in nats, the first block in bits; ours are bits throughout), so "
    "compare the ordering of layers and the task-vs-control gap, not absolute kbits or compression; Hewitt & Liang "
    "report the development set."
)


#: Hewitt & Manning (2019), Table 1 — structural probes on the PTB WSJ test set (Stanford Dependencies):
#: the distance probe's UUAS (%) and DSpr., the depth probe's root accuracy (%) and NSpr., per representation.
#: Transcribed from two independent summaries of the paper stored in the lab's reference corpus (they agree
#: on all 32 values; one states it is cropped from the paper's Table 1, p. 4131); not yet compared with the
#: paper's PDF here, so docs/results/ud_ewt/structural.md says so beside them.
STRUCTURAL_TABLE1: dict[str, tuple[float, float, float, float]] = {
    "LINEAR (left-to-right chain)": (48.9, 0.58, 2.9, 0.27),
    "ELMO0 (character CNN, no context)": (26.8, 0.44, 54.3, 0.56),
    "DECAY0 (ELMo0, exponentially weighted neighbours)": (51.7, 0.61, 54.3, 0.56),
    "PROJ0 (random BiLSTM over ELMo0)": (59.8, 0.73, 64.4, 0.75),
    "ELMO1": (77.0, 0.83, 86.5, 0.87),
    "BERTBASE7": (79.8, 0.85, 88.0, 0.87),
    "BERTLARGE15": (82.5, 0.86, 89.4, 0.88),
    "BERTLARGE16": (81.7, 0.87, 90.1, 0.89),
}


def fmt(value: float | None, digits: int | None = 1) -> str:
    """A table cell: the number to ``digits`` decimals, or (None) as its source gives it ("29.5", "173", "53.06";
    two decimals everywhere printed "97.60", a value no source gives), or "n/a" when the paper gives none."""
    if value is None:
        return "n/a"
    return f"{value:g}" if digits is None else f"{value:.{digits}f}"
