"""The memory profile per release, platform and environment (issue 30): the CUDA-graph estimate against real logs'
"Estimated CUDA graph memory" lines, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS from a serve line, a manifest and the
layout key, and --cpu-offload-gb on the GPU and the host. Expected numbers are derived by hand (the comments)."""

import json
import os
import shutil

import pytest

from conftest import run
from kvcalc.engines.vllm.memory import _cudagraph, capture_sizes
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
GIB, MIB = 1 << 30, 1 << 20


def _memory(version="0.20.0", gpu=None, host=None, cache=None):
    data = {"model": {"hf_config": LLAMA}, "vllm": {"version": version},
            "cache": {"max_model_len": 16384, "enable_prefix_caching": False, **(cache or {})},
            "gpu": {"name": "H100", "memory_utilization": 0.95, **(gpu or {})}, "host": host or {}}
    return plan(layout_from_dict(data, source="test.yaml")).memory


# Real logs' capture counts and "Estimated CUDA graph memory: X GiB total" (rounded to 0.01 GiB by format_gib):
# (max_num_seqs, max_num_batched_tokens, decode tokens a step, the logged PIECEWISE / FULL counts and largest
# size, the logged GiB, the set). Held out: not used to fit CG_FLOOR_MIB / CG_PER_GRAPH_TENTHS_MIB_AT_512.
REAL_GRAPHS = [
    # github.com/LukeJYK/AutoScientists vllm.log @e3133549 (A100-SXM4-80GB, 0.26.1 dev build, Qwen3-Coder-30B-A3B):
    # "PIECEWISE=7 (largest=32), FULL=5 (largest=16)", "Estimated CUDA graph memory: 0.15 GiB total"
    (16, 2048, 1, (7, 5), 32, 0.15, "held out"),
    # github.com/sostrowsk/dgx-spark-local-llm gemma4-nvfp4.log / gemma4-awq.log @a30decd7 (GB10, 0.25.1):
    # "PIECEWISE=11 (largest=64), FULL=7 (largest=32)", 0.13 and 0.14 GiB
    (32, 2496, 1, (11, 7), 64, 0.135, "held out"),
    # github.com/NnamdiOdozi/mlops-assignment logs/vllm.log @0d2e9196 (H100, 0.22.1, Qwen3-30B-A3B-2507 fp8):
    # "PIECEWISE=19 (largest=128), FULL=11 (largest=64)", 0.14 GiB
    (64, 8192, 1, (19, 11), 128, 0.14, "fit"),
    # tests/fixtures/logs/llama-3.1-8b-h100-tp1-v0.19.0-debug.log: "PIECEWISE=51 (largest=512), FULL=51", 0.84 GiB;
    # the same campaign's Gemma-3-12B (gemma-3-12b-it-h100-tp1-v0.19.0-debug-excerpt.log): 1.02 GiB
    (1024, 8192, 1, (51, 51), 512, 0.93, "fit"),
]


@pytest.mark.parametrize("seqs, mnbt, decode, counts, largest, logged, kind", REAL_GRAPHS)
def test_the_graph_estimate_against_real_logs(seqs, mnbt, decode, counts, largest, logged, kind):
    assert capture_sizes(seqs, mnbt, decode, 512) == counts  # the logged PIECEWISE / FULL counts
    got = _cudagraph(counts, largest) / GIB
    # held out within 0.03 GiB; the fit's two 512-size logs (0.84 and 1.02) straddle its 0.93 by 0.09
    assert abs(got - logged) <= (0.03 if kind == "held out" else 0.1), (got, logged)


def test_the_estimate_by_hand():
    # 19 + 11 graphs at largest 128: 129 MiB + (18 + 10) x (82 x 2^20 x 128^2 // (10 x 512^2)) = 135,266,304 +
    # 28 x 537,395 = 150,313,364 B ("0.14 GiB").
    assert _cudagraph((19, 11), 128) == 135_266_304 + 28 * 537_395 == 150_313_364
    assert _cudagraph((0, 0), 0) == 0  # --enforce-eager


def test_the_variable_off_keeps_the_estimate_logged_not_subtracted():
    on, off = _memory(), _memory(gpu={"estimate_cudagraphs": False})
    assert on.cudagraph_bytes == on.cudagraph_estimate_bytes == 995_098_604  # 129 MiB + 100 x 8,598,323
    assert (off.cudagraph_bytes, off.cudagraph_estimate_bytes) == (0, 995_098_604)
    assert off.kv_cache_bytes - on.kv_cache_bytes == 995_098_604
    cg = next(t for t in off.terms if t.name == "cudagraph")
    assert "gpu.estimate_cudagraphs" in cg.source


def _model_dir(tmp_path):
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    return str(model)


