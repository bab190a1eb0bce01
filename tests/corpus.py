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
                  "llama": "examples/llama-3.1-8b.yaml", "gemma": "tests/fixtures/hf/gemma-3-12b-it.json",
                  "deepseek": "tests/fixtures/hf/deepseek-v2-lite.json"}[
            name.split("-")[0]]
        tp = ["--tp", "2"] if "tp2" in name else []
        out.append(["check", os.path.join(*layout.split("/")), "--log", _rel(log), *tp, "--format", "json"])
    for prom in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "metrics", "*.prom"))):
        out.append(["check", os.path.join("examples", "kimi-k2.5-eagle3-tp4.yaml"), "--metrics", _rel(prom),
                    "--vllm-version", "0.33.0", "--format", "json"])
    out += surfaces()
    out.append(["versions", "--format", "json"])
    out.append(["versions", "--boundaries", "--format", "json"])
    out.append(["schema", "layout"])
    out.append(["schema", "output"])
    return out


def surfaces() -> list[list[str]]:
    """The other inputs and engines, through the commands that read them: manifests, serve lines, SGLang and the
    Simple and LMCache examples, the GPU-budget prediction, --summary and the engine comparison (issue 28: the
    house moves these paths; their outputs must not move)."""
    manifests = sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "k8s", "**", "*.yaml"),
                                                     recursive=True) if not p.endswith(".configmap.yaml"))
    sglang = sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "examples", "sglang", "*.yaml"))
                    + glob.glob(os.path.join(ROOT, "tests", "fixtures", "sglang", "layouts", "*.yaml")))
    others = sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "examples", "simple", "*.yaml")))
    configs = ("tests/fixtures/models/llama-3.1-8b.json", "tests/fixtures/hf/qwen3-14b.json",
               "tests/fixtures/hf/gemma-3-12b-it.json", "tests/fixtures/hf/qwen1.5-moe-a2.7b.json",
               "tests/fixtures/models/deepseek-v3.json")
    out: list[list[str]] = []
    for m in manifests:
        out.append(["plan", "--k8s", m, "--format", "json"])
        out.append(["plan", "--k8s", m, "--check"])
        out.append(["vllm-args", "--k8s", m])
    for lay in sglang:
        out.append(["plan", lay, "--format", "json"])
        out.append(["plan", lay])
        out.append(["plan", lay, "--summary"])
        out.append(["plan", lay, "--compare-engines"])
        out.append(["plan", lay, "--check", "--host-memory", "512GiB", "--format", "json"])
        out.append(["size", lay, "--cpu-tokens", "2M", "--format", "json"])
        out.append(["size", lay, "--gpu-tokens", "500K"])
        out.append(["sweep", lay, "--tp", "2,4", "--format", "csv"])
    out.append(["plan", "examples/deepseek-v3-tp4.yaml", "--lmcache-config", "examples/lmcache/deepseek-mla.yaml",
                "--format", "json"])
    out.append(["plan", "examples/llama-3.1-8b.yaml", "--lmcache-env-file", "examples/lmcache/lmcache.env"])
    for lay in others:
        out.append(["plan", lay, "--format", "json"])
        out.append(["plan", lay])
        out.append(["plan", lay, "--compare-backends"])
        out.append(["size", lay, "--cpu-tokens", "2M", "--format", "json"])
    for lay in sorted(_rel(p) for p in glob.glob(os.path.join(ROOT, "examples", "lmcache_mp", "*.yaml"))):
        out.append(["plan", lay, "--format", "json"])
        out.append(["plan", lay])
        out.append(["plan", lay, "--check", "--host-memory", "512GiB", "--server-memory", "420GiB", "--format", "json"])
        out.append(["plan", lay, "--compare-backends", "--format", "json"])
        out.append(["plan", lay, "--compare-versions", "0.21.0,0.22.1,0.33.0"])
        out.append(["size", lay, "--cpu-tokens", "2M", "--format", "json"])
        out.append(["size", lay, "--cpu-tokens", "2M"])
        out.append(["vllm-args", lay])
        out.append(["sweep", lay, "--tp", "2,4,8", "--format", "csv"])
    out.append(["plan", "--serve", "vllm serve tests/fixtures/models/llama-3.1-8b.json -tp 8 --kv-offloading-backend "
                "lmcache --kv-offloading-size 64", "--vllm-version", "0.33.0", "--lmcache-server",
                "lmcache server --l1-size-gb 100 --eviction-policy LRU", "--format", "json"])
    for cfg in configs:
        for gpu in ("H100", "A100-80GB"):
            out.append(["plan", cfg, "--gpu", gpu, "--vllm-version", "0.19.0", "--format", "json"])
        out.append(["plan", cfg, "--gpu", "H100", "--vllm-version", "0.19.0", "--max-model-len", "16384",
                    "--summary"])
        out.append(["plan", cfg, "--gpu", "H100", "--vllm-version", "0.22.1", "--compare-engines"])
        out.append(["size", cfg, "--gpu", "H100", "--vllm-version", "0.19.0", "--gpu-tokens", "400K"])
        out.append(["plan", cfg, "--engine", "sglang", "--gpu", "H100", "--format", "json"])
    out.append(["plan", "--serve", "vllm serve tests/fixtures/models/llama-3.1-8b.json --tensor-parallel-size 2 "
                "--kv-offloading-size 64 --block-size 32"])
    out.append(["plan", "--serve", "vllm serve tests/fixtures/models/llama-3.1-8b.json -tp 2 --kv-offloading-size 64",
                "--vllm-version", "0.22.1", "--format", "json"])
    out.append(["plan", "--serve", "python -m sglang.launch_server --model-path tests/fixtures/models/llama-3.1-8b.json"
                " --tp 2 --enable-hierarchical-cache --hicache-size 40", "--gpu", "H100", "--format", "json"])
    for log in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "logs", "formats", "*.log"))):
        out.append(["check", "tests/fixtures/models/llama-3.1-8b.json", "--log", _rel(log), "--format", "json"])
    out.append(["models", "--vllm-version", "0.33.0"])
    return out


