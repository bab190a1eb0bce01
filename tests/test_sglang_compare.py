"""--compare-engines on every deployment issue 31 added (hybrids, DP attention, drafts, multimodal, DeepSeek-V4, the
SWA request cap, PP, HiCache and its cgroup, FP8 KV, a page size > 1), from both sides: each engine yields its
tokens or a named refusal; the command exits 0 (2 with the refusal when the layout's own engine refuses to start),
never 70. The SGLang side is checked against SGLang 0.5.23's own
code: every executed vector with pools (tests/fixtures/sglang/executed_vectors.json) run as an SGLang line with
--compare-engines must show the tokens (or the refusal) SGLang's code gave."""

from __future__ import annotations

import json
import os

import pytest

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "sglang")
DATA = json.load(open(os.path.join(FIXTURES, "executed_vectors.json"), encoding="utf-8"))
POOLED = [v for v in DATA["vectors"] if v["release"] == "0.5.23" and ("pools" in v["outputs"] or (
    "refusal" in v["outputs"] and "cuda_graph" in v["outputs"]))]


def _path(text: str) -> str:
    return os.path.join(FIXTURES, text) if text.startswith("models/") else text


def _flags(v: dict) -> list[str]:
    inp = v["inputs"]
    out = ["--sglang-version", v["release"], "--gpu", inp["gpu"]["name"],
           "--gpu-free-memory", f"{inp['pre_model_load_free_mib']}MiB",
           "--weights-bytes", f"{inp['weights_mib_per_rank']}MiB"]
    if "host" in inp:
        out += ["--host-available", f"{inp['host']['available_gib']}GiB"]
    cgroup = inp.get("cgroup") or {}
    for key, flag in (("max", "--host-cgroup-limit"), ("high", "--host-cgroup-high"),
                      ("current", "--host-cgroup-usage")):
        if key in cgroup:
            out += [flag, str(cgroup[key])]
    if "active_file" in cgroup:
        out += ["--host-cgroup-file-cache", str(cgroup["active_file"] + cgroup.get("inactive_file", 0))]
    env = [f"{k}={val}" for k, val in (inp.get("env") or {}).items()]
    return out + ["--", *env, "python", "-m", "sglang.launch_server", "--model-path", _path(inp["model"]["path"]),
                  *(_path(a) for a in inp.get("flags", []))]


def _host_layout_error(v: dict) -> str | None:
    """SGLang's error building this vector's HiCache layout for its model, from the executed host-layout vectors."""
    flags = v["inputs"].get("flags", [])
    if "--hicache-mem-layout" not in flags:
        return None
    layout, model = flags[flags.index("--hicache-mem-layout") + 1], v["inputs"]["model"]["path"]
    for h in DATA["vectors"]:
        hl = h["outputs"].get("host_layout")
        if hl and hl["layout"] == layout and h["inputs"]["model"]["path"] == model:
            return hl.get("error")
    return None


def _engines(capsys, *args, own: str = "sglang"):
    """The engines' rows; the layout's own engine refused at start-up is the command's refusal (exit 2, one line),
    as every plan's is, its row that refusal."""
    code, out, err = run(capsys, "plan", "--compare-engines", "--format", "json", *args)
    assert code in (0, 2), err
    if code == 2:
        assert err.strip().count("\n") == 0, "one line"
        assert "refuses to start" in err, err
        return {own: {"gpu_tokens": None, "refusal": err}}
    rows = {e["engine"]: e for e in json.loads(out)["engines"]}
    for name, row in rows.items():  # tokens, or the refusal that names why
        assert row["gpu_tokens"] is not None or row["refusal"], f"{name}: neither tokens nor a refusal"
    return rows


@pytest.mark.parametrize("v", POOLED, ids=lambda v: v["id"])
def test_compare_engines_shows_sglangs_own_pool(capsys, v):
    sglang = _engines(capsys, *_flags(v))["sglang"]
    want = v["outputs"]
    if "refusal" in want:
        assert want["refusal"].split(": ", 1)[1] in sglang["refusal"], "SGLang's refusal"
    elif _host_layout_error(v):  # the host pool SGLang cannot build (its h-host-* vector, hostlayout23.py)
        assert _host_layout_error(v) in sglang["refusal"], "SGLang's host-pool error"
    elif "host" in want and "error" in want["host"]:
        assert want["host"]["error"].split(": ", 1)[1] in sglang["refusal"], "SGLang's HiCache refusal"
    else:
        assert sglang["gpu_tokens"] == want["pools"]["max_total_num_tokens"], "SGLang's max_total_num_tokens"


LLAMA = os.path.join(FIXTURES, "models", "llama-3.1-8b")


@pytest.mark.parametrize("extra", [["--kv-cache-dtype", "fp8_e4m3"], ["--page-size", "64"]], ids=lambda e: e[0])
def test_fp8_kv_and_pages_on_both_engines(capsys, extra):
    rows = _engines(capsys, "--sglang-version", "0.5.23", "--gpu", "H100", "--", "python", "-m",
                    "sglang.launch_server", "--model-path", LLAMA, *extra)
    assert rows["vllm"]["gpu_tokens"], "vLLM's tokens"
    assert rows["sglang"]["gpu_tokens"], "SGLang's tokens"


def test_an_sglang_draft_is_refused_by_name_on_vllms_side(capsys):
    v = next(v for v in POOLED if v["id"] == "e-l8-eagle3-s3-k1-d4-0.5.23")
    assert "--speculative-config" in _engines(capsys, *_flags(v))["vllm"]["refusal"]


@pytest.mark.parametrize("config", ["tests/fixtures/dsv4/DeepSeek-V4-Flash-0731.config.json",
                                    "tests/fixtures/hf/qwen3.5-397b-a17b.json", "examples/configs/nemotron-h-8b.json",
                                    "examples/configs/jamba-1.5-mini.json", "tests/fixtures/hf/gemma-3-12b-it.json"])
@pytest.mark.parametrize("gpu", [[], ["--gpu", "H200"]], ids=["no-gpu", "H200"])
def test_vllm_layouts_compare_with_sglang(capsys, config, gpu):
    # vLLM's side of the same deployments: a budget given in bytes; SGLang plans or names why not.
    rows = _engines(capsys, os.path.join(ROOT, config), "--tp", "8", "--kv-cache-memory", "40GiB", *gpu, own="vllm")
    assert rows["vllm"]["gpu_tokens"], "vLLM plans its own layout"
    assert "sglang" in rows, "SGLang's row"
