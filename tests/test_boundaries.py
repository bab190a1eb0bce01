"""Every release boundary in versions.STEPS and versions.FAMILIES, tested on the last release before it and the first
release after it: the same layout gives the two behaviours. Expected numbers are derived by hand in each comment
from the formulas the releases' sources use (the evidence is next to each Step in kvcalc/versions.py).

A new Step or Family without a check here fails test_every_boundary_has_a_check.
"""

import os

import pytest

from conftest import GIB, lmcache_plan, make_plan
from kvcalc.vocab.errors import LayoutError, StartupRefusal
from kvcalc.engines.vllm.grouping import group_layers
from kvcalc.engines.vllm.layers import hybrid_alignment
from kvcalc.backends.formulas import pinned_resident
from kvcalc.engines.vllm.runs import runs_from_names
from kvcalc.engines.vllm.specs import FullAttentionSpec, SlidingWindowSpec
from kvcalc.vocab.releases.vllm import FAMILIES, RELEASES, STEPS, behaviour_for

CHECKS = {}


def boundary(flag, first):
    def register(fn):
        CHECKS[(flag, first)] = fn
        return fn
    return register


def release(t):
    return ".".join(map(str, t))


def before(first):
    return RELEASES[RELEASES.index(first) - 1]


def sel(p):
    return p.offload.results[p.selected]


DENSE = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}}  # 65,536 B a layer's block, 2 MiB a block
GEMMA = {"model": {"num_layers": 12, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
                   "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"]}}
LLAMA4 = {"model": {"num_layers": 8, "num_kv_heads": 8, "head_size": 128, "attention_chunk_size": 8192,
                    "layer_pattern": ["chunked_attention"] * 3 + ["full_attention"]},
          "cache": {"hybrid_kv_cache_manager": "on"}}
GDN = {"model": {"num_layers": 48, "num_kv_heads": 2, "head_size": 256,
                 "layer_pattern": ["mamba", "mamba", "mamba", "full_attention"],
                 "mamba": {"kind": "gated_delta_net", "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                           "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}},
       "parallel": {"tensor_parallel_size": 4}, "cache": {"enable_prefix_caching": True}}
# Qwen3-Next-like at TP 4: GDN state 272,384 B a layer; one attention token 1 replicated head x 2 x 256 x 2 = 1,024 B.
JAMBA = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128,
                   "layer_pattern": ["mamba"] * 4 + ["full_attention"] + ["mamba"] * 3,
                   "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                             "mamba_d_conv": 4}},
         "parallel": {"tensor_parallel_size": 2}, "cache": {"enable_prefix_caching": True}}
MLA_TP8 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
           "parallel": {"tensor_parallel_size": 8}, "cache": {"block_size": 64}}
# MLA page 64 x 576 x 2 = 73,728 B; x 61 = 4,497,408 B (4096-aligned) stored once, x 8 ranks = 35,979,264 B.
ONCE, EIGHT = 68719476736 // 4497408, 68719476736 // 35979264
assert (ONCE, EIGHT) == (15279, 1909)


# ----------------------------------------------------------------------------------------------- GPU layout

@boundary("group_threshold", "0.18.0")
def _(old, new):
    # 8 full + 11 sliding layers with the hybrid manager on (kvcalc always has a connector, and before 0.21 it
    # cannot run with one, so the rule is tested on the grouping stage). 0.17.1: 11 < 8 x 1.25 = 10 is false ->
    # group_size 8: 1 full + 2 sliding groups. 0.18.0: 11 < 8 x 1.5 = 12 -> group_size 11: 2 groups.
    full = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16")
    sw = SlidingWindowSpec(block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16",
                           sliding_window=1024)
    specs = {f"model.layers.{i}.self_attn.attn": full if i < 8 else sw for i in range(19)}
    runs = runs_from_names(specs)
    for version, groups in ((old, 3), (new, 2)):
        g = group_layers(runs, hma_enabled=True, threshold=behaviour_for(version).group_threshold)
        assert len(g.groups) == groups, version


@boundary("sink_blocks_reserved", "0.30.0")
def _(old, new):
    # openPangu's static sinks (model.sink_len 128, block 16): 0.29.0's SinkFullAttentionManager pops 128 // 16 = 8
    # blocks from the free queue at start; 0.30.0 takes none.
    layout = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128, "sink_len": 128},
              "cache": {"block_size": 16}}
    for version, noted in ((old, True), (new, False)):
        notes = make_plan(layout, version).layers.notes
        assert any("= 8 blocks from the free pool" in n for n in notes) == noted, version


@boundary("sliding_page_uses_head_size_v", "0.20.0")
def _(old, new):
    # Sliding layers with D = 128, Dv = 64, 8 heads, block 16: 0.19.1 2 x 16 x 8 x 128 x 2 = 65,536 B;
    # 0.20.0 16 x 8 x (128 + 64) x 2 = 49,152 B.
    layout = {"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128, "head_size_v": 64,
                        "sliding_window": 1024, "layer_types": ["sliding_attention"] * 4}}
    for version, page in ((old, 65536), (new, 49152)):
        (g,) = make_plan(layout, version).grouping.groups
        assert g.spec.page_size_bytes == page, version


@boundary("block_size_choices", "0.18.0")
def _(old, new):
    # 0.17.1's --block-size takes 1, 8, 16, 32, 64, 128 or 256; 0.18.0 any size: block 48 -> 48 x 2 x 8 x 128 x 2 =
    # 196,608 B a layer's block, 32 layers: 40 GiB // 6,291,456 = 6,826 GPU blocks.
    with pytest.raises(LayoutError, match="one of 1, 8, 16, 32, 64, 128, 256 for vLLM 0.17.1"):
        make_plan(DENSE, old, cache={"block_size": 48})
    assert make_plan(DENSE, new, cache={"block_size": 48}).gpu.num_blocks == 40 * GIB // (32 * 196608) == 6826


