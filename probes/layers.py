"""Which layer(s) a probe reads: parsed and validated once, before any feature is extracted.

A probe is asked for one or more *layer specs*:

- an index ``"3"`` (0 = the context-independent layer),
- ``"mean"``: the uniform average of all layers,
- ``"mix:w0,w1,…"``: fixed non-negative weights, one per layer, normalised to sum 1 (for example the
  scalar-mix weights ``s`` learned by the λ ablation).

``"all"`` (the default) means every layer and then ``"mean"``. The text of a spec is also its label
in result rows ("3", "mean", "mix:0.2,0.8"), so results written before this module existed keep
their labels.

    specs = parse_layer_specs("0,2,mean", num_layers=3)
    needed_layers(specs, 3)         # [0, 1, 2]: "mean" reads every layer
    specs[2].weights(3)             # array([1/3, 1/3, 1/3])

A model that keeps only some of its layers (option ``layers``, ``ModelInfo.layer_ids``, e.g. (0, 6, 12))
is probed by its own layer numbers: ``"6"`` reads the second kept layer and is labelled "6", so tables
say which layer of the model a number belongs to. ``index`` is always the position in the embedder's output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from probes.errors import ProbeInputError

USAGE = "use layer indices like 0,1,2, 'all', 'mean' or 'mix:w0,w1,...'"


@dataclass(frozen=True)
class LayerSpec:
    """One layer, or a fixed weighted combination of all layers.

    label:   the spec as written ("3", "mean", "mix:…"); the ``layer`` of its result rows.
    index:   the layer for a single-layer spec, else None.
    mix:     the raw (unnormalised) weights of a "mix:" spec, else None.
    """

    label: str
    index: int | None = None
    mix: tuple[float, ...] | None = None

    @property
    def is_single(self) -> bool:
        return self.index is not None

    @classmethod
    def parse(cls, text: str | int, num_layers: int, layer_ids: Sequence[int] | None = None) -> LayerSpec:
        """One spec; ProbeInputError names what is wrong (range, weight count, non-finite weights).

        ``layer_ids``: the model's own number of each output layer, when it keeps only some.
        """
        text = str(text).strip()
        if text == "mean":
            return cls(text)
        if text.startswith("mix:"):
            try:
                w = tuple(float(x) for x in text[4:].split(","))
            except ValueError:
                raise ProbeInputError(f"{text!r}: weights must be numbers.") from None
            if len(w) != num_layers:
                raise ProbeInputError(f"{text!r} gives {len(w)} weights; the model has {num_layers} layers.")
            if not all(math.isfinite(x) for x in w):
                raise ProbeInputError(f"{text!r}: weights must be finite (no nan or inf).")
            if any(x < 0 for x in w) or sum(w) <= 0:
                raise ProbeInputError(f"{text!r}: weights must be non-negative and not all zero.")
            if not math.isfinite(sum(w)):  # 1e308 twice: the sum overflows and every weight becomes 0
                raise ProbeInputError(
                    f"{text!r}: the weights' sum overflows; give smaller weights (they are normalised)."
                )
            return cls(text, mix=w)
        try:
            j = int(text)
        except ValueError:
            raise ProbeInputError(f"Bad layer {text!r}: {USAGE}.") from None
        if layer_ids is not None:
            if j not in layer_ids:
                raise ProbeInputError(
                    f"Layer {j} was not kept: the model keeps layers {', '.join(map(str, layer_ids))}."
                )
            return cls(str(j), index=list(layer_ids).index(j))
        if not 0 <= j < num_layers:
            raise ProbeInputError(f"Layer {j} out of range: the model has layers 0..{num_layers - 1}.")
        return cls(str(j), index=j)

    def weights(self, num_layers: int) -> np.ndarray:
        """(num_layers,) float64 weights summing to 1 (one-hot for a single layer)."""
        if self.index is not None:
            return np.eye(num_layers)[self.index]
        if self.mix is None:  # "mean"
            return np.full(num_layers, 1.0 / num_layers)
        w = np.array(self.mix)
        return w / w.sum()

    def layers(self, num_layers: int) -> list[int]:
        """The layers this spec reads."""
        return [self.index] if self.index is not None else list(range(num_layers))

    def combine(self, per_layer: Mapping[int, np.ndarray], num_layers: int) -> np.ndarray:
        """Vectors of this spec from ``per_layer[j]`` (num_rows, dim): the layer itself, or Σ_j w_j·layer_j."""
        if self.index is not None:
            return per_layer[self.index]
        w = self.weights(num_layers)
        return sum(float(w[j]) * per_layer[j] for j in range(num_layers))

    def __str__(self) -> str:
        return self.label


def parse_layer_specs(text: str | None, num_layers: int, layer_ids: Sequence[int] | None = None) -> list[LayerSpec]:
    """The ``--layers`` argument: "all" (default: every layer, then "mean"), "mean", "0,1,2" or "mix:w0,…".

    A "mix:" spec stands alone (its commas separate weights, not specs). ``layer_ids``: see the module doc.
    """
    if text is None or str(text).strip() == "all":
        ids = list(layer_ids) if layer_ids is not None else list(range(num_layers))
        return [LayerSpec(str(ids[j]), index=j) for j in range(num_layers)] + (
            [LayerSpec("mean")] if num_layers > 1 else []
        )
    text = str(text).strip()
    parts = [text] if text.startswith("mix:") else [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ProbeInputError(f"No layers selected: {USAGE}.")
    specs = [LayerSpec.parse(p, num_layers, layer_ids) for p in parts]
    # a layer named twice ("0,0", "1,01") would be scored twice under one label: with --seeds its rows piled up as
    # extra seeds (4 seeds from 2, a smaller spread)
    labels = [s.label for s in specs]
    if twice := sorted({label for label in labels if labels.count(label) > 1}):
        raise ProbeInputError(f"--layers {text}: layer {', '.join(twice)} is named more than once; name each once.")
    return specs


def needed_layers(specs: Sequence[LayerSpec], num_layers: int) -> list[int]:
    """Sorted union of the layers the specs read (what to extract or load)."""
    return sorted({j for s in specs for j in s.layers(num_layers)})


def as_layer_specs(
    layers: str | Sequence[LayerSpec] | None, num_layers: int, layer_ids: Sequence[int] | None = None
) -> list[LayerSpec]:
    """Specs from a ``--layers`` string (or None = "all"), or already-parsed specs checked against the model."""
    if layers is None or isinstance(layers, str):
        return parse_layer_specs(layers, num_layers, layer_ids)
    return [LayerSpec.parse(s.label, num_layers, layer_ids) for s in layers]
