"""Read and write the original ELMo weight layout (bilm-tf ``weights.hdf5`` + ``options.json``).

Mirrors AllenNLP's loaders (``_ElmoCharacterEncoder._load_*`` and ``ElmoLstm.load_weights``):

    char_embed                          (261, char_dim)   ids 0..260; torch adds row 0 for the mask
    CNN/W_cnn_{i}, CNN/b_cnn_{i}        (1, width, char_dim, num), (num,)
    CNN_high_{k}/W_transform, b_transform, W_carry, b_carry   (n, n), (n,)  TF: y = t⊙f(x) + (1−t)⊙x
    CNN_proj/W_proj, b_proj             (n_filters, D), (D,)
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0   (input + D, 4C)  TF gate order i, j(=g), f, o
                                                /B     (4C,)  TF adds 1.0 to the forget gate at runtime
                                                /W_P_0 (C, D) projection
    d = 0 forward, 1 backward.

Every problem (missing file or dataset, wrong shape, datasets the options do not describe,
truncated file) raises ``models.base.ModelLoadError`` naming the file and the dataset path;
``check_layout`` checks the whole layout from the file's metadata before any weight is read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import torch

from corpora.cli_help import state_defaults
from models.base import ModelLoadError
from models.elmo.bilm import ElmoBiLm, normalize_options
from models.elmo.checkpoint import load_bilm, read_options
from models.elmo.lstm import LstmCellWithProjection

# ----------------------------------------------------------------------------- reading


def lstm_dataset_prefix(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


# The biLM's datasets start with these; anything else in a file (e.g. a softmax) is not ours to read.
BILM_PREFIXES = ("char_embed", "CNN", "RNN_")


def expected_shapes(options: dict[str, Any], char_rows: int = 261) -> dict[str, tuple[int, ...]]:
    """Every dataset a ``weights.hdf5`` for ``options`` (normalized) holds: name → shape, in load order."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    char_dim, d, c = cnn["embedding"]["dim"], lstm["projection_dim"], lstm["dim"]
    n = sum(num for _, num in cnn["filters"])
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (char_rows, char_dim)}
    for i, (width, num) in enumerate(cnn["filters"]):
        shapes[f"CNN/W_cnn_{i}"], shapes[f"CNN/b_cnn_{i}"] = (1, width, char_dim, num), (num,)
    for k in range(cnn["n_highway"]):
        for kind in ("transform", "carry"):
            shapes[f"CNN_high_{k}/W_{kind}"], shapes[f"CNN_high_{k}/b_{kind}"] = (n, n), (n,)
    shapes["CNN_proj/W_proj"], shapes["CNN_proj/b_proj"] = (n, d), (d,)
    for layer in range(lstm["n_layers"]):
        for direction in (0, 1):
            prefix = lstm_dataset_prefix(direction, layer)
            shapes[f"{prefix}/W_0"] = (d + d, 4 * c)  # [layer input; previous h] → 4 gates
            shapes[f"{prefix}/B"] = (4 * c,)
            shapes[f"{prefix}/W_P_0"] = (c, d)
    return shapes


def open_weights(weights_path: str | Path) -> h5py.File:
    """The weight file opened read-only; ModelLoadError naming it when missing or not HDF5."""
    weights_path = Path(weights_path)
    if not weights_path.is_file():
        raise ModelLoadError(f"ELMo weight file not found: {weights_path}")
    try:
        return h5py.File(weights_path, "r")
    except OSError as exc:
        raise ModelLoadError(
            f"ELMo weight file {weights_path} is not a readable HDF5 file (truncated?): {exc}"
        ) from exc


def dataset_shapes(fin: h5py.File, path: Path) -> dict[str, tuple[int, ...]]:
    """Every dataset's name → shape, from the file's metadata only (no weights read)."""
    shapes: dict[str, tuple[int, ...]] = {}

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            shapes[name] = tuple(obj.shape)

    try:
        fin.visititems(visit)
    except (OSError, RuntimeError, KeyError) as exc:
        raise ModelLoadError(f"ELMo weight file {path}: cannot list its datasets (truncated?): {exc}") from exc
    return shapes


