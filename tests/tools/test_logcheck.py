"""check --log on real start-up logs (issue 19): every format 0.14 - 0.33 read, CUDA-graph profiling's
`Overriding num_gpu_blocks=0` line not taken for the plan's count, the block count the logged token line pins, the
run's settings taken from the log. Every expected number is a real log's line (each fixture names its source)."""

import json
import os

import pytest

from conftest import run
from kvcalc.inputs.logs.vllm import parse
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.tools.logcheck import check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOGS = os.path.join(ROOT, "tests", "fixtures", "logs")
FORMATS = os.path.join(LOGS, "formats")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _model(name, layers, kv, head, mpe):
    return {"model": {"name": name, "num_layers": layers, "num_kv_heads": kv, "head_size": head,
                      "max_position_embeddings": mpe}}


LLAMA_8B = _model("Llama-3.1-8B", 32, 8, 128, 131072)
LLAMA_70B = _model("Llama-3-70B", 80, 8, 128, 8192)
QWEN25_7B = _model("Qwen2.5-7B", 28, 4, 128, 32768)
QWEN3_8B = _model("Qwen3-8B", 36, 8, 128, 40960)
QWEN15_MOE = _model("Qwen1.5-MoE-A2.7B", 24, 16, 128, 8192)


def test_the_llama_h100_log_of_the_issue_agrees():
    # vLLM 0.19.0, H100, one group of 16-token blocks: "GPU KV cache size: 476,016 tokens" = 29,751 blocks x 16.
    # Its "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512" is CUDA-graph profiling's (was read as 0).
    text = _read(os.path.join(LOGS, "llama-3.1-8b-h100-tp1-v0.19.0-debug.log"))
    result = check(layout_from_dict(LLAMA_8B), text, source="llama.log")
    assert result["match"] is True
    assert result["num_gpu_blocks"] == 476_016 // 16 == 29_751
    assert result["vllm_version"] == "0.19.0"
    assert any("CUDA-graph memory profiling" in n for n in result["notes"])


