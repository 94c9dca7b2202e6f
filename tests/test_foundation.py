from pathlib import Path

import pytest
import torch

from corpora.paths import DataMissingError, data_dir, data_path
from models.scalar_mix import ScalarMix


def test_data_dir_found_and_missing_item_named(data_root: Path) -> None:
    assert (data_root / "README.md").exists()
    with pytest.raises(DataMissingError) as err:
        data_path("semcor3.0/no_such_file")
    assert "semcor3.0/no_such_file" in str(err.value)
    assert "mihalcea" in str(err.value)


def test_data_dir_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    assert data_dir() == tmp_path.resolve()
    with pytest.raises(DataMissingError, match="wsd_eval"):
        data_path("wsd_eval/ALL/ALL.data.xml")


def test_scalar_mix_weights_and_gamma() -> None:
    mix = ScalarMix(3, initial_weights=[0.5, -1.0, 2.0], initial_gamma=2.0)
    assert torch.isclose(mix.weights.sum(), torch.tensor(1.0))
    layers = torch.randn(3, 4, 5)
    out = mix(layers)
    expected = 2.0 * (mix.weights.view(3, 1, 1) * layers).sum(0)
    assert torch.allclose(out, expected, atol=1e-6)
    uniform = ScalarMix(3)
    assert torch.allclose(uniform(layers), layers.mean(0), atol=1e-6)
    assert uniform.weight_penalty().item() == pytest.approx(0.0, abs=1e-12)
    assert mix.weight_penalty().item() > 0
