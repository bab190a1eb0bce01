#!/usr/bin/env python3
"""kvcalc's speed and memory targets, measured as ratios within one run (a script, not a test).

    python benchmarks/bench.py                     # all measurements, a summary, exit 1 if a target is missed
    python benchmarks/bench.py --quick             # fewer repetitions
    python benchmarks/bench.py --baseline fdd2db9  # also plan with that commit, in the same run, for the speed-up

Targets (issue 9):
  in-process plans/s, 61-layer MLA + EAGLE3 drafter   >= 10,000 (and >= --min-speedup x the baseline commit, same
                                                        run: 4 for issue 9's rewrite, 0.9 for a refactor that keeps
                                                        speed, issue 18;
                                                        instructions a plan under callgrind reported beside it)
  512-layer dense plan                               <= 1.5 x a 32-layer dense plan
  10,000-point sweep                                 <= 1 s in-process, <= 2 s through the CLI
  cold start of `kvcalc plan --format json`          <= 1.3 x `python -c "import typer, rich, yaml"`
                                                        (wall clock, and instructions under callgrind when present)
  peak RSS of `kvcalc plan --format json`            <= 40 MB
  torch imported                                     only with --verify
  plans/s of an SGLang plan (issue 24)               >= 0.5 x a vLLM plan of the same model (Llama-3.1-8B on an
                                                        H100, a predicted budget; SGLang with HiCache)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
sys.path.insert(0, ROOT)

SWEEP_ARGS = ["--tp", "1,2,4,8", "--block-size", "16,32,64,128,256",
              "--cpu-bytes", ",".join(f"{g}GiB" for g in range(1, 51)),
              "--vllm-version", "0.17.0,0.19.1,0.20.0,0.21.0,0.22.1,0.24.0,0.26.0,0.28.0,0.30.0,0.33.0"]

# Plans/s of one example, as a script both this checkout and a baseline checkout can run (same API).
RATE_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from kvcalc import load_layout, plan
layout = load_layout(sys.argv[2])
plan(layout)
seconds = float(sys.argv[3])
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    for _ in range(50):
        plan(layout)
    n += 50
print(n / (time.perf_counter() - t0))
"""

# Instructions of N plans after 100 warm-up plans (interning, compiled record constructors), for callgrind: the
# difference between N and 0 plans over N is one plan's count, repeatable where wall-clock rates are not.
COUNT_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from kvcalc import load_layout, plan
layout = load_layout(sys.argv[2])
for _ in range(100):
    plan(layout)
for _ in range(int(sys.argv[3])):
    plan(layout)