@boundary("supports_skip_layers", "0.19.0")
def _(old, new):
    # fp8 with layer 0 skipped: 0.18.1 has no kv_cache_dtype_skip_layers. 0.19.0: layer 0 bf16 65,536 B, 31 fp8
    # layers 32,768 B: one UniformType group, 40 GiB // (65,536 + 31 x 32,768) = 40 GiB // 1,081,344 = 39,718.
    cache = {"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0]}
    with pytest.raises(LayoutError, match="from 0.19.0"):
        make_plan(DENSE, old, cache=cache)
    assert make_plan(DENSE, new, cache=cache).gpu.num_blocks == 40 * GIB // 1081344 == 39718


@boundary("supports_scaled_kv_dtypes", "0.20.0")
def _(old, new):
    # int8_per_token_head: 0.19.1 does not know it; 0.20.0 stores int8 plus a per-token-head scale.
    cache = {"kv_cache_dtype": "int8_per_token_head"}
    with pytest.raises(LayoutError, match="added in 0.20.0"):
        make_plan(DENSE, old, cache=cache)
    assert make_plan(DENSE, new, cache=cache).gpu.num_blocks > 40 * GIB // (32 * 65536)  # smaller than bf16


@boundary("hybrid_kernel_uses_block_size", "0.20.0")
def _(old, new):
    # The hybrid block: kernel 16 on 0.19.1 whatever the block size; 0.20.0 max(16, block_size). GDN at TP 4 with
    # block_size 48 (a stage of its own: before 0.21 the connector refuses the hybrid manager; 48 is a multiple of
    # FLASH_ATTN's 16, as 0.18+'s validation of a given block size asks): 0.19.1 16 x cdiv(272,384, 16 x 1,024) =
    # 16 x 17 = 272; 0.20.0 48 x cdiv(272,384, 48 x 1,024) = 48 x 6 = 288.
    def block(version):
        from kvcalc.engines.vllm.attention_block import plan_attention
        from kvcalc.engines.vllm.layers import _hybrid_kernel_block
        from kvcalc.inputs.layout.read import layout_from_dict
        from conftest import deep_merge, COMMON

        data = deep_merge(deep_merge(COMMON, GDN), {"cache": {"block_size": 48}, "vllm": {"version": version}})
        lay, b = layout_from_dict(data, source="t.yaml"), behaviour_for(version)
        kernel = _hybrid_kernel_block(lay, b, 48, "align", plan_attention(lay, b))
        return hybrid_alignment(mode="align", block_size=48, attention_token_page=1024, mamba_page=272384,
                                kernel_block=kernel, mamba_chunk=256).block_size
    assert block(old) == 272
    assert block(new) == 288


@boundary("hybrid_mla_floor_128", "0.27.0")
def _(old, new):
    # MLA + Mamba-2 (64 heads x 64, 8 groups, state 128, conv 4), mode align, TP 1. Mamba state: conv 3 x (4,096 +
    # 2 x 8 x 128) x 2 = 36,864 B + ssm 64 x 64 x 128 x 2 = 1,048,576 B = 1,085,440 B; one MLA token 576 x 2 = 1,152
    # B. 0.26.0 on an H100-class GPU: FLASH_ATTN_MLA, kernel 16: 16 x cdiv(1,085,440, 18,432) = 16 x 59 = 944; 0.27.0
    # kernel 128 whatever the backend: 128 x 8 = 1,024.
    layout = {"model": {"num_layers": 8, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "layer_pattern": ["mamba", "mla"],
                        "mamba": {"kind": "mamba2", "mamba_num_heads": 64, "mamba_head_dim": 64, "n_groups": 8,
                                  "ssm_state_size": 128, "conv_kernel": 4}},
              "cache": {"enable_prefix_caching": True, "mamba_cache_mode": "align"}}
    assert make_plan(layout, old).layers.block_size == 944
    assert make_plan(layout, new).layers.block_size == 1024


@boundary("hybrid_prefix_caching", "0.26.0")
def _(old, new):
    # Qwen3-Next-like GDN at TP 4 on 0.25.1: prefix caching off by default for a hybrid model (mode none); 0.26.0
    # turns it on (mode align for a GDN model).
    layout = {**GDN, "cache": {}}
    assert (make_plan(layout, old).layers.enable_prefix_caching, make_plan(layout, old).layers.mamba_cache_mode) == (
        False, "none")
    assert (make_plan(layout, new).layers.enable_prefix_caching, make_plan(layout, new).layers.mamba_cache_mode) == (
        True, "align")


@boundary("hybrid_backend_lcm", "0.32.0")
def _(old, new):
    # 0.32.0 rounds the hybrid block to a multiple of every non-SSM backend's smallest kernel block (the lcm). With
    # one FLASH_ATTN (16) and a block the validation keeps a multiple of 16 it changes nothing; with DeepSeek-V3.2's
    # indexer (64) beside a 16-token backend it does: GDN figures, kernel 16: 0.31.0 16 x 17 = 272; 0.32.0 rounds
    # to a multiple of lcm(16, 64) = 64: 320.
    from kvcalc.engines.vllm.layers import backend_multiple

    sparse = make_plan({"model": {"num_layers": 2, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                                  "index_head_dim": 128}}, new).layers.attention
    assert (sparse.backends, sparse.kernel_lcm) == (("DEEPSEEK_V32_INDEXER", "FLASH_ATTN_MLA_SPARSE"), 64)
    for version, multiple, block in ((old, 1, 272), (new, 64, 320)):
        assert backend_multiple(behaviour_for(version), sparse) == multiple
        assert hybrid_alignment(mode="align", block_size=16, attention_token_page=1024, mamba_page=272384,
                                kernel_block=16, mamba_chunk=256, multiple=multiple).block_size == block


@boundary("hybrid_checkpoint_alignment", "0.33.0")
def _(old, new):
    # FlashInfer GDN prefill checkpoints on SM90: 0.32.0 16 x 17 = 272; 0.33.0 lcm(16, 64) x cdiv(272,384, 65,536)
    # = 64 x 5 = 320.
    assert make_plan(GDN, old).layers.block_size == 272
    assert make_plan(GDN, new).layers.block_size == 320


@boundary("mamba_modes", "0.15.0")
def _(old, new):
    # 0.14.1 config/cache.py MambaCacheMode: none | all; 'align' arrives in 0.15.0, where the layout is accepted and
    # the next rule speaks: a Mamba hybrid cannot run the hybrid manager with a connector before 0.21.
    with pytest.raises(LayoutError, match="mamba_cache_mode"):
        make_plan(JAMBA, old, cache={"mamba_cache_mode": "align"})
    with pytest.raises(StartupRefusal, match="hybrid KV cache manager disabled"):
        make_plan(JAMBA, new, cache={"mamba_cache_mode": "align"})


@boundary("mamba_modes", "0.32.0")
def _(old, new):
    # 'all' is gone in 0.32.0. On 0.31.0 Jamba in mode all: block lcm(chunk 2,048, 16) = 2,048.
    assert make_plan(JAMBA, old, cache={"mamba_cache_mode": "all"}).layers.block_size == 2048
    with pytest.raises(LayoutError, match="mamba_cache_mode"):
        make_plan(JAMBA, new, cache={"mamba_cache_mode": "all"})


@boundary("mamba_default_all", "0.28.0")
def _(old, new):
    # Jamba with prefix caching: 0.27.1 defaults to 'all' (block 2,048); 0.28.0 to 'align': Mamba-1 state at TP 2
    # 24,576 + 131,072 = 155,648 B, one token 4 heads x 2 x 128 x 2 = 2,048 B: 16 x cdiv(155,648, 32,768) = 80.
    p = make_plan(JAMBA, old)
    assert (p.layers.mamba_cache_mode, p.layers.block_size) == ("all", 2048)
    p = make_plan(JAMBA, new)
    assert (p.layers.mamba_cache_mode, p.layers.block_size) == ("align", 80)


NEMOTRON_MTP = {"model": {"hf_config": "examples/configs/nemotron-h-8b.json",
                           "draft": {"method": "mtp", "num_layers": 1, "num_speculative_tokens": 1}},
                "cache": {"kv_cache_memory": 40 * GIB, "max_model_len": 8192, "enable_prefix_caching": True,
                          "hybrid_kv_cache_manager": "on"}}
# NemotronH-8B at TP 1, one MTP layer, one speculative token: the Mamba-2 state is a conv (3 + 1, 8,192 + 2 x 8 x 128)
# bf16 = 81,920 B and an SSM (128, 64, 128) float32 = 4,194,304 B: 4,276,224 B; one attention token 8 x 2 x 128 x
# 2 = 4,096 B, so 1,044 tokens hold a state. 'align' rounds to the kernel block 16: 1,056 (page 4,325,376 B); 'all'
# to lcm(16, chunk 128) = 128: 1,152 (page 4,718,592 B). 6 groups of 5 layers (5 attention incl. the MTP layer; 24
# Mamba layers padded to 25): a block is 5 pages, 40 GiB // (5 x 4,325,376) = 1,985 GPU blocks (align),
# 40 GiB // (5 x 4,718,592) = 1,820 (all); 64 GiB // the same bytes = 3,177 / 2,912 CPU blocks (fixed formula).


def _nemotron(version):
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.pipeline import plan
    from conftest import ROOT_DIR

    data = {**NEMOTRON_MTP, "model": {**NEMOTRON_MTP["model"]}, "offload": {"cpu_bytes_to_use": 64 * GIB},
            "vllm": {"version": version}}
    return plan(layout_from_dict(data, source="test.yaml", base_dir=ROOT_DIR))


def _mamba_figures(p):
    return (p.layers.mamba_cache_mode, p.layers.block_size, p.gpu.num_blocks, len(p.grouping.groups),
            p.grouping.groups[0].spec.page_size_bytes, sel(p).scheduler.num_blocks)


@boundary("mamba_align_with_drafter", "0.20.0")
def _(old, new):
    # issue 23: 0.20.0 model_executor/models/config.py picks 'align' when a speculative config is set. 0.19.1 and
    # 0.20.0 refuse the hybrid manager forced on with the offloading connector, so the mode is read off the layers.
    from kvcalc.engines.vllm.layers import build_layers
    from kvcalc.inputs.layout.read import layout_from_dict
    from conftest import ROOT_DIR

    data = {**NEMOTRON_MTP, "cache": {**NEMOTRON_MTP["cache"], "hybrid_kv_cache_manager": "auto"}}
    for version, mode, block in ((old, "all", 1152), (new, "align", 1056)):
        layout = layout_from_dict({**data, "vllm": {"version": version}}, source="test.yaml", base_dir=ROOT_DIR)
        layers = build_layers(layout, behaviour_for(version))
        assert (layers.mamba_cache_mode, layers.block_size) == (mode, block), version


@boundary("mamba_align_with_drafter", "0.22.0")
def _(old, new):
    # 0.21.0 still picks 'align' with the MTP drafter; 0.22.0 drops the branch: 'all' again (figures above).
    assert _mamba_figures(_nemotron(old)) == ("align", 1056, 1985, 6, 4325376, 3177)
    assert _mamba_figures(_nemotron(new)) == ("all", 1152, 1820, 6, 4718592, 2912)


def test_mamba_mode_without_a_drafter_stays_all_on_0_21():
    # The branch needs a speculative config: without the drafter 0.21.0 defaults to 'all' as before.
    from kvcalc.engines.vllm.layers import build_layers
    from kvcalc.inputs.layout.read import layout_from_dict
    from conftest import ROOT_DIR

    model = {k: v for k, v in NEMOTRON_MTP["model"].items() if k != "draft"}
    layout = layout_from_dict({**NEMOTRON_MTP, "model": model, "vllm": {"version": "0.21.0"}}, source="test.yaml",
                              base_dir=ROOT_DIR)
    assert build_layers(layout, behaviour_for("0.21.0")).mamba_cache_mode == "all"


# ----------------------------------------------------------------------------------------------- the logs

@boundary("log_family", "0.20.1")
def _(old, new):
    # max_model_len 1,000 on the dense model: 20,480 GPU blocks, cdiv(1,000, 16) = 63 a request. L1 (0.20.0):
    # 20,480 x 16 = 327,680 tokens; L2 (0.20.1): int(20,480 / 63 x 1,000) = 325,079.
    cache = {"max_model_len": 1000}
    assert make_plan(DENSE, old, cache=cache).logs.lines[0] == "GPU KV cache size: 327,680 tokens"
    assert make_plan(DENSE, new, cache=cache).logs.lines[0] == "GPU KV cache size: 325,079 tokens"


@boundary("log_family", "0.28.0")
def _(old, new):
    # Two lines (0.27.1) become one (0.28.0); 20,480 blocks x 16 = 327,680 tokens, 327,680 / 131,072 = 2.50x.
    size, conc = "GPU KV cache size: 327,680 tokens", "Maximum concurrency for 131,072 tokens per request: 2.50x"
    assert make_plan(DENSE, old).logs.lines == (size, conc)
    assert make_plan(DENSE, new).logs.lines == (f"{size}, {conc}",)


@boundary("log_device_prefix", "0.30.0")
def _(old, new):
    # 0.30.0 names the device: "GPU" for cuda, device_type.upper() otherwise.
    vllm = {"platform": "xpu"}
    assert make_plan(DENSE, old, vllm=vllm).logs.lines[0].startswith("GPU KV cache size")
    assert make_plan(DENSE, new, vllm=vllm).logs.lines[0].startswith("XPU KV cache size")


# ----------------------------------------------------------------------------------------------- the connector

@boundary("hma_default_with_connector", "0.22.0")
def _(old, new):
    # Gemma-like 10 sliding + 2 full: 0.21.0 turns the hybrid manager off with a connector (one folded group);
    # 0.22.0 keeps it on: group_size 2 -> 5 sliding groups + 1 full.
    assert len(make_plan(GEMMA, old).grouping.groups) == 1
    assert len(make_plan(GEMMA, new).grouping.groups) == 6


@boundary("hma_forced_on_allowed", "0.21.0")
def _(old, new):
    cache = {"hybrid_kv_cache_manager": "on"}
    with pytest.raises(StartupRefusal, match="before 0.21.0"):
        make_plan(GEMMA, old, cache=cache)
    assert make_plan(GEMMA, new, cache=cache).hma_enabled


@boundary("offload_refuses_chunked_local", "0.21.0")
def _(old, new):
    # 0.20.2 cannot run the hybrid manager with a connector at all; 0.21.0's scheduler asserts on the chunked group.
    with pytest.raises(StartupRefusal, match="before 0.21.0"):
        make_plan(LLAMA4, old)
    assert "chunked-local" in make_plan(LLAMA4, new).offload.startup_error


@boundary("offload_refuses_chunked_local", "0.28.0")
def _(old, new):
    # 0.27.1 get_sliding_window_size_in_chunks: assert FullAttentionSpec; 0.28.0 handles ChunkedLocal.
    assert "chunked-local" in make_plan(LLAMA4, old).offload.startup_error
    assert make_plan(LLAMA4, new).offload.startup_error is None


@boundary("window_rule", "0.21.0")
def _(old, new):
    # Capacity per group: before 0.21 one group (hybrid manager off): cdiv(131,072, 16) = 8,192 chunks a request.
    # 0.21.0 (forced on): 5 sliding groups capped at cdiv(1,024, 16) = 64 + 1 full group of 8,192.
    assert sel(make_plan(GEMMA, old)).capacity.chunks_per_group == (8192,)
    p = make_plan(GEMMA, new, cache={"hybrid_kv_cache_manager": "on"})
    assert sel(p).capacity.chunks_per_group == (64,) * 5 + (8192,)


@boundary("window_rule", "0.28.0")
def _(old, new):
    # Chunked local groups: 0.27.1 no cap (and refuses at start-up); 0.28.0 cdiv(8,192, 16) = 512 a request.
    assert sel(make_plan(LLAMA4, old)).capacity.chunks_per_group == (8192,) * 4
    assert sel(make_plan(LLAMA4, new)).capacity.chunks_per_group == (512, 512, 512, 8192)


@boundary("window_rule", "0.31.0")
def _(old, new):
    # Multi-module MTP with 3 speculative tokens retains 3 - 1 = 2 more tokens: 0.30.0 cdiv(1,024, 16) = 64;
    # 0.31.0 max(64, cdiv(1,024 - 1 + 2, 16) = 65) = 65.
    layout = {**GEMMA, "model": {**GEMMA["model"], "draft": {"method": "mtp", "num_layers": 2,
                                                              "num_speculative_tokens": 3}},
              "cache": {"hybrid_kv_cache_manager": "on"}}
    assert sel(make_plan(layout, old)).capacity.chunks_per_group[:3] == (64, 64, 64)
    assert sel(make_plan(layout, new)).capacity.chunks_per_group[:3] == (65, 65, 65)


@boundary("keys_per_group", "0.20.0")
def _(old, new):
    # The releases' own runs have one group until 0.21 (the hybrid manager is off with a connector), so the key
    # scheme shows on a multi-group layout: Gemma-like on 0.22.0 (6 groups). The old family's column (0.19.1's
    # rules: one block-hash key for every group) needs cdiv(131,072, 16) = 8,192 chunks a request; 0.20.0+ keys
    # per group: 5 x 64 + 8,192 = 8,512.
    assert not behaviour_for(old).keys_per_group
    assert behaviour_for(new).keys_per_group
    p = make_plan(GEMMA, "0.22.0")
    assert p.offload.results["old"].capacity.chunks_per_group == (8192,)
    assert p.offload.results["fixed"].capacity.chunks_per_group == (64,) * 5 + (8192,)


@boundary("capacity_metric", "0.33.0")
def _(old, new):
    # vllm:kv_offload_config_info exists from 0.33.0: check --metrics refuses a scrape with it on 0.32.0.
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.tools.metricscheck import check
    from conftest import deep_merge, COMMON

    text = ('vllm:kv_offload_config_info{cpu_blocks_per_chunk="1",cpu_kv_cache_size_bytes="68719476736",'
            'cpu_kv_cache_size_tokens="524288",cpu_num_chunks="32768",engine="0"} 1\n')
    for version, ok in ((old, False), (new, True)):
        layout = layout_from_dict(deep_merge(deep_merge(COMMON, DENSE), {"vllm": {"version": version}}), source="t")
        if ok:
            assert check(layout, text, source="s.prom")["match"] is True
        else:
            with pytest.raises(LayoutError, match="0.33.0 or later"):
                check(layout, text, source="s.prom")


# ----------------------------------------------------------------------------------------------- host memory

@boundary("cross_layer_blocks", "0.29.0")
def _(old, new):
    # Dense TP 1 on XPU (private tensors on both): 0.28.0 one cross-layer tensor of 32,768 blocks x 2 MiB = 64 GiB;
    # 0.29.0 one per layer: 32 x (32,768 x 65,536 = 2 GiB).
    vllm = {"platform": "xpu"}
    a = sel(make_plan(DENSE, old, vllm=vllm)).host.allocations_per_worker[0]
    assert [(x.count, x.size) for x in a] == [(1, 64 * GIB)]
    a = sel(make_plan(DENSE, new, vllm=vllm)).host.allocations_per_worker[0]
    assert [(x.count, x.size) for x in a] == [(32, 2 * GIB)]


MLA_TP4 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
           "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64}}
# DeepSeek-V3-like at TP 4, FlashMLA, 64 GiB: page 64 x 576 x 2 = 73,728 B; x 61 layers = 4,497,408 B a block; x 4
# copies = 17,989,632 -> 68,719,476,736 // that = 3,819 blocks on both sides of both boundaries (old, fixed and
# packed families alike: one group, sum(sizes) // N = page x 61).


def _mla_tensors(version):
    return sorted((x.count, x.size, x.resident) for x in
                  sel(make_plan(MLA_TP4, version)).host.allocations_per_worker[0])


# One cross-layer tensor: 3,819 x 4,497,408 = 17,175,601,152 B (15.996 GiB) pins 16 GiB; per layer: 61 x (3,819 x
# 73,728 = 281,567,232 B, 268.5 MiB) pin 512 MiB each (30.5 GiB a worker).
MLA_ONE = [(1, 3819 * 4497408, 16 * GIB)]
MLA_PER_LAYER = [(61, 3819 * 73728, 512 << 20)]


@boundary("mla_cross_layer", "0.18.0")
def _(old, new):
    # 0.17.1 MLACommonBackend orders the layers dimension second (1, 0, 2, 3) and the mixin compares lengths only:
    # the MLA model gets the cross-layer tensor; 0.18.0 identity order, refused by stride_order[0] != 0.
    assert _mla_tensors(old) == MLA_ONE
    assert _mla_tensors(new) == MLA_PER_LAYER


@boundary("mla_cross_layer", "0.24.0")
def _(old, new):
    # 0.23.0 identity order (per-layer tensors); 0.24.0 flashmla.py (1, 0, 2, 3) -> indexes_kv_by_block_stride.
    assert _mla_tensors(old) == MLA_PER_LAYER
    assert _mla_tensors(new) == MLA_ONE


TWO_PAGES = {"model": {"num_layers": 2, "num_kv_heads": [8, 4], "head_size": 128}}  # 65,536 + 32,768 B: UniformType


@boundary("pinned_layout", "0.19.0")
def _(old, new):
    # Old family, both: C // (98,304 x 2 tensors) = 349,525 blocks. 0.18.1 one tensor per layer: 349,525 x 65,536 =
    # 22,906,470,400 and x 32,768; 0.19.0 FlashAttention's K and V apart: two of each half.
    n = 64 * GIB // (98304 * 2)
    assert n == 349525
    a = sel(make_plan(TWO_PAGES, old)).host.allocations_per_worker[0]
    assert sorted((x.count, x.size) for x in a) == [(1, n * 32768), (1, n * 65536)]
    a = sel(make_plan(TWO_PAGES, new)).host.allocations_per_worker[0]
    assert sorted((x.count, x.size) for x in a) == [(2, n * 16384), (2, n * 32768)]


@boundary("pinned_layout", "0.23.0")
def _(old, new):
    # Fixed family, both: 64 GiB // 98,304 = 699,050 blocks. 0.22.1 K/V apart; 0.23.0 one tensor per KV tensor.
    n = 64 * GIB // 98304
    assert n == 699050
    a = sel(make_plan(TWO_PAGES, old)).host.allocations_per_worker[0]
    assert sorted((x.count, x.size) for x in a) == [(2, n * 16384), (2, n * 32768)]
    a = sel(make_plan(TWO_PAGES, new)).host.allocations_per_worker[0]
    assert sorted((x.count, x.size) for x in a) == [(1, n * 32768), (1, n * 65536)]


def _platforms(old, new, changed):
    # Pure MLA at TP 8: with the shared region the layout is stored once (15,279 chunks), without it 8 times
    # (1,909): see ONCE and EIGHT.
    for platform in ("cuda", "rocm", "xpu"):
        for version in (old, new):
            region = platform in behaviour_for(version).shared_region_platforms
            r = sel(make_plan(MLA_TP8, version, vllm={"platform": platform}))
            assert (r.shared_region, r.scheduler.num_blocks) == (region, ONCE if region else EIGHT), (platform,
                                                                                                      version)
    assert {p for p in ("cuda", "rocm", "xpu")
            if (p in behaviour_for(old).shared_region_platforms) != (p in behaviour_for(new).shared_region_platforms)
            } == changed


@boundary("shared_region_platforms", "0.27.0")
def _(old, new):
    _platforms(old, new, {"cuda", "rocm"})


@boundary("shared_region_platforms", "0.31.0")
def _(old, new):
    _platforms(old, new, {"rocm"})


@boundary("shared_region_platforms", "0.32.0")
def _(old, new):
    _platforms(old, new, {"xpu"})


def _startup_gate(version):
    """The `startup` gate of `plan --check --shm-size 32G` on the dense example (a 64 GiB region from 0.27)."""
    import contextlib
    import io
    import json

    from kvcalc.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["plan", "examples/llama-3.1-8b.yaml", "--vllm-version", version, "--check", "--shm-size", "32G",
              "--format", "json"])
    return next(c for c in json.loads(out.getvalue())["checks"] if c["name"] == "startup")