@pytest.mark.parametrize("value, subtracted", [("0", 0), ("1", 995_098_604), ("00", 0)])
def test_a_serve_lines_variable(capsys, tmp_path, value, subtracted):
    # envs.py reads bool(int(value)): "00" is off as "0" is.
    code, out, err = run(capsys, "plan", "--vllm-version", "0.20.0", "--gpu", "H100", "--format", "json",
                         "--gpu-memory-utilization", "0.95", "--serve",
                         f"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS={value} vllm serve {_model_dir(tmp_path)} "
                         "--max-model-len 16384 --no-enable-prefix-caching")
    assert code == 0, err
    m = json.loads(out)["gpu"]["memory"]
    assert (m["cudagraph_bytes"], m["cudagraph_estimate_bytes"]) == (subtracted, 995_098_604)


def test_a_bad_value_is_one_line_exit_2(capsys, tmp_path):
    code, out, err = run(capsys, "plan", "--vllm-version", "0.20.0", "--gpu", "H100", "--serve",
                         f"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=yes vllm serve {_model_dir(tmp_path)}")
    assert code == 2
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: expected an integer" in err
    assert len(err.strip().splitlines()) == 1


MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: llama}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.20.0
          command: ["vllm", "serve", "MODEL", "--max-model-len", "16384", "--no-enable-prefix-caching",
                    "--gpu-memory-utilization", "0.95"]
          env:
            - {name: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, value: "VALUE"}