def check_layout(fin: h5py.File, path: Path, options: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The file's biLM datasets must be exactly those ``options`` need, with their shapes.

    Returns the expected name → shape; ModelLoadError naming the file and the first missing,
    mis-shaped or unexpected dataset. An unexpected one (more filters, highway or LSTM layers than
    the options say) would otherwise load silently as a smaller, wrong model.
    """
    have = dataset_shapes(fin, path)
    rows = have.get("char_embed", (261,))[0]
    if rows not in (261, 262):  # 261 rows (ids 0..260) in the released files; 262 also exists
        raise ModelLoadError(f"ELMo weight file {path}: 'char_embed' has {rows} rows, expected 261 or 262.")
    want = expected_shapes(options, rows)
    for name, shape in want.items():
        if name not in have:
            raise ModelLoadError(f"ELMo weight file {path} has no dataset '{name}'.")
        if have[name] != shape:
            raise ModelLoadError(
                f"ELMo weight file {path}: dataset '{name}' has shape {have[name]}, the options need {shape}."
            )
    extra = sorted(n for n in have if n not in want and n.startswith(BILM_PREFIXES))
    if extra:
        raise ModelLoadError(
            f"ELMo weight file {path} has datasets the options do not describe: "
            f"{', '.join(extra[:5])}{' …' if len(extra) > 5 else ''} (options of another model?)"
        )
    return want


@torch.no_grad()
def load_hdf5_weights(bilm: ElmoBiLm, weights_path: str | Path) -> ElmoBiLm:
    """Copy an original ``weights.hdf5`` into ``bilm`` (built from the matching options)."""
    weights_path = Path(weights_path)
    with open_weights(weights_path) as fin:
        check_layout(fin, weights_path, bilm.options)

        def read(name: str) -> np.ndarray:
            try:
                return np.asarray(fin[name][...], dtype=np.float32)
            except (OSError, RuntimeError, ValueError, KeyError) as exc:
                raise ModelLoadError(
                    f"ELMo weight file {weights_path}: cannot read '{name}' (truncated?): {exc}"
                ) from exc

        _load_char_cnn(bilm, read)
        for layer in range(bilm.lstm.num_layers):
            for direction, stack in enumerate((bilm.lstm.forward_layers, bilm.lstm.backward_layers)):
                _load_lstm_cell(stack[layer], read, lstm_dataset_prefix(direction, layer))
    return bilm


def _load_char_cnn(bilm: ElmoBiLm, read: Callable[[str], np.ndarray]) -> None:
    cnn = bilm.char_cnn
    weight = torch.zeros_like(cnn.char_embedding.weight)
    weight[1:] = torch.from_numpy(read("char_embed")[:261])  # shift by one: row 0 is the mask
    cnn.char_embedding.weight.copy_(weight)

    for i, conv in enumerate(cnn.convolutions):
        conv.weight.copy_(torch.from_numpy(np.transpose(read(f"CNN/W_cnn_{i}").squeeze(axis=0), axes=(2, 1, 0))))
        conv.bias.copy_(torch.from_numpy(read(f"CNN/b_cnn_{i}")))

    for k, layer in enumerate(cnn.highways.layers):
        w_transform = read(f"CNN_high_{k}/W_transform").T
        # AllenNLP's gate g multiplies x; TF's carry gate multiplies f(x): g = 1 − carry ⇒ negate.
        w_carry = -read(f"CNN_high_{k}/W_carry").T
        b_transform = read(f"CNN_high_{k}/b_transform")
        b_carry = -read(f"CNN_high_{k}/b_carry")
        layer.weight.copy_(torch.from_numpy(np.concatenate([w_transform, w_carry], axis=0)))
        layer.bias.copy_(torch.from_numpy(np.concatenate([b_transform, b_carry], axis=0)))

    cnn.projection.weight.copy_(torch.from_numpy(read("CNN_proj/W_proj").T))
    cnn.projection.bias.copy_(torch.from_numpy(read("CNN_proj/b_proj")))


def _swap_gates_1_2(x: np.ndarray, c: int) -> np.ndarray:
    """TF (i, j, f, o) ↔ torch (i, f, g=j, o): swap the 2nd and 3rd blocks of c rows (self-inverse)."""
    y = x.copy()
    y[c : 2 * c] = x[2 * c : 3 * c]
    y[2 * c : 3 * c] = x[c : 2 * c]
    return y


def _load_lstm_cell(cell: LstmCellWithProjection, read: Callable[[str], np.ndarray], prefix: str) -> None:
    c, n_in = cell.cell_size, cell.input_size
    tf_weights = read(f"{prefix}/W_0").T  # (4C, input + D)
    torch_weights = _swap_gates_1_2(tf_weights, c)
    cell.input_linearity.weight.copy_(torch.from_numpy(np.ascontiguousarray(torch_weights[:, :n_in])))
    cell.state_linearity.weight.copy_(torch.from_numpy(np.ascontiguousarray(torch_weights[:, n_in:])))
    tf_bias = read(f"{prefix}/B").copy()
    tf_bias[2 * c : 3 * c] += 1.0  # TF's LSTMCell adds forget_bias=1.0 at runtime
    cell.state_linearity.bias.copy_(torch.from_numpy(_swap_gates_1_2(tf_bias, c)))
    cell.state_projection.weight.copy_(torch.from_numpy(np.ascontiguousarray(read(f"{prefix}/W_P_0").T)))


def read_original_options(options_path: str | Path) -> dict[str, Any]:
    """An original ``options.json``, validated and normalized; ModelLoadError naming the file."""
    options = read_options(options_path)
    try:
        return normalize_options(options)
    except ValueError as exc:
        raise ModelLoadError(f"ELMo options file {options_path}: {exc}") from exc


def load_bilm_from_hdf5(options_path: str | Path, weights_path: str | Path, stateful: bool = False) -> ElmoBiLm:
    """Build an ElmoBiLm from an original ``options.json`` + ``weights.hdf5`` pair."""
    options = read_original_options(options_path)
    weights_path = Path(weights_path)
    with open_weights(weights_path) as fin:
        check_layout(fin, weights_path, options)  # before building: a wrong pair fails in milliseconds
    try:
        bilm = ElmoBiLm(options, stateful=stateful)
    except ValueError as exc:
        raise ModelLoadError(f"ELMo options file {options_path}: {exc}") from exc
    return load_hdf5_weights(bilm, weights_path).eval()


# ----------------------------------------------------------------------------- writing


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


@torch.no_grad()
def write_hdf5_weights(bilm: ElmoBiLm, weights_path: str | Path) -> None:
    """Write ``bilm`` in the original layout (the inverse of ``load_hdf5_weights``)."""
    cnn = bilm.char_cnn
    with h5py.File(weights_path, "w") as fout:
        fout.create_dataset("char_embed", data=_np(cnn.char_embedding.weight)[1:])
        for i, conv in enumerate(cnn.convolutions):
            fout.create_dataset(f"CNN/W_cnn_{i}", data=np.transpose(_np(conv.weight), (2, 1, 0))[None])
            fout.create_dataset(f"CNN/b_cnn_{i}", data=_np(conv.bias))
        n = cnn.n_filters
        for k, layer in enumerate(cnn.highways.layers):
            w, b = _np(layer.weight), _np(layer.bias)
            fout.create_dataset(f"CNN_high_{k}/W_transform", data=np.ascontiguousarray(w[:n].T))
            fout.create_dataset(f"CNN_high_{k}/W_carry", data=np.ascontiguousarray(-w[n:].T))
            fout.create_dataset(f"CNN_high_{k}/b_transform", data=b[:n])
            fout.create_dataset(f"CNN_high_{k}/b_carry", data=-b[n:])
        fout.create_dataset("CNN_proj/W_proj", data=np.ascontiguousarray(_np(cnn.projection.weight).T))
        fout.create_dataset("CNN_proj/b_proj", data=_np(cnn.projection.bias))
        for layer in range(bilm.lstm.num_layers):
            for direction, stack in enumerate((bilm.lstm.forward_layers, bilm.lstm.backward_layers)):
                cell = stack[layer]
                c = cell.cell_size
                prefix = lstm_dataset_prefix(direction, layer)
                torch_w = np.concatenate([_np(cell.input_linearity.weight), _np(cell.state_linearity.weight)], axis=1)
                fout.create_dataset(f"{prefix}/W_0", data=np.ascontiguousarray(_swap_gates_1_2(torch_w, c).T))
                tf_bias = _swap_gates_1_2(_np(cell.state_linearity.bias), c)
                tf_bias[2 * c : 3 * c] -= 1.0
                fout.create_dataset(f"{prefix}/B", data=tf_bias)
                fout.create_dataset(f"{prefix}/W_P_0", data=np.ascontiguousarray(_np(cell.state_projection.weight).T))


def export_hdf5(bilm: ElmoBiLm, directory: str | Path) -> tuple[Path, Path]:
    """Write ``options.json`` + ``weights.hdf5`` into ``directory``; returns both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = json.loads(json.dumps(bilm.options))
    options_path, weights_path = directory / "options.json", directory / "weights.hdf5"
    options_path.write_text(json.dumps(options, indent=2) + "\n")
    write_hdf5_weights(bilm, weights_path)
    return options_path, weights_path


def main(argv: list[str] | None = None) -> int:
    """``python -m models.elmo.hdf5_io export ASSET_DIR OUT_DIR``: our checkpoint → original layout."""
    p = argparse.ArgumentParser(prog="python -m models.elmo.hdf5_io", description=main.__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="write options.json + weights.hdf5 from a safetensors ELMo checkpoint")
    exp.add_argument("asset_dir")
    exp.add_argument("out_dir")
    args = state_defaults(p).parse_args(argv)
    try:
        options_path, weights_path = export_hdf5(load_bilm(args.asset_dir), args.out_dir)
    except ModelLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {options_path} and {weights_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