@boundary("shm_free_space_check", "0.28.0")
def _(old, new):
    # A 64 GiB region on a 32 GiB /dev/shm: 0.27.1 starts (and dies with SIGBUS later: the shm gate says so);
    # 0.28.0 refuses at start-up with "Insufficient space in /dev/shm: 65536 MiB required, 32768 MiB free".
    assert _startup_gate(old)["passed"] is True
    gate = _startup_gate(new)
    assert gate["passed"] is False
    assert "Insufficient space in /dev/shm: 65536 MiB required, 32768 MiB free." in gate["reason"]


@boundary("shm_message_named", "0.31.0")
def _(old, new):
    # 0.31.0 passes allocation_name="CPU KV offload shared region in /dev/shm" to check_shm_free_space.
    assert "Insufficient space in /dev/shm: 65536 MiB" in _startup_gate(old)["reason"]
    assert ("Insufficient space in /dev/shm for CPU KV offload shared region in /dev/shm: 65536 MiB"
            in _startup_gate(new)["reason"])


@pytest.mark.parametrize("first", ["0.17.0", "0.20.0", "0.33.0"])
def test_torch_pins_that_keep_the_rounding_rule(first):
    # torch 2.9.1 -> 2.10.0 -> 2.11.0 all round every pinned allocation up; 2.13.0 -> 2.14.0 both honour the
    # threshold: 2,236,817,408 B (vllm#53042) pins 4 GiB on both sides of these pins, without and with 1024 MiB.
    size = 2053 * 1089536
    for version in (before(first), first):
        b = behaviour_for(version)
        assert pinned_resident(size, b, None) == 4 * GIB
        assert pinned_resident(size, b, 1024) == (size if b.torch_round_threshold else 4 * GIB)
    assert behaviour_for(before(first)).torch_round_threshold == behaviour_for(first).torch_round_threshold


