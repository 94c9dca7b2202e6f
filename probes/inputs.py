"""What a probe that reads the user's files declares, so that the app's upload tab needs no probe names.

A ``ProbeSpec`` lists its ``inputs`` (one ``InputFile`` per role: train, dev, test …) and a
``preview`` (``(limit, runner options incl. the file paths) -> Preview``): the upload tab shows one
uploader per input, fills the role's option (``--train`` …) with the stored file's path, renders
the spec's other options as widgets and shows the preview before anything runs.

    inputs=(InputFile("train", ("CoNLL-U", "column file")), InputFile("test", ("CoNLL-U", "column file")))
    preview=lambda limit, options: Preview(label, "label column UPOS, …", counts, labels, sample)

Pure data: no Streamlit here (``app_pages.probe_upload`` draws it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class InputFile:
    """One file a probe reads, named by its role (also the option it fills: ``--train FILE``).

    formats:   the file formats it takes, as docs/datasets.md names them (shown by the uploader).
    required:  whether the probe runs without it.
    help:      one line on the file's content.
    if_absent: options implied when an optional file is not given (WSD: no test file -> ``folds=5``).
    companions: the files the reader takes from beside the given one, which no option names (framework XML: its
               ``NAME.gold.key.txt``); what a sweep's data key hashes with it (``cluster.identity.data_content``).
    """

    role: str
    formats: tuple[str, ...]
    required: bool = True
    help: str = ""
    if_absent: dict[str, Any] = field(default_factory=dict)
    companions: Callable[[Path], tuple[Path, ...]] = lambda path: ()

    @property
    def noun(self) -> str:
        """What the role's file is called in messages: "training file", "test file" …"""
        return {"train": "training"}.get(self.role, self.role) + " file"


@dataclass(frozen=True)
class Preview:
    """What the files hold, parsed as the probe will read them.

    dataset:     the dataset's label in results (``NAME@HASH``).
    description: one line of plain text (the label column or span kind, the slice), shown after the dataset;
                 it quotes the user's files and options, so it is no Markdown.
    counts:      one row per file (sentences, words, targets, labels …).
    labels:      label, train count, test count.
    sample:      the first training items.
    """

    dataset: str
    description: str
    counts: pd.DataFrame
    labels: pd.DataFrame
    sample: pd.DataFrame
