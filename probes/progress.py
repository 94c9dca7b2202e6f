"""Progress of long work: one callback type, its parts, and the one terminal display (tqdm on stderr).

Every step that can take more than a few seconds reports through the run path's callback
(``ProgressFn``: ``(fraction of the whole done, what is happening now)``; ``run_probe(progress=…)``,
``RunContext.progress``): feature extraction (words and sentences/s, ``features.build``), each
layer's probe training (epoch, learning rate and dev loss, or dev score and early-stopping patience,
``probes.estimators.classifier.train_with_early_stopping``), MDL blocks, control-task fits, seeds,
the WSD centroid and scoring passes, ``reproduce`` (model i/N, probe j/M) and ``sweep`` (tasks
done/failed/remaining). A step passes its sub-steps ``scaled(progress, lo, hi, prefix)``: their
0..1 becomes its ``lo..hi`` and their messages get its prefix ("layer 3: " + "epoch 2/10 …").

Who shows it:

- the command line: ``TerminalProgress``, one tqdm bar on stderr (the latest message after it,
  elapsed time and the time left from the overall fraction), silent when stderr is not a terminal
  or with ``--quiet``; lines printed while it runs go through ``write`` so they do not tear it;
- the app: a Streamlit progress element fed by the same callback (``app_pages/probe_quick.py``,
  ``app_pages/probe_upload.py``);
- a notebook: any ``(float, str) -> None`` it passes to ``run_probe``.

Design notes: the bar's fraction is whatever the run path says (steps of unequal length make its time
left a rough guide; ``probes.estimate`` gives the up-front estimate); it is redrawn on every message,
and messages come per chunk of sentences, epoch, block or task, never per batch, so drawing costs
nothing next to the work. The bar never goes backwards: a step that restarts at 0 (the next seed,
another layer's epochs) only changes the message.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from typing import IO

from tqdm.auto import tqdm

ProgressFn = Callable[[float, str], None]

#: The bar's resolution (tqdm counts whole steps; the fraction is shown as a percentage).
STEPS = 1000


def scaled(progress: ProgressFn | None, lo: float, hi: float, prefix: str = "") -> ProgressFn | None:
    """``progress`` for one part of a run: the part's 0..1 onto ``lo``..``hi``, its messages after ``prefix``."""
    if progress is None:
        return None
    return lambda f, m: progress(lo + (hi - lo) * f, prefix + m)


def wanted(quiet: bool = False, stream: IO[str] | None = None) -> bool:
    """Whether to draw a progress bar: not ``quiet`` and ``stream`` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


class TerminalProgress:
    """One tqdm bar on stderr fed by ``ProgressFn`` calls; a ``ProgressFn`` itself (``bar(0.4, "layer 2: …")``).

    Disabled (``enabled`` False, nothing drawn) with ``quiet`` or when the stream is not a terminal;
    ``callback`` is then None, so the run path builds no messages at all. Use as a context manager: the
    bar is closed on the way out, its last state left on screen, or cleared when an exception leaves.
    """

    def __init__(self, title: str, *, quiet: bool = False, stream: IO[str] | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = wanted(quiet, self.stream)
        self.bar = (
            tqdm(
                total=STEPS,
                desc=title,
                file=self.stream,
                bar_format="{desc} {percentage:3.0f}%|{bar:16}| {elapsed}<{remaining}{postfix}",
                smoothing=0,  # the time left from the average rate since the start, not the last step's
                # a terminal that does not know its size (0 × 0: a new pseudo-terminal) gets 120 × 24
                ncols=shutil.get_terminal_size((120, 24)).columns,
                nrows=shutil.get_terminal_size((120, 24)).lines,
            )
            if self.enabled
            else None
        )

    @property
    def callback(self) -> ProgressFn | None:
        """What to pass as ``progress=``: this bar when it is drawn, else None."""
        return self if self.enabled else None

    def __call__(self, fraction: float, message: str = "") -> None:
        if self.bar is None:
            return
        step = round(min(max(fraction, 0.0), 1.0) * STEPS)
        if step > self.bar.n:
            self.bar.update(step - self.bar.n)
        self.bar.set_postfix_str(message, refresh=False)
        self.bar.refresh()

    def write(self, line: str, file: IO[str] | None = None) -> None:
        """Print ``line`` (default: to stdout) above the bar, or plainly when there is none."""
        file = sys.stdout if file is None else file
        if self.bar is None:
            print(line, file=file, flush=True)
        else:
            self.bar.write(line, file=file)

    def close(self, leave: bool = True) -> None:
        """Close the bar; ``leave=False`` also clears its line (a run that failed: its error line follows)."""
        if self.bar is not None:
            self.bar.leave = leave
            self.bar.close()
            self.bar = None

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(leave=exc_type is None)
