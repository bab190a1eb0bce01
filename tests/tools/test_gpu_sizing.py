"""`kvcalc size --gpu-tokens N` / `--concurrency C` (issue 19): the blocks, the --kv-cache-memory-bytes, the
smallest utilization on a GPU, the smallest TP x PP. Expected numbers derived by hand in each comment."""

import json
import os

import pytest

from conftest import run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
BASE = ["size", LLAMA, "--vllm-version", "0.19.0", "--max-model-len", "16384", "--format", "json"]


def test_concurrency_gives_blocks_bytes_and_the_smallest_utilization(capsys):
    # Llama-3.1-8B, 16-token blocks of 2 MiB (32 layers x 65,536 B): 10 requests of 16,384 tokens = 10 x 1,024 =
    # 10,240 blocks (0.19's concurrency n / cdiv(16,384, 16) = 10.00x), 10,240 x 2,097,152 = 21,474,836,480 B.
    code, out, err = run(capsys, *BASE, "--concurrency", "10", "--gpu", "H100")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["num_gpu_blocks"] == 10 * 16384 // 16 == 10_240
    assert doc["kv_cache_memory_bytes"] == 10_240 * 2_097_152 == 21_474_836_480
    u = doc["gpu_memory_utilization"]

    def blocks(util):
        data = {"model": {"hf_config": LLAMA}, "vllm": {"version": "0.19.0"}, "cache": {"max_model_len": 16384},
                "gpu": {"name": "H100", "memory_utilization": util}}
        return plan(layout_from_dict(data, source="t.yaml")).gpu.num_blocks

    assert blocks(u) >= 10_240
    assert blocks(round(u - 0.0001, 4)) < 10_240  # the smallest 4-decimal utilization


def test_gpu_tokens_and_the_smallest_parallelism(capsys):
    # 2,097,152 tokens = 131,072 blocks of 16 (one group: 0.19's tokens = blocks x 16): 274,877,906,944 B, more than
    # an H100; at 0.19's default 0.9 TP 4 holds 2,078,864 tokens (not enough) and TP 1 x PP 4 holds 2,131,376.
    code, out, err = run(capsys, *BASE, "--gpu-tokens", "2M", "--gpu", "H100")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["num_gpu_blocks"] == 2_097_152 // 16 == 131_072
    assert doc["kv_cache_memory_bytes"] == 131_072 * 2_097_152
    assert doc["gpu_memory_utilization"] is None
    assert (doc["smallest_parallel"]["tensor_parallel_size"], doc["smallest_parallel"]["pipeline_parallel_size"]) == \
        (1, 4)
    assert doc["smallest_parallel"]["kv_cache_size_tokens"] >= 2_097_152


def test_without_a_gpu_only_the_blocks_and_bytes(capsys):
    code, out, err = run(capsys, *BASE, "--gpu-tokens", "163840")
    doc = json.loads(out)
    assert (doc["num_gpu_blocks"], doc["gpu_memory_utilization"], doc["smallest_parallel"]) == (10_240, None, None)
    code, out, err = run(capsys, *BASE[:-2], "--gpu-tokens", "163840")
    assert "--kv-cache-memory-bytes 21474836480 (per GPU)" in out


@pytest.mark.parametrize("args, needle", [
    (["--gpu-tokens", "lots"], "--gpu-tokens"),
    (["--gpu-tokens", "1M", "--cpu-tokens", "1M"], "give exactly one of"),
    (["--concurrency", "-1"], "--concurrency: expected a positive number of requests"),
])
def test_bad_targets_are_one_line(capsys, args, needle):
    code, out, err = run(capsys, *BASE, *args)
    assert code == 2
    assert needle in err


def test_sweep_axes_for_the_gpu_and_its_utilization(capsys):
    # One row per (utilization, GPU); each row's predicted budget is the plan's (gpu.memory.kv_cache_bytes).
    code, out, err = run(capsys, "sweep", LLAMA, "--gpu", "H100,A10", "--gpu-memory-utilization", "0.8,0.9",
                         "--vllm-version", "0.19.0", "--max-model-len", "8192", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["gpu_memory_utilization"], r["gpu"]) for r in rows] == [(0.8, "H100"), (0.8, "A10"), (0.9, "H100"),
                                                                       (0.9, "A10")]
    for r in rows:
        data = {"model": {"hf_config": LLAMA}, "vllm": {"version": "0.19.0"}, "cache": {"max_model_len": 8192},
                "gpu": {"name": r["gpu"], "memory_utilization": r["gpu_memory_utilization"]}}
        assert r["gpu_kv_cache_bytes"] == plan(layout_from_dict(data, source="t.yaml")).memory.kv_cache_bytes
    code, out, err = run(capsys, "sweep", LLAMA, "--gpu-memory-utilization", "0.9,x")
    assert code == 2
    assert "--gpu-memory-utilization: expected a comma-separated list of numbers" in err
