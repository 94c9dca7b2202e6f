"""Cost before you pay it: random-weight checkpoints of growing shape through extraction and WSD (issue 33).

    python bench/scale_ladder.py [--device cuda] [--semcor-limit 2000] [--limit N] [--shapes minilm,llama-1b]
                                 [--tiny] [--threads N] [--json FILE]

Each rung makes a random-weight checkpoint of a real model's shape on the fly (``models.tiny``), loads it
as any checkpoint folder is loaded (``--model DIR``) and extracts what the WSD probe embeds with
``--semcor-limit N`` — exactly its ``get_features`` calls (keys, sentences, kept rows, every layer) into an
empty feature cache in a temporary folder — then runs the probe through the one run path (``run_probe("wsd",
…)``, what ``python -m probes wsd --model DIR --semcor-limit N`` runs) on that cache. Per rung:

- **extraction words/s**: the words the probe embeds (SemCor's first N sentences and the test set) over the
  time of those ``get_features`` calls, cold: every step from words to checked float16 rows on disk;
- **forward words/s**: the model's forward alone (every hidden state) on the padded batches the embedder
  forms for the same sentences, chunked as ``get_features`` chunks them (longest first, 512 sentences),
  inputs on the device beforehand, timed between device synchronisations: the ceiling of extraction;
- peak RSS and peak GPU memory of the extraction (``bench.measure.PeakRSS``), the bytes of the feature
  entries, the probe's time on the warm cache (``wsd_s``) and its best F1 on ALL (random weights: near the
  most-frequent-sense baseline);
- µs per word and µs per word / ((layers + 1) × width), the values each word carries: where that column
  stays flat down the ladder, cost grows as layers × width.

Shapes (transformer layers × width, heads; FFN 4 × width; tokenizer of ``VOCAB`` pieces trained on the Penn
Treebank sample): MiniLM 6 × 384, BERT-base 12 × 768, BERT-large 24 × 1024, Llama-1B 16 × 2048 (1.1B
parameters, a 4.4 GB fp32 checkpoint: 28 s and 4.5 GB of RSS to make on the 2-core CPU), and a two-layer
slice of a 7B shape (32 × 4096; 14 s to make): its cost per word, projected to 33 hidden states between
×11 (cost ∝ hidden states) and ×16 (cost ∝ transformer layers), is marked as a projection (its FFN of
4 × 4096 is wider than Llama-2-7B's 11,008: the forward part is an upper bound). Random weights cost
what trained ones do: the same matmuls, the same bytes. ``--tiny`` (the default without CUDA) divides
layers by 4 and width by 8, so the ladder runs in seconds on a CPU: it shows the path works, not what a
real shape costs. Each rung's checkpoint and features are deleted once it is measured.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpora.errors import run_command

VOCAB = 8000  # tokenizer pieces; closer to real vocabularies' pieces per word than the tests' 400
CHUNK = 512  # sentences per embed call, as features.extract.get_features


@dataclass(frozen=True)
class Shape:
    """One rung: a ``models.tiny`` family and size; ``full_layers`` set for a slice of a deeper model."""

    name: str
    kind: str
    layers: int
    hidden: int
    heads: int
    full_layers: int | None = None

    def tiny(self) -> Shape:
        """The CPU stand-in: layers / 4 (at least 1), width / 8, heads / 4 (at least 2)."""
        return replace(
            self,
            name=f"{self.name}/tiny",
            layers=max(1, self.layers // 4),
            hidden=self.hidden // 8,
            heads=max(2, self.heads // 4),
        )


SHAPES = (
    Shape("minilm", "bert", 6, 384, 12),
    Shape("bert-base", "bert", 12, 768, 12),
    Shape("bert-large", "bert", 24, 1024, 16),
    Shape("llama-1b", "llama", 16, 2048, 16),
    Shape("llama-7b-slice", "llama", 2, 4096, 32, full_layers=32),
)


def shapes_named(names: str | None, tiny: bool) -> list[Shape]:
    known = {s.name: s for s in SHAPES}
    wanted = [n.strip() for n in (names or ",".join(known)).split(",") if n.strip()]
    bad = [n for n in wanted if n not in known]
    if bad:
        raise SystemExit(f"error: unknown shape(s) {', '.join(bad)}; known: {', '.join(known)}")
    return [known[n].tiny() if tiny else known[n] for n in wanted]


def load_on(ref: str, device: str):
    """A fresh instance of model ``ref`` (name or checkpoint folder) loaded straight onto ``device``."""
    from models.registry import get_spec, load_spec

    spec = get_spec(ref)
    if "options" in spec.kwargs:  # a reference: the device is one of its options
        return load_spec(spec, options={**spec.kwargs["options"], "device": device})
    return load_spec(spec, device=device)


# ----------------------------------------------------------------------------- forward only
def embedder_batches(emb, sentences: Sequence[Sequence[str]]) -> tuple[list[list[list[int]]], str]:
    """The piece-id rows of each padded batch the embedder forms for ``sentences`` in ``get_features``'s
    order (longest first, ``CHUNK`` sentences per embed call), and which batching that is.

    Uses the transformer embedder's own rows and token-budget packing (``_rows``, ``_batches``); where those
    are gone (a rewritten embedder), length-sorted batches of the tokenizer's pieces under the same
    token budget, and says so.
    """
    order = np.argsort(-np.array([len(s) for s in sentences]), kind="stable")
    chunks = [[list(sentences[i]) for i in order[k : k + CHUNK]] for k in range(0, len(order), CHUNK)]
    if hasattr(emb, "_rows") and hasattr(emb, "_batches"):
        out = []
        for chunk in chunks:
            rows, _ = emb._rows(chunk)
            out += [[rows[i].ids for i in b] for b in emb._batches(rows, False)]
        return out, "embedder"
    budget, out = int(getattr(emb, "max_tokens", 8192)), []
    for chunk in chunks:
        ids = emb.tokenizer(chunk, is_split_into_words=True, truncation=True, max_length=512)["input_ids"]
        batch: list[list[int]] = []
        for row in ids:  # longest first: a batch's padded size is its first row's length × rows
            if batch and (len(batch) + 1) * len(batch[0]) > budget:
                out.append(batch)
                batch = []
            batch.append(row)
        out += [batch] if batch else []
    return out, "tokenizer (fallback: the embedder's _rows/_batches are gone)"


def forward_only(emb, sentences: Sequence[Sequence[str]]) -> dict:
    """Words/s and pieces/s of the model's forward alone on the embedder's batches of ``sentences``."""
    import torch  # lazy: torch

    rows, batching = embedder_batches(emb, sentences)
    pad = emb.tokenizer.pad_token_id if emb.tokenizer.pad_token_id is not None else 0
    inputs = []
    for ids in rows:
        width = max(map(len, ids))
        arr = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for i, r in enumerate(ids):
            arr[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        inputs.append((arr.to(emb.device), mask.to(emb.device)))
    kwargs = emb._forward_kwargs if hasattr(emb, "_forward_kwargs") else (lambda i, m: {"input_ids": i})
    sync = torch.cuda.synchronize if emb.device.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        emb.model(**kwargs(*inputs[0]), output_hidden_states=True)  # warm-up on the largest batch
        sync()
        t0 = time.perf_counter()
        for ids, mask in inputs:
            emb.model(**kwargs(ids, mask), output_hidden_states=True, return_dict=True)
        sync()
        seconds = time.perf_counter() - t0
    words, pieces = sum(len(s) for s in sentences), sum(sum(map(len, ids)) for ids in rows)
    return {
        "forward_s": round(seconds, 4),
        "forward_words_per_s": words / seconds,
        "forward_pieces_per_s": pieces / seconds,
        "pieces_per_word": pieces / max(1, words),
        "batches": len(rows),
        "batching": batching,
    }


# ----------------------------------------------------------------------------- one rung
def _bytes_under(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def run_rung(shape: Shape, *, semcor_limit: int, limit: int | None, device: str, work: Path) -> dict:
    """Make ``shape``'s checkpoint in ``work``; extract, run WSD, run the forward alone; everything measured.

    Extraction is timed on exactly the probe's ``get_features`` calls (its splits' keys, sentences and kept
    rows, every layer, into ``work/features``); the probe then runs on that cache (``wsd_feature_s``, its own
    feature time, near 0, shows it found the entries: a large one means the calls differed).
    """
    import torch  # lazy: torch

    from bench.measure import PeakRSS
    from features.extract import get_features
    from models.tiny import make_tiny_checkpoint
    from probes.run import run_probe
    from probes.tasks.wsd.sources import builtin_test, builtin_train

    out: dict = {**asdict(shape), "device": device, "semcor_limit": semcor_limit, "limit": limit}
    splits = (builtin_train(semcor_limit), builtin_test(limit))  # the probe's data views, untimed
    out["words"] = sum(len(w) for sp in splits for w in sp.layout.sentences)
    out["semcor_words"] = sum(map(len, splits[0].layout.sentences))
    t0 = time.perf_counter()
    path = make_tiny_checkpoint(
        shape.kind, work / "ckpt", layers=shape.layers, hidden=shape.hidden, heads=shape.heads, vocab_size=VOCAB
    )
    out["make_s"], out["checkpoint_bytes"] = time.perf_counter() - t0, _bytes_under(path)
    t0 = time.perf_counter()
    emb = load_on(str(path), device)
    out["load_s"], out["params"] = time.perf_counter() - t0, sum(p.numel() for p in emb.model.parameters())
    out["dtype"] = str(getattr(emb, "dtype", ""))
    try:
        emb.embed([["A", "short", "warm-up", "."]])  # untimed: whatever the model builds lazily
        with PeakRSS() as m:
            t0 = time.perf_counter()
            for sp in splits:
                get_features(
                    emb, sp.feature_key, sp.layout.sentences, keep=sp.keep, root=work / "features", show_progress=False
                )
            out["feature_s"] = time.perf_counter() - t0
        out.update(m.as_dict("extraction"), feature_bytes=_bytes_under(work / "features"))
        t0 = time.perf_counter()
        run = run_probe(
            "wsd", emb, options={"semcor_limit": semcor_limit}, limit=limit, baselines=False,
            show_progress=False, feature_root=work / "features", results_dir=work / "results",
        )  # fmt: skip
        assert run.result is not None
        out["wsd_s"], out["wsd_feature_s"] = time.perf_counter() - t0, run.result.extra["feature_s"]
        all_f1 = [r["value"] for r in run.result.rows if r["dataset"] == "ALL" and r["metric"] == "F1"]
        out["f1_all_max"] = max(all_f1) if all_f1 else None
        with PeakRSS() as f:
            out.update(forward_only(emb, [w for sp in splits for w in sp.layout.sentences]))
        out.update(f.as_dict("forward"))
    finally:
        del emb
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return with_costs(out)


def with_costs(r: dict) -> dict:
    """Derived columns: words/s, µs/word, µs/word per (hidden states × width), the 7B slice's projection."""
    states = r["layers"] + 1
    r["words_per_s"] = r["words"] / r["feature_s"]
    r["us_per_word"] = 1e6 / r["words_per_s"]
    r["us_per_word_per_state_width"] = r["us_per_word"] / (states * r["hidden"])
    r["forward_share"] = r["words_per_s"] / r["forward_words_per_s"]  # extraction / forward-only
    r["feature_bytes_per_word"] = states * r["hidden"] * 2  # float16, every word's row
    if r.get("full_layers"):
        lo, hi = (r["full_layers"] + 1) / states, r["full_layers"] / r["layers"]
        r["projected_us_per_word"] = [r["us_per_word"] * lo, r["us_per_word"] * hi]
        r["projected_feature_bytes_per_word"] = (r["full_layers"] + 1) * r["hidden"] * 2
    return r


