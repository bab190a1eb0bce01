"""kvcalc's attention backend and default block size against vLLM's own, vector by vector (issue 29): every executed
or read vector of tests/fixtures/attn/vectors.json (its header says how each was computed: by running the release's
own start-up path on a faked GPU, not from kvcalc). A vector where vLLM stops (`error`) must be refused by kvcalc with
vLLM's words (the first 600 characters the harness kept); the harness-limited ones (null backend and block size) are
skipped and counted."""

import json
import os

import pytest

from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "attn")
with open(os.path.join(HERE, "vectors.json"), encoding="utf-8") as _fh:
    FIXTURE = json.load(_fh)
VECTORS = FIXTURE["vectors"]
GPU = {"7.5": "T4", "8.0": "A100-80GB", "8.6": "A10", "9.0": "H100", "10.0": "B200", "12.0": "RTX5090",
       "gfx942": "MI300X", "gfx950": "MI355X"}
INDEXER = "+DEEPSEEK_V32_INDEXER"  # the fixed indexer backend, appended by the harness where it read the layer list


def layout_of(v: dict):
    data = {"model": {"hf_config": os.path.join(HERE, "models", v["model"], "config.json")},
            "cache": {"kv_cache_dtype": v["kv_cache_dtype"], "max_model_len": 4096, "kv_cache_memory": "8GiB"},
            "vllm": {"version": v["release"], "platform": v["platform"],
                     "rocm_use_aiter": v.get("VLLM_ROCM_USE_AITER") == "1"},
            "gpu": {"name": GPU[v["capability"]]}}
    if v.get("kv_connector"):  # vLLM's selector reads only that a KV connector is configured
        data["offload"] = {"backend": "native", "cpu_bytes_to_use": "1GiB"}
    return layout_from_dict(data, source=f"{v['model']}.yaml")


def outcome(v: dict) -> tuple:
    """(backends joined by '+', the engine's block size), or ('error', vLLM's message) as kvcalc predicts it."""
    try:
        p = plan(layout_of(v))
    except KvcalcError as e:
        return "error", str(e).split("refuses to start: ", 1)[-1]
    names = list(dict.fromkeys(c.backend for c in p.layers.attention.choices))
    return "+".join(names), p.gpu.hash_block_size


def expected(v: dict) -> tuple:
    if v.get("error"):
        return "error", v["error"]
    return v["backend"].replace(INDEXER, ""), v["block_size"]


def _agrees(got: tuple, want: tuple) -> bool:
    if want[0] == "error":
        return got[0] == "error" and got[1][:len(want[1])] == want[1]
    return got == want


def test_the_fixture_holds_every_executed_and_read_vector():
    assert FIXTURE["header"]["counts"] == {"executed": 1467, "read": 538, "executed up to the backend selection": 28}
    assert len(VECTORS) == 2033
    null = [v for v in VECTORS if v["backend"] is None and v.get("error_is_harness")]
    assert len(null) == 28  # ROCm 0.32 / 0.33 MHA runs stopped by the harness's Triton: skipped below


@pytest.mark.parametrize("release", sorted({v["release"] for v in VECTORS}, key=lambda r: tuple(map(int, r.split(".")))))
def test_every_vector_of_a_release_agrees(release):
    mismatches, checked = [], 0
    for v in VECTORS:
        if v["release"] != release or v.get("error_is_harness"):
            continue
        checked += 1
        got, want = outcome(v), expected(v)
        if not _agrees(got, want):
            mismatches.append((v["platform"], v["capability"], v["model"], v["kv_cache_dtype"],
                               v.get("VLLM_ROCM_USE_AITER"), v.get("kv_connector"), want, got))
    assert checked > 0
    assert mismatches == []


def test_every_determined_vector_is_checked():
    # 2,033 - 28 harness-limited = 2,005 vectors, each in one release's test above.
    assert sum(1 for v in VECTORS if not v.get("error_is_harness")) == 2005
