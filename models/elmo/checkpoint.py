"""Our own ELMo checkpoints: ``options.json`` (original format) + ``model.safetensors`` (+ LM head).

<dir>/options.json          the AllenNLP/bilm-tf options dict
<dir>/model.safetensors     ElmoBiLm state dict (char-CNN + biLSTM), float32
<dir>/softmax.safetensors   optional: AdaptiveLogSoftmaxWithLoss of the LM head
<dir>/softmax.json          optional: {"vocab_size", "cutoffs", "div_value"}
<dir>/vocab.txt             optional: softmax vocabulary, one word a line, id = line number
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from models.assets import read_json_object
from models.base import ModelLoadError
from models.elmo.bilm import ElmoBiLm
from models.elmo.lm import BiLMLanguageModel


def save_bilm(directory: str | Path, bilm: ElmoBiLm) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "options.json").write_text(json.dumps(bilm.options, indent=2) + "\n")
    state = {k: v.detach().float().contiguous().cpu() for k, v in bilm.state_dict().items()}
    # one metadata entry: safetensors writes a map of several in its process's hash order, so the same tensors gave
    # files that differed run to run (another digest for an equal model); what the file holds is options.json's
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})


def save_language_model(
    directory: str | Path, lm: BiLMLanguageModel, vocab: list[str], with_softmax: bool = True
) -> None:
    """biLM always; the softmax + vocabulary when ``with_softmax`` (needed to compute perplexities)."""
    directory = Path(directory)
    save_bilm(directory, lm.bilm)
    if with_softmax:
        state = {k: v.detach().float().contiguous().cpu() for k, v in lm.softmax.state_dict().items()}
        save_file(state, str(directory / "softmax.safetensors"), metadata={"format": "pt"})
        (directory / "softmax.json").write_text(
            json.dumps({"vocab_size": lm.vocab_size, "cutoffs": lm.cutoffs, "div_value": lm.div_value}, indent=2) + "\n"
        )
        (directory / "vocab.txt").write_text("".join(w + "\n" for w in vocab), encoding="utf-8")


def read_options(path: str | Path) -> dict[str, Any]:
    """A JSON object file (options.json, softmax.json); ModelLoadError naming the file otherwise."""
    try:
        return read_json_object(path, "ELMo options file")
    except FileNotFoundError:
        raise ModelLoadError(f"ELMo options file not found: {path}") from None


def load_bilm(directory: str | Path, device: str | torch.device = "cpu") -> ElmoBiLm:
    directory = Path(directory)
    options = read_options(directory / "options.json")
    try:
        bilm = ElmoBiLm(options)
    except ValueError as exc:
        raise ModelLoadError(f"{directory / 'options.json'}: {exc}") from exc
    _load_state(bilm, directory / "model.safetensors")
    return bilm.to(device).eval()


def load_language_model(
    directory: str | Path, device: str | torch.device = "cpu"
) -> tuple[BiLMLanguageModel, list[str]]:
    directory = Path(directory)
    options = read_options(directory / "options.json")
    head = read_options(directory / "softmax.json")
    lm = BiLMLanguageModel(options, head["vocab_size"], head["cutoffs"], div_value=head["div_value"])
    _load_state(lm.bilm, directory / "model.safetensors")
    _load_state(lm.softmax, directory / "softmax.safetensors")
    try:
        vocab = (directory / "vocab.txt").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ModelLoadError(f"Vocabulary file {directory / 'vocab.txt'} is unreadable: {exc}") from exc
    if len(vocab) != lm.vocab_size:
        raise ModelLoadError(f"{directory / 'vocab.txt'} has {len(vocab)} words, the softmax {lm.vocab_size}.")
    return lm.to(device).eval(), vocab


def _load_state(module: torch.nn.Module, path: Path) -> None:
    if not path.is_file():
        raise ModelLoadError(f"Checkpoint file not found: {path}")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        raise ModelLoadError(f"Checkpoint {path} is unreadable (truncated or not safetensors): {exc}") from exc
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ModelLoadError(
            f"Checkpoint {path} does not match the options: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    for key, value in state.items():
        if tuple(value.shape) != tuple(expected[key].shape):
            raise ModelLoadError(
                f"Checkpoint {path}: tensor '{key}' has shape {tuple(value.shape)}, "
                f"expected {tuple(expected[key].shape)}"
            )
        if expected[key].is_floating_point() and not value.is_floating_point():  # load_state_dict would cast it
            raise ModelLoadError(f"Checkpoint {path}: tensor '{key}' is {value.dtype}, not a floating-point tensor.")
        if value.is_floating_point() and not torch.isfinite(value).all():
            raise ModelLoadError(
                f"Checkpoint {path}: tensor '{key}' holds non-finite values (NaN or inf: a diverged training run)."
            )
    module.load_state_dict(state)
