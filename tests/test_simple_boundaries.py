"""Every release boundary of SimpleCPUOffloadConnector (vocab/releases/simple.py SIMPLE_STEPS), tested on the last
release before it and the first release after it: the same layout gives the two behaviours. Expected numbers are
derived by hand in each comment from the releases' sources (the evidence is next to each Step).

A new step without a check here fails test_every_simple_boundary_has_a_check.
"""

import pytest

from conftest import GIB, deep_merge
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.releases.simple import SIMPLE_STEPS, simple_behaviour
from kvcalc.vocab.releases.vllm import RELEASES, parse_release

CHECKS = {}


def boundary(flag, first):
    def register(fn):
        CHECKS[(flag, first)] = fn
        return fn
    return register


def before(first):
    return RELEASES[RELEASES.index(first) - 1]


def pool(layout: dict, version: str, offload: dict | None = None):
    data = deep_merge(layout, {"offload": {"backend": "simple", **(offload or {})}, "vllm": {"version": version}})
    return plan(layout_from_dict(data, source="test.yaml")).pool.simple


# DeepSeek-V3 at PP 4 x TP 2, block 64: stages of 15, 15, 16, 15 MLA layers of 64 x 576 x 2 = 73,728 B; the default
# 8 GiB // 8 ranks = 1 GiB a rank: 970 blocks on 15-layer stages (1,105,920 B), 910 on the 16-layer stage (1,179,648).
DSV3 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
        "parallel": {"tensor_parallel_size": 2, "pipeline_parallel_size": 4},
        "cache": {"block_size": 64, "max_model_len": 131072}}
# Kimi-K2.5 + EAGLE3 at TP 4: 61 x 73,728 + 65,536 = 4,562,944 B a block (one UniformType group of mixed pages).
KIMI = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                  "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
        "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64, "max_model_len": 131072}}
DISK = {"simple": {"kv_offload_backend": "disk", "disk_path": "/nvme/kv"}}


@boundary("available", "0.19.0")
def _(old, new):
    # 0.18.1 has no connector ("Unsupported connector type"); 0.19.0: 970 on stage 0.
    assert "Unsupported connector type" in pool(DSV3, old).startup_error
    assert pool(DSV3, new).num_cpu_blocks_scheduler == GIB // 1105920 == 970


@boundary("worker_bytes", "0.29.0")
def _(old, new):
    # 0.28.0: per storage, 61 + 1 tensors, 16 GiB // 4,562,944 = 3,765. 0.29.0: (-1, N, 73,728) on 4,562,944 B a
    # block, 65,536 B left over: RuntimeError at start.
    assert pool(KIMI, old, {"cpu_bytes_to_use": "64GiB"}).num_cpu_blocks_per_rank == 16 * GIB // 4562944 == 3765
    assert "is invalid" in pool(KIMI, new, {"cpu_bytes_to_use": "64GiB"}).startup_error


@boundary("worker_bytes", "0.30.0")
def _(old, new):
    # 0.30.0 walks each layer's region: the same 3,765 blocks 0.28.0 gave, 62 regions.
    assert "is invalid" in pool(KIMI, old, {"cpu_bytes_to_use": "64GiB"}).startup_error
    sp = pool(KIMI, new, {"cpu_bytes_to_use": "64GiB"})
    assert (sp.num_cpu_blocks_per_rank, sp.stages[0].regions) == (3765, 62)


@boundary("scheduler_total", "0.24.0")
def _(old, new):
    # Packed tensors count size[0]; kvcalc's layouts have none: the same 970 both sides.
    assert pool(DSV3, old).num_cpu_blocks_scheduler == pool(DSV3, new).num_cpu_blocks_scheduler == 970


@boundary("scheduler_total", "0.29.0")
def _(old, new):
    # The backing allocation's size is the sum of the old tensors: 970 both sides.
    assert pool(DSV3, old).num_cpu_blocks_scheduler == pool(DSV3, new).num_cpu_blocks_scheduler == 970


