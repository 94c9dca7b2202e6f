"""The ELMo trainer's configurations: named sizes and how a run's ``--config`` and overrides resolve.

Used by ``models.train.elmo`` (``python -m models train elmo``). A configuration is the biLM
``options`` (the original ``options.json`` format: char CNN + LSTM sizes) plus the training
hyper-parameters ``vocab_size``, ``batch_tokens``, ``lr`` and ``dropout``. ``--config`` names one of
:data:`CONFIGS` or an ``options.json`` file (then the "small" hyper-parameters); the flags of the same
names override the hyper-parameters.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from corpora.errors import RequestError

CONFIGS: dict[str, dict[str, Any]] = {
    # ~3 M biLM parameters: sized for about an hour on a shared 2-core CPU.
    # No clipping so the fused torch.lstm kernel can be used (3× faster than the clipped time loop).
    "small": {
        "options": {
            "lstm": {
                "use_skip_connections": True,
                "projection_dim": 128,
                "cell_clip": None,
                "proj_clip": None,
                "dim": 512,
                "n_layers": 2,
            },
            "char_cnn": {
                "activation": "relu",
                "filters": [[1, 32], [2, 32], [3, 64], [4, 64], [5, 64]],
                "n_highway": 1,
                "embedding": {"dim": 16},
                "n_characters": 262,
                "max_characters_per_token": 50,
            },
        },
        "vocab_size": 30000,
        "batch_tokens": 1600,
        "lr": 2e-3,
        "dropout": 0.1,
    },
    # The size of the paper's "original" ELMo (4096 cells, 512 projection, 2048 char filters): needs a GPU.
    "original-like": {
        "options": {
            "lstm": {
                "use_skip_connections": True,
                "projection_dim": 512,
                "cell_clip": 3,
                "proj_clip": 3,
                "dim": 4096,
                "n_layers": 2,
            },
            "char_cnn": {
                "activation": "relu",
                "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
                "n_highway": 2,
                "embedding": {"dim": 16},
                "n_characters": 262,
                "max_characters_per_token": 50,
            },
        },
        "vocab_size": 60000,
        "batch_tokens": 8000,
        "lr": 1e-3,
        "dropout": 0.1,
    },
}


def resolve_config(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    if args.config in CONFIGS:
        cfg = json.loads(json.dumps(CONFIGS[args.config]))
        name = args.name or f"elmo-{args.config}"
    else:
        path = Path(args.config)
        if not path.is_file():
            raise RequestError(f"--config: '{args.config}' is neither {' | '.join(CONFIGS)} nor an options.json file")
        try:
            options = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RequestError(f"--config {path}: not an options.json ({exc}).") from None
        if not isinstance(options, dict):
            raise RequestError(f"--config {path}: an options.json holds one JSON object (bilm-tf's options).")
        cfg = dict(CONFIGS["small"], options=options)
        name = args.name or f"elmo-{path.stem}"
    for key in ("vocab_size", "batch_tokens", "lr", "dropout"):
        value = getattr(args, key)
        if value is not None:
            cfg[key] = value
    return name, cfg
