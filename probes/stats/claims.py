"""The paper's claims, tested per model: paired tests on the test set's unit, Holm-corrected.

Peters et al. (2018) read three orderings off their tables; each becomes a paired test between two
rows of the same model on the same test instances (``probes.stats.comparisons``):

- Table 5, WSD: the top biLM layer is better than the first (69.0 vs 67.4 F1);
- Table 6, POS: the first layer is better than the top (97.3 vs 96.8);
- Table 2's λ ordering (there on SQuAD, SNLI and SRL dev sets): all layers with λ=0.001 ≥ all layers
  with λ=1 ≥ the last layer only — tested here on CoNLL-2000 POS accuracy, not on Table 2's tasks.

Two orderings of the probing papers that followed are claims on rows rather than outcomes (``ROW_CLAIMS``),
decided without a p-value and outside the Holm family, so their verdicts say "(no test)" and never
"supported": Voita & Titov's (2020) MDL ordering (the first layer codes POS in fewer bits than the top) "holds"
only if it holds in every data order of the run (``probes.estimators.mdl.shorter_in_all_orders``; one order
claims nothing; with 3 orders two tied layers would still agree one time in four, so the rule has no 5% error
rate: the unit says "(few)"); the difference is in kbits and its interval the range over orders; Hewitt &
Liang's (2019) selectivity ordering (the top layer more selective than the first) "holds" only if the two layers'
95% intervals (over sentences and control draws) are disjoint — stricter than a paired test, which the rows
cannot give: their control outcomes are not kept per instance.

"First" is the first contextual layer (layer 1; the paper's "first layer" is the first biLSTM's
output, not the character CNN) and "top" the last; a model needs three numbered layers (0, 1, top).
WSD is read on ALL without SemEval-07 (the paper's ALL column).

The test resamples the test set's unit (WSD: 23 documents; POS: sentences), which the table states.
The claims table is one family of tests: every row reports its raw p and its Holm-adjusted p (over
all rows of the table), and the verdict reads the adjusted one: *supported* when the difference has
the claimed sign and adjusted p < 0.05, *contradicted* when it has the opposite sign and adjusted
p < 0.05, *not significant* otherwise — "≥" is never shown by a non-significant difference — and *at the
threshold* when Monte Carlo error of the p-values could turn the decision (``comparisons.mc_borderline``). ``seeds``
says how many training seeds the compared rows average (WSD's 1-NN probe trains nothing: "—").
Results saved before per-instance outcomes were kept say so (re-run them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from probes.estimators.mdl import shorter_in_all_orders
from probes.results import ProbeResult, row_dataset
from probes.stats.comparisons import ALPHA, AT_THRESHOLD, Side, compare, holm_decided, outcome_table
from probes.stats.units import interval_text, over_text

DIFF = "A − B (points; MDL: kbits)"
COLUMNS = ["model", "claim", "A", "B", DIFF, "95% interval", "unit", "p", "p (Holm)", "seeds", "verdict"]
FEW_ORDERS = 10  # data orders below which an MDL row's range is marked "few"


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
    Claim(
        "mix",
        "POS: all layers λ=0.001 ≥ all layers λ=1 (Table 2's ordering, there on SQuAD/SNLI/SRL)",
        "conll2000-test:pos",
        "all λ=0.001",
        "all λ=1",
    ),
    Claim(
        "mix",
        "POS: all layers λ=1 ≥ last layer only (Table 2's ordering, there on SQuAD/SNLI/SRL)",
        "conll2000-test:pos",
        "all λ=1",
        "last",
    ),
)


@dataclass(frozen=True)
class RowClaim:
    """A claimed ordering A > B (``lower``: A < B) of one metric's rows of two layers, decided from the rows."""

    probe: str
    text: str
    dataset: str
    metric: str
    a: str
    b: str
    lower: bool = False


