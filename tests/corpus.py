"""The output corpus: every example and config fixture, through every command, on a spread of releases.

A refactor that should change no output proves it here: `tests/golden/corpus.sha256` holds one SHA-256 per
command (stdout, stderr and exit code), and `test_corpus.py` recomputes them. After a deliberate output change,
regenerate with `KVCALC_UPDATE_GOLDEN=1 python -m pytest tests/test_corpus.py`; `python tests/corpus.py DIR`
writes every output in full to DIR, so two checkouts can be diffed.
"""

from __future__ import annotations

import glob
import hashlib
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASES = ("0.17.0", "0.19.1", "0.20.0", "0.21.0", "0.22.1", "0.24.0", "0.26.0", "0.28.0", "0.30.0", "0.32.0",
            "0.33.0")


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


def commands() -> list[list[str]]:
    """Every command of the corpus, as argv lists with paths relative to the repository."""
    examples = sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "examples", "*.yaml")))
    configs = sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "examples", "configs", "*.json"))
                     + glob.glob(os.path.join(ROOT, "tests", "fixtures", "hf", "*.json"))
                     + glob.glob(os.path.join(ROOT, "tests", "fixtures", "models", "*.json")))
    out: list[list[str]] = []
    for ex in examples:
        for v in RELEASES:
            out.append(["plan", ex, "--vllm-version", v, "--format", "json"])
            out.append(["plan", ex, "--vllm-version", v, "--check", "--host-memory", "512GiB",
                        "--min-cpu-tokens", "1M", "--format", "json"])
        out.append(["plan", ex])
        out.append(["plan", ex, "--vllm-version", "0.19.1"])
        out.append(["plan", ex, "--compare-versions", ",".join(RELEASES), "--format", "json"])
        out.append(["plan", ex, "--compare-versions", "0.19.1,0.22.1,0.28.0,0.33.0"])
        out.append(["plan", ex, "--pp", "2", "--format", "json"])
        out.append(["plan", ex, "--offload-block-size", "256", "--vllm-version", "0.22.1", "--format", "json"])
        out.append(["plan", ex, "--blocks-per-chunk", "4", "--vllm-version", "0.26.0", "--format", "json"])
        out.append(["plan", ex, "--dp", "2", "--distributed-executor-backend", "ray", "--format", "json"])
        out.append(["size", ex, "--cpu-tokens", "2M", "--format", "json"])
        out.append(["size", ex, "--cpu-tokens", "2M"])
        out.append(["vllm-args", ex, "--vllm-version", "0.21.0"])
        out.append(["vllm-args", ex, "--format", "json"])
        out.append(["sweep", ex, "--tp", "1,2,4,8", "--vllm-version", "0.19.1,0.22.1,0.33.0", "--format", "csv"])
    for cfg in configs:
        for v in ("0.19.1", "0.22.1", "0.33.0"):
            out.append(["plan", cfg, "--tp", "2", "--cpu-bytes", "64G", "--vllm-version", v, "--format", "json"])
        out.append(["plan", cfg, "--cpu-bytes", "64G", "--kv-cache-memory", "40GiB", "--max-model-len", "32K",
                    "--format", "json"])
        out.append(["init", cfg])
    for log in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "logs", "*.log"))):
        name = os.path.basename(log)
        layout = {"gpt": "examples/gpt-oss-120b.yaml", "kimi": "examples/kimi-k2.5-eagle3-tp4.yaml",
                  "llama": "examples/llama-3.1-8b.yaml", "gemma": "tests/fixtures/hf/gemma-3-12b-it.json"}[
            name.split("-")[0]]
        tp = ["--tp", "2"] if "tp2" in name else []
        out.append(["check", os.path.join(*layout.split("/")), "--log", _rel(log), *tp, "--format", "json"])
    for prom in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "metrics", "*.prom"))):
        out.append(["check", os.path.join("examples", "kimi-k2.5-eagle3-tp4.yaml"), "--metrics", _rel(prom),
                    "--vllm-version", "0.33.0", "--format", "json"])
    out.append(["versions", "--format", "json"])
    out.append(["versions", "--boundaries", "--format", "json"])
    out.append(["schema", "layout"])
    out.append(["schema", "output"])
    return out


def run(argv: list[str]) -> str:
    """One command's stdout, stderr and exit code as one text (paths relative to the repository)."""
    from kvcalc.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(cwd)
    text = f"$ kvcalc {' '.join(argv)}\nexit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
    return text.replace(ROOT + os.sep, "")  # drafter provenance names absolute paths: the same in every clone


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv: list[str]) -> int:
    os.environ.update(NO_COLOR="1", COLUMNS="120", TERM="dumb")
    target = argv[0]
    os.makedirs(target, exist_ok=True)
    for i, cmd in enumerate(commands()):
        with open(os.path.join(target, f"{i:04d}.txt"), "w", encoding="utf-8") as fh:
            fh.write(run(cmd))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main(sys.argv[1:]))
