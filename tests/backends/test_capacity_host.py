"""What the CPU tier holds (vLLM 0.33.0's CPUOffloadingInfo) and what the host really pays, derived by hand.

Capacity: tokens = chunks x max_model_len // sum over groups of min(cdiv(max_model_len, tokens per chunk), window)
(v1/kv_offload/cpu/common.py). Host: PyTorch's pinned allocator rounds each private tensor up to a power of two
(torch <= 2.11 always; 2.13+ below pinned_max_round_threshold_mb); 0.27+ CUDA pins one /dev/shm region instead.
"""

import json

import pytest

from conftest import GIB, make_plan
from kvcalc.cli import main
from kvcalc.backends.formulas import _power_of_two_ceil, pinned_resident
from kvcalc.vocab.releases.vllm import behaviour_for

MML = 131072


def sel(p):
    return p.offload.results[p.selected]


# ---------------------------------------------------------------------------------------------------- capacity

def test_dense_full_attention_keeps_blocks_times_block_size():
    # Vector a1 (Llama-3.1-8B TP 1, 64 GiB): 32,768 chunks; one group, cdiv(131,072, 16) = 8,192 chunks a request:
    # 32,768 x 131,072 // 8,192 = 524,288 = 32,768 x 16, today's figure.
    p = make_plan({"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}}, "0.33.0")
    c = sel(p).capacity
    assert c.cpu_num_chunks == 32768
    assert c.chunks_per_group == (8192,)
    assert c.cpu_kv_cache_size_tokens == 524288 == 32768 * 16
    assert c.cpu_kv_cache_size_bytes == 32768 * 2097152


GEMMA3_27B = {"model": {"num_layers": 62, "num_kv_heads": 16, "head_size": 128, "sliding_window": 1024,
                        "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"]},
              "parallel": {"tensor_parallel_size": 2},
              "cache": {"max_model_len": 8192}, "offload": {"cpu_bytes_to_use": 128 * GIB}}


def test_sliding_window_hybrid_gemma3_27b_tp2():
    # 52 sliding + 10 full layers: rule E group_size 10 -> 6 sliding groups + 1 full group. Page at TP 2, block 16:
    # 16 x 8 heads x (128 + 128) x 2 B = 65,536; 10 tensors -> 655,360 B a block; x 2 workers = 1,310,720
    # (4096-aligned) -> 128 GiB // that = 104,857 chunks. A request of 8,192 tokens: sliding groups
    # max(cdiv(1024, 16), cdiv(1023, 16)) = 64 chunks each, the full group cdiv(8192, 16) = 512: 6 x 64 + 512 = 896.
    p = make_plan(GEMMA3_27B, "0.33.0")
    c = sel(p).capacity
    assert c.cpu_num_chunks == 137438953472 // 1310720 == 104857
    assert c.chunks_per_group == (64,) * 6 + (512,)
    assert c.cpu_kv_cache_size_tokens == 104857 * 8192 // 896 == 958692
    # What kvcalc said before: chunks x block size.
    assert 104857 * 16 == 1677712


def test_all_sliding_window_counts_more_tokens_than_blocks_hold():
    # Mistral-7B-v0.1-like: 32 sliding layers (window 4096), one group: a request needs only its window,
    # cdiv(4096, 16) = 256 chunks: 32,768 x 131,072 // 256 = 16,777,216 tokens (> 32,768 x 16 = 524,288).
    p = make_plan({"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128, "sliding_window": 4096,
                             "layer_types": ["sliding_attention"] * 32}}, "0.33.0")
    c = sel(p).capacity
    assert c.chunks_per_group == (256,)
    assert c.cpu_kv_cache_size_tokens == 32768 * MML // 256 == 16777216


def test_chunked_local_plus_full_llama4_scout_tp4():
    # 36 chunked (8192) + 12 full layers, HMA on: group_size 12 -> 3 chunked groups + 1 full. TP 4 -> 2 heads:
    # page 16 x 2 x 256 x 2 = 16,384; 12 tensors -> 196,608 B; x 4 = 786,432 -> 64 GiB // that = 87,381.
    # Chunks a request: 3 x cdiv(8192, 16) + cdiv(131,072, 16) = 3 x 512 + 8,192 = 9,728.
    layout = {"model": {"num_layers": 48, "num_kv_heads": 8, "head_size": 128, "attention_chunk_size": 8192,
                        "layer_pattern": ["chunked_attention"] * 3 + ["full_attention"]},
              "parallel": {"tensor_parallel_size": 4}}
    c = sel(make_plan(layout, "0.33.0")).capacity
    assert c.cpu_num_chunks == 68719476736 // 786432 == 87381
    assert c.chunks_per_group == (512, 512, 512, 8192)
    assert c.cpu_kv_cache_size_tokens == 87381 * MML // 9728 == 1177344