@boundary("min_over_workers", "0.33.0")
def _(old, new):
    # 0.32.0: the scheduler 970, stage 2's workers 910 (ids 910..969 out of bounds); 0.33.0: 910 everywhere.
    a = pool(DSV3, old)
    assert (a.num_cpu_blocks_scheduler, a.out_of_bounds.first, a.out_of_bounds.last) == (970, 910, 969)
    b = pool(DSV3, new)
    assert (b.num_cpu_blocks_scheduler, b.num_cpu_blocks_per_rank, b.out_of_bounds) == (910, 910, None)


@boundary("num_cpu_blocks_key", "0.33.0")
def _(old, new):
    # num_cpu_blocks 500: 0.32.0 ignores it (970 / 910); 0.33.0 allocates 500 on every rank.
    assert [st.num_cpu_blocks for st in pool(DSV3, old, {"simple": {"num_cpu_blocks": 500}}).stages] == \
        [970, 970, 910, 970]
    assert [st.num_cpu_blocks for st in pool(DSV3, new, {"simple": {"num_cpu_blocks": 500}}).stages] == [500] * 4


@boundary("disk_tier", "0.28.0")
def _(old, new):
    # 0.27.1: CPU mode (970 / 910); 0.28.0: 100 GiB per rank on disk: 100 GiB // 1,105,920 = 97,090 slots on
    # stage 0, 91,022 on stage 2.
    assert pool(DSV3, old, DISK).mode == "cpu"
    sp = pool(DSV3, new, DISK)
    assert (sp.mode, sp.stages[0].num_cpu_blocks, sp.stages[2].num_cpu_blocks) == \
        ("disk", 100 * GIB // 1105920, 100 * GIB // 1179648)
    assert (sp.stages[0].num_cpu_blocks, sp.stages[2].num_cpu_blocks) == (97090, 91022)


@boundary("disk_capacity_checked", "0.30.0")
def _(old, new):
    # disk_capacity_bytes 0: 0.29.0 starts (scheduler 970 from the CPU capacity, every worker max(1, 0) = 1 slot:
    # ids 1..969 out of bounds); 0.30.0 raises.
    zero = {"simple": {**DISK["simple"], "disk_capacity_bytes": 0}}
    sp = pool(DSV3, old, zero)
    assert (sp.num_cpu_blocks_scheduler, sp.out_of_bounds.first, sp.out_of_bounds.last) == (970, 1, 969)
    assert "disk_capacity_bytes > 0" in pool(DSV3, new, zero).startup_error


@boundary("disk_alignment_page_cache", "0.30.0")
def _(old, new):
    # One layer of 1 KV head of 40: 16 x 80 x 2 = 2,560 B a block, not a multiple of 4,096. With use_page_cache
    # 0.29.0 still asserts the alignment, 0.30.0 does not (4 GiB // 2,560 = 1,677,721 slots on the one rank).
    layout = {"model": {"num_layers": 1, "num_kv_heads": 1, "head_size": 40}, "cache": {"max_model_len": 4096}}
    cached = {"simple": {**DISK["simple"], "use_page_cache": True, "disk_capacity_bytes": "4GiB"}}
    assert "not aligned to 4096" in pool(layout, old, cached).startup_error
    assert pool(layout, new, cached).num_cpu_blocks_per_rank == 4 * GIB // 2560 == 1677721


def test_every_simple_boundary_has_a_check():
    steps = {(flag, ".".join(map(str, s.first))) for flag, ss in SIMPLE_STEPS.items() for s in ss[1:]}
    assert set(CHECKS) == steps


@pytest.mark.parametrize("flag, first", sorted(CHECKS))
def test_simple_boundary(flag, first):
    old, new = before(first), first
    a, b = simple_behaviour(parse_release(old)[0]), simple_behaviour(parse_release(new)[0])
    assert getattr(a, flag) != getattr(b, flag), "a step changes its flag"
    CHECKS[(flag, first)](old, new)
