"""The vectors again, through the CLI's JSON: each layout written as YAML, run as a user would."""

import json

import pytest
import yaml

from conftest import COMMON, deep_merge
from kvcalc.cli import main
from test_vectors import GPT_OSS, LLAMA8B, MLA61, QWEN3_NEXT

GIB = 1 << 30

KIMI = {"model": {**MLA61["model"], "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8,
                                              "head_size": 128}},
        "cache": {"block_size": 64}, "parallel": {"tensor_parallel_size": 4}}
V32 = {"model": {**MLA61["model"], "index_head_dim": 128}, "parallel": {"tensor_parallel_size": 4},
       "cache": {"block_size": 64, "kv_cache_dtype": "fp8_ds_mla"}}
VAR = {"model": {"num_layers": 32, "num_kv_heads": [8, 4] * 16, "head_size": 128}, "cache": {"block_size": 16}}

# (layout, version, GPU blocks, (old scheduler, old workers), (fixed scheduler, fixed workers), selected OOB)
CASES = {
    "a1": (LLAMA8B, "0.19.1", 20480, (32768, [32768]), (32768, [32768]), False),
    "a4": (deep_merge(LLAMA8B, {"parallel": {"pipeline_parallel_size": 2}}), "0.20.0", 40960,
           (32768, [32768, 32768]), (32768, [32768, 32768]), False),
    "b16": (deep_merge(MLA61, {"cache": {"block_size": 16}, "parallel": {"tensor_parallel_size": 4}}), "0.19.1",
            38199, (15279, [15279]), (15279, [15279]), False),
    "b2": (KIMI, "0.19.1", 9412, (3758, [60]), (3765, [3765]), True),
    "b3": (V32, "0.19.1", 13961, (16668, [45]), (5584, [5584]), True),
    "b3-fixed": (V32, "0.22.1", 13961, (16668, [45]), (5584, [5584]), False),
    "c2": (deep_merge(VAR, {"parallel": {"tensor_parallel_size": 2}}), "0.19.1", 54613, (32768, [1365]),
           (43690, [43690]), True),
    "d1-tp4": (deep_merge(GPT_OSS, {"parallel": {"tensor_parallel_size": 4}}), "0.21.0", 145635, (58254, [58254]),
               (58254, [58254]), False),
    "d2-tp4": (deep_merge(GPT_OSS, {"parallel": {"tensor_parallel_size": 4}}), "0.22.1", 291271,
               (116508, [116508]), (116508, [116508]), False),
    "e2": (deep_merge(QWEN3_NEXT, {"parallel": {"tensor_parallel_size": 1}}), "0.22.1", 3212, (5140, [5140]),
           (5140, [5140]), False),
    "f1": (deep_merge(MLA61, {"cache": {"block_size": 64}, "parallel": {"pipeline_parallel_size": 4}}), "0.20.0",
           36408, (15534, [15534, 15534, 14563, 15534]), (15534, [15534, 15534, 14563, 15534]), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vector_through_cli_json(name, tmp_path, capsys):
    layout, version, n_gpu, old, fixed, oob = CASES[name]
    data = deep_merge(COMMON, layout)
    data["vllm"] = {"version": version}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["plan", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    off = doc["offload"]
    assert doc["gpu"]["num_blocks"] == n_gpu
    # The JSON's old / fixed entries are each formula on its own release (issue 21): the selected release for its
    # own family, which is the vector; the other family's entry is its representative release planned whole
    # (the other formula on this release's layout is checked in test_vectors.py, on the pipeline's columns).
    own, other = ("old", "fixed") if tuple(map(int, version.split("."))) < (0, 20, 0) else ("fixed", "old")
    want = old if own == "old" else fixed
    assert (off[own]["num_blocks_scheduler"], off[own]["num_blocks_workers"]) == want
    assert off[own]["vllm_version"] == version
    assert off["selected"] == off[own]
    assert (off[other] or {}).get("vllm_version", "0.19.1" if other == "old" else "0.23.0") == \
        ("0.19.1" if other == "old" else "0.23.0")
    assert off["out_of_bounds"] is oob
    assert off["cpu_bytes_to_use"] == 64 * GIB


def test_nemotron_nas_example_by_hand(capsys):
    # Per-rank heads at TP 2: [2,1,-,-,2,4,2,2,1,-,-,2,4,2] (sum 22); page per head = 16 * 64 * 2 * 2 = 4096.
    sigma = 22 * 4096
    n_gpu = 8 * GIB // sigma
    assert main(["plan", "examples/nemotron-nas-varying-heads.yaml", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    off = doc["offload"]
    assert doc['gpu']['num_blocks'] == n_gpu
    assert doc['gpu']['grouping'] == 'uniform_type'
    assert off["old"]["num_blocks_workers"] == [16 * GIB // (sigma * 10 * 2)]
    assert off["old"]["num_blocks_scheduler"] == 16 * GIB // (2 * 4096 * 10 * 2)
    assert off["fixed"]["num_blocks_scheduler"] == 16 * GIB // (sigma * 2)
    assert off["out_of_bounds"] is True
