#!/usr/bin/env python3
"""kvcalc's speed and memory targets, measured (a script, not a test).

    python benchmarks/bench.py            # all measurements, a summary table, exit 1 if a target is missed
    python benchmarks/bench.py --quick    # fewer repetitions

Targets (issue: "Never a traceback, never a wrong number"):
  cold start of `kvcalc plan --format json`      <= 1.5 x `python -c "import typer, rich, yaml"` (same run)
  in-process plans/s, 62-layer MLA + drafter     >= 5,000
  peak RSS of `kvcalc plan --format json`        <= 80 MB
  torch imported                                 only with --verify
Also reported: plans/s for a 32-layer dense and a 48-layer hybrid layout, a 10,000-point sweep.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
sys.path.insert(0, ROOT)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.machine()}"


def timed_run(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t


def cold_start(repeats: int, python: str) -> dict:
    # Installed packages ship compiled bytecode; an editable checkout under PYTHONDONTWRITEBYTECODE would
    # recompile kvcalc on every start. Compile it once so both sides are measured alike.
    compileall.compile_dir(os.path.join(ROOT, "kvcalc"), quiet=1)
    ours = [python, "-m", "kvcalc", "plan", os.path.join(EXAMPLES, "llama-3.1-8b.yaml"), "--format", "json"]
    base = [python, "-c", "import typer, rich, yaml"]
    a, b = [], []
    timed_run(ours), timed_run(base)  # warm the file cache
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        a.append(timed_run(ours))
        b.append(timed_run(base))
    ma, mb = statistics.median(a), statistics.median(b)
    return {"kvcalc_plan_s": round(ma, 4), "import_baseline_s": round(mb, 4), "ratio": round(ma / mb, 3),
            "target": 1.5, "ok": ma / mb <= 1.5}


def plans_per_second(seconds: float) -> dict:
    from kvcalc import load_layout, plan

    out = {}
    for label, example in (("dense 32 layers", "llama-3.1-8b.yaml"),
                           ("MLA 61 + drafter (62 layers)", "kimi-k2.5-eagle3-tp4.yaml"),
                           ("hybrid 48 layers (GDN)", "qwen3-next-80b-tp4.yaml")):
        layout = load_layout(os.path.join(EXAMPLES, example))
        plan(layout)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(50):
                plan(layout)
            n += 50
        out[label] = round(n / (time.perf_counter() - t0))
    return {"plans_per_s": out, "target_mla_drafter": 5000,
            "ok": out["MLA 61 + drafter (62 layers)"] >= 5000}


def sweep_10k() -> dict:
    from kvcalc.load import read_input
    from kvcalc.sweep import grid, run

    top, _, source = read_input(os.path.join(EXAMPLES, "llama-3.1-8b.yaml"))
    axes = {"tp": [1, 2, 4, 8], "block_size": [16, 32, 64, 128, 256],
            "cpu_bytes": [f"{g}GiB" for g in range(1, 51)],
            "vllm_version": ["0.17.0", "0.19.1", "0.20.0", "0.21.0", "0.22.1", "0.24.0", "0.26.0", "0.28.0",
                             "0.30.0", "0.33.0"]}
    points = grid(axes)
    t0 = time.perf_counter()
    rows = sum(1 for _ in run(top, source, points))
    dt = time.perf_counter() - t0
    return {"points": rows, "seconds": round(dt, 2), "points_per_s": round(rows / dt)}


def peak_rss() -> dict:
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "kvcalc", "plan",
           os.path.join(EXAMPLES, "kimi-k2.5-eagle3-tp4.yaml"), "--format", "json"]
    kib = int(subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip())
    return {"peak_rss_mb": round(kib / 1024, 1), "target_mb": 80, "ok": kib / 1024 <= 80}


def torch_free() -> dict:
    code = ("import sys, io, contextlib, kvcalc.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    c.main(['plan', {os.path.join(EXAMPLES, 'deepseek-v3-tp4.yaml')!r}, '--format', 'json'])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {"torch_imported_without_verify": out == "True", "ok": out == "False"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the cold-start comparison, e.g. a venv with a regular (non-editable) "
                         "install: an editable install adds its import finder (~27 ms here) to every start")
    args = ap.parse_args()
    results = {
        "machine": machine(),
        "cold_start": cold_start(7 if args.quick else 25, args.python),
        "plans": plans_per_second(0.5 if args.quick else 2.0),
        "sweep": sweep_10k(),
        "memory": peak_rss(),
        "torch": torch_free(),
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        c, p, s, m = results["cold_start"], results["plans"], results["sweep"], results["memory"]
        print(f"machine: {results['machine']}")
        print(f"cold start ({args.python}): kvcalc plan {c['kvcalc_plan_s']:.3f} s vs import typer, rich, yaml "
              f"{c['import_baseline_s']:.3f} s -> ratio {c['ratio']:.2f} (target <= 1.5) {'ok' if c['ok'] else 'MISSED'}")
        for label, n in p["plans_per_s"].items():
            print(f"plans/s, {label}: {n:,}")
        print(f"  target >= 5,000 for MLA + drafter: {'ok' if p['ok'] else 'MISSED'}")
        print(f"sweep: {s['points']:,} points in {s['seconds']} s ({s['points_per_s']:,} points/s)")
        print(f"peak RSS: {m['peak_rss_mb']} MB (target <= 80) {'ok' if m['ok'] else 'MISSED'}")
        print(f"torch imported without --verify: {results['torch']['torch_imported_without_verify']}")
    return 0 if all(results[k]["ok"] for k in ("cold_start", "plans", "memory", "torch")) else 1


if __name__ == "__main__":
    sys.exit(main())
