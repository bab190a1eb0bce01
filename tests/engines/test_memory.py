"""The KV budget predicted offline (issue 19): terms derived by hand from the model's shapes and vLLM's formula,
checked against real start-up logs' lines (tests/fixtures/logs: each names its source)."""

import json
import os
import shutil

import pytest

from conftest import run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
GEMMA12 = os.path.join(ROOT, "tests", "fixtures", "hf", "gemma-3-12b-it.json")
GIB = 1 << 30
H100 = 7919 * GIB // 100  # "total_memory=79.19GiB" (the llm-d-planner 0.19.0 logs' snapshot line)


def _plan(config=LLAMA, version="0.19.0", gpu=None, cache=None, parallel=None):
    data = {"model": {"hf_config": config}, "vllm": {"version": version},
            "cache": {"max_model_len": 16384, "enable_prefix_caching": False, **(cache or {})},
            "gpu": {"name": "H100", "memory_utilization": 0.95, **(gpu or {})}, "parallel": parallel or {}}
    return plan(layout_from_dict(data, source="test.yaml"))


def test_llama_weights_are_its_parameters_and_rope_cache():
    # Llama-3.1-8B: embedding and LM head 128,256 x 4,096 each (1,050,673,152); a layer: q/o 2 x 4,096^2
    # (33,554,432), k/v 2 x 4,096 x 1,024 (8,388,608), MLP 3 x 4,096 x 14,336 (176,160,768), 2 norms (8,192) =
    # 218,112,000 x 32 = 6,979,584,000; final norm 4,096: 8,030,261,248 parameters x 2 B = 16,060,522,496 B, plus
    # the rotary cos/sin cache 131,072 x 128 x 2 B = 33,554,432: 16,094,076,928 B = 14.99 GiB, the real log's
    # "Model loading took 14.99 GiB memory".
    m = _plan().memory
    assert m.weights_bytes == 8_030_261_248 * 2 + 131_072 * 128 * 2 == 16_094_076_928
    assert f"{m.weights_bytes / GIB:.2f}" == "14.99"


def test_requested_is_vllms_ceil_of_total_times_utilization():
    # 85,029,615,042 x 0.95 = 80,778,134,289.9 -> 80,778,134,290 (the log: "worker requested memory: 75.23GiB").
    m = _plan().memory
    assert m.total_bytes == H100 == 85_029_615_042
    assert m.requested_bytes == 80_778_134_290
    assert f"{m.requested_bytes / GIB:.2f}" == "75.23"


