"""SGLang's GPU token pool against real start-up logs from public issues (tests/fixtures/sglang/logs/, each with its
source). SGLang prints GiB as "GB" with two decimals, so a log pins a value to +-0.005 GiB: the tests compute, by
SGLang's formula written out here, the interval the logged inputs allow and check that kvcalc lands in it and that
the logged pool is in it too."""

import os
import re

import pytest

from kvcalc import layout_from_dict, load_layout
from kvcalc.engines.sglang.memory import budget
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import StartupRefusal

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")
GIB = 1 << 30


def log(name: str) -> str:
    with open(os.path.join(FIX, "sglang", "logs", name), encoding="utf-8") as fh:
        return fh.read()


def gib(text: str, pattern: str) -> list[float]:
    return [float(x) for x in re.findall(pattern, text)]


def tokens(avail_gib: float, pre_gib: float, mfs: float, cell: int) -> int:
    """SGLang's budget (kv_cache_configurator.py _profile_available_bytes + pool_configurator.py, page 1):
    int((available - pre x (1 - mfs)) x 2^30) // cell."""
    return int((avail_gib - pre_gib * (1 - mfs)) * GIB) // cell


def test_kimi_k25_tp8_cell_and_pool():
    text = log("kimi-k2.5-mi355x-tp8-v0.5.8.post1.log")
    mfs = float(re.search(r"mem_fraction_static=([0-9.]+)", text).group(1))
    # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 B = 70,272 B a token, one latent per rank.
    cell = (512 + 64) * 61 * 2
    logged = int(re.search(r"#tokens: (\d+), KV size: ([0-9.]+) GB", text).group(1))
    kv_gib = float(re.search(r"#tokens: \d+, KV size: ([0-9.]+) GB", text).group(1))
    # The pool holds tokens + one padding page: (2,454,421 + 1) x 70,272 B = 172,477,... B = 160.63 GiB.
    assert f"{(logged + 1) * cell / GIB:.2f}" == f"{kv_gib:.2f}"
    # available is MIN over the world (the smallest rank's 209.96); pre = that rank's avail + mem usage.
    avail = min(gib(text, r"avail mem=([0-9.]+) GB, mem usage"))
    usage = gib(text, r"mem usage=([0-9.]+) GB")[0]
    pre = avail + usage
    lo = tokens(avail - 0.005, pre + 0.01, mfs, cell)  # pre carries two roundings
    hi = tokens(avail + 0.005, pre - 0.01, mfs, cell)
    assert lo <= logged <= hi
    p = plan(load_layout(os.path.join(FIX, "hf", "kimi-k2.5.json"), overrides={
        "engine": ("sglang", "--engine"), "parallel.tensor_parallel_size": (8, "--tp"),
        "sglang.mem_fraction_static": (mfs, "--mem-fraction-static"),
        "sglang.gpu_free_memory": (f"{pre:.2f}GiB", "--gpu-free-memory"),
        "sglang.weights_bytes": (f"{usage:.2f}GiB", "--weights-bytes"), "sglang.version": ("0.5.14", "--sglang-version")}))
    gpu = p.stage.gpu
    assert gpu.cell_size_bytes[0].full == cell
    assert gpu.max_total_num_tokens == tokens(avail, pre, mfs, cell)
    assert lo <= gpu.max_total_num_tokens <= hi


def test_qwen3_235b_tp4_cell():
    text = log("qwen3-235b-a22b-fp8-h100-tp4.log")
    logged = int(re.search(r"#tokens: (\d+)", text).group(1))
    k = float(re.search(r"K size: ([0-9.]+) GB", text).group(1))
    # Qwen3-235B-A22B: 94 layers, 4 KV heads of 128, TP 4 -> 1 head a rank; K: 94 x 1 x 128 x 2 B = 24,064 B a
    # token, V the same: 48,128 B a token; (367,404 + 1) x 24,064 B = 8.23 GiB.
    p = plan(layout_from_dict({
        "engine": "sglang", "model": {"num_layers": 94, "num_kv_heads": 4, "head_size": 128},
        "parallel": {"tensor_parallel_size": 4}, "cache": {"max_model_len": 40960},
        "sglang": {"version": "0.5.23", "gpu_free_memory": "78GiB", "weights_bytes": "54GiB",
                   "mem_fraction_static": 0.93}}))
    assert p.stage.gpu.cell_size_bytes[0].full == 48128
    assert f"{(logged + 1) * 48128 // 2 / GIB:.2f}" == f"{k:.2f}"


def test_qwen3_14b_cell_and_weights():
    text = log("qwen3-14b-48gb-tp1.log")
    logged = int(re.search(r"#tokens: (\d+)", text).group(1))
    k = float(re.search(r"K size: ([0-9.]+) GB", text).group(1))
    usage = gib(text, r"mem usage=([0-9.]+) GB")[0]
    avail = gib(text, r"avail mem=([0-9.]+) GB, mem usage")[0]
    lay = load_layout(os.path.join(FIX, "hf", "qwen3-14b.json"), overrides={
        "engine": ("sglang", "--engine"), "sglang.gpu_free_memory": (f"{avail + usage:.2f}GiB", "--gpu-free-memory"),
        "sglang.mem_fraction_static": (0.88, "--mem-fraction-static"), "sglang.version": ("0.5.23", "x")})
    p = plan(lay)
    # Qwen3-14B: 40 layers x 8 KV heads x 128 x 2 B = 81,920 B of K a token; (91,749 + 1) x 81,920 B = 7.00 GiB.
    assert p.stage.gpu.cell_size_bytes[0].full == 2 * 81920
    assert f"{(logged + 1) * 81920 / GIB:.2f}" == f"{k:.2f}"
    # The weights figure (inputs/hf/weights.py, shared with vLLM) against SGLang's 'mem usage' of the load: within 1 %.
    weights = p.stage.gpu.weights_bytes[0]
    assert abs(weights / GIB - usage) / usage < 0.01, weights / GIB


def test_minimum_viable_fraction_deepseek_v4_h200():
    text = log("deepseek-v4-pro-fp8-h200-tp8.log")
    avail = gib(text, r"avail mem=([0-9.]+) GB")[0]
    usage = gib(text, r"mem usage=([0-9.]+) GB")[0]
    pre = avail + usage
    with pytest.raises(StartupRefusal, match=r"minimum viable = 1 - available/pre = (0\.\d{4})") as e:
        budget(round(pre * GIB), round(avail * GIB), 0.88)
    got = float(re.search(r"minimum viable = 1 - available/pre = (0\.\d{4})", str(e.value)).group(1))
    # SGLang quoted 0.9113 (InferenceX#2128) from its unrounded, world-MIN figures; the rounded local ones give
    # 1 - 12.25 / 137.90 = 0.9112.
    assert abs(got - 0.9113) <= 0.0002
    assert "Raise --mem-fraction-static above 0.912" in str(e.value)
