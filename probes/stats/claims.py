"""The paper's claims, tested on our results per model (paired tests at p < 0.05).

Peters et al. (2018) read three orderings off their tables; each becomes a paired test between two
rows of the same model on the same test instances (``probes.stats.comparisons``):

- Table 5, WSD: the top biLM layer is better than the first (69.0 vs 67.4 F1);
- Table 6, POS: the first layer is better than the top (97.3 vs 96.8);
- Table 2, λ: all layers with λ=0.001 ≥ all layers with λ=1 ≥ the last layer only (here on
  CoNLL-2000 POS accuracy, whose outcomes are per token).

"First" is the first contextual layer (layer 1; the paper's "first layer" is the first biLSTM's
output, not the character CNN) and "top" the last; a model needs three numbered layers (0, 1, top).
WSD is read on ALL without SemEval-07 (the paper's ALL column). A verdict says *supported* when the
difference has the claimed sign and p < 0.05, *contradicted* when it has the opposite sign and
p < 0.05, and *not significant* otherwise — "≥" is never shown by a non-significant difference.
Results saved before per-instance outcomes were kept say so (re-run them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from probes.results import ProbeResult
from probes.stats.comparisons import Side, compare, outcome_table

ALPHA = 0.05
COLUMNS = ["model", "claim", "A", "B", "A − B (points)", "95% interval", "p", "verdict"]


@dataclass(frozen=True)
class Claim:
    """A claimed ordering A > B between two rows of one probe's results (layers "first"/"top" or labels)."""

    probe: str
    text: str
    dataset: str
    a: str
    b: str


CLAIMS = (
    Claim("wsd", "WSD: top layer better than the first (Table 5)", "ALL-noSE07", "top", "first"),
    Claim("pos", "POS: first layer better than the top (Table 6)", "conll2000-test", "first", "top"),
    Claim("mix", "POS: all layers λ=0.001 ≥ all layers λ=1 (Table 2)", "conll2000-test:pos", "all λ=0.001", "all λ=1"),
    Claim("mix", "POS: all layers λ=1 ≥ last layer only (Table 2)", "conll2000-test:pos", "all λ=1", "last"),
)


def verdict(diff: float, p: float, alpha: float = ALPHA) -> str:
    if p < alpha:
        return "supported" if diff > 0 else "contradicted"
    return "not significant"


def _resolve(layer: str, numbered: list[str]) -> str | None:
    if layer == "first":
        return numbered[1] if len(numbered) >= 3 else None
    if layer == "top":
        return numbered[-1] if len(numbered) >= 3 else None
    return layer


def claim_rows(results: Sequence[ProbeResult], claim: Claim, models: Sequence[str] | None = None) -> list[dict]:
    """One row per model that has the claim's two rows (models with too few layers are left out)."""
    outcomes = outcome_table(results, claim.probe, claim.dataset)
    measured: dict[str, set[str]] = {}
    for res in results:
        if res.probe == claim.probe and (models is None or res.model in models):
            measured.setdefault(res.model, set()).update(
                str(r["layer"]) for r in res.rows if r["dataset"] == claim.dataset
            )
    rows = []
    for model, layers in sorted(measured.items()):
        numbered = sorted((layer for layer in layers if layer.isdigit()), key=int)
        a, b = _resolve(claim.a, numbered), _resolve(claim.b, numbered)
        if a is None or b is None or a not in layers or b not in layers:
            continue
        sides: tuple[Side, Side] = ((model, a), (model, b))
        row = {
            "model": model,
            "claim": claim.text,
            "A": f"layer {a}" if a.isdigit() else a,
            "B": f"layer {b}" if b.isdigit() else b,
        }
        if any(s not in outcomes for s in sides) or len(outcomes[sides[0]]) != len(outcomes[sides[1]]):
            rows.append(
                {
                    **row,
                    "A − B (points)": None,
                    "95% interval": "n/a",
                    "p": None,
                    "verdict": "n/a: no per-instance outcomes (result saved before intervals; re-run)",
                }
            )
            continue
        t = compare(outcomes, [sides]).iloc[0]
        rows.append(
            {
                **row,
                "A − B (points)": float(t["diff"]),
                "95% interval": f"[{t['lo']:.2f}, {t['hi']:.2f}]",
                "p": _p_text(float(t["p"])),
                "verdict": verdict(float(t["diff"]), float(t["p"])),
            }
        )
    return rows


def _p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def claims_table(results: Sequence[ProbeResult], models: Sequence[str] | None = None) -> pd.DataFrame:
    """Every claim × model that has the rows (empty frame with ``COLUMNS`` when none)."""
    rows = [r for claim in CLAIMS for r in claim_rows(results, claim, models)]
    return pd.DataFrame(rows, columns=COLUMNS)