# Hub ids the corpus's manifests name -> the fixture config a local Hugging Face cache holds for each
# (built once under the repository, so every path the outputs name is relative to it).
HUB = {"Qwen/Qwen3-32B": "tests/fixtures/models/qwen3-32b.json",
       "meta-llama/Llama-3.1-8B-Instruct": "tests/fixtures/models/llama-3.1-8b.json",
       "meta-llama/Meta-Llama-3.1-8B-Instruct": "tests/fixtures/models/llama-3.1-8b.json",
       "google/gemma-3-1b-it": "tests/fixtures/hf/gemma-3-1b.json",
       "deepseek-ai/DeepSeek-R1-0528": "tests/fixtures/models/deepseek-v3.json"}


def hub() -> str:
    """A local Hugging Face cache of HUB (refs/main -> one snapshot), under the repository."""
    import shutil

    root = os.path.join(ROOT, ".corpus-hub")
    for repo, cfg in HUB.items():
        snap = os.path.join(root, "models--" + repo.replace("/", "--"), "snapshots", "corpus")
        os.makedirs(snap, exist_ok=True)
        shutil.copy(os.path.join(ROOT, cfg), os.path.join(snap, "config.json"))
        os.makedirs(os.path.join(root, "models--" + repo.replace("/", "--"), "refs"), exist_ok=True)
        with open(os.path.join(root, "models--" + repo.replace("/", "--"), "refs", "main"), "w") as fh:
            fh.write("corpus")
    return root


def run(argv: list[str]) -> str:
    """One command's stdout, stderr and exit code as one text (paths relative to the repository)."""
    from kvcalc.cli import main

    os.environ["HF_HUB_CACHE"] = hub()
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


_RUNS: dict[tuple[str, ...], str] = {}


def cached_run(argv: list[str]) -> str:
    """run(argv), once per process: test_corpus.py and test_output_schema.py read the same outputs."""
    key = tuple(argv)
    if key not in _RUNS:
        _RUNS[key] = run(list(argv))
    return _RUNS[key]


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