"""


@pytest.mark.parametrize("value, subtracted", [("0", 0), ("1", 995_098_604)])
def test_a_manifests_variable(capsys, tmp_path, value, subtracted):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(MANIFEST.replace("MODEL", _model_dir(tmp_path)).replace("VALUE", value))
    code, out, err = run(capsys, "plan", "--k8s", str(manifest), "--gpu", "H100", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["gpu"]["memory"]["cudagraph_bytes"] == subtracted


# ---------------------------------------------------------------------------------------------- --cpu-offload-gb

# Llama-3.1-8B's decoder layer as vLLM's parameters, in order: qkv_proj 4,096 x 6,144 x 2 B = 50,331,648, o_proj
# 4,096^2 x 2 = 33,554,432, gate_up_proj 4,096 x 28,672 x 2 = 234,881,024, down_proj 117,440,512, the two norms
# 16,384: 436,224,000 B a layer.
LAYER = (50_331_648, 33_554_432, 234_881_024, 117_440_512, 16_384)


def test_cpu_offload_moves_whole_parameters_until_the_limit_is_passed():
    # 4 GiB = 4,294,967,296: 9 layers (3,926,016,000) and then qkv, o, gate_up (4,244,783,104 < the limit) and
    # down_proj (4,362,223,616, past it): offloading stops there.
    m = _memory(version="0.19.0", host={"cpu_offload_gb": 4})
    offloaded = 9 * sum(LAYER) + sum(LAYER[:4])
    assert offloaded == 4_362_223_616
    assert m.offloaded_params == LAYER * 9 + LAYER[:4]
    assert m.weights_bytes == 16_094_076_928 - offloaded  # the un-offloaded plan's 14.99 GiB less it
    assert m.kv_cache_bytes - _memory(version="0.19.0").kv_cache_bytes == offloaded
    assert "--cpu-offload-gb" in next(t for t in m.terms if t.name == "weights").source


def test_cpu_offload_beyond_the_layers_leaves_the_embedding_and_head():
    m = _memory(version="0.19.0", host={"cpu_offload_gb": 100})
    assert sum(m.offloaded_params) == 32 * sum(LAYER) == 13_959_168_000
    assert m.weights_bytes == 16_094_076_928 - 13_959_168_000  # embedding, head, final norm and rope cache stay


def test_the_host_gate_counts_the_pinned_allocations_rounded(capsys):
    # Each offloaded parameter is a pinned tensor (uva.py p.data.to("cpu").pin_memory()): torch rounds it to a power
    # of two: 64 + 32 + 256 + 128 MiB + 16 KiB = 503,332,864 B a layer; 9 layers + 64 + 32 + 256 + 128 MiB =
    # 5,033,312,256 B (1.15 x the 4,362,223,616 offloaded). The gate's need grows by that over the same plan
    # without --cpu-offload-gb (a 10 GiB native KV pool, needed for --check, on both).
    pinned = 9 * (503_316_480 + 16_384) + 503_316_480
    assert pinned == 5_033_312_256
    args = ["plan", LLAMA, "--vllm-version", "0.19.0", "--gpu", "H100", "--max-model-len", "16384",
            "--kv-offloading-size", "10", "--check", "--format", "json", "--host-memory", "64GiB"]

    def need(*extra):
        code, out, err = run(capsys, *args, *extra)
        assert code == 1, err  # cpu_smaller_than_gpu fails on both (a 10 GiB pool under a 58 GiB GPU cache)
        return {c["name"]: c for c in json.loads(out)["checks"]}["host_memory"]["need"]

    assert need("--cpu-offload-gb", "4") - need() == pinned


def test_a_held_out_a100_log_on_0_17_1():
    # tests/fixtures/logs/llama-3.1-8b-a100-80gb-tp1-v0.17.1.log (github.com/LzyFischer/MemSuit vllm_server.log
    # @92ce797a): not one of the fitted H100 0.19.0 logs. vLLM's A100 defaults (2,048 tokens, 256 seqs), 0.9 of the
    # table's 79.32 GiB; "Model loading took 14.99 GiB", "Available KV cache memory: 55.79 GiB", "GPU KV cache size:
    # 457,024 tokens". The sampler over 256 x 128,256 logits at 15.25 B (0.17's Triton top-k/top-p) + 0.25 GiB.
    data = {"model": {"hf_config": LLAMA}, "vllm": {"version": "0.17.1"}, "cache": {"max_model_len": 32768},
            "gpu": {"name": "A100-80GB", "memory_utilization": 0.9}}
    p = plan(layout_from_dict(data, source="test.yaml"))
    m = p.memory
    assert (m.max_num_batched_tokens, m.max_num_seqs) == (2048, 256)
    assert m.activation_peak_bytes == 256 * 128_256 * 61 // 4 + 2048 * 4096 * 2  # the sampler beats the forward
    logged = 5579 * GIB // 100
    assert abs(m.kv_cache_bytes - logged) / logged < 0.005
    assert abs(p.logs.kv_cache_size_tokens - 457_024) / 457_024 < 0.005


def test_device_wide_measurements_are_warnings(capsys):
    # vLLM's non-torch growth is the device's used memory (utils/mem_utils.py MemorySnapshot: total - free - torch
    # reserved); on GB10 free is the host's available memory. Neither is a term: each is a warning, only where it
    # applies.
    gb10 = _memory(gpu={"name": "GB10", "memory_utilization": 0.85})
    assert [w for w in gb10.warnings if "host's available memory" in w]
    assert not [w for w in _memory().warnings if "host's available memory" in w]  # an H100
    code, out, err = run(capsys, "plan", LLAMA, "--gpu", "H100", "--vllm-version", "0.22.1", "--max-model-len",
                         "16384", "--lmcache-env-file", os.path.join(ROOT, "examples", "lmcache", "lmcache.env"),
                         "--format", "json")
    assert code == 0, err
    assert [w for w in json.loads(out)["warnings"] if "other processes take on this device" in w]


@pytest.mark.parametrize("config, version, gpu, cache, logged_kv, logged_tokens", [
    # tests/fixtures/logs/formats/llama-3.1-8b-a100-40gb-tp1-eager-v0.15.1.log (ilseokoh/vllm-gce README): the LLM
    # class's defaults on a < 70 GiB GPU (8,192 tokens, 256 seqs: engine/arg_utils.py:1850-1855 @0.15.1), eager,
    # 0.9 of 39.49 GiB; "Available KV cache memory: 19.28 GiB", 157,936 tokens.
    (LLAMA, "0.15.1", {"name": "A100-40GB", "memory_utilization": 0.9, "enforce_eager": True},
     {"max_model_len": 131072, "max_num_batched_tokens": 8192, "max_num_seqs": 256}, "19.28", 157_936),
    # tests/fixtures/logs/formats/qwen1.5-moe-a2.7b-h100-tp1-v0.19.0-debug-excerpt.log: the llm-d campaign's run
    # that the fit did not use (0.95, 8,192 tokens, 1,024 seqs); "Available KV cache memory: 45.83 GiB", 250,304.
    (os.path.join(ROOT, "tests", "fixtures", "hf", "qwen1.5-moe-a2.7b.json"), "0.19.0",
     {"name": "H100", "memory_utilization": 0.95}, {"max_model_len": 8192, "enable_prefix_caching": False},
     "45.83", 250_304),
])
def test_held_out_real_logs(config, version, gpu, cache, logged_kv, logged_tokens):
    data = {"model": {"hf_config": config}, "vllm": {"version": version}, "cache": cache, "gpu": gpu}
    p = plan(layout_from_dict(data, source="test.yaml"))
    logged = int(logged_kv.replace(".", "")) * GIB // 100
    assert abs(p.memory.kv_cache_bytes - logged) / logged < 0.006
    assert abs(p.logs.kv_cache_size_tokens - logged_tokens) / logged_tokens < 0.006