for _first in ("0.17.0", "0.20.0", "0.33.0"):
    CHECKS[("torch", _first)] = lambda old, new: test_torch_pins_that_keep_the_rounding_rule(new)


@boundary("torch", "0.27.0")
def _(old, new):
    # torch 2.11.0 (vLLM 0.26.0) has no pinned_max_round_threshold_mb; 2.13.0 (0.27.0) does: above 1024 MiB no
    # rounding.
    size = 2053 * 1089536
    assert pinned_resident(size, behaviour_for(old), 1024) == 4 * GIB
    assert pinned_resident(size, behaviour_for(new), 1024) == size


@boundary("replication_test", "0.31.0")
def _(old, new):
    # DeepSeek-V3.2-like (MLA + indexer, one UniformType group) at TP 8: 0.30.0 replicates only a plain MLA spec ->
    # stored 8 times; 0.31.0 kv_tp_replicas == 8 -> once. Per layer 73,728 + indexer 64 x (128 + 4) = 8,448 B:
    # 82,176 x 61 = 5,012,736 B (4096-aligned: 5,013,504); x 8 = 40,101,888 B (already 4096-aligned).
    layout = {"model": {**MLA_TP8["model"], "index_head_dim": 128}, **{k: v for k, v in MLA_TP8.items()
                                                                        if k != "model"}}
    r = sel(make_plan(layout, old))
    assert (r.replicated, r.scheduler.num_blocks) == (False, 64 * GIB // (82176 * 61 * 8))
    r = sel(make_plan(layout, new))
    assert (r.replicated, r.scheduler.num_blocks) == (True, 64 * GIB // 5013504)


# ----------------------------------------------------------------------------------------------- families

KIMI = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                  "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
        "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64}}


@boundary("family", "0.20.0")
def _(old, new):
    # Vector b2: old 3,758 scheduler / 60 workers (out of bounds); fixed 3,765 on both sides.
    r = sel(make_plan(KIMI, old))
    assert (r.scheduler.num_blocks, r.stage_counts[0].num_blocks, r.out_of_bounds) == (3758, 60, True)
    r = sel(make_plan(KIMI, new))
    assert (r.scheduler.num_blocks, r.stage_counts[0].num_blocks, r.out_of_bounds) == (3765, 3765, False)


@boundary("family", "0.24.0")
def _(old, new):
    # Packed tensors count size[0]; kvcalc's layouts have none, so the figures agree (b2: 3,765).
    assert sel(make_plan(KIMI, old)).scheduler.num_blocks == sel(make_plan(KIMI, new)).scheduler.num_blocks == 3765


@boundary("family", "0.26.0")
def _(old, new):
    # blocks_per_chunk 2: 0.25.1 ignores the key (3,765 blocks, a warning); 0.26.0 chunks of 2 blocks: 64 GiB //
    # (18,251,776 x 2) = 1,882.
    p = make_plan(KIMI, old, offload={"blocks_per_chunk": 2})
    assert sel(p).scheduler.num_blocks == 3765
    assert any("ignores kv_connector_extra_config.blocks_per_chunk" in w for w in p.warnings)
    assert sel(make_plan(KIMI, new, offload={"blocks_per_chunk": 2})).scheduler.num_blocks == 64 * GIB // (
        18251776 * 2) == 1882


@boundary("family", "0.27.0")
def _(old, new):
    # Chunks rounded up to the host page: one layer, 1 KV head of 40, block 16: 16 x 2 x 40 x 2 = 2,560 B.
    # 0.26.0: 64 GiB // 2,560 = 26,843,545; 0.27.0: 64 GiB // 4,096 = 16,777,216.
    layout = {"model": {"num_layers": 1, "num_kv_heads": 1, "head_size": 40}}
    assert sel(make_plan(layout, old)).scheduler.num_blocks == 64 * GIB // 2560 == 26843545
    assert sel(make_plan(layout, new)).scheduler.num_blocks == 64 * GIB // 4096 == 16777216


@boundary("family", "0.29.0")
def _(old, new):
    # One backing allocation: kv_cache_tensors[0].size // num_blocks equals the sum of pages for these layouts.
    assert sel(make_plan(KIMI, old)).scheduler.num_blocks == sel(make_plan(KIMI, new)).scheduler.num_blocks == 3765


@boundary("lmcache_offloading_flag", "0.23.0")
def _(old, new):
    # --kv-offloading-backend lmcache --kv-offloading-size 64 on a dense TP 8 engine. 0.22.1: LMCacheConnectorV1 with
    # lmcache.max_local_cpu_size 64 / (8 x 1) = 8.0 GiB per rank: int(8.0 x 1024^3) = 8,589,934,592 B on each of the
    # 8 ranks. 0.23.0: LMCacheMPConnector, no size passed: the pool is the LMCache server's (backends/lmcache_mp.py;
    # a note says the size selects the connector and sizes nothing, a warning that the server's line is needed).
    layout = dict(DENSE, parallel={"tensor_parallel_size": 8})
    a = lmcache_plan(layout, old, offload={"kv_offloading_size": 64}).pool.lmcache
    assert (a.connector, a.max_local_cpu_size, a.pool_bytes_per_storing_rank, a.storing_ranks) == \
        ("LMCacheConnectorV1", 8.0, 8 * GIB, 8)
    p = lmcache_plan(layout, new, offload={"kv_offloading_size": 64})
    assert (p.pool.backend, p.pool.mp.connector, p.pool.mp.pool) == ("lmcache_mp", "LMCacheMPConnector", None)
    assert any("sizes nothing" in n for n in p.notes)
    assert any("--lmcache-server" in w for w in p.warnings)


# ----------------------------------------------------------------------------------------------- the KV budget

LLAMA_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "models", "llama-3.1-8b.json")