"""


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


def timed_run(cmd: list[str], cwd: str = ROOT) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - t


def instructions(cmd: list[str], cwd: str) -> int | None:
    """Instructions the command executes, under callgrind (repeatable whatever the machine is doing)."""
    if not shutil.which("valgrind"):
        return None
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=cwd,
                       capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1].strip())
    return None


def cold_start(repeats: int, python: str, use_callgrind: bool) -> dict:
    # Installed packages ship compiled bytecode; an editable checkout under PYTHONDONTWRITEBYTECODE would
    # recompile kvcalc on every start. Compile it once so both sides are measured alike.
    compileall.compile_dir(os.path.join(ROOT, "kvcalc"), quiet=1)
    ours = [python, "-m", "kvcalc", "plan", os.path.join(EXAMPLES, "llama-3.1-8b.yaml"), "--format", "json"]
    base = [python, "-c", "import typer, rich, yaml"]
    neutral = tempfile.mkdtemp()  # no stray module in the working directory shadows the standard library
    a, b = [], []
    timed_run(ours, neutral), timed_run(base, neutral)  # warm the file cache
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        a.append(timed_run(ours, neutral))
        b.append(timed_run(base, neutral))
    ma, mb = statistics.median(a), statistics.median(b)
    out = {"kvcalc_plan_s": round(ma, 4), "import_baseline_s": round(mb, 4), "ratio": round(ma / mb, 3),
           "target": 1.3}
    ok = ma / mb <= 1.3
    if use_callgrind:
        ia, ib = instructions(ours, neutral), instructions(base, neutral)
        if ia and ib:
            out.update(instructions_kvcalc=ia, instructions_baseline=ib, instruction_ratio=round(ia / ib, 3))
            ok = ia / ib <= 1.3  # the repeatable measure decides when it is available
    out["ok"] = ok
    shutil.rmtree(neutral, ignore_errors=True)
    return out


def rate(checkout: str, example: str, seconds: float) -> float:
    r = subprocess.run([sys.executable, "-c", RATE_SCRIPT, checkout, os.path.join(EXAMPLES, example), str(seconds)],
                       capture_output=True, text=True, check=True, cwd=checkout)
    return float(r.stdout.strip())


def instructions_per_plan(checkout: str, example: str, n: int = 300) -> int | None:
    counts = [instructions([sys.executable, "-c", COUNT_SCRIPT, checkout, os.path.join(EXAMPLES, example), str(k)],
                           checkout) for k in (0, n)]
    if None in counts:
        return None
    return (counts[1] - counts[0]) // n


def plans(seconds: float, baseline: str | None, use_callgrind: bool = False, min_speedup: float = 4.0) -> dict:
    examples = {"MLA 61 + EAGLE3 drafter": "kimi-k2.5-eagle3-tp4.yaml", "dense 32 layers": "llama-3.1-8b.yaml",
                "hybrid 48 layers (GDN)": "qwen3-next-80b-tp4.yaml"}
    worktree = None
    if baseline:
        worktree = tempfile.mkdtemp(prefix="kvcalc-baseline-")
        subprocess.run(["git", "worktree", "add", "--detach", worktree, baseline], cwd=ROOT, check=True,
                       capture_output=True)
    out: dict = {"plans_per_s": {}, "baseline_plans_per_s": {}}
    try:
        for label, example in examples.items():
            ours, theirs = [], []
            for _ in range(3):  # interleaved
                ours.append(rate(ROOT, example, seconds))
                if worktree:
                    theirs.append(rate(worktree, example, seconds))
            out["plans_per_s"][label] = round(statistics.median(ours))
            if worktree:
                out["baseline_plans_per_s"][label] = round(statistics.median(theirs))
        if worktree and use_callgrind and shutil.which("valgrind"):
            # The MLA example's speed-up in instructions (callgrind): what the wall-clock ratio measures, without
            # the box's noise. Reported; the wall-clock ratio decides.
            example = examples["MLA 61 + EAGLE3 drafter"]
            ours_i, theirs_i = instructions_per_plan(ROOT, example), instructions_per_plan(worktree, example)
            if ours_i and theirs_i:
                out["instructions_per_plan"] = {"ours": ours_i, "baseline": theirs_i,
                                                "ratio": round(theirs_i / ours_i, 2)}
    finally:
        if worktree:
            subprocess.run(["git", "worktree", "remove", "--force", worktree], cwd=ROOT, capture_output=True)
    mla = out["plans_per_s"]["MLA 61 + EAGLE3 drafter"]
    out["target_mla_drafter"] = 10000
    ok = mla >= 10000
    if worktree:
        speedup = mla / out["baseline_plans_per_s"]["MLA 61 + EAGLE3 drafter"]
        out["speedup_vs_baseline"] = round(speedup, 2)
        out["target_speedup"] = min_speedup
        ok = ok and speedup >= min_speedup
    out["ok"] = ok
    return out


def layer_scaling(seconds: float) -> dict:
    from kvcalc import plan
    from kvcalc.inputs.layout.read import layout_from_dict

    def us_per_plan(n: int) -> float:
        layout = layout_from_dict({"model": {"num_layers": n, "num_kv_heads": 8, "head_size": 128},
                                   "cache": {"kv_cache_memory": "400GiB", "max_model_len": 8192},
                                   "offload": {"cpu_bytes_to_use": "64GiB"}}, source="bench")
        plan(layout)
        k, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(50):
                plan(layout)
            k += 50
        return (time.perf_counter() - t0) / k * 1e6

    small, big = [], []
    for _ in range(3):
        small.append(us_per_plan(32))
        big.append(us_per_plan(512))
    a, b = statistics.median(small), statistics.median(big)
    return {"us_32_layers": round(a, 1), "us_512_layers": round(b, 1), "ratio": round(b / a, 2), "target": 1.5,
            "ok": b / a <= 1.5}


def sweep_10k() -> dict:
    from kvcalc.inputs.values import overrides
    from kvcalc.inputs.layout.read import read_input
    from kvcalc.tools.sweep import grid, run

    top, _, source = read_input(os.path.join(EXAMPLES, "llama-3.1-8b.yaml"))
    axes = {"tp": [1, 2, 4, 8], "block_size": [16, 32, 64, 128, 256],
            "cpu_bytes": [f"{g}GiB" for g in range(1, 51)],
            "vllm_version": SWEEP_ARGS[-1].split(",")}
    points = grid(axes)
    t0 = time.perf_counter()
    rows = sum(1 for _ in run(top, source, points, overrides({})))
    in_process = time.perf_counter() - t0
    cli = timed_run([sys.executable, "-m", "kvcalc", "sweep", os.path.join(EXAMPLES, "llama-3.1-8b.yaml"),
                     *SWEEP_ARGS, "--format", "csv"])
    return {"points": rows, "in_process_s": round(in_process, 2), "cli_s": round(cli, 2),
            "targets_s": {"in_process": 1.0, "cli": 2.0}, "ok": in_process <= 1.0 and cli <= 2.0}


def peak_rss() -> dict:
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "kvcalc", "plan",
           os.path.join(EXAMPLES, "kimi-k2.5-eagle3-tp4.yaml"), "--format", "json"]
    kib = int(subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip())
    return {"peak_rss_mb": round(kib / 1024, 1), "target_mb": 40, "ok": kib / 1024 <= 40}


def worst_layout() -> dict:
    """The costliest layout the validator accepts (issue 11: every accepted layout plans in < 2 s and < 200 MB):
    the most layers (keys.MAX_LAYERS), the most PP stages (keys.MAX_PP), a different KV head count on every
    layer (one spec per layer shape, UniformType on every stage), through the CLI as JSON and as a table; and the
    time to refuse a 10^8-point sweep."""
    import tempfile

    sys.path.insert(0, ROOT)
    from kvcalc.vocab.keys import MAX_LAYERS, MAX_PP

    layout = {"model": {"num_layers": MAX_LAYERS, "num_kv_heads": [1 + i % 7 for i in range(MAX_LAYERS)],
                        "head_size": 128},
              "parallel": {"pipeline_parallel_size": MAX_PP},
              "cache": {"max_model_len": 16, "kv_cache_memory": "80GiB"}, "offload": {"cpu_bytes_to_use": "64G"}}
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(layout, fh)
    try:
        path = fh.name.replace(".json", ".yaml")
        os.rename(fh.name, path)  # JSON is YAML: read as a layout file
        for fmt in ("json", "table"):
            cmd = [sys.executable, "-c", code, sys.executable, "-m", "kvcalc", "plan", path, "--format", fmt]
            secs, kib = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
            out[fmt] = {"s": round(float(secs), 2), "peak_rss_mb": round(int(kib) / 1024, 1)}
    finally:
        os.unlink(path)
    ten = ",".join(str(i) for i in range(1, 11))
    hundred = ",".join(str(i) for i in range(1, 101))
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "kvcalc", "sweep", os.path.join(EXAMPLES, "llama-3.1-8b.yaml"),
                        "--tp", hundred, "--pp", hundred, "--block-size", hundred, "--cpu-bytes", ten,
                        "--offload-block-size", ten], capture_output=True, cwd=ROOT)
    out["sweep_1e8_refused_s"] = round(time.perf_counter() - t, 2)
    out["sweep_1e8_exit"] = r.returncode  # 2: refused before planning
    out["ok"] = all(v["s"] < 2 and v["peak_rss_mb"] < 200 for k, v in out.items() if isinstance(v, dict))
    return out


def torch_free() -> dict:
    code = ("import sys, io, contextlib, kvcalc.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    c.main(['plan', {os.path.join(EXAMPLES, 'deepseek-v3-tp4.yaml')!r}, '--format', 'json'])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {"torch_imported_without_verify": out == "True", "ok": out == "False"}


def engines(seconds: float) -> dict:
    """Plans/s of the same model planned by vLLM's rules and by SGLang's (issue 24: SGLang within 2 x)."""
    from kvcalc import load_layout, plan

    model = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
    base = {"gpu.name": ("H100", "--gpu"), "cache.max_model_len": (16384, "--max-model-len")}
    layouts = {"vllm": load_layout(model, overrides=base), "sglang": load_layout(model, overrides={
        **base, "engine": ("sglang", "--engine"), "sglang.version": ("0.5.23", "--sglang-version"),
        "sglang.hicache.enabled": (True, "x"), "sglang.hicache.size": (100, "x")})}
    out = {}
    for name, layout in layouts.items():
        plan(layout)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(50):
                plan(layout)
            n += 50
        out[name] = round(n / (time.perf_counter() - t0))
    return {"plans_per_s": out, "ratio": round(out["sglang"] / out["vllm"], 2),
            "ok": out["sglang"] >= out["vllm"] / 2}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--baseline", help="a commit to measure plans/s against in the same run (git worktree)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--min-speedup", type=float, default=4.0,
                    help="plans/s against --baseline that passes (4: issue 9's target; 0.9: within 10 %%, issue 18)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the cold-start comparison, e.g. a venv with a regular (non-editable) "
                         "install: an editable install adds its import finder to every start")
    args = ap.parse_args()
    seconds = 0.3 if args.quick else 1.0
    results = {
        "machine": machine(),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "cold_start": cold_start(7 if args.quick else 25, args.python, not args.no_callgrind),
        "plans": plans(seconds, args.baseline, not args.no_callgrind, args.min_speedup),
        "layer_scaling": layer_scaling(seconds / 2),
        "sweep": sweep_10k(),
        "memory": peak_rss(),
        "worst": worst_layout(),
        "torch": torch_free(),
        "engines": engines(seconds),
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        c, p, ls, s, m = (results[k] for k in ("cold_start", "plans", "layer_scaling", "sweep", "memory"))
        ok = lambda d: "ok" if d["ok"] else "MISSED"  # noqa: E731
        print(f"machine: {results['machine']} (commit {results['commit']})")
        line = (f"cold start ({args.python}): {c['kvcalc_plan_s']:.3f} s vs {c['import_baseline_s']:.3f} s, "
                f"ratio {c['ratio']:.2f}")
        if "instruction_ratio" in c:
            line += f"; instructions {c['instructions_kvcalc']:,} vs {c['instructions_baseline']:,}, " \
                    f"ratio {c['instruction_ratio']:.3f}"
        print(f"{line} (target <= 1.3) {ok(c)}")
        for label, n in p["plans_per_s"].items():
            base = p["baseline_plans_per_s"].get(label)
            print(f"plans/s, {label}: {n:,}" + (f" (baseline {base:,}: {n / base:.1f} x)" if base else ""))
        print("  target >= 10,000 for MLA + drafter" + (f" and >= {args.min_speedup} x the baseline" if args.baseline else "")
              + f": {ok(p)}")
        if "instructions_per_plan" in p:
            ip = p["instructions_per_plan"]
            print(f"  instructions a plan (MLA + drafter, callgrind): {ip['ours']:,} vs the baseline's "
                  f"{ip['baseline']:,}: {ip['ratio']} x fewer")
        print(f"512-layer plan {ls['us_512_layers']} us vs 32-layer {ls['us_32_layers']} us: ratio {ls['ratio']} "
              f"(target <= 1.5) {ok(ls)}")
        print(f"sweep: {s['points']:,} points in {s['in_process_s']} s in-process, {s['cli_s']} s through the CLI "
              f"(targets 1 s / 2 s) {ok(s)}")
        print(f"peak RSS: {m['peak_rss_mb']} MB (target <= 40) {ok(m)}")
        w = results["worst"]
        print(f"worst accepted layout: {w['json']['s']} s / {w['json']['peak_rss_mb']} MB as JSON, {w['table']['s']} s "
              f"/ {w['table']['peak_rss_mb']} MB as a table (target < 2 s, < 200 MB) {ok(w)}; a 10^8-point sweep "
              f"refused in {w['sweep_1e8_refused_s']} s")
        print(f"torch imported without --verify: {results['torch']['torch_imported_without_verify']}")
        e = results["engines"]
        print(f"plans/s, Llama-3.1-8B on an H100: vLLM {e['plans_per_s']['vllm']:,}, SGLang "
              f"{e['plans_per_s']['sglang']:,}: ratio {e['ratio']} (target >= 0.5) {ok(e)}")
    keys = ("cold_start", "plans", "layer_scaling", "sweep", "memory", "worst", "torch", "engines")
    return 0 if all(results[k]["ok"] for k in keys) else 1


if __name__ == "__main__":
    sys.exit(main())
