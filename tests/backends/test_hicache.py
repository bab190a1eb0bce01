"""SGLang's HiCache host pool (backends/hicache.py): the rules around the per-pool sizing that
tests/engines/test_sglang_vectors.py checks against SGLang's own HostKVCache (layouts, hybrid split, copies per rank,
nodes with DP, auto-size, the guard), with numbers derived by hand in each comment or quoted from public issues."""

import os

import pytest

from kvcalc import layout_from_dict, load_layout
from kvcalc.backends.hicache import split_size
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import StartupRefusal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GIB = 1 << 30
DENSE = {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}  # 131,072 B a token at TP 1
PINNED = {"version": "0.5.23", "gpu_free_memory": "78GiB", "weights_bytes": "15GiB", "mem_fraction_static": 0.85}


def sglang_plan(model=DENSE, tp=1, dp=1, **sglang):
    hicache = sglang.pop("hicache", {"enabled": True})
    host = sglang.pop("host", {})
    return plan(layout_from_dict({
        "engine": "sglang", "model": model, "parallel": {"tensor_parallel_size": tp, "data_parallel_size": dp},
        "cache": {"max_model_len": 8192}, "sglang": {**PINNED, **sglang, "hicache": hicache}, "host": host}))


def test_split_reproduces_sglang_29034():
    # sglang#29034 / PR #29037: Qwen3.5-397B-A17B-FP8 at TP 8 with --hicache-size 20: device pools of 13.42 GB (KV)
    # and 1.34 GB (Mamba) per rank. Up to 0.5.16 each host pool got 20 GB (40 GB a rank, 320 GB for 8 ranks);
    # from 0.5.17 the 20 GB are split 20 x 13.42 / 14.76 = 18.18 and 20 x 1.34 / 14.76 = 1.82.
    before = split_size(20, [13_420_000_000, 1_340_000_000], split=False)
    after = split_size(20, [13_420_000_000, 1_340_000_000], split=True)
    assert before == [20.0, 20.0]
    assert round(after[0], 2) == 18.18
    assert round(after[1], 2) == 1.82
    assert sum(after) == pytest.approx(20.0)


def test_mla_ranks_each_pin_their_own_copy():
    # DeepSeek-V3 at TP 8, --hicache-size 100: one MLA latent row of (512 + 64) x 61 x 2 B = 70,272 B a token on
    # every rank; int(100e9 // 70,272) = 1,423,041 tokens + one padding page = 1,423,042, x 70,272 B = 100,000,007,424
    # B a rank, 8 copies: 800,000,059,392 B an engine (srt/mem_cache/mla_host_dedup.py serves only the Mooncake
    # linker, which excludes HiCache).
    p = plan(load_layout(os.path.join(ROOT, "tests", "fixtures", "models", "deepseek-v3.json"), overrides={
        "engine": ("sglang", "--engine"), "parallel.tensor_parallel_size": (8, "--tp"),
        "sglang.version": ("0.5.23", "x"), "sglang.gpu_free_memory": ("137GiB", "x"),
        "sglang.weights_bytes": ("80GiB", "x"), "sglang.mem_fraction_static": (0.9, "x"),
        "sglang.hicache.enabled": (True, "x"), "sglang.hicache.size": (100, "x")}))
    h = p.pool.section
    assert h.size_tokens_per_rank == 1423042
    assert h.bytes_per_rank == 100000007424
    assert h.bytes_per_engine == 800000059392


def test_node_bytes_with_dp():
    # TP 2, DP 2 on one node: 4 ranks, each int(100e9 // 131,072) + 1 = 762,940 tokens x 131,072 B.
    p = sglang_plan(tp=2, dp=2, hicache={"enabled": True, "size": 100})
    per_rank = 762940 * 65536  # TP 2 halves the heads: 65,536 B a token a rank
    assert p.pool.section.bytes_per_rank == (int(100e9 // 65536) + 1) * 65536
    assert p.pool.section.bytes_per_node == 4 * p.pool.section.bytes_per_rank
    assert per_rank != p.pool.section.bytes_per_rank  # the heads are split by TP, the tokens are not


@pytest.mark.parametrize("model,layout,refused", [
    (DENSE, "page_first_kv_split", True),  # MHA: pool_host/mha.py:339 'Unsupported layout'
    ({"num_layers": 8, "kv_lora_rank": 512, "qk_rope_head_dim": 64}, "page_head", True),  # MLA: pool_host/mla.py:430
    (DENSE, "page_head", False), (DENSE, "layer_first", False)])
def test_layouts_each_kind_accepts(model, layout, refused):
    if refused:
        with pytest.raises(StartupRefusal, match="Unsupported layout"):
            sglang_plan(model=model, hicache={"enabled": True, "mem_layout": layout})
    else:
        assert sglang_plan(model=model, hicache={"enabled": True, "mem_layout": layout}).pool.section.layout == layout


def test_direct_io_turns_page_first_into_page_first_direct():
    # arg_groups/hicache_hook.py:186-194 @0.5.23: page_first + direct io -> page_first_direct.
    h = sglang_plan(hicache={"enabled": True, "io_backend": "direct"}).pool.section
    assert h.layout == "page_first_direct"


def test_auto_size_reduces_the_default_ratio():
    # 0.5.21+ with neither ratio nor size: budget = (available - 10 GiB) // ranks x 0.8, ratio = min(2.0, budget x
    # 0.95 / device bytes), device bytes = (tokens + 1) x 131,072. 100 GiB available: (90 GiB x 0.8) x 0.95 = 68.4
    # GiB for a device pool of ~59 GiB: ratio ~1.16 < 2.0.
    p = sglang_plan(host={"available_memory": "100GiB"})
    tokens = p.stage.gpu.max_total_num_tokens
    budget = int((100 * GIB - 10 * GIB) * 0.8)
    ratio = min(2.0, budget * 0.95 / ((tokens + 1) * 131072))
    h = p.pool.section
    assert h.ratio_from == "auto-size"
    assert h.ratio == ratio
    assert h.size_tokens_per_rank == int(tokens * ratio) + 1
    # 0.5.20 has no auto-size: the default 2.0 as is, and the guard refuses it (2 x 59 GiB > 90 GiB).
    with pytest.raises(StartupRefusal, match="Not enough host memory available"):
        sglang_plan(version="0.5.20", host={"available_memory": "100GiB"})


def test_guard_divides_the_host_from_0519():
    # 4 ranks (TP 4) on one host with 500 GB available, --hicache-size 100 each: 0.5.18 checks each rank against
    # 500 GB - 10 GiB (passes); 0.5.19 against (500 GB - 10 GiB) // 4 = 122.3 GB (passes); 150 GB each fails there.
    assert sglang_plan(tp=4, version="0.5.18", hicache={"enabled": True, "size": 150},
                       host={"available_memory": "500GB"}).pool.section.guard_bytes_per_rank == 500 * 10**9 - 10 * GIB
    with pytest.raises(StartupRefusal, match="Requesting 150.00 GB but only have 122.32 GB free"):
        sglang_plan(tp=4, version="0.5.19", hicache={"enabled": True, "size": 150},
                    host={"available_memory": "500GB"})


def test_disabled_hicache_is_no_host_tier():
    p = sglang_plan(hicache={"enabled": False})
    assert p.pool.empty is True
    assert p.pool.tokens is None
    assert p.pool.resident_bytes_per_node is None