def memory_plan(version, gpu=None, cache=None, model=None):
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.pipeline import plan

    gpu = {"memory_utilization": 0.95, **(gpu or {})}
    gpu.setdefault("name", None if "total_memory" in gpu else "H100")
    data = {"model": model or {"hf_config": LLAMA_CONFIG},
            "cache": {"max_model_len": 16384, "enable_prefix_caching": False, **(cache or {})},
            "gpu": {k: v for k, v in gpu.items() if v is not None}, "vllm": {"version": version}}
    return plan(layout_from_dict(data, source="test.yaml")).memory


@boundary("memory_budget", "0.18.0")
def _(old, new):
    # 0.17.0 profiles no CUDA graphs during determine_available_memory; 0.18.0 profiles and logs the estimate
    # ("Estimated CUDA graph memory") without subtracting it: the budget is the same.
    a, b = memory_plan(old), memory_plan(new)
    assert a.cudagraph_estimate_bytes is None
    assert b.cudagraph_estimate_bytes > 0
    assert a.kv_cache_bytes == b.kv_cache_bytes


@boundary("memory_budget", "0.20.0")
def _(old, new):
    # 0.20.0 subtracts the estimate: Llama-3.1-8B on an H100 (1,024 seqs, 8,192 tokens) captures 51 piecewise and 51
    # full graphs (1, 2, 4, every 8 to 248, every 16 to 512); kvcalc's estimate: 129 MiB + (50 + 50) x 8.2 MiB x
    # (512 / 512)^2 = 135,266,304 + 100 x 8,598,323 = 995,098,604 B (the real 0.19.0 log: 0.84 GiB; Gemma-3-12B's 1.02).
    a, b = memory_plan(old), memory_plan(new)
    assert a.cudagraph_bytes == 0
    assert b.cudagraph_bytes == b.cudagraph_estimate_bytes == 995_098_604
    assert a.kv_cache_bytes - b.kv_cache_bytes == 995_098_604
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (gpu.estimate_cudagraphs false) keeps 0.19's budget on 0.20.
    off = memory_plan(new, gpu={"estimate_cudagraphs": False})
    assert (off.cudagraph_bytes, off.cudagraph_estimate_bytes, off.kv_cache_bytes) == (0, 995_098_604, a.kv_cache_bytes)
    # ... and =1 subtracts it on 0.19 already (gpu_worker.py:395-399 @0.19.0).
    assert memory_plan(old, gpu={"estimate_cudagraphs": True}).kv_cache_bytes == b.kv_cache_bytes


