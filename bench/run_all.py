"""The issue-7 benchmark: extraction speed, feature-cache speed and peak memory, in one run.

    .venv/bin/python bench/run_all.py [--sentences 2000] [--quick] [--json results.json]

Measures on this machine, each part in its own subprocess (so every peak-RSS figure is that
part's own, not the high-water mark of everything before it):

1. ``minilm``: MiniLM words/s, our batched ``embed`` vs a naive loop (plain ``transformers``
   forward, one sentence at a time, same tokenization and mean pooling) on the same SemCor
   sentences, with the largest fp32 vector difference; a plain length-sorted batch-of-32
   reference; on CPU also a low-precision copy (``--low-precision``: bf16 weights through the
   embedder's ``cpu_bf16`` path, the default, or dynamic int8 via ``torch.ao.quantization``) with
   its deviation from fp32 (reported separately; never in the ratios).
2. ``lowp-probe`` (CPU only): the WSD probe on a SemCor slice with fp32 vs low-precision MiniLM
   features, F1 on ALL.
3. ``elmo``: the same batched-vs-one-at-a-time comparison for ELMo.
4. ``wsd-cold`` then ``wsd-warm``: the WSD probe (SemCor -> ALL, every layer and the layer mean)
   with an empty feature cache in a temporary directory, then again from that cache (``--repeats``
   fresh processes, averaged: a 6-second run varies by up to 50 % on a shared VM). All run with
   a temporary ``EMBPROBE_CACHE`` that holds links to the shared cache's reader caches (parsed
   SemCor etc., loaded untimed before either run, so they are warm for both) and nothing else: the
   probe's own derived caches (its SemCor view, the WordNet sense inventory) start empty in the
   cold run. The shared cache is not touched.
5. ``host``: the host side of extraction with the model's forward replaced by preallocated hidden states
   (``bench.bench_host``): MiniLM's and a Llama-1B's shapes, host words/s and feature MB/s written.
6. Peak memory: the RSS high-water mark of each path (``bench.measure.PeakRSS``) and of each part's process.

Extraction paths run ``--repeats`` times (3 by default, interleaved, averaged) after a warm-up.

Prints a table, writes everything as JSON with ``--json``, and ends with the smallest of the
three headline ratios (MiniLM batched/naive, ELMo batched/naive, WSD cold/warm). Not a test.
On a GPU machine the same command runs everything on CUDA (fp16 extraction; the CPU low-precision
path is skipped).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from corpora.errors import run_command  # noqa: E402
from corpora.temps import write_atomically  # noqa: E402 — after the path: bench/ runs from any folder

PARTS = ("minilm", "lowp-probe", "elmo", "wsd-cold", "wsd-warm", "host")
TARGETS = {"minilm": 3.0, "minilm_gpu": 20.0, "elmo": 3.0, "wsd": 20.0}
#: Pickle caches of the data readers (parsed corpora): warm in both WSD runs.
READER_CACHES = ("semcor-", "conll2000-", "treebank-", "lm_corpus-")


# ----------------------------------------------------------------------------- helpers (child side)
def _setup(args) -> None:
    import torch

    from models.allocator import reuse_freed_memory

    torch.set_num_threads(args.threads)
    reuse_freed_memory()  # the same allocator settings for every path measured in this process
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _load(name: str):
    """Registry name, or an ELMo asset directory; returns (embedder, load seconds)."""
    t0 = time.perf_counter()
    if Path(name).is_dir():
        from models.elmo.embedder import load_elmo_asset

        emb = load_elmo_asset(Path(name).name, assets_dir=Path(name).parent)
    else:
        from models.registry import load_embedder

        emb = load_embedder(name)
    return emb, time.perf_counter() - t0


LOW_PRECISION = ("bf16", "int8", "none")


def low_precision_copy(emb, kind: str):
    """A CPU low-precision copy of a transformer embedder; ``emb`` keeps its fp32 weights.

    "bf16": the embedder's own ``cpu_bf16`` path (bfloat16 weights and activations; AMX /
    AVX512-BF16 matmuls where the CPU has them). "int8": dynamic quantization of the Linear layers
    (int8 weights, fp32 activations).
    """
    import torch

    q = copy.copy(emb)
    if kind == "bf16":
        q.model = copy.deepcopy(emb.model)
        q.cpu_bf16 = True
        q.to("cpu")
    elif kind == "int8":
        from torch.ao.quantization import quantize_dynamic

        with warnings.catch_warnings():  # torch 2.13 marks torch.ao.quantization deprecated (torchao replaces it)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            q.model = quantize_dynamic(emb.model, {torch.nn.Linear}, dtype=torch.qint8)  # a copy
    else:
        raise ValueError(f"low-precision kind must be 'bf16' or 'int8', got {kind!r}")
    q._fp = f"{emb._fp}|{kind}"  # never share a feature-cache entry with the fp32 model
    return q


def _compare(ref: list, other: list) -> dict:
    """Max abs difference and per-layer cosine similarity of two lists of (L+1, W, D) arrays."""
    import numpy as np

    a = np.concatenate([r.vectors for r in ref], axis=1)  # (L+1, N, D)
    b = np.concatenate([o.vectors for o in other], axis=1)
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-12)
    return {
        "max_abs_diff": float(np.abs(a - b).max()),
        "max_abs_value": float(np.abs(a).max()),
        "mean_cosine": float(cos.mean()),
        "min_cosine": float(cos.min()),
        "mean_cosine_per_layer": [round(float(c), 5) for c in cos.mean(1)],
    }


def _all_f1(result) -> dict[str, float]:
    return {r["layer"]: r["value"] for r in result.rows if r["dataset"] == "ALL" and r["metric"] == "F1"}


def part_minilm(args) -> dict:
    import time as _t

    from bench.bench_transformer import bench_transformer, semcor_sentences
    from bench.measure import PeakRSS, rss_mb

    emb, load_s = _load("minilm")
    sents = semcor_sentences(args.sentences)
    out = {
        "model": "minilm",
        "device": str(emb.device),
        "dtype": str(emb.dtype),
        "load_s": load_s,
        "rss_after_load_mb": rss_mb(),
        "max_tokens": emb.max_tokens,
    }
    ref = args.reference_batch if emb.family == "bert" else None
    kind = args.low_precision
    r = bench_transformer(emb, sents, repeats=args.repeats, reference_batch=ref, keep_outputs=kind != "none")
    batched = r.pop("outputs", None)
    out.update(r)
    if kind == "none" or emb.device.type != "cpu":
        out["lowp"] = {"skipped": "--low-precision none" if kind == "none" else "a CPU path"}
        return out
    q = low_precision_copy(emb, kind)
    q.embed(sents[:8])
    with PeakRSS() as m:
        t0 = _t.perf_counter()
        qout = q.embed(sents)
        t = _t.perf_counter() - t0
    out["lowp"] = {
        "kind": kind,
        "words_per_s": r["words"] / t,
        "s": t,
        "speedup_vs_naive": r["naive_s"] / t,
        "speedup_vs_fp32_batched": r["batched_s"] / t,
        **_compare(batched, qout),
        **m.as_dict("lowp"),
    }
    return out


def part_lowp_probe(args) -> dict:
    from probes.registry import RunContext, get_probe

    wsd = get_probe("wsd")
    emb, _ = _load("minilm")
    kind = args.low_precision
    if emb.device.type != "cpu":
        return {"skipped": "the low-precision path is a CPU path"}
    scores, times = {}, {}
    with tempfile.TemporaryDirectory(prefix="embprobe-bench-lowp-") as tmp:
        for label, model in (("fp32", emb), (kind, low_precision_copy(emb, kind))):
            t0 = time.perf_counter()
            ctx = RunContext(limit=args.wsd_limit, feature_root=Path(tmp) / label, show_progress=False)
            res = wsd.run(model, None, ctx, semcor_limit=args.lowp_semcor_limit)
            times[label] = time.perf_counter() - t0
            scores[label] = _all_f1(res)
    delta = {k: round(scores[kind][k] - scores["fp32"][k], 2) for k in scores["fp32"]}
    return {
        "kind": kind,
        "semcor_limit": args.lowp_semcor_limit,
        "eval_limit": args.wsd_limit,
        "eval_instances": res.extra["eval_instances"],
        "f1_all": scores,
        "delta_f1": delta,
        "max_abs_delta_f1": max(abs(v) for v in delta.values()),
        "run_s": times,
    }


def part_elmo(args) -> dict:
    from bench.bench_elmo import bench_elmo
    from bench.bench_transformer import semcor_sentences
    from bench.measure import rss_mb

    emb, load_s = _load(args.elmo_model)
    sents = semcor_sentences(args.sentences)
    out = {
        "model": emb.name,
        "source": emb.info.source,
        "device": str(emb.device),
        "load_s": load_s,
        "rss_after_load_mb": rss_mb(),
        "max_tokens": emb.max_tokens,
    }
    out.update(bench_elmo(emb, sents, repeats=args.repeats))
    return out


def part_wsd(args) -> dict:
    from bench.measure import PeakRSS, rss_mb
    from corpora.semcor import load_semcor
    from corpora.wsd_eval import load_wsd_dataset
    from probes.registry import RunContext, get_probe

    # The readers' parsed-corpus caches: warm for both runs, untimed.
    load_semcor()
    load_wsd_dataset("ALL")
    emb, load_s = _load(args.wsd_model)
    out = {
        "model": emb.name,
        "device": str(emb.device),
        "load_s": load_s,
        "rss_after_load_mb": rss_mb(),
        "limit": args.wsd_limit,
        "semcor_limit": args.wsd_semcor_limit,
        "feature_root": args._root,
    }
    with PeakRSS() as m:
        t0 = time.perf_counter()
        ctx = RunContext(limit=args.wsd_limit, feature_root=Path(args._root), show_progress=sys.stderr.isatty())
        res = get_probe("wsd").run(emb, None, ctx, semcor_limit=args.wsd_semcor_limit)
        out["run_s"] = time.perf_counter() - t0
    out.update(m.as_dict("run"))
    out["extra"] = res.extra
    out["f1_all"] = _all_f1(res)
    out["rows"] = res.rows
    return out


def part_host(args) -> dict:
    from bench.bench_host import part_host as host

    return host(args)


CHILD = {
    "minilm": part_minilm,
    "lowp-probe": part_lowp_probe,
    "elmo": part_elmo,
    "wsd-cold": part_wsd,
    "wsd-warm": part_wsd,
    "host": part_host,
}


def run_child(args) -> int:
    from bench.measure import process_peak_mb
    from corpora.paths import DataMissingError
    from models.base import ModelLoadError

    _setup(args)
    t0 = time.perf_counter()
    try:
        res = CHILD[args._part](args)
    except (ModelLoadError, DataMissingError) as exc:  # a missing asset or data set: report, don't crash
        res = {"error": f"{type(exc).__name__}: {exc}"}
    res["process_peak_rss_mb"] = process_peak_mb()
    res["part_s"] = time.perf_counter() - t0
    Path(args._out).write_text(json.dumps(res, default=str))
    return 0


# ----------------------------------------------------------------------------- parent side
def machine_info(threads: int) -> dict:
    import torch

    from models.base import default_device

    dev = default_device()
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": threads,
        "device": str(dev),
        "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else None,
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
    }


def _forward_args(args) -> list[str]:
    out = [
        "--sentences",
        str(args.sentences),
        "--threads",
        str(args.threads),
        "--elmo-model",
        args.elmo_model,
        "--wsd-model",
        args.wsd_model,
        "--lowp-semcor-limit",
        str(args.lowp_semcor_limit),
        "--low-precision",
        args.low_precision,
        "--reference-batch",
        str(args.reference_batch),
        "--repeats",
        str(args.repeats),
    ]
    if args.wsd_limit is not None:
        out += ["--wsd-limit", str(args.wsd_limit)]
    if args.wsd_semcor_limit is not None:
        out += ["--wsd-semcor-limit", str(args.wsd_semcor_limit)]
    return out


def isolated_cache(root: Path) -> Path:
    """A fresh cache directory for the WSD parts with links to the shared reader caches (.npz) only."""
    from corpora.paths import cache_dir

    cache = root / "cache"
    cache.mkdir(exist_ok=True)
    for f in cache_dir().glob("*.npz"):
        if f.name.startswith(READER_CACHES) and not (cache / f.name).exists():
            (cache / f.name).symlink_to(f)
    return cache


def spawn(part: str, args, root: Path) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out_file = Path(fh.name)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_part",
        part,
        "--_out",
        str(out_file),
        "--_root",
        str(root),
        *_forward_args(args),
    ]
    print(f"[{time.strftime('%H:%M:%S')}] running part {part} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    env = dict(os.environ)
    if part.startswith("wsd-"):
        env["EMBPROBE_CACHE"] = str(isolated_cache(root))
    proc = subprocess.run(cmd, cwd=REPO, env=env)
    wall = time.perf_counter() - t0
    try:
        res = json.loads(out_file.read_text()) if out_file.stat().st_size else {}
    except (OSError, ValueError):
        res = {}
    finally:
        out_file.unlink(missing_ok=True)
    if proc.returncode != 0 and "error" not in res:
        res["error"] = f"part {part} exited with status {proc.returncode} (traceback above)"
    res["wall_s"] = wall
    return res


def spawn_repeated(part: str, args, root: Path, times: int) -> dict:
    """``spawn`` ``times`` times (each a fresh process); ``run_s`` becomes the mean, ``runs_s`` lists all."""
    runs = [spawn(part, args, root) for _ in range(max(1, times))]
    failed = [r for r in runs if "run_s" not in r]
    if failed:
        return failed[0]
    res = dict(runs[-1])
    res["runs_s"] = [r["run_s"] for r in runs]
    res["run_s"] = sum(res["runs_s"]) / len(runs)
    res["process_peak_rss_mb"] = max(r["process_peak_rss_mb"] for r in runs)
    return res


def _fmt(x, spec: str = ",.0f", none: str = "-") -> str:
    return none if x is None else format(x, spec)


def ratios(parts: dict) -> dict[str, dict]:
    """The headline ratios (name -> {value, target, met, label})."""
    out = {}
    m, e = parts.get("minilm", {}), parts.get("elmo", {})
    cold, warm = parts.get("wsd-cold", {}), parts.get("wsd-warm", {})
    if "speedup" in m:
        target = TARGETS["minilm_gpu"] if m.get("device", "cpu").startswith("cuda") else TARGETS["minilm"]
        out["minilm"] = {"value": m["speedup"], "target": target, "label": "minilm batched vs naive"}
    if "speedup" in e:
        out["elmo"] = {"value": e["speedup"], "target": TARGETS["elmo"], "label": "elmo batched vs naive"}
    if "run_s" in cold and "run_s" in warm:
        out["wsd"] = {
            "value": cold["run_s"] / warm["run_s"],
            "target": TARGETS["wsd"],
            "label": f"wsd {cold.get('model')} warm vs cold cache",
        }
    for r in out.values():
        r["met"] = r["value"] >= r["target"]
    return out


def print_report(info: dict, parts: dict, rat: dict, args) -> None:
    p = print
    p(
        f"Issue-7 benchmark, {info['date_utc']}; {info['platform']}; {info['cpus']} CPUs; python {info['python']}; "
        f"torch {info['torch']} ({info['torch_threads']} threads); device {info['device']}"
        + (f" ({info['gpu']})" if info["gpu"] else " (no GPU)")
    )
    p(f"load average at start {info['load_avg_start']}, at end {info['load_avg_end']}")
    m, e = parts.get("minilm", {}), parts.get("elmo", {})
    if "words" in m:
        p(
            f"extraction: {m['sentences']} SemCor sentences (brown1), {m['words']:,} words, "
            f"{m['pieces_with_specials']:,} MiniLM pieces; batched max_tokens MiniLM {m.get('max_tokens')}, "
            f"ELMo {e.get('max_tokens', '-')}"
        )
    p("")
    hdr = (
        f"{'part':<8} {'path':<40} {'time s':>8} {'words/s':>9} {'ratio':>7} {'max|Δ| vs naive':>16} "
        f"{'peak RSS MB (rise)':>19}"
    )
    p(hdr)
    p("-" * len(hdr))

    def row(part, path, t, wps, ratio, diff, peak, rise):
        ratio_s = "" if ratio is None else f"{ratio:.2f}x"
        diff_s = "" if diff is None else f"{diff:.1e}"
        mem = "" if peak is None else f"{peak:,.0f} ({rise:+,.0f})"
        p(f"{part:<8} {path:<40} {_fmt(t, '.1f'):>8} {_fmt(wps):>9} {ratio_s:>7} {diff_s:>16} {mem:>19}")

    for label, d in (("MiniLM", m), ("ELMo", e)):
        if "error" in d:
            p(f"{label:<8} not measured: {d['error']}")
            continue
        if "speedup" not in d:
            continue
        row(
            label,
            "naive loop, 1 sentence per forward",
            d["naive_s"],
            d["naive_words_per_s"],
            1.0,
            None,
            d.get("naive_peak_rss_mb"),
            d.get("naive_rss_rise_mb", 0),
        )
        k = f"sorted{args.reference_batch}"
        if f"{k}_s" in d:
            row(
                label,
                f"plain length-sorted batches of {args.reference_batch}",
                d[f"{k}_s"],
                d[f"{k}_words_per_s"],
                d[f"{k}_speedup"],
                d[f"{k}_max_abs_diff"],
                d.get(f"{k}_peak_rss_mb"),
                d.get(f"{k}_rss_rise_mb", 0),
            )
        row(
            label,
            "ours: batched embed() (fp32)" if d.get("device") == "cpu" else "ours: batched embed()",
            d["batched_s"],
            d["batched_words_per_s"],
            d["speedup"],
            d["max_abs_diff"],
            d.get("batched_peak_rss_mb"),
            d.get("batched_rss_rise_mb", 0),
        )
        q = d.get("lowp", {})
        if "words_per_s" in q:
            row(
                label,
                f"ours batched, {q['kind']} (separate)",
                q["s"],
                q["words_per_s"],
                q["speedup_vs_naive"],
                q["max_abs_diff"],
                q.get("lowp_peak_rss_mb"),
                q.get("lowp_rss_rise_mb", 0),
            )
        p(
            f"{'':<8} process peak RSS {d['process_peak_rss_mb']:,.0f} MB (after model load "
            f"{d['rss_after_load_mb']:,.0f} MB); model load {d['load_s']:.1f} s"
        )
    cold, warm = parts.get("wsd-cold", {}), parts.get("wsd-warm", {})
    for label, d in (("cold", cold), ("warm", warm)):
        if "error" in d:
            p(f"{'WSD':<8} {label}: not measured: {d['error']}")
            continue
        if "run_s" not in d:
            continue
        ratio = cold["run_s"] / d["run_s"] if "run_s" in cold else None
        n = len(d.get("runs_s", [0]))
        what = (
            "extract + cache + 1-NN"
            if label == "cold"
            else "features from cache + 1-NN" + (f", mean of {n}" if n > 1 else "")
        )
        row(
            "WSD",
            f"{d['model']} {label}: {what}",
            d["run_s"],
            None,
            ratio,
            None,
            d.get("run_peak_rss_mb"),
            d.get("run_rss_rise_mb", 0),
        )
    if "run_s" in cold:
        ex = cold["extra"]
        lim = "".join(
            f" (--{k} {cold[v]})"
            for k, v in (("wsd-limit", "limit"), ("wsd-semcor-limit", "semcor_limit"))
            if cold.get(v) is not None
        )
        p(
            f"{'':<8} SemCor {ex['semcor_sentences']:,} sentences / {ex['semcor_tokens']:,} tagged tokens -> "
            f"ALL {ex['eval_instances']:,} instances, {len(cold['f1_all'])} layer specs{lim}; "
            f"process peak RSS cold {cold['process_peak_rss_mb']:,.0f} MB, warm "
            f"{warm.get('process_peak_rss_mb', float('nan')):,.0f} MB; model load {cold['load_s']:.1f} s (not timed)"
        )
        if "rows" in warm:
            same = cold["rows"] == warm["rows"]
            if len(warm.get("runs_s", [])) > 1:
                p(f"{'':<8} warm runs (s): " + ", ".join(f"{x:.1f}" for x in warm["runs_s"]))
            p(
                f"{'':<8} warm results identical to cold: {same}; F1 on ALL by layer: "
                + ", ".join(f"{k} {v:.1f}" for k, v in cold["f1_all"].items())
            )
    p("")
    q = m.get("lowp", {})
    if "words_per_s" in q:
        p(
            f"{q['kind']} (CPU, separate): {q['speedup_vs_fp32_batched']:.2f}x our fp32 batched, "
            f"{q['speedup_vs_naive']:.2f}x naive; max |{q['kind']} - fp32| {q['max_abs_diff']:.3f} (largest |fp32| "
            f"value {q['max_abs_value']:.1f}); cosine to fp32 mean {q['mean_cosine']:.4f}, min {q['min_cosine']:.4f}"
        )
    elif q:
        p(f"low precision: not measured ({q.get('skipped', q)})")
    if parts.get("host"):
        from bench.bench_host import print_host

        print_host(parts["host"])
    ip = parts.get("lowp-probe", {})
    if "delta_f1" in ip:
        k = ip["kind"]
        p(
            f"{k} effect on WSD F1 (ALL, {ip['eval_instances']:,} instances, SemCor first {ip['semcor_limit']} "
            f"sentences): max |ΔF1| {ip['max_abs_delta_f1']:.2f} points; by layer "
            + ", ".join(f"{x} {ip['f1_all']['fp32'][x]:.1f}->{ip['f1_all'][k][x]:.1f}" for x in ip["delta_f1"])
        )
    elif ip:
        p(f"low-precision probe effect: not measured ({ip.get('error') or ip.get('skipped')})")
    for r in rat.values():
        p(f"ratio {r['label']}: {r['value']:.2f}x (target >= {r['target']:.0f}x: {'met' if r['met'] else 'NOT met'})")
    missing = [k for k in ("minilm", "elmo", "wsd") if k not in rat]
    if missing:
        p(f"not measured: {', '.join(missing)}")
    if rat:
        worst = min(rat.values(), key=lambda r: r["value"])
        p(f"min ratio: {worst['value']:.1f}x ({worst['label']})")
    else:
        p("min ratio: n/a (no part completed)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=None, help="SemCor sentences for extraction (2000; --quick 200)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes for development: 200 sentences, WSD and low-precision probe on short slices",
    )
    p.add_argument("--json", type=Path, default=None, help="write all measurements to this JSON file")
    p.add_argument("--threads", type=int, default=2, help="torch threads per part (default 2)")
    p.add_argument("--elmo-model", default="elmo-small", help="registry name or ELMo asset directory")
    p.add_argument("--wsd-model", default="minilm", help="model for the cold/warm WSD run")
    p.add_argument(
        "--wsd-limit",
        type=int,
        default=None,
        help="first N sentences of SemCor and of each eval set (default: all; --quick 50)",
    )
    p.add_argument(
        "--wsd-semcor-limit",
        type=int,
        default=None,
        help="first N SemCor sentences only for the cold/warm WSD run (default: as --wsd-limit)",
    )
    p.add_argument(
        "--lowp-semcor-limit",
        type=int,
        default=None,
        help="SemCor sentences for the low-precision probe check (default 2000; --quick 50)",
    )
    p.add_argument(
        "--low-precision",
        choices=LOW_PRECISION,
        default="bf16",
        help="the CPU low-precision path reported separately (default bf16; none: skip it)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repetitions of each extraction path, interleaved and averaged (3; --quick 1): "
        "single runs of the same path vary by up to 30 %% on a shared VM",
    )
    p.add_argument("--reference-batch", type=int, default=32, help="plain sorted batch size (0: skip)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    for hidden in ("--_part", "--_out", "--_root"):
        p.add_argument(hidden, default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.sentences is None:
        args.sentences = 200 if args.quick else 2000
    if args.quick and args.wsd_limit is None:
        args.wsd_limit = 50
    if args.lowp_semcor_limit is None:
        args.lowp_semcor_limit = 50 if args.quick else 2000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args._part:
        return run_child(args)
    parts_wanted = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = [x for x in parts_wanted if x not in PARTS]
    if bad:
        print(f"error: unknown part(s) {bad}; choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    if args.low_precision == "none" and "lowp-probe" in parts_wanted:
        parts_wanted.remove("lowp-probe")
    if "wsd-warm" in parts_wanted and "wsd-cold" not in parts_wanted:
        print(
            "error: wsd-warm needs wsd-cold in the same run (the cold run fills the temporary cache)", file=sys.stderr
        )
        return 2
    info = machine_info(args.threads)
    root = Path(tempfile.mkdtemp(prefix="embprobe-bench-features-"))
    results: dict[str, dict] = {}
    t0 = time.perf_counter()
    try:
        for part in PARTS:
            if part == "wsd-warm" and part in parts_wanted:  # short: repeat it like the extraction paths
                results[part] = spawn_repeated(part, args, root, args.repeats)
            elif part in parts_wanted:
                results[part] = spawn(part, args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    info["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    info["total_s"] = round(time.perf_counter() - t0, 1)
    rat = ratios(results)
    print_report(info, results, rat, args)  # first: a --json that cannot be written loses no report
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "machine": info,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if not k.startswith("_")},
            "parts": results,
            "ratios": rat,
            "min_ratio": min(rat.values(), key=lambda r: r["value"]) if rat else None,
        }
        write_atomically(args.json, json.dumps(payload, indent=1, default=str))  # an older one stays whole
    return 1 if results and all("error" in r for r in results.values()) else 0  # nothing measured is a failure


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
