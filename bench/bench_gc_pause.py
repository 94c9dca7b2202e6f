"""The pause of a full garbage collection in the app's server process, with and without its data.

    python bench/bench_gc_pause.py [--repeats 5] [--model minilm]

Streamlit runs ``gc.collect(2)`` after every script run unless ``runner.postScriptGC`` is off; it
holds the GIL, so a finished run's messages wait for it before they reach the browser. Its cost
grows with the number of live objects: this times ``gc.collect(2)`` in a fresh interpreter with
the app's imports only, then again with what a warm server holds (WordNet's indexes, parsed
SemCor, a loaded model), and prints both and their ratio. Why ``.streamlit/config.toml`` turns it
off: docs/benchmarks.md ("Browser latency … forced garbage collection").

Python's own collector still makes full collections as the heap grows. The app's warm-up
(``app_pages.warmup.start_warmup``) freezes WordNet and SemCor once read (``gc.freeze()``: kept out of every
later collection), so a warm server's full collection walks the model and what came after, not the data:
the third line times that (the data frozen, then the model loaded), the second the same heap unfrozen.
A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import run_command


def pause_s(repeats: int) -> float:
    """Median seconds of a full collection over ``repeats``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gc.collect(2)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--model", default="minilm")
    args = p.parse_args(argv)
    import app_pages.common  # noqa: F401 — the server's imports (streamlit, torch, the project)
    from corpora.semcor import load_semcor
    from corpora.wordnet import wordnet
    from models.registry import load_embedder

    bare = pause_s(args.repeats), len(gc.get_objects())
    wordnet()
    load_semcor()
    gc.freeze()  # as the app's warm-up does once the data is read
    load_embedder(args.model)
    frozen = pause_s(args.repeats), len(gc.get_objects())
    gc.unfreeze()
    warm = pause_s(args.repeats), len(gc.get_objects())
    print(f"gc.collect(2), median of {args.repeats}:")
    print(f"  imports only:                     {bare[0] * 1000:7.1f} ms  ({bare[1]:,} tracked objects)")
    print(f"  + WordNet, SemCor, {args.model:<12}  {warm[0] * 1000:7.1f} ms  ({warm[1]:,} tracked objects)")
    print(f"  the same, the data frozen:        {frozen[0] * 1000:7.1f} ms  ({frozen[1]:,} objects walked)")
    print(f"  ratio with the data to without: {warm[0] / bare[0]:.1f}×; frozen to unfrozen: {frozen[0] / warm[0]:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