@boundary("cudagraph_estimate_platforms", "0.26.0")
def _(old, new):
    # ROCm skips the estimate up to 0.25 (gpu_worker.py is_cuda()) and profiles it from 0.26 (is_cuda_alike()):
    # Mixtral-8x7B (an MoE outside Model Runner V2's list: V1 profiles) on an MI300X (1,024 seqs, 8,192 tokens: 51 +
    # 51 graphs at 512) estimates nothing on 0.25.1 and 995,098,604 B on 0.26.0 (the figure of the 0.20.0 step).
    mixtral = {"hf_config": os.path.join(os.path.dirname(LLAMA_CONFIG), "..", "hf", "mixtral-8x7b-v0.1.json")}
    a, b = (memory_plan(v, gpu={"name": "MI300X"}, model=mixtral) for v in (old, new))
    assert (a.cudagraph_estimate_bytes, a.cudagraph_bytes) == (None, 0)
    assert b.cudagraph_bytes == b.cudagraph_estimate_bytes == 995_098_604
    assert memory_plan(old, gpu={"name": "H200"}, model=mixtral).cudagraph_bytes == 995_098_604  # CUDA: both


@boundary("cudagraph_estimate_platforms", "0.31.0")
def _(old, new):
    # XPU profiles the estimate from 0.31 (is_cuda_alike() or is_xpu()).
    assert "xpu" not in behaviour_for(old).cudagraph_estimate_platforms
    assert "xpu" in behaviour_for(new).cudagraph_estimate_platforms