JAMBA_MINI_TP2 = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128,
                            "layer_pattern": ["mamba"] * 4 + ["full_attention"] + ["mamba"] * 3,
                            "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                                      "mamba_d_conv": 4}},
                  "parallel": {"tensor_parallel_size": 2}, "cache": {"enable_prefix_caching": True}}


def test_mamba_plus_attention_jamba_0_33_align_block_80():
    # Mamba-1 state at TP 2: I = 2 x 4096 / 2 = 4,096; conv (4 - 1) x 4,096 x 2 B = 24,576; ssm 4,096 x 16 x 2 B
    # = 131,072; 155,648 B. One attention token: 4 heads x 256 x 2 B = 2,048. 0.33 (mode align, FLASH_ATTN kernel
    # 16): 16 x cdiv(155,648, 16 x 2,048) = 80 tokens (not the 'all' mode's 2,048). 28 Mamba + 4 attention layers:
    # group_size 4 -> 7 Mamba groups + 1 attention group; 4 tensors x 80 x 2,048 = 655,360 B; x 2 = 1,310,720 ->
    # 52,428 chunks. A request: 7 Mamba groups x 1 chunk + cdiv(131,072, 80) = 1,639: 1,646.
    p = make_plan(JAMBA_MINI_TP2, "0.33.0")
    assert p.layers.mamba_cache_mode == "align"
    assert p.layers.block_size == 80
    c = sel(p).capacity
    assert c.cpu_num_chunks == 68719476736 // 1310720 == 52428
    assert c.chunks_per_group == (1,) * 7 + (1639,)
    assert c.cpu_kv_cache_size_tokens == 52428 * MML // 1646 == 4174874


def test_jamba_before_0_28_defaults_to_mode_all():
    # 0.27.1 model_executor/models/config.py: 'all' for models with Mamba prefix caching (Jamba): block 2,048.
    p = make_plan(JAMBA_MINI_TP2, "0.27.0")
    assert p.layers.mamba_cache_mode == "all"
    assert p.layers.block_size == 2048


def test_gdn_plus_attention_qwen3_next_tp4():
    # 0.33: block 320 (lcm(16, 64) x cdiv(274,432, 64 x 1,024), tests/test_families.py). 2 KV heads at TP 4 -> 1
    # replicated head: 1 x 2 x 256 x 2 B = 1,024 B a token, page 327,680 B; 36 GDN + 12 full -> 4 groups of 12
    # tensors: 12 x 327,680 x 4 ranks = 15,728,640 B a chunk; 64 GiB // that = 4,369. A request: 3 GDN groups
    # (1 chunk each) + 1 full (cdiv(131,072, 320) = 410) = 413 chunks.
    layout = {"model": {"num_layers": 48, "num_kv_heads": 2, "head_size": 256,
                        "layer_pattern": ["mamba", "mamba", "mamba", "full_attention"],
                        "mamba": {"kind": "gated_delta_net", "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                                  "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                  "linear_conv_kernel_dim": 4}},
              "parallel": {"tensor_parallel_size": 4}, "cache": {"enable_prefix_caching": True}}
    c = sel(make_plan(layout, "0.33.0")).capacity
    assert c.cpu_num_chunks == 4369
    assert c.chunks_per_group == (1, 1, 1, 410)
    assert c.cpu_kv_cache_size_tokens == 4369 * MML // 413 == 1386570


