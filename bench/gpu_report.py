"""The report of ``bench/gpu_check.py``: its JSON as it stands, and the Markdown a person reads.

    python bench/gpu_report.py OUT      # rewrite OUT/gpu_check.md from OUT/gpu_check.json

``write_report(report, out)`` rewrites ``out/gpu_check.json`` and ``out/gpu_check.md`` (after every part,
so a run cut short still leaves what it measured). The Markdown leads with the targets (met, missed, or
open where the part that measures them did not run on a GPU), then what was skipped and every error,
then one section per part.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scale_ladder import ladder_table  # noqa: E402
from corpora.errors import LabError, run_command  # noqa: E402

TARGETS = {"extraction / forward (MiniLM shape)": 0.5, "Llama-1B shape extraction words/s": 30_000}  # issue 33


def _f(x, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def steps_of(report: dict, part: str) -> dict:
    return report.get("parts", {}).get(part, {}).get("steps", {})


def skipped_list(report: dict) -> list[str]:
    return [f"{part}: {s}" for part, rec in report.get("parts", {}).items() for s in rec.get("skipped", [])]


def errors_list(report: dict) -> list[str]:
    out = [f"env: {report['env']['error']}"] if "error" in report.get("env", {}) else []
    for part, rec in report.get("parts", {}).items():
        out += [f"{part}: {rec['error']}"] if rec.get("error") else []
        for name, s in rec.get("steps", {}).items():
            out += [f"{part} / {name}: {s[k]}" for k in ("error", "forward_error") if k in s]
        rows = rec.get("steps", {}).get("ladder", {}).get("rows", [])
        out += [f"{part} / {r['name']}: {r['error']}" for r in rows if "error" in r]
    return out


def targets(report: dict) -> list[dict]:
    """The issue's GPU targets: measured value, goal, and met / missed / open (not measured on a GPU)."""
    cuda = bool(report.get("env", {}).get("cuda"))
    minilm = steps_of(report, "speed").get("minilm", {})
    share = minilm.get("extraction_share")
    llama = [r for r in steps_of(report, "ladder").get("ladder", {}).get("rows", []) if r["name"] == "llama-1b"]
    wps = llama[0].get("words_per_s") if llama else None
    out = []
    for (name, goal), value, shown in zip(
        TARGETS.items(), (share, wps), (_f(share, ".2f"), _f(wps) + (" (cpu)" if not cuda and wps else ""))
    ):
        on_gpu = cuda and value is not None
        met = ("met" if value >= goal else "missed") if on_gpu else "open (not measured on a GPU)"
        out.append({"target": name, "measured": shown, "goal": f"≥ {goal:,}", "status": met})
    return out


def summary(report: dict) -> list[str]:
    """One line each: the worst GPU-vs-CPU feature difference, and the probe rows within the tolerance."""
    feats = [s for s in steps_of(report, "features").values() if "error" not in s]
    probes = [s for s in steps_of(report, "probes").values() if "rows" in s]
    out = []
    if feats:
        rel, cos = max(max(s["max_rel_err"]) for s in feats), min(min(s["min_cosine"]) for s in feats)
        out.append(
            f"- Features, GPU against CPU (models: {len(feats)}): relative error ≤ {rel:.2e}, cosine ≥ {cos:.6f}."
        )
    if probes:
        rows, same = sum(s["rows"] for s in probes), sum(s["identical"] for s in probes)
        outside = sum(s["outside_count"] for s in probes)
        worst = max(s["max_abs_diff"] for s in probes)
        out.append(
            f"- Probes on the GPU (commands: {len(probes)}): {rows - outside} of {rows} rows within "
            f"±{report.get('tolerance', 0.1):g} points, {same} identical, largest difference {worst:.3f}."
        )
    return out