ROW_CLAIMS = (
    RowClaim(
        "pos",
        "MDL: the first layer codes POS in fewer kbits than the top (Voita & Titov 2020, Table 1: ELMo 96 vs 115)",
        "conll2000-train",
        "codelength_kbits",
        "first",
        "top",
        lower=True,
    ),
    RowClaim(
        "pos",
        "Selectivity: the top layer is more selective than the first (Hewitt & Liang 2019, Table 2: ELMo 31.4 vs 26.0)",
        "conll2000-test",
        "selectivity",
        "top",
        "first",
    ),
)


def verdict(diff: float, p: float, alpha: float = ALPHA, borderline: bool = False) -> str:
    """A claim's verdict from its Holm-adjusted p; ``borderline`` (``mc_borderline``): other random draws could
    turn it."""
    if borderline:
        return f"{AT_THRESHOLD}: Holm p within Monte Carlo error of {alpha}"
    if p < alpha:
        return "supported" if diff > 0 else "contradicted"
    return "not significant"


def _resolve(layer: str, numbered: list[str]) -> str | None:
    if layer == "first":
        return numbered[1] if len(numbered) >= 3 else None
    if layer == "top":
        return numbered[-1] if len(numbered) >= 3 else None
    return layer


def _seeds(res: ProbeResult) -> str:
    """How many training seeds a result's rows average ("—": the probe trains nothing, e.g. 1-NN WSD)."""
    if "seeds" in res.params:
        return str(len(res.params["seeds"]))
    return "1" if "seed" in res.params else "—"


def claim_rows(results: Sequence[ProbeResult], claim: Claim, models: Sequence[str] | None = None) -> list[dict]:
    """One row per model that has the claim's two rows (models with too few layers are left out); raw p only
    (``claims_table`` adds the family's adjusted p and the verdict)."""
    outcomes = outcome_table(results, claim.probe, claim.dataset)
    measured: dict[str, set[str]] = {}
    seeds: dict[str, str] = {}
    for res in results:
        if res.probe == claim.probe and (models is None or res.model in models):
            layers = {str(r["layer"]) for r in res.rows if row_dataset(res, r) == claim.dataset}
            measured.setdefault(res.model, set()).update(layers)
            if layers:
                seeds[res.model] = _seeds(res)
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
            "seeds": seeds.get(model, "—"),
        }
        if any(s not in outcomes for s in sides) or len(outcomes[sides[0]]) != len(outcomes[sides[1]]):
            rows.append({**row, "verdict": "n/a: no per-instance outcomes (result saved before intervals; re-run)"})
            continue
        t = compare(outcomes, [sides]).iloc[0]
        rows.append(
            {
                **row,
                DIFF: float(t["diff"]),
                "95% interval": interval_text(t["lo"], t["hi"]),
                "unit": f"{t['clusters']} {t['unit']}s",
                "p": float(t["p"]),
                "p_se": float(t["p_se"]),
            }
        )
    return rows


def holm_family(rows: list[dict]) -> list[tuple[float, bool] | None]:
    """One family of tests: each row's Holm-adjusted p and whether Monte Carlo error could turn its decision
    (``mc_borderline``, from the rows' ``p_se``; None for a row without a raw ``p``); the adjusted p is written
    beside the raw one as ``p (Holm)``, both as text. The caller decides from the returned values."""
    tested = [i for i, r in enumerate(rows) if isinstance(r.get("p"), float)]
    raw = [rows[i]["p"] for i in tested]
    holm_p, borderline = holm_decided(raw, [rows[i].get("p_se", 0.0) for i in tested])
    adjusted: list[tuple[float, bool] | None] = [None] * len(rows)
    for i, p_adj, mc in zip(tested, holm_p, borderline):
        rows[i].update({"p": p_text(rows[i]["p"]), "p (Holm)": p_text(float(p_adj))})
        adjusted[i] = (float(p_adj), bool(mc))
    return adjusted


def p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def _newest_rows(results: Sequence[ProbeResult], claim: RowClaim) -> dict[tuple[str, str], dict]:
    """(model, layer) -> the claim's row of the newest result that has it (``results`` oldest first), with the
    result's seeds."""
    rows = {}
    for res in results:
        if res.probe == claim.probe:
            for r in res.rows:
                if row_dataset(res, r) == claim.dataset and r["metric"] == claim.metric:
                    rows[(res.model, str(r["layer"]))] = {**r, "seeds": _seeds(res)}
    return rows