def test_capacity_tokens_gate_and_size_use_the_group_aware_figure(capsys):
    # The min_cpu_tokens gate reads 958,692 (Gemma-3), not 1,677,712.
    import yaml

    path = "/tmp/kvcalc-gemma3.yaml"
    with open(path, "w") as fh:
        yaml.safe_dump(GEMMA3_27B, fh)
    code = main(["plan", path, "--vllm-version", "0.33.0", "--check", "--min-cpu-tokens", "1000000",
                 "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in doc["checks"]}
    assert code == 1
    assert "958,692" in checks["min_cpu_tokens"]["reason"]
    # size: chunks for 1,000,000 tokens: cdiv(1,000,000 x 896, 8,192) = 109,375 -> x 1,310,720 B.
    code = main(["size", path, "--vllm-version", "0.33.0", "--cpu-tokens", "1000000", "--format", "json"])
    rows = {r["family"]: r for r in json.loads(capsys.readouterr().out)["families"]}
    assert code == 0
    assert rows["single-alloc"]["num_blocks"] == -(-1000000 * 896 // 8192) == 109375
    assert rows["single-alloc"]["cpu_bytes_to_use"] == 109375 * 1310720
    assert rows["single-alloc"]["tokens"] == 109375 * 8192 // 896 == 1000000


# ---------------------------------------------------------------------------------------------------- host memory

def test_power_of_two_rounding_vllm_53042():
    # vllm#53042 (0.26.0, torch 2.11): torch.zeros((2053, 1089536), pin_memory=True) = 2,236,817,408 B (2.0832 GiB)
    # maps 4 GiB; (1971, 1089536) = 2,147,475,456 B (1.9996 GiB) maps 2 GiB.
    b = behaviour_for("0.26.0")
    assert pinned_resident(2053 * 1089536, b, None) == 4 * GIB
    assert pinned_resident(1971 * 1089536, b, None) == 2 * GIB
    assert _power_of_two_ceil(2 * GIB) == 2 * GIB


def test_round_threshold_needs_torch_2_13():
    # torch 2.13 include/ATen/core/CachingHostAllocator.h: no rounding above pinned_max_round_threshold_mb;
    # torch 2.11 (vLLM 0.26) has no such key: it always rounds.
    size = 2053 * 1089536
    assert pinned_resident(size, behaviour_for("0.27.0"), 1024) == size
    assert pinned_resident(size, behaviour_for("0.26.0"), 1024) == 4 * GIB


def test_private_tensors_each_rounded_up_on_0_26():
    # The shape of vllm#53042 on 0.26.0 (torch 2.11, private pinned tensors, one per KV cache tensor): 24 layers,
    # TP 4 (2 KV heads a rank), fp8 with layer 0 skipped -> two page sizes -> UniformType -> no cross-layer tensor.
    # Layer 0 bf16: 16 x 2 x 2 x 128 x 2 = 16,384 B; layers 1-23 fp8: 8,192 B; 204,800 B a block, x 4 = 819,200.
    # Budget 131,100 x 1,572,864 = 206,202,470,400 B (192.04 GiB) -> 251,712 blocks: layer 0's tensor 3.84 GiB pins
    # 4 GiB, each fp8 tensor 1.92 GiB pins 2 GiB: (4 + 23 x 2) x 4 ranks = 200 GiB resident.
    layout = {"model": {"num_layers": 24, "num_kv_heads": 8, "head_size": 128},
              "parallel": {"tensor_parallel_size": 4},
              "cache": {"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0]},
              "offload": {"cpu_bytes_to_use": 131100 * 1572864}}
    p = make_plan(layout, "0.26.0")
    r = sel(p)
    assert r.scheduler.aligned_bytes == 819200
    n = 131100 * 1572864 // 819200
    assert r.scheduler.num_blocks == n == 251712
    allocs = {a.size: a for a in r.host.allocations_per_worker[0]}
    assert allocs[n * 16384].resident == _power_of_two_ceil(n * 16384) == 4 * GIB  # 3.84 GiB -> 4 GiB
    assert allocs[n * 8192].count == 23
    assert allocs[n * 8192].resident == 2 * GIB  # 1.92 GiB -> 2 GiB
    assert r.host.resident_bytes_per_engine == (4 * GIB + 23 * 2 * GIB) * 4 == 200 * GIB
    assert r.host.pinned_rounding == "power_of_two"


def test_one_cross_layer_tensor_a_worker_vllm_48436():
    # vllm#48436: TP 2, --kv-offloading-size 80 -> 40 GiB a worker; a dense model on FlashAttention gets one
    # cross-layer KV tensor (0.14-0.28 prefer_cross_layer_blocks), pinned whole: 40 GiB -> 64 GiB a worker.
    layout = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128},
              "parallel": {"tensor_parallel_size": 2}, "offload": {"kv_offloading_size": 80, "cpu_bytes_to_use": None}}
    h = sel(make_plan(layout, "0.22.1")).host
    assert [(a.count, a.size, a.resident) for a in h.allocations_per_worker[0]] == [(1, 40 * GIB, 64 * GIB)]
    assert h.resident_bytes_per_engine == 2 * 64 * GIB
    assert h.requested_bytes_per_engine == 80 * GIB
    # 64 GiB asked: 32 GiB a worker, a power of two already.
    layout["offload"] = {"kv_offloading_size": 64, "cpu_bytes_to_use": None}
    assert sel(make_plan(layout, "0.22.1")).host.resident_bytes_per_engine == 64 * GIB


def test_flash_attention_k_and_v_tensors_on_0_19_to_0_22():
    # Without the cross-layer tensor (two page sizes: UniformType), 0.19-0.22 offloading/worker.py unbinds
    # FlashAttention's (2, num_blocks, ...) into K and V: two pinned tensors of half a page per KV tensor.
    layout = {"model": {"num_layers": 2, "num_kv_heads": [8, 4], "head_size": 128}}
    r = sel(make_plan(layout, "0.21.0"))
    n = r.stage_counts[0].num_blocks
    sizes = sorted((a.count, a.size) for a in r.host.allocations_per_worker[0])
    assert sizes == [(2, n * 32768 // 2), (2, n * 65536 // 2)]
    # 0.23.0: one tensor per KV cache tensor.
    r = sel(make_plan(layout, "0.23.0"))
    n = r.stage_counts[0].num_blocks
    assert sorted((a.count, a.size) for a in r.host.allocations_per_worker[0]) == [(1, n * 32768), (1, n * 65536)]


def test_shared_region_from_0_27_with_a_64k_page():
    # 0.28.0 CUDA: one /dev/shm region of chunks x chunk bytes rounded up to mmap.PAGESIZE. Vector b16 (61 MLA
    # layers, TP 4, block 16, replicated): chunk 1,124,352 B; a 64 KiB page rounds it to 18 x 65,536 = 1,179,648
    # -> 64 GiB // that = 58,254 chunks; region 58,254 x 1,179,648 B, no allocator rounding.
    layout = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
              "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 16}, "host": {"page_size": 65536}}
    r = sel(make_plan(layout, "0.28.0"))
    assert r.scheduler.aligned_bytes == 1179648
    assert r.scheduler.num_blocks == 68719476736 // 1179648 == 58254
    h = r.host
    assert h.shm_bytes_per_engine == h.resident_bytes_per_engine == 58254 * 1179648
    assert h.pinned_rounding == "none"
    assert h.host_page_size == 65536
    # With the x86 page (4096) it is the spec's vector: 61,008 chunks.
    layout["host"] = {"page_size": 4096}
    assert sel(make_plan(layout, "0.28.0")).scheduler.num_blocks == 61008


def test_rocm_keeps_private_tensors_from_0_31():
    # 0.31.0 v1/kv_offload/cpu/spec.py: shared region only on CUDA, not ROCm.
    layout = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}, "vllm": {"platform": "rocm"}}
    assert sel(make_plan(layout, "0.30.0")).host.shm_bytes_per_engine == 64 * GIB
    assert sel(make_plan(layout, "0.31.0")).host.shm_bytes_per_engine == 0


def test_per_node_counts_the_engines_on_it():
    layout = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128},
              "parallel": {"data_parallel_size": 4, "data_parallel_size_local": 2}}
    h = sel(make_plan(layout, "0.33.0")).host
    assert h.resident_bytes_per_node == 2 * 64 * GIB
    assert h.shm_bytes_per_node == 2 * 64 * GIB


