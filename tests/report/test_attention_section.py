"""The attention backend and why, in the plan's JSON and table, and the GPU class it was selected for (issue 29,
item 2). Expected backends: the real DeepSeek-V2-Lite 0.19.0 H100 log's "Using FLASH_ATTN_MLA attention backend"
line (tests/fixtures/logs/deepseek-v2-lite-h100-tp1-v0.19.0-debug-excerpt.log) and the selection vectors
(tests/fixtures/attn/vectors.json: mla-dsv2lite, 0.19.1, capability 10.0 -> FLASHINFER_MLA / 32, 0.19.0's executed
selection read for 0.19.1)."""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DSV2 = os.path.join(ROOT, "tests", "fixtures", "hf", "deepseek-v2-lite.json")


def _plan(capsys, *flags):
    code, out, err = run(capsys, "plan", DSV2, "--kv-cache-memory", "40GiB", *flags, "--format", "json")
    assert code == 0, err
    return json.loads(out)["gpu"]["attention"], err


def test_the_json_names_the_backend_why_and_the_gpu_class(capsys):
    att, err = _plan(capsys, "--vllm-version", "0.19.0", "--gpu", "H100")
    assert [c["backend"] for c in att["choices"]] == ["FLASH_ATTN_MLA"]  # the real log's line
    assert att["choices"][0]["how"] == "priority"
    assert att["gpu_class"] == "9.0"
    assert "H100" in att["gpu_class_basis"]
    assert att["block_size"] == 16
    assert "GPU class" not in err  # a named GPU: no default to announce


def test_without_a_gpu_the_default_class_is_said_with_its_basis(capsys):
    att, err = _plan(capsys, "--vllm-version", "0.19.0")
    assert att["gpu_class_basis"] == "kvcalc's default: an H100-class GPU (9.0), no --gpu named"
    assert "attention backend FLASH_ATTN_MLA selected for kvcalc's default: an H100-class GPU (9.0)" in err


def test_a_blackwell_gpu_changes_backend_and_block(capsys):
    att, _ = _plan(capsys, "--vllm-version", "0.19.1", "--gpu", "B200")
    assert [c["backend"] for c in att["choices"]] == ["FLASHINFER_MLA"]
    assert att["block_size"] == 32
    assert att["gpu_class"] == "10.0"


def test_a_named_backend_is_said_to_be_the_users(capsys):
    att, _ = _plan(capsys, "--vllm-version", "0.19.1", "--attention-backend", "TRITON_MLA")
    assert att["choices"][0]["backend"] == "TRITON_MLA"
    assert att["choices"][0]["how"] == "selected"
    assert "--attention-backend" in att["choices"][0]["why"]


def test_the_table_shows_the_backend_and_the_gpu_class(capsys):
    code, out, _ = run(capsys, "plan", DSV2, "--kv-cache-memory", "40GiB", "--vllm-version", "0.19.0")
    assert code == 0
    assert "attention backend" in out
    assert "FLASH_ATTN_MLA (MLA layers)" in out
    assert "kvcalc's default: an H100-class GPU (9.0)" in out