@boundary("memory_budget", "0.27.0")
def _(old, new):
    # 0.27.0 measures the total consumed since the init snapshot plus the transient peak (mem_utils.py:317-326).
    a, b = memory_plan(old), memory_plan(new)
    assert (a.family, b.family) == ("C", "D")
    assert "total consumed" in b.terms[-1].source
    assert "total consumed" not in a.terms[-1].source


@boundary("default_gpu_memory_utilization", "0.20.0")
def _(old, new):
    # H100 total 79.19 GiB = 85,029,615,042 B: ceil(x 0.9) = 76,526,653,538 (0.19.1); ceil(x 0.92) = 78,227,245,839.
    a, b = memory_plan(old, gpu={"memory_utilization": None}), memory_plan(new, gpu={"memory_utilization": None})
    assert a.total_bytes == 7919 * GIB // 100 == 85_029_615_042
    assert (a.utilization, a.requested_bytes) == (0.9, 76_526_653_538)
    assert (b.utilization, b.requested_bytes) == (0.92, 78_227_245_839)


def _runner(version, architecture, experts=0, quantization=None):
    from kvcalc.engines.vllm.memory import model_runner
    from kvcalc.vocab.weights import WeightsSpec

    spec = WeightsSpec(blocks=(), num_layers=1, hidden_size=1, intermediate_size=1, vocab_size=1,
                       architecture=architecture, num_experts=experts, quantization=quantization, source="test")
    return model_runner(behaviour_for(version), spec, hybrid=False)


@boundary("mrv2_rule", "0.22.0")
def _(old, new):
    # config/vllm.py:69 @0.22.0: Qwen3ForCausalLM (dense, not quantized) runs on Model Runner V2.
    assert (_runner(old, "Qwen3ForCausalLM"), _runner(new, "Qwen3ForCausalLM")) == ("v1", "v2")
    assert _runner(new, "LlamaForCausalLM") == "v1"


@boundary("mrv2_rule", "0.23.0")
def _(old, new):
    assert (_runner(old, "LlamaForCausalLM"), _runner(new, "LlamaForCausalLM")) == ("v1", "v2")
    assert _runner(new, "Qwen3ForCausalLM", quantization="fp8") == "v1"


@boundary("mrv2_rule", "0.24.0")
def _(old, new):
    # MoE allowed for the listed classes.
    assert (_runner(old, "Qwen2MoeForCausalLM", experts=60), _runner(new, "Qwen2MoeForCausalLM", experts=60)) == \
        ("v1", "v2")


@boundary("mrv2_rule", "0.25.0")
def _(old, new):
    # Every dense generate model: Gemma-3 included; an unlisted MoE stays on V1.
    assert (_runner(old, "Gemma3ForConditionalGeneration"), _runner(new, "Gemma3ForConditionalGeneration")) == \
        ("v1", "v2")
    assert _runner(new, "Qwen3MoeForCausalLM", experts=128) == "v1"


@boundary("mrv2_rule", "0.29.0")
def _(old, new):
    # Every model on V2, and V2's CUDA-graph estimate is real (0 up to 0.28): Llama subtracts its graphs again.
    assert (_runner(old, "Qwen3MoeForCausalLM", experts=128), _runner(new, "Qwen3MoeForCausalLM", experts=128)) == \
        ("v1", "v2")
    assert (memory_plan(old).cudagraph_bytes, memory_plan(new).cudagraph_bytes) == (0, 995_098_604)


@boundary("batch_class_large", "0.28.0")
def _(old, new):
    # A 180 GiB device: 8,192 tokens / 1,024 seqs up to 0.27.1, 16,384 / 1,024 from 0.28.0.
    from kvcalc.inputs.layout.gpu import batch_defaults

    assert batch_defaults(180 * GIB, None, old)[:2] == (8192, 1024)
    assert batch_defaults(180 * GIB, None, new)[:2] == (16384, 1024)


@boundary("batch_class_gb10_other", "0.33.0")
def _(old, new):
    from kvcalc.inputs.layout.gpu import batch_defaults

    total = 12169 * GIB // 100
    assert batch_defaults(total, "NVIDIA GB10", old)[:2] == (8192, 1024)
    assert batch_defaults(total, "NVIDIA GB10", new)[:2] == (2048, 256)


@boundary("max_capture_sm100", "0.28.0")
def _(old, new):
    # SM100, 1,024 seqs: the largest capture 512 (51 sizes) up to 0.27.1; 1,024 from 0.28.0: 3 + 31 + 49 (256 to
    # 1,024 by 16) = 83 sizes.
    a = memory_plan(old, model={"hf_config": LLAMA_CONFIG}, gpu={}, cache={})
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.pipeline import plan

    def sizes(version):
        data = {"model": {"hf_config": LLAMA_CONFIG}, "cache": {"max_model_len": 16384},
                "gpu": {"name": "B200"}, "vllm": {"version": version}}
        return plan(layout_from_dict(data, source="t.yaml")).memory.cudagraph_sizes

    assert a.cudagraph_sizes == 51
    assert (sizes(old), sizes(new)) == (51, 83)


@boundary("sampler_quarters", "0.17.0")
def _(old, new):
    # The profile run's sampler over 1,024 rows x 128,256 logits: the pre-0.17 sort keeps fp32 values and int64
    # indices, 12 B a logit more: 1,024 x 128,256 x 12 = 1,576,009,728 B more activation on 0.16.0.
    a, b = memory_plan(old), memory_plan(new)
    assert a.activation_peak_bytes - b.activation_peak_bytes == 1024 * 128_256 * 12 == 1_576_009_728