def test_the_llama_h100_prediction_is_within_half_a_percent_of_the_real_log():
    # Real: "Available KV cache memory: 58.11 GiB", 476,016 tokens = 29,751 blocks
    # (tests/fixtures/logs/llama-3.1-8b-h100-tp1-v0.19.0-debug.log). Estimates: activation (logged 1.89 GiB) and
    # non-torch (0.25 GiB).
    p = _plan()
    logged = 5811 * GIB // 100
    assert abs(p.memory.kv_cache_bytes - logged) / logged < 0.005
    assert abs(p.gpu.num_blocks - 29_751) / 29_751 < 0.005
    assert p.memory.non_torch_bytes == 25 * GIB // 100  # the same log: "non-torch forward increase memory: 0.25GiB"
    assert abs(p.memory.activation_peak_bytes - 189 * GIB // 100) < GIB // 10  # "torch peak memory increase: 1.89"


def test_gemma_3_12b_prediction_against_its_real_log():
    # Real 0.19.0 start: weights 23.31 GiB, "Available KV cache memory: 47.72 GiB", 130,304 tokens.
    p = _plan(GEMMA12, cache={"max_model_len": 8192})
    assert abs(p.memory.weights_bytes - 2331 * GIB // 100) / (2331 * GIB // 100) < 0.03
    logged = 4772 * GIB // 100
    assert abs(p.memory.kv_cache_bytes - logged) / logged < 0.02


def test_pp_stages_hold_their_own_layers_and_ends():
    # PP 2: stage 0 has the embedding and layers 0-15, stage 1 layers 16-31, the final norm and the LM head (the
    # rotary cache is built with layer 0). Each holds 525,336,576 + 16 x 218,112,000 parameters (+ 4,096 on stage 1).
    m = _plan(parallel={"pipeline_parallel_size": 2}).memory
    w0, w1 = m.workers
    assert w0.weights_bytes == (525_336_576 + 16 * 218_112_000) * 2 + 131_072 * 128 * 2
    assert w1.weights_bytes == (525_336_576 + 16 * 218_112_000 + 4_096) * 2
    # Non-torch on PP stages without TP: 0.07 GiB (llm-d-planner's PP runs: "0.07 GiB").
    assert w0.non_torch_bytes == 7 * GIB // 100


def test_tp_splits_the_linears_and_pads_the_vocabulary():
    # TP 2: q/o, MLP and the vocabulary halve (128,256 is a multiple of 64); 8 KV heads -> 4 a rank.
    m = _plan(parallel={"tensor_parallel_size": 2}).memory
    per_rank = 2 * 128_256 // 2 * 4096 + 32 * (33_554_432 // 2 + 8_388_608 // 2 + 176_160_768 // 2 + 8192) + 4096
    assert m.weights_bytes == per_rank * 2 + 131_072 * 128 * 2
    assert m.non_torch_bytes == (201 + 3 * 2) * GIB // 100  # 2.07 GiB at TP 2 (the same logs)


def test_runtime_fp8_stores_linear_weights_in_one_byte():
    # --quantization fp8: the 6,979,584,000 - 32 x 8,192 linear parameters in 1 B, the embedding and head in 2 B.
    m = _plan(gpu={"quantization": "fp8"}).memory
    linear = 32 * (33_554_432 + 8_388_608 + 176_160_768)
    rest = 2 * 525_336_576 + 32 * 8192 + 4096
    assert m.weights_bytes == linear + rest * 2 + 131_072 * 128 * 2


def test_enforce_eager_captures_no_graphs():
    m = _plan(version="0.20.0", gpu={"enforce_eager": True}).memory
    assert (m.cudagraph_sizes, m.cudagraph_bytes) == (0, 0)


def test_every_term_has_a_basis_and_a_source():
    m = _plan().memory
    assert [t.name for t in m.terms] == ["total", "requested", "weights", "activation_peak", "non_torch",
                                         "cudagraph", "kv_cache"]
    assert {t.basis for t in m.terms} <= {"exact", "table", "estimate", "flag"}
    assert all(t.source for t in m.terms)


def test_a_budget_below_zero_is_vllms_refusal(capsys):
    # 8 GiB device at 0.5: 4 GiB requested, less than the 14.99 GiB of weights: no KV cache left.
    code, out, err = run(capsys, "plan", LLAMA, "--vllm-version", "0.19.0", "--gpu-total-memory", "8GiB",
                         "--gpu-memory-utilization", "0.5", "--max-model-len", "4096")
    assert code == 2
    assert "No available memory for the cache blocks" in err


@pytest.mark.parametrize("args, needle", [
    (["--gpu", "RTX 9999"], "gpu.name (from --gpu): expected a GPU kvcalc has a total for"),
    (["--gpu-total-memory", "80 apples"], "gpu.total_memory (from --gpu-total-memory)"),
    (["--gpu", "H100", "--gpu-memory-utilization", "1.5"],
     "gpu.memory_utilization (from --gpu-memory-utilization): expected a fraction in (0, 1], got 1.5"),
    (["--gpu", "H100", "--max-num-seqs", "0"], "--max-num-seqs"),
    (["--gpu", "H100", "--quantization", "int3"], "--quantization"),
])
def test_bad_gpu_flags_are_one_line(capsys, args, needle):
    code, out, err = run(capsys, "plan", LLAMA, *args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_a_config_without_shapes_cannot_be_weighed(capsys):
    # The Gemma-3-27B fixture states only the KV fields: no guessing with transformers' defaults.
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "tests", "fixtures", "models", "gemma-3-27b.json"),
                         "--gpu", "H100")
    assert code == 2
    assert "states no" in err


def test_a_serve_line_gives_the_memory_flags(capsys, tmp_path):
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    code, out, err = run(capsys, "plan", "--vllm-version", "0.20.0", "--gpu", "H100", "--format", "json", "--",
                         "vllm", "serve", str(model), "--gpu-memory-utilization", "0.8", "--max-num-seqs", "256",
                         "--enforce-eager", "-q", "fp8", "--max-model-len", "8192")
    assert code == 0, err
    m = json.loads(out)["gpu"]["memory"]
    assert (m["utilization"], m["max_num_seqs"], m["cudagraph_sizes"]) == (0.8, 256, 0)
    assert "fp8" in next(t for t in m["terms"] if t["name"] == "weights")["source"]


def test_the_table_draws_the_gpu_line(capsys):
    code, out, err = run(capsys, "plan", LLAMA, "--vllm-version", "0.19.0", "--gpu", "H100",
                         "--gpu-memory-utilization", "0.95", "--max-model-len", "16384")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("GPU ["))
    assert "79.19 GiB: W 14.99" in line


def test_dtype_float32_doubles_the_weights():
    # --dtype float32: 8,030,261,248 x 4 B + the rope cache 131,072 x 128 x 4 B = 32,188,153,856 B = 29.98 GiB, the
    # llm-d-planner float32 run's logged weights (accuracy_report.md: "float32 | 29.98").
    m = plan(layout_from_dict({"model": {"hf_config": LLAMA, "dtype": "float32"}, "vllm": {"version": "0.19.0"},
                               "cache": {"max_model_len": 8192}, "gpu": {"name": "H100"}}, source="t.yaml")).memory
    assert m.weights_bytes == 8_030_261_248 * 4 + 131_072 * 128 * 4 == 32_188_153_856
    assert f"{m.weights_bytes / GIB:.2f}" == "29.98"


