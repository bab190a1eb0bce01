"""Issue 35 (5): every JSON document kvcalc prints validates against `kvcalc schema output`: exit 0, 1 and 2, every
command with --format json (or jsonl), the corpus's (tests/corpus.py: every example, config, manifest, log and
scrape) and the commands it has no JSON of; and a document that drifts from its command's shape does not."""

import json
import os

import jsonschema
import pytest

import corpus
from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA = "tests/fixtures/models/llama-3.1-8b.json"
MIXTRAL = "tests/fixtures/hf/mixtral-8x7b-v0.1.json"

# JSON the corpus does not print: the GPU-side size (vLLM, SGLang, a model that does not load), SGLang's host size,
# sweep's JSON lines, vllm-args of every backend and with a manifest's patch, the listings, the refusals of every
# command (exit 2) and of a release under --check (exit 1), a gate that fails (exit 1).
EXTRA = [
    ["size", LLAMA, "--gpu", "H100", "--vllm-version", "0.19.0", "--gpu-tokens", "400K", "--format", "json"],
    ["size", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0", "--concurrency", "4", "--format", "json"],
    ["size", LLAMA, "--engine", "sglang", "--gpu", "H100", "--gpu-tokens", "400K", "--format", "json"],
    ["size", MIXTRAL, "--engine", "sglang", "--gpu", "L40S", "--concurrency", "4", "--format", "json"],
    ["size", "examples/sglang/mixtral-8x7b-tp2-hicache.yaml", "--gpu", "H100", "--cpu-tokens", "2M", "--format",
     "json"],
    ["sweep", "examples/llama-3.1-8b.yaml", "--tp", "1,2,3", "--cpu-bytes", "16G,64G", "--format", "jsonl"],
    ["sweep", LLAMA, "--gpu", "H100,A100-80GB", "--max-model-len", "8K,32K", "--format", "jsonl"],
    ["sweep", "examples/sglang/mixtral-8x7b-tp2-hicache.yaml", "--tp", "2,4", "--format", "jsonl"],
    ["vllm-args", "examples/simple/qwen3-32b-eagle3-pp2-tp2.yaml", "--format", "json"],
    ["vllm-args", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--format", "json"],
    ["vllm-args", "examples/lmcache_mp/llama-3.1-70b-tp4-dp2.yaml", "--format", "json"],
    ["size", "examples/lmcache_mp/llama-3.1-70b-tp4-dp2.yaml", "--cpu-tokens", "2M", "--format", "json"],
    ["vllm-args", "--k8s", "tests/fixtures/k8s/real/27-llmd-bench-baseline-args-before-command.yaml",
     "--vllm-version", "0.33.0", "--cpu-bytes", "64G", "--format", "json"],
    ["vllm-args", "examples/kimi-k2.5-eagle3-tp4.yaml", "--vllm-version", "0.19.1", "--format", "json"],
    ["check", "examples/llama-3.1-8b.yaml", "--metrics", "tests/fixtures/metrics/not-a-scrape.json",
     "--vllm-version", "0.33.0", "--format", "json"],
    ["check", LLAMA, "--metrics", "tests/fixtures/metrics/llama-3.1-8b-h100-tp1-v0.19.0-gpu-only.prom",
     "--vllm-version", "0.19.0", "--gpu", "A100-80GB", "--format", "json"],
    ["plan", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0", "--format", "json"],
    ["plan", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0", "--check", "--cpu-bytes", "16G", "--format",
     "json"],
    ["plan", "examples/llama-3.1-8b.yaml", "--vllm-version", "0.33.0", "--check", "--host-memory", "1GiB",
     "--format", "json"],
    ["plan", "examples/kimi-k2.5-eagle3-tp4.yaml", "--compare-backends", "--format", "json"],
    ["plan", "examples/llama-3.1-8b.yaml", "--compare-engines", "--gpu", "H100", "--format", "json"],
    ["plan", "no-such-file.yaml", "--format", "json"],
    ["size", "examples/llama-3.1-8b.yaml", "--cpu-tokens", "0", "--format", "json"],
    ["sweep", "examples/llama-3.1-8b.yaml", "--tp", "x", "--format", "jsonl"],
    ["vllm-args", "examples/llama-3.1-8b.yaml", "--tp", "3", "--format", "json"],
    ["check", "examples/llama-3.1-8b.yaml", "--format", "json"],
    ["models", "--format", "json"],
    ["models", "--vllm-version", "0.19.1", "--format", "json"],
    ["versions", "--format", "json"],
    ["versions", "--boundaries", "--format", "json"],
]


def json_commands() -> list[list[str]]:
    return [c for c in corpus.commands() if {"json", "jsonl"} & set(c)] + EXTRA


def documents(argv: list[str]) -> tuple[int, list]:
    text = corpus.cached_run(argv)
    code = int(text.split("\n", 2)[1].split()[1])
    out = text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
    lines = out.splitlines() if "jsonl" in argv else [out] if out.strip() else []
    return code, [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def validator():
    code, out, err = 0, None, None
    import io
    from contextlib import redirect_stdout

    from kvcalc.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["schema", "output"])
    assert code == 0
    schema = json.loads(buf.getvalue())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_json_document_validates(validator):
    bad, codes, seen = [], set(), 0
    for argv in json_commands():
        code, docs = documents(argv)
        codes.add(code)
        assert docs, f"kvcalc {' '.join(argv)} printed no document (exit {code})"
        for doc in docs:
            seen += 1
            if not validator.is_valid(doc):
                error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
                bad.append(f"kvcalc {' '.join(argv)} (exit {code}): {error.message[:200]}")
    assert bad == []
    assert codes == {0, 1, 2}
    assert seen > 600


def test_a_drifted_document_does_not_validate(validator):
    code, docs = documents(EXTRA[0])
    assert code == 0
    doc = dict(docs[0], surprise=1)  # a key no command prints
    assert not validator.is_valid(doc)
    error = {"schema_version": 1, "error": "x: expected y", "exit_code": 2}
    assert validator.is_valid(error)
    assert not validator.is_valid({**error, "exit_code": "2"})
    code, docs = documents(EXTRA[5])
    row = dict(docs[0])
    row.pop("gpu_tokens")
    assert not validator.is_valid(row)


def test_passed_is_true_only_for_a_gate_that_passed(capsys):
    # Skipped and unknown gates carried passed: true; a CI reading `passed` was misled. Every gate of the corpus's
    # --check documents: passed is (status == "pass").
    gates = 0
    for argv in json_commands():
        if "--check" not in argv:
            continue
        for doc in documents(argv)[1]:
            for c in doc.get("checks") or []:
                gates += 1
                assert c["passed"] is (c["status"] == "pass"), (argv, c)
    assert gates > 100
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "examples", "deepseek-v3-tp4.yaml"), "--vllm-version",
                         "0.33.0", "--check", "--format", "json")
    assert code == 0  # skipped gates fail nothing
    statuses = {c["status"]: c["passed"] for c in json.loads(out)["checks"]}
    assert statuses == {"pass": True, "skipped": False}