def test_shm_gate_and_vllm_refusal(capsys):
    # 0.33.0 refuses to start when /dev/shm cannot take the region (shm_broadcast.py check_shm_free_space).
    code = main(["plan", "examples/llama-3.1-8b.yaml", "--vllm-version", "0.33.0", "--check", "--shm-size", "32GiB",
                 "--format", "json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert code == 1
    assert not checks["startup"]["passed"]
    assert "Insufficient space in /dev/shm for CPU KV offload shared region in /dev/shm: 65536 MiB required, " \
           "32768 MiB free" in checks["startup"]["reason"]
    assert not checks["shm"]["passed"]
    # 0.27.0 does not check: the gate fails, start-up passes.
    code = main(["plan", "examples/llama-3.1-8b.yaml", "--vllm-version", "0.27.0", "--check", "--shm-size", "32GiB",
                 "--format", "json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert code == 1
    assert checks["startup"]["passed"]
    assert "SIGBUS" in checks["shm"]["reason"]


def test_host_memory_gate_reads_resident_bytes(capsys):
    # 40 GiB a worker pins 64 GiB (cross-layer tensor): 128 GiB a node for an 80 GiB budget; a 100 GiB host fails.
    code = main(["plan", "examples/llama-3.1-8b.yaml", "--tp", "2", "--kv-offloading-size", "80", "--vllm-version",
                 "0.22.1", "--check", "--host-memory", "100GiB", "--format", "json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert code == 1
    assert not checks["host_memory"]["passed"]
    assert "137,438,953,472 B" in checks["host_memory"]["reason"]


@pytest.mark.parametrize("flag,value,expected", [
    ("--host-page-size", "5000", "power of two"),
    ("--host-page-size", "2048", "between 4096"),
    ("--shm-size", "12q", "--shm-size"),
    ("--host-memory", "64g", "--host-memory"),
])
def test_bad_host_flags_are_one_line(capsys, flag, value, expected):
    args = ["plan", "examples/llama-3.1-8b.yaml", flag, value]
    if flag in ("--shm-size", "--host-memory"):
        args.append("--check")
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert len(err.strip().splitlines()) == 1


def test_the_budget_that_halves_the_worst_rounding_is_exact():
    # DeepSeek-V3 (61 MLA layers, page 64 x 576 x 2 = 73,728 B) TP 4 on 0.19.1 (MLA: no cross-layer tensor): a block
    # is 73,728 x 61 x 4 = 17,989,632 B; 64 GiB -> 3,819 blocks (vector b64); each of the 61 tensors a worker is
    # 3,819 x 73,728 = 281,567,232 B (268.5 MiB) and pins 512 MiB: 61 x 512 MiB x 4 = 122 GiB resident.
    # 256 MiB holds 268,435,456 // 73,728 = 3,640 blocks -> 3,640 x 17,989,632 = 65,482,260,480 B.
    mla = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
           "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64}}
    h = sel(make_plan(mla, "0.19.1")).host
    assert h.resident_bytes_per_engine == 61 * 512 * 2**20 * 4 == 122 * GIB
    assert h.smaller_budget == 3640 * 17989632 == 65482260480
    h = sel(make_plan(mla, "0.19.1", offload={"cpu_bytes_to_use": 65482260480})).host
    assert h.resident_bytes_per_engine == 61 * 256 * 2**20 * 4
    # One block more (3,641 x 73,728 B > 256 MiB) pins 512 MiB again.
    h = sel(make_plan(mla, "0.19.1", offload={"cpu_bytes_to_use": 3641 * 17989632})).host
    assert h.resident_bytes_per_engine == 122 * GIB


# ---------------------------------------------------------------------------------------------------- weights offload

def test_cpu_offload_gb_counts_each_ranks_pinned_weights_in_host_memory(capsys):
    # Issue 34: --cpu-offload-gb 60 at TP 2 pins up to int(60 x 1024^3) B of each rank's weights in host memory
    # (vLLM 0.33.0 model_executor/offloader/base.py:174, uva.py:84-116): 2 x 60 GiB = 120 GiB the host_memory gate
    # did not count. With a 10 GiB KV pool (one shared region on 0.33.0) and 2 workers x 3 GiB of process memory the
    # node needs 10 + 6 + 120 = 136 GiB: a 130 GiB node fails, a 136 GiB one passes with margin 0.
    from conftest import EXAMPLES_DIR
    import os

    model = os.path.join(EXAMPLES_DIR, "configs", "gemma-3-27b.json")
    args = ["plan", model, "--vllm-version", "0.33.0", "--tp", "2", "--kv-offloading-size", "10",
            "--cpu-offload-gb", "60", "--check", "--format", "json"]
    for limit, status in (("130GiB", "fail"), ("136GiB", "pass")):
        code = main([*args, "--host-memory", limit])
        gate = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}["host_memory"]
        assert gate["need"] == (10 + 2 * 3 + 2 * 60) * GIB
        assert gate["status"] == status
        assert code == (1 if status == "fail" else 0)