def test_the_longest_max_model_len_that_fits_and_vllms_estimate(capsys):
    # Llama-3.1-8B: a token takes 32 layers x 4,096 B = 128 KiB; a request takes cdiv(L, 16) blocks of 2 MiB. On a
    # 24 GiB device at 0.92 the prediction leaves B bytes; the longest request is (B // 2 MiB) x 16 tokens, and vLLM
    # 0.22.0 refuses 131,072 naming that estimate ("the estimated maximum model length is N").
    p = plan(layout_from_dict({"model": {"hf_config": LLAMA}, "vllm": {"version": "0.22.0"},
                               "cache": {"max_model_len": 8192}, "gpu": {"total_memory": "24GiB"}}, source="t.yaml"))
    from kvcalc.report.report import gpu_memory

    m = gpu_memory(p)
    fits = m.kv_cache_bytes // (2 << 20) * 16
    assert m.max_model_len_that_fits == fits
    code, out, err = run(capsys, "plan", LLAMA, "--gpu-total-memory", "24GiB", "--vllm-version", "0.22.0",
                         "--max-model-len", "131072")
    assert code == 2
    assert f"the estimated maximum model length is {fits}." in err


def test_vllms_double_counted_graphs_are_a_warning_from_0_27():
    # 0.27+ gpu_worker.py puts the applied CUDA-graph estimate in peak_activation_memory and adds the captured graphs
    # again in the --kv-cache-memory suggestion (vllm#57936); 0.26 does not.
    warned = [w for w in _plan(version="0.30.0").warnings if "vllm#57936" in w]
    assert len(warned) == 1
    # The H100 default: 51 piecewise + 51 full graphs at largest 512: 129 MiB + 100 x 8.2 MiB = 995,098,604 B.
    assert "0.93 GiB" in warned[0]
    assert not [w for w in _plan(version="0.26.0").warnings if "vllm#57936" in w]


def test_a_safetensors_index_sets_the_total(tmp_path):
    # A model directory whose model.safetensors.index.json says total_size = the 8,030,261,248 parameters x 2 B + 2 GiB:
    # every block but the rope cache scales by total_size / 16,060,522,496 (the split over stages and ranks stays the
    # parameter rules'): weights = 16,060,522,496 + 2 GiB + 33,554,432 at TP 1.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    total = 8_030_261_248 * 2 + 2 * GIB
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                    "weight_map": {}}))
    m = _plan(str(model / "config.json")).memory
    assert abs(m.weights_bytes - (total + 131_072 * 128 * 2)) <= 16  # integer division per block
    assert "total_size" in next(t for t in m.terms if t.name == "weights").source


def test_a_gpu_with_a_block_count_override_has_no_budget_to_show(capsys):
    # --num-gpu-blocks-override with --gpu: vLLM takes the count, no budget in bytes is predicted or given, so the
    # report has no gpu.memory (it used to fail: AttributeError on the missing budget, found by mypy).
    code, out, err = run(capsys, "plan", LLAMA, "--gpu", "H100", "--num-gpu-blocks-override", "1000",
                         "--max-model-len", "8192", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert "memory" not in doc["gpu"]
    assert doc["gpu"]["num_blocks"] == 1000


def test_memory_other_processes_hold_refuses_as_vllm_does(capsys):
    # Issue 30: vLLM's request_memory (v1/worker/utils.py, every release): free < ceil(total x utilization) is a
    # ValueError. H100 (79.19 GiB = 85,029,615,042 B) at 0.9: ceil(x 0.9) = 71.27 GiB requested; 20 GiB used leaves
    # 59.19 GiB free: refused, in vLLM's words and its round(x, 2) GiB. 5 GiB used leaves 74.19: it starts.
    from kvcalc.cli import main

    llama = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
    code = main(["plan", llama, "--gpu", "h100", "--vllm-version", "0.19.0", "--gpu-used-memory", "20GiB"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("Free memory on device cuda:0 (59.19/79.19 GiB) on startup is less than desired GPU memory utilization "
            "(0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.") in err
    assert main(["plan", llama, "--gpu", "h100", "--vllm-version", "0.19.0", "--gpu-used-memory", "5GiB"]) == 0
    capsys.readouterr()
    assert main(["plan", llama, "--gpu", "h100", "--gpu-used-memory", "80GiB"]) == 2
    assert "gpu.used_memory (from --gpu-used-memory): expected less than the device's total" in capsys.readouterr().err