@boundary("refusal_text", "0.22.0")
def _(old, new):
    # 16 GiB device at 0.92: one 131,072-token request needs 131,072 x 128 KiB = 16 GiB; vLLM's message names
    # "models's" up to 0.21.0 and "model's" (and the CPU backend) from 0.22.0.
    for version, whose in ((old, "the models's max seq len"), (new, "the model's max seq len")):
        with pytest.raises(StartupRefusal, match="To serve at least one request with " + whose):
            memory_plan(version, gpu={"total_memory": "24GiB", "memory_utilization": None},
                        cache={"max_model_len": 131072})


# ------------------------------------------------------------- DeepSeek-V4 (numbers: tests/fixtures/dsv4/vectors.json)

def _dsv4(version, dtype="fp8"):
    from test_dsv4 import VECTORS, _plan

    v = next(x for x in VECTORS if x["version"] == version and x["tp"] == 1 and x["kv_cache_dtype"] == dtype
             and x["block_size_arg"] == "default" and x["config"].startswith("DeepSeek-V4-Flash"))
    return v, _plan(v)


def _pages(p):
    return [g.spec.page_size_bytes for g in p.grouping.groups]


@boundary("in_flight_reserve", "0.26.0")
def _(old, new):
    # vLLM's own code (tests/fixtures/dsv4/dspark_vectors.json, async scheduling on): 0.25.1's sliding caches keep
    # window - 1 + 8,192 tokens, 0.26.0's window - 1 + 2 x 8,192 (max_in_flight_tokens); the blocks do not move.
    from test_dsv4 import DSPARK, _dspark_plan

    pick = {x["version"]: x for x in DSPARK if x["tp"] == 1 and x["async_scheduling"]}
    for version in (old, new):
        assert _dspark_plan(pick[version]).logs.max_concurrency == pytest.approx(pick[version]["max_concurrency"])
    assert pick[old]["num_gpu_blocks"] == pick[new]["num_gpu_blocks"]
    assert pick[new]["max_concurrency"] < pick[old]["max_concurrency"] / 1.9


@boundary("dsv4_fp4_indexer_row", "0.27.0")
def _(old, new):
    # The real B300 log ran the MXFP4 indexer cache ("Using MXFP4 indexer cache for Lightning Indexer."): 0.26.0
    # allocates the FP8 row for it, so its numbers agree; read as 0.27.0's, whose 68-byte row kvcalc does not model,
    # the log is refused by name.
    from test_dsv4 import FLASH, _b300

    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.tools.logcheck import check
    from kvcalc.vocab.errors import UnsupportedError

    def layout(version):
        return layout_from_dict({"model": {"hf_config": FLASH, "draft": {"method": "dspark"}},
                                 "vllm": {"version": version}}, source="dsv4.yaml")

    assert check(layout(old), _b300(), source="b300.log", version_given=True)["match"] is True
    with pytest.raises(UnsupportedError, match="use_fp4_indexer_cache"):
        check(layout(new), _b300(), source="b300.log", version_given=True)


@boundary("dsv4_grouping", "0.27.0")
def _(old, new):
    # 0.26.0 pads the C4 states' 32,832-byte pages to the 37,440-byte MLA page: 21 x 8,640 + 21 x 37,440; 0.27.0
    # keeps them: 21 x 8,640 + 21 x 32,832.
    assert _pages(_dsv4(old)[1])[3] == 21 * 8640 + 21 * 37440 == 967_680
    assert _pages(_dsv4(new)[1])[3] == 21 * 8640 + 21 * 32832 == 870_912


@boundary("dsv4_grouping", "0.29.0")
def _(old, new):
    # The MLA group first (0.28.0), the sliding groups first (0.29.0's greedy buckets in registration order).
    for version, first in ((old, 1_002_240), (new, 823_680)):
        v, p = _dsv4(version)
        assert _pages(p) == [g["page_size_bytes"] for g in v["groups"]]
        assert _pages(p)[0] == first


@boundary("dsv4_layout", "0.23.0")
def _(old, new):
    # 22 tuples x (37,440 + 8,640 + 1,728) on 0.22.1; per page size its most layers on 0.23.0.
    assert _dsv4(old)[1].gpu.workers[0].bytes_per_block == 22 * (37440 + 8640 + 1728) == 1_051_776
    assert _dsv4(new)[1].gpu.workers[0].bytes_per_block == 22 * 37440 + 21 * 8640 + 20 * 1728 == 1_039_680


@boundary("dsv4_layout", "0.27.0")
def _(old, new):
    assert _dsv4(old)[1].gpu.workers[0].bytes_per_block == 1_039_680
    assert _dsv4(new)[1].gpu.workers[0].bytes_per_block == 21 * 37440 + 21 * 8640 + 20 * 1728 == 1_002_240


@boundary("dsv4_layout", "0.29.0")
def _(old, new):
    # 139 offsets in the slab (0.28.0); one placement per (group, spec) in one allocation (0.29.0): 1+1+3+2+1.
    for version in (old, new):
        v, p = _dsv4(version)
        assert p.gpu.workers[0].num_tensors == v["num_kv_cache_tensors"]
    assert _dsv4(new)[1].gpu.workers[0].num_tensors == 8


@boundary("dsv4_auto_kv_dtype", "0.30.0")
def _(old, new):
    with pytest.raises(StartupRefusal, match="only supports fp8"):
        _dsv4(old, "auto")
    v, p = _dsv4(new, "auto")
    assert p.gpu.num_blocks == v["num_gpu_blocks"] == 64_280


@boundary("concurrency_sum", "0.27.0")
def _(old, new):
    # 0.26.0: N / cdiv(sum of the groups' max usage, page of group 0); 0.27.0: N / sum of each group's blocks.
    for version in (old, new):
        v, p = _dsv4(version)
        assert p.logs.max_concurrency == pytest.approx(v["max_concurrency_at_max_model_len"], rel=1e-12)
    v, p = _dsv4(new)
    assert p.logs.blocks_per_request == 4096 + 2 * 131 + 2051 + 1041


# ----------------------------------------------------------------------------------------------- the runner

def test_every_boundary_has_a_check():
    steps = {(flag, release(s.first)) for flag, ss in STEPS.items() for s in ss[1:]}
    families = {("family", release(f.first)) for f in FAMILIES.values() if f.first > (0, 14, 0)}
    assert set(CHECKS) == steps | families


@pytest.mark.parametrize("flag, first", sorted(CHECKS))
def test_boundary(flag, first):
    old, new = before(first), first
    if flag != "family":
        assert getattr(behaviour_for(old), flag) != getattr(behaviour_for(new), flag), "a step changes its flag"
    else:
        assert behaviour_for(old).formula != behaviour_for(new).formula
    CHECKS[(flag, first)](old, new)