def _order_verdict(a: dict, b: dict, lower: bool) -> tuple[str, str, str]:
    """MDL: (interval text, unit, verdict) from the two rows' per-order codelengths (the same data orders)."""
    a_kbits, b_kbits = (np.asarray(r.get("orders") or [r["value"]], float) for r in (a, b))
    diff, k = a_kbits - b_kbits, len(a_kbits)
    claimed, opposite = (a_kbits, b_kbits) if lower else (b_kbits, a_kbits)
    if k < 2:
        found = "n/a: one data order claims nothing (rerun with --mdl-orders 3)"
    elif shorter_in_all_orders(claimed, opposite):
        found = f"holds in all {k} orders (no test)"
    elif shorter_in_all_orders(opposite, claimed):
        found = f"reversed in all {k} orders (no test)"
    else:
        found = "orders disagree (no test)"
    # not a test: two tied layers would agree in all of 3 orders one time in 4
    few = " (few)" if 1 < k < FEW_ORDERS else ""
    return (
        f"[{diff.min():.2f}, {diff.max():.2f}] kbits (range over orders)",
        f"{k} data order{'s' * (k > 1)}{few}",
        found,
    )


def _interval_verdict(a: dict, b: dict, lower: bool) -> tuple[str, str, str]:
    """Selectivity: (the two intervals, unit, verdict): supported only when the intervals are disjoint."""
    if any(r.get("lo") is None for r in (a, b)):
        return "n/a", "—", "n/a: no interval (rerun)"
    above, below = (b, a) if lower else (a, b)
    found = (
        "holds: intervals disjoint (no test)"
        if above["lo"] > below["hi"]
        else "reversed: intervals disjoint (no test)"
        if above["hi"] < below["lo"]
        else "undecided: intervals overlap"
    )
    text = f"A {interval_text(a['lo'], a['hi'])}, B {interval_text(b['lo'], b['hi'])}"
    return text, f"{over_text(a.get('unit'), a.get('clusters'))}, {a.get('draws') or 1} control draws", found


def row_claim_rows(results: Sequence[ProbeResult], claim: RowClaim, models: Sequence[str] | None = None) -> list[dict]:
    """One row per model with the claim's two rows (three numbered layers at least), decided from the rows."""
    found = _newest_rows(results, claim)
    rows = []
    for model in sorted({m for m, _ in found if models is None or m in models}):
        numbered = sorted((layer for m, layer in found if m == model and layer.isdigit()), key=int)
        a, b = _resolve(claim.a, numbered), _resolve(claim.b, numbered)
        if a is None or b is None:
            continue
        ra, rb = found[(model, a)], found[(model, b)]
        decide = _order_verdict if claim.metric == "codelength_kbits" else _interval_verdict
        interval, unit, outcome = decide(ra, rb, claim.lower)
        rows.append(
            {
                "model": model,
                "claim": claim.text,
                "A": f"layer {a}",
                "B": f"layer {b}",
                DIFF: round(ra["value"] - rb["value"], 2),
                "95% interval": interval,
                "unit": unit,
                "p": "—",
                "p (Holm)": "—",
                "seeds": ra["seeds"],
                "verdict": outcome,
            }
        )
    return rows


def claims_table(results: Sequence[ProbeResult], models: Sequence[str] | None = None) -> pd.DataFrame:
    """Every claim × model that has the rows (empty frame with ``COLUMNS`` when none): the paired tests (one Holm
    family), then the row claims (``ROW_CLAIMS``, decided from the rows)."""
    rows = [r for claim in CLAIMS for r in claim_rows(results, claim, models)]
    for row, tested in zip(rows, holm_family(rows)):
        if tested is not None:
            p_adj, borderline = tested
            row["verdict"] = verdict(row[DIFF], p_adj, borderline=borderline)
    rows += [r for claim in ROW_CLAIMS for r in row_claim_rows(results, claim, models)]
    return pd.DataFrame(rows, columns=COLUMNS)