def _features(report: dict) -> list[str]:
    rows = [
        "| model | weights | sentences / words | layer | max abs diff | max rel. error | min cosine |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in steps_of(report, "features").items():
        if "error" in s:
            continue
        for j, (d, r, c) in enumerate(zip(s["max_abs_diff"], s["max_rel_err"], s["min_cosine"])):
            rows.append(
                f"| {name} | {s['source']} | {s['sentences']} / {s['words']:,} | {j} | {d:.2e} | {r:.2e} | {c:.6f} |"
            )
    return rows if len(rows) > 2 else ["(not run)"]


def _speed(report: dict) -> list[str]:
    rows = [
        "| model | weights | device | words | extraction words/s | forward words/s | extraction / forward | "
        "pieces/word | batches | peak RSS MB | peak GPU MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in steps_of(report, "speed").items():
        if "error" not in s:
            rows.append(
                f"| {name} | {s['source']} | {s['device']} | {s['words']:,} | {_f(s['extraction_words_per_s'])} | "
                f"{_f(s.get('forward_words_per_s'))} | {_f(s.get('extraction_share'), '.2f')} | "
                f"{_f(s.get('pieces_per_word'), '.2f')} | {s.get('batches', '-')} | "
                f"{_f(s.get('extraction_peak_rss_mb'))} | {_f(s.get('extraction_cuda_peak_mb'))} |"
            )
    return rows if len(rows) > 2 else ["(not run)"]


def _probes(report: dict) -> list[str]:
    tol = report.get("tolerance", 0.1)
    rows = [
        f"| command | compared with | rows | identical | max abs diff | outside ±{tol:g} | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    outside = []
    for name, s in steps_of(report, "probes").items():
        if "error" in s:
            continue
        if "rows" not in s:  # a reference run (the CPU half of --quick)
            rows.append(f"| `{s['command']}` | (the reference) | - | - | - | - | {s['wall_s']} |")
            continue
        rows.append(
            f"| `{s['command']}` | {s['reference']} | {s['rows']} | {s['identical']} | {s['max_abs_diff']:.3f} | "
            f"{s['outside_count']} | {s['wall_s']} |"
        )
        outside += [f"- {name}: {r}" for r in s["outside"]]
    if len(rows) == 2:
        return ["(not run)"]
    return rows + (["", "Rows outside the tolerance (or missing from the reference):", *outside] if outside else [])


def markdown(report: dict) -> str:
    env = report.get("env", {})
    gpu = env.get("gpu") or "no GPU"
    lines = [
        f"# GPU check: {gpu}, {env.get('date_utc', '?')}",
        "",
        f"`{report['command']}` ({report['mode']}; budget {report['budget_s']:.0f} s, "
        f"{report.get('elapsed_s', 0):.0f} s so far). Machine: {env.get('cpus')} CPUs, torch {env.get('torch')} "
        f"(CUDA {env.get('torch_cuda')}), {gpu}"
        + (f" ({env['gpu_memory_gb']} GiB)" if env.get("gpu_memory_gb") else "")
        + f"; git {env.get('git_head')}.",
        "",
        "Models: " + "; ".join(f"{k}: {v}" for k, v in env.get("models", {}).items()),
        "",
        "## Targets",
        "",
        "| target | measured | goal | status |",
        "|---|---|---|---|",
        *(f"| {t['target']} | {t['measured']} | {t['goal']} | {t['status']} |" for t in targets(report)),
        "",
        *summary(report),
        "",
        "## Skipped",
        "",
        *([f"- {s}" for s in skipped_list(report)] or ["nothing"]),
        "",
        "## Errors",
        "",
        *([f"- {e}" for e in errors_list(report)] or ["none"]),
        "",
        "## Features: GPU (default fp16) against CPU (fp32), CoNLL-2000 test sentences",
        "",
        "Relative error: the largest |difference| over the layer's largest |value|; cosine: of a word's two vectors.",
        "",
        *_features(report),
        "",
        "## Speed: extraction against the forward alone on the same batches (SemCor sentences)",
        "",
        *_speed(report),
        "",
        "## Scale ladder (bench/scale_ladder.py): WSD with --semcor-limit, cold feature cache",
        "",
    ]
    ladder = steps_of(report, "ladder").get("ladder")
    if ladder:
        notes = report["parts"]["ladder"].get("notes", [])
        lines += [f"SemCor sentences: {ladder['semcor_limit']}. " + " ".join(notes), "", ladder_table(ladder["rows"])]
    else:
        lines.append("(not run)")
    lines += ["", f"## Probes on the GPU (tolerance {report.get('tolerance', 0.1):g} points)", "", *_probes(report)]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out: Path) -> None:
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "gpu_check.md").write_text(markdown(report))


def main(argv: list[str] | None = None) -> int:
    """Re-render a run's Markdown from its JSON (after a change to this module, or a JSON copied off a GPU box)."""
    p = argparse.ArgumentParser(
        description="Rewrite OUT/gpu_check.md from OUT/gpu_check.json (bench/gpu_check.py's run)."
    )
    p.add_argument("out", type=Path, help="the folder bench/gpu_check.py wrote (--out)")
    args = p.parse_args(argv)
    source = args.out / "gpu_check.json"
    try:
        report = json.loads(source.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabError(f"cannot read {source}: {exc}") from exc
    missing = (
        [k for k in ("parts", "command", "mode", "budget_s") if k not in report] if isinstance(report, dict) else []
    )
    if not isinstance(report, dict) or missing:
        raise LabError(f"{source} is not a report of bench/gpu_check.py (it lacks {', '.join(missing) or 'an object'})")
    try:
        text = markdown(report)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # the right keys holding something else
        raise LabError(f"{source} is not a report of bench/gpu_check.py: {exc!r}") from exc
    (args.out / "gpu_check.md").write_text(text)
    print(f"wrote {args.out / 'gpu_check.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "nothing was written"))