def test_gemma_3_12b_the_token_line_pins_the_count_up_to_the_groups():
    # Hybrid manager on (no connector: its non-default args name none): 6 groups, L1 tokens = n // 6 x 16, so
    # 130,304 tokens allow n in [130,304 / 16 x 6, + 5] = [48,864, 48,869]; the issue's 48,867 is among them.
    text = _read(os.path.join(LOGS, "gemma-3-12b-it-h100-tp1-v0.19.0-debug-excerpt.log"))
    lay = layout_from_dict({"model": {"hf_config": os.path.join(ROOT, "tests", "fixtures", "hf",
                                                                 "gemma-3-12b-it.json")},
                            "offload": {"cpu_bytes_to_use": "64GiB"}}, source="gemma.yaml")
    result = check(lay, text, source="gemma.log")
    assert result["num_gpu_blocks_matching"] == [130_304 // 16 * 6, 130_304 // 16 * 6 + 5] == [48_864, 48_869]
    assert any("no KV connector" in n for n in result["notes"])
    # The layout offloads (64 GiB) and the server ran no connector: a mismatch (issue 21), the GPU rows still agree.
    assert result["match"] is False
    assert [r["quantity"] for r in result["rows"] if r["match"] is False] == ["KV connector"]
    lay = layout_from_dict({"model": {"hf_config": os.path.join(ROOT, "tests", "fixtures", "hf",
                                                                 "gemma-3-12b-it.json")}}, source="gemma.yaml")
    assert check(lay, text, source="gemma.log")["match"] is True  # a layout without a connector matches


@pytest.mark.parametrize("name, model, blocks", [
    # Each: the release from the log, its "GPU KV cache size" line / 16-token blocks (one group).
    ("llama-3.1-8b-a100-40gb-tp1-eager-v0.15.1.log", LLAMA_8B, 157_936 // 16),
    ("llama-3-70b-awq-l40s-tp2-v0.16.0.log", LLAMA_70B, 132_128 // 16),  # (Worker_TP0 pid=N) prefixes, TP 2
    ("qwen2.5-7b-48gbclass-tp1-v0.22.0.log", QWEN25_7B, None),  # 0.21+: int(concurrency x max_model_len)
    ("qwen3-8b-a100-40gb-tp1-v0.19.1.log", QWEN3_8B, 140_960 // 16),
    ("qwen1.5-moe-a2.7b-h100-tp1-v0.19.0-debug-excerpt.log", QWEN15_MOE, 250_304 // 16),  # release from its tag
])
def test_real_logs_agree(name, model, blocks):
    result = check(layout_from_dict(model), _read(os.path.join(FORMATS, name)), source=name)
    assert result["match"] is True, result["rows"]
    if blocks is not None:
        assert result["num_gpu_blocks"] == blocks


def test_a_log_without_a_version_line_takes_the_release_of_its_line_tag():
    # The excerpt starts after the banner; "[v1/worker/gpu_worker.py:436] Available KV cache memory" is 0.19's
    # call (gpu_worker.py:437 @0.19.0 in log-formats.md, the tag being the call's first line).
    logged = parse(_read(os.path.join(FORMATS, "gemma-3-27b-it-h100-tp1-v0.19.0-debug-excerpt.log")))
    assert logged.vllm_version is None
    assert logged.tag_release == "0.19.0"


def test_every_memory_line_of_a_debug_log_is_read():
    # The 0.19.0 DEBUG lines of the gemma-3-12b log, as printed.
    logged = parse(_read(os.path.join(LOGS, "gemma-3-12b-it-h100-tp1-v0.19.0-debug-excerpt.log")))
    assert (logged.free_gib, logged.total_gib, logged.requested_gib) == ("78.68", "79.19", "75.23")
    assert logged.utilization == "0.950000"
    assert (logged.non_kv_gib, logged.torch_peak_gib, logged.non_torch_gib) == ("27.51", "3.94", "0.25")
    assert logged.cudagraph_estimate_gib == "1.02"
    assert logged.available_gib == ("47.72",)
    assert (logged.kv_cache_size_tokens, logged.max_model_len, logged.max_concurrency) == (130_304, 8192, "15.88")
    assert logged.profiling_override.override == 512
    assert logged.num_gpu_blocks is None  # the profiling line is no count
    assert logged.setting("gpu_memory_utilization") == 0.95
    assert logged.setting("enable_prefix_caching") is False


def test_the_0_27_one_line_form_and_the_summary_line():
    logged = parse(_read(os.path.join(FORMATS, "qwen3.8-27b-exl3-sm120-16gb-tp1-dev0.27era.log")))
    # "GPU KV cache size: 172,032 tokens, Maximum concurrency for 172,032 tokens per request: 1.00x"
    assert (logged.kv_cache_size_tokens, logged.max_model_len, logged.max_concurrency) == (172_032, 172_032, "1.00")
    # "Free memory on device (15.28/15.51 GiB) on startup. Desired GPU memory utilization is (0.92, 14.27 GiB)."
    assert (logged.free_gib, logged.total_gib, logged.utilization, logged.requested_gib) == (
        "15.28", "15.51", "0.92", "14.27")
    assert logged.vllm_version == "0.1.dev20058+g1f1617e26"  # a source build: no release kvcalc models


def test_the_0_26_summary_line():
    logged = parse(_read(os.path.join(FORMATS, "lfm2.5-1.2b-int4-sm90-16gb-tp1-v0.26.0.log")))
    # "Free memory on device (15.89/16.0 GiB) on startup. Desired GPU memory utilization is (0.95, 15.2 GiB)."
    assert (logged.total_gib, logged.utilization, logged.requested_gib) == ("16.0", "0.95", "15.2")
    assert logged.kv_cache_size_tokens == 2_324_244


def test_a_real_override_line_is_the_count():
    # 0.21+ logs "Overriding num_gpu_blocks=X with num_gpu_blocks_override=Y" once per worker with X = memory //
    # bytes per block: Y is the engine's count.
    text = ("INFO [kv_cache_utils.py:1999] Overriding num_gpu_blocks=20480 with num_gpu_blocks_override=1000\n"
            "INFO [kv_cache_utils.py:1710] GPU KV cache size: 16,000 tokens\n")
    logged = parse(text)
    assert logged.num_gpu_blocks == 1000
    assert logged.overrides[0].computed == 20480


def test_workers_each_printing_the_memory_take_the_smallest():
    text = ("(Worker_TP0 pid=1) INFO [gpu_worker.py:457] Available KV cache memory: 40.00 GiB\n"
            "(Worker_TP1 pid=2) INFO [gpu_worker.py:457] Available KV cache memory: 39.50 GiB\n")
    assert parse(text).available_gib == ("40.00", "39.50")


def test_the_logs_settings_win_over_the_layouts_unless_a_flag_set_them(capsys, tmp_path):
    # The qwen2.5-7b 0.22.0 log: max_num_batched_tokens 2048 (its "Chunked prefill is enabled with
    # max_num_batched_tokens=2048" line) and max_model_len 4096; --vllm-version names the release instead of the log.
    path = tmp_path / "q.yaml"
    import yaml

    path.write_text(yaml.safe_dump(QWEN25_7B))
    log = os.path.join(FORMATS, "qwen2.5-7b-48gbclass-tp1-v0.22.0.log")
    code, out, err = run(capsys, "check", str(path), "--log", log, "--format", "json")
    assert code == 0, err
    note = json.loads(out)["notes"][0]
    assert "vLLM 0.22.0" in note
    assert "max_model_len 4096" in note
    code, out, err = run(capsys, "check", str(path), "--log", log, "--vllm-version", "0.22.1", "--format", "json")
    assert json.loads(out)["vllm_version"] == "0.22.1"


LLAMA_CFG = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
LLAMA_LOG = os.path.join(LOGS, "llama-3.1-8b-h100-tp1-v0.19.0-debug.log")


def _from_log(capsys, *flags):
    code, out, err = run(capsys, "plan", LLAMA_CFG, "--kv-cache-memory-from-log", LLAMA_LOG, "--vllm-version",
                         "0.19.0", "--max-model-len", "16384", *flags, "--format", "json")
    return code, (json.loads(out) if code == 0 else None), err


def test_what_if_another_kv_dtype_reuses_the_logged_budget(capsys):
    # The log pins 29,751 blocks of 2 MiB: a budget of at least 29,751 x 2,097,152 = 62,392,369,152 B. In fp8 a block
    # is 1 MiB: 62,392,369,152 // 1,048,576 = 59,502 blocks.
    code, doc, err = _from_log(capsys, "--kv-cache-dtype", "fp8")
    assert code == 0, err
    assert doc["cache"]["kv_cache_memory"] == [29_751 * 2_097_152] == [62_392_369_152]
    assert doc["gpu"]["num_blocks"] == 62_392_369_152 // 1_048_576 == 59_502


def test_what_if_another_utilization_moves_the_budget_exactly(capsys):
    # T = 79.19 GiB = 85,029,615,042 B (its snapshot line); ceil(T x 0.9) - ceil(T x 0.95) = 76,526,653,538 -
    # 80,778,134,290 = -4,251,480,752 B: 62,392,369,152 - 4,251,480,752 = 58,140,888,400 B, // 2 MiB = 27,723 blocks.
    code, doc, err = _from_log(capsys, "--gpu-memory-utilization", "0.9")
    assert code == 0, err
    assert doc["cache"]["kv_cache_memory"] == [58_140_888_400]
    assert doc["gpu"]["num_blocks"] == 58_140_888_400 // 2_097_152 == 27_723
    assert "-4,251,480,752 B" in err


def test_a_log_is_not_reused_for_another_tp(capsys):
    # Its engine line states tensor_parallel_size=1: TP 2 changes the weights and non-torch memory.
    code, doc, err = _from_log(capsys, "--tp", "2")
    assert code == 2
    assert "measured with tensor_parallel_size 1" in err


def _llama_layout(tmp_path, **sections):
    import yaml

    path = tmp_path / "llama.yaml"
    path.write_text(yaml.safe_dump({"model": {"hf_config": LLAMA_CFG}, "vllm": {"version": "0.19.0"}, **sections}))
    return str(path)


def test_a_layout_setting_the_log_contradicts_is_a_mismatch(capsys, tmp_path):
    # Issue 34: the layout's own TP and KV dtype were replaced by the log's (its engine line: tensor_parallel_size=1,
    # kv_cache_dtype=auto), so a TP 2 / fp8 layout "matched" the TP 1 / bf16 run. Each contradiction is its own row.
    layout = _llama_layout(tmp_path, parallel={"tensor_parallel_size": 2},
                           cache={"kv_cache_dtype": "fp8", "max_model_len": 16384})
    code, out, err = run(capsys, "check", layout, "--log", LLAMA_LOG, "--format", "json")
    assert code == 1
    rows = {r["quantity"]: r for r in json.loads(out)["rows"] if r["match"] is False}
    assert rows["tensor_parallel_size"]["logged"] == "1"
    assert rows["tensor_parallel_size"]["predicted"].startswith("2")
    assert rows["kv_cache_dtype"]["logged"] == "auto"
    # The same layout at the log's own settings matches.
    layout = _llama_layout(tmp_path, cache={"max_model_len": 16384})
    code, out, err = run(capsys, "check", layout, "--log", LLAMA_LOG, "--format", "json")
    assert code == 0, err


def test_a_log_is_not_reused_for_the_tp_a_layout_sets(capsys, tmp_path):
    # --kv-cache-memory-from-log reused a TP 1 run's budget at the layout's TP 2 silently.
    layout = _llama_layout(tmp_path, parallel={"tensor_parallel_size": 2}, cache={"max_model_len": 16384})
    code, out, err = run(capsys, "plan", layout, "--kv-cache-memory-from-log", LLAMA_LOG)
    assert code == 2
    assert "measured with tensor_parallel_size 1" in err


def test_a_layouts_kv_dtype_reuses_the_logged_budget_in_bytes(capsys, tmp_path):
    # The layout's fp8 (not a flag) counts as --kv-cache-dtype fp8 would: 29,751 blocks of 2 MiB logged are
    # 62,392,369,152 B, 59,502 blocks of 1 MiB in fp8 (test_what_if_another_kv_dtype_reuses_the_logged_budget).
    layout = _llama_layout(tmp_path, cache={"kv_cache_dtype": "fp8", "max_model_len": 16384})
    code, out, err = run(capsys, "plan", layout, "--kv-cache-memory-from-log", LLAMA_LOG, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["cache"]["kv_cache_memory"] == [29_751 * 2_097_152]
    assert doc["gpu"]["num_blocks"] == 62_392_369_152 // 1_048_576 == 59_502