def run_ladder(
    shapes: Sequence[Shape],
    *,
    semcor_limit: int,
    limit: int | None,
    device: str,
    deadline: float = float("inf"),
    on_rung: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """Every rung in order, each in try/except (an error is recorded, the ladder goes on); rungs left when
    ``deadline`` (``time.time()``) has passed are recorded as skipped. ``on_rung`` sees the rows so far."""
    rows: list[dict] = []
    for shape in shapes:
        if time.time() > deadline:
            rows.append({**asdict(shape), "skipped": "time budget spent"})
        else:
            work = Path(tempfile.mkdtemp(prefix=f"ladder-{shape.name.replace('/', '-')}-"))
            try:
                rows.append(run_rung(shape, semcor_limit=semcor_limit, limit=limit, device=device, work=work))
            except Exception as exc:  # noqa: BLE001 — one failing rung must not lose the others
                rows.append({**asdict(shape), "error": f"{type(exc).__name__}: {exc}"})
            finally:
                shutil.rmtree(work, ignore_errors=True)
        if on_rung is not None:
            on_rung(rows)
    return rows


def _f(x, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def ladder_table(rows: Sequence[dict]) -> str:
    """The ladder as a Markdown table (one line per rung; errors and skips say so)."""
    head = (
        "| shape | layers × width | params | device | words | extraction words/s | forward words/s | "
        "extraction / forward | µs/word | µs/word/((L+1)×width) | peak RSS MB | peak GPU MB | features MB | "
        "WSD s (warm) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        size = f"{r['layers']} × {r['hidden']}"
        if "words_per_s" not in r:
            lines.append(f"| {r['name']} | {size} | {r.get('error') or r.get('skipped', '?')} |" + " |" * 11)
            continue
        proj = r.get("projected_us_per_word")
        us = _f(r["us_per_word"], ".1f") + (
            f" (×{r['full_layers']} layers: {proj[0]:,.0f}–{proj[1]:,.0f}, projected)" if proj else ""
        )
        lines.append(
            f"| {r['name']} | {size} | {r['params'] / 1e6:,.0f}M | {r['device']} {r['dtype']} | {r['words']:,} | "
            f"{_f(r['words_per_s'])} | {_f(r['forward_words_per_s'])} | {r['forward_share']:.2f} | {us} | "
            f"{r['us_per_word_per_state_width']:.5f} | {_f(r['extraction_peak_rss_mb'])} | "
            f"{_f(r.get('extraction_cuda_peak_mb'))} | {r['feature_bytes'] / 2**20:,.0f} | {r['wsd_s']:.1f} |"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when present)")
    p.add_argument("--semcor-limit", type=int, default=2000, help="SemCor sentences the WSD probe trains on")
    p.add_argument("--limit", type=int, default=None, help="first N sentences of each test set (default all)")
    p.add_argument("--shapes", default=None, help=f"comma-separated subset of {','.join(s.name for s in SHAPES)}")
    p.add_argument("--tiny", action="store_true", help="layers / 4, width / 8 (the default on a CPU)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", type=Path, default=None, help="write the rows as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    import torch  # lazy: torch

    from models.base import check_device  # lazy: torch

    args = build_parser().parse_args(argv)
    if args.semcor_limit < 1 or (args.limit is not None and args.limit < 1):
        raise SystemExit("error: --semcor-limit and --limit must be positive")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = str(check_device(args.device)) if args.device else ("cuda" if torch.cuda.is_available() else "cpu")
    shapes = shapes_named(args.shapes, args.tiny or device == "cpu")
    rows = run_ladder(shapes, semcor_limit=args.semcor_limit, limit=args.limit, device=device)
    print(ladder_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 1 if rows and all("error" in r for r in rows) else 0  # nothing measured is a failure


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
