"""Layer profiles: where in a model a probe's information sits, comparable across models of any depth.

    profile = layer_profile(load_results("docs/results/runs"), "pos", "conll2000-test:pos", "accuracy")
    # model, layer, layers, depth (= layer / last layer, 0 … 1), value
    centre_of_gravity([92.1, 95.0, 95.6, 95.2])   # Tenney et al. (2019) centre of gravity of score gains
    expected_layer([0.2, 0.3, 0.5])                # Σ ℓ·s(ℓ) of learned scalar-mix weights
    expected_layers(load_extras("docs/results/runs", "mix"))   # from the λ ablation's saved weights

**Relative depth.** Layer ℓ of a model whose layers are 0 … L sits at ℓ / L (layer 0, the
context-independent layer, at 0; the top layer at 1), so a 2-layer ELMo and a 6-layer MiniLM share one
axis. L is the highest numbered layer in the model's rows of that probe (every probe run with the default
``--layers all`` measures each layer).

**Expected layer** (Tenney et al. 2019, "BERT Rediscovers the Classical NLP Pipeline"):
E_s[ℓ] = Σ_ℓ ℓ · s(ℓ) over the softmax-normalised scalar-mix weights s learned for a task. Our mix
probe stores s per task and row in ``extra["mix"][task][row]["s"]`` (``probes.tasks.mix``).

**Centre of gravity of score gains** (ibid.): E_Δ[ℓ] = Σ ℓ·Δ(ℓ) / Σ Δ(ℓ), Δ(ℓ) = P(ℓ) − P(ℓ−1), where Tenney's
P(ℓ) is the score of a probe on a *cumulative* scalar mix of layers 0 … ℓ. We have one probe per single layer,
so P(ℓ) here is the best single-layer score among layers 0 … ℓ (a cumulative mix can use any of them); Δ ≥ 0.
No gain above layer 0 leaves it undefined (NaN). Both are in layer units and are also given as relative depth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: ``draws``/``seeds``: the control-task label draws and training seeds a row averages (NaN: one), for the chart's note.
PROFILE_COLUMNS = ["model", "layer", "layers", "depth", "value", "n", "lo", "hi", "unit", "clusters", "draws", "seeds"]


def relative_depth(layer: int | np.ndarray, last_layer: int) -> float | np.ndarray:
    """layer / last_layer (0 for a model with layer 0 only)."""
    return np.asarray(layer, dtype=float) / last_layer if last_layer > 0 else np.zeros_like(layer, dtype=float)


def layer_profile(
    df: pd.DataFrame, probe: str, dataset: str, metric: str, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """Numbered-layer rows of one probe/dataset/metric with their relative depth (``PROFILE_COLUMNS``).

    A model measured at some layers only, with a gap (a structural run of layers 0 and 3 of six), is left out: its
    top layer, and so every depth, is unknown (layer 3 would be drawn at depth 1). ``attrs["partial"]``: those
    models and their layers."""
    sel = df[(df["probe"] == probe) & (df["dataset"] == dataset) & (df["metric"] == metric)]
    if models is not None:
        sel = sel[sel["model"].isin(list(models))]
    sel = sel[sel["layer"].astype(str).str.fullmatch(r"\d+") & sel["value"].notna()]
    if sel.empty:
        return pd.DataFrame(columns=PROFILE_COLUMNS)
    out = sel.assign(layer=sel["layer"].astype(int), value=sel["value"].astype(float))
    measured = out.groupby("model")["layer"].agg(lambda ls: sorted(set(ls)))
    partial = {m: ls for m, ls in measured.items() if ls != list(range(ls[-1] + 1))}
    out = out[~out["model"].isin(list(partial))]
    if out.empty:
        empty = pd.DataFrame(columns=PROFILE_COLUMNS)
        empty.attrs["partial"] = partial
        return empty
    out["layers"] = out.groupby("model")["layer"].transform("max")
    out["depth"] = [float(relative_depth(layer, L)) for layer, L in zip(out["layer"], out["layers"])]
    for col in PROFILE_COLUMNS[5:]:
        if col not in out:
            out[col] = np.nan
    out = out[PROFILE_COLUMNS].sort_values(["model", "layer"]).reset_index(drop=True)
    out.attrs["partial"] = partial
    return out


def expected_layer(weights: Sequence[float]) -> float:
    """Σ ℓ·s(ℓ) of scalar-mix weights s (normalised here, so raw non-negative weights work too)."""
    s = np.asarray(weights, dtype=float)
    if s.ndim != 1 or len(s) == 0 or (s < 0).any() or s.sum() <= 0:
        raise ValueError(f"Scalar-mix weights must be non-negative with a positive sum, got {list(s)}.")
    return float(np.arange(len(s)) @ (s / s.sum()))


#: Measures whose smaller values are better (an MDL codelength: fewer bits to transmit the labels).
LOWER_IS_BETTER = frozenset({"codelength_kbits", "control_codelength_kbits"})


def centre_of_gravity(scores: Sequence[float], lower_is_better: bool = False) -> float:
    """Centre of gravity of the gains of the running best score over layers 0, 1, …; NaN without a gain. With
    ``lower_is_better`` (codelengths) a gain is a fall below the best so far."""
    p = np.maximum.accumulate(-np.asarray(scores, dtype=float) if lower_is_better else np.asarray(scores, dtype=float))
    if len(p) == 0 or np.isnan(p).any():
        raise ValueError("centre_of_gravity needs one score per layer, none missing.")
    gains = np.diff(p)
    if gains.sum() <= 0:
        return float("nan")
    return float(np.arange(1, len(p)) @ gains / gains.sum())


def centres_of_gravity(profile: pd.DataFrame, lower_is_better: bool = False) -> pd.DataFrame:
    """Per model of a ``layer_profile``: the centre of gravity in layers and in relative depth (``lower_is_better``:
    of a measure whose smaller values are better, ``LOWER_IS_BETTER``)."""
    rows = []
    for model, part in profile.groupby("model", sort=False):
        part = part.sort_values("layer")
        if list(part["layer"]) != list(range(len(part))):  # a layer missing: gains would skip it
            cog = float("nan")
        else:
            cog = centre_of_gravity(part["value"].to_numpy(), lower_is_better)
        last = int(part["layers"].iloc[0])
        rows.append(
            {
                "model": model,
                "layers": last,
                "centre_of_gravity": cog,
                "depth": float(relative_depth(cog, last)) if not np.isnan(cog) else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["model", "layers", "centre_of_gravity", "depth"])


def expected_layers(extras: Sequence[dict], row: str = "all λ=0.001") -> pd.DataFrame:
    """Per model and task, the expected layer of the mix probe's learned weights (``row``: which λ row).

    ``extras``: ``probes.results.load_extras(dir, "mix")`` (each with "model" and "mix"); the newest result
    of a model wins. Columns: model, task, row, weights, expected_layer, layers, depth.
    """
    latest: dict[tuple[str, str], dict] = {}
    for extra in extras:
        for task, by_row in (extra.get("mix") or {}).items():
            s = (by_row.get(row) or {}).get("s")
            if s and len(s) > 1:
                latest[(extra["model"], task)] = {"model": extra["model"], "task": task, "row": row, "weights": s}
    out = []
    for item in latest.values():
        e = expected_layer(item["weights"])
        last = len(item["weights"]) - 1
        out.append({**item, "expected_layer": e, "layers": last, "depth": float(relative_depth(e, last))})
    return pd.DataFrame(out, columns=["model", "task", "row", "weights", "expected_layer", "layers", "depth"])
