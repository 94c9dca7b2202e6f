"""Layer specs are parsed and validated once, before any extraction."""

from __future__ import annotations

import numpy as np
import pytest

from probes.errors import ProbeInputError
from probes.layers import LayerSpec, needed_layers, parse_layer_specs


def labels(text, n):
    return [s.label for s in parse_layer_specs(text, n)]


def test_parsing():
    assert labels("all", 3) == ["0", "1", "2", "mean"]
    assert labels(None, 1) == ["0"]
    assert labels("0,2,mean", 3) == ["0", "2", "mean"]
    assert labels("mix:1,2,3", 3) == ["mix:1,2,3"]
    assert needed_layers(parse_layer_specs("2", 3), 3) == [2]
    assert needed_layers(parse_layer_specs("0,mean", 3), 3) == [0, 1, 2]


@pytest.mark.parametrize(
    "bad, message",
    [
        ("3", "out of range"),
        ("-1", "out of range"),
        ("x", "Bad layer"),
        ("mix:1,2", "gives 2 weights"),
        ("mix:nan,1,1", "finite"),
        ("mix:inf,1,1", "finite"),
        ("mix:-1,1,1", "non-negative"),
        ("mix:0,0,0", "not all zero"),
        ("mix:a,b,c", "numbers"),
        (",", "No layers"),
    ],
)
def test_bad_specs_are_refused_with_the_reason(bad, message):
    with pytest.raises(ProbeInputError, match=message):
        parse_layer_specs(bad, 3)


def test_weights_and_combination():
    per_layer = {j: np.full((2, 4), float(j + 1), np.float32) for j in range(3)}
    np.testing.assert_allclose(LayerSpec.parse("mean", 3).combine(per_layer, 3), np.full((2, 4), 2.0))
    mix = LayerSpec.parse("mix:1,0,3", 3)
    np.testing.assert_allclose(mix.weights(3), [0.25, 0, 0.75])
    np.testing.assert_allclose(mix.combine(per_layer, 3), np.full((2, 4), 0.25 * 1 + 0.75 * 3))
    assert LayerSpec.parse("1", 3).combine(per_layer, 3) is per_layer[1]
