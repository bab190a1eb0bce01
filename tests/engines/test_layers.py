"""Per-rank layer specs: PP split, head replication, dtypes, Mamba states, drafter placement."""

import json
import os

import pytest

from conftest import make_plan
from kvcalc.vocab.errors import LayoutError, StartupRefusal
from kvcalc.vocab.kinds import HeadRuleError, heads_per_rank
from kvcalc.engines.vllm.layers import pp_split

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "models")


def model_json(name):
    with open(os.path.join(FIXTURES, name)) as fh:
        return json.load(fh)


@pytest.mark.parametrize("n,pp,parts", [
    (61, 2, [31, 30]), (61, 3, [20, 21, 20]), (61, 4, [15, 15, 16, 15]), (62, 4, [15, 16, 16, 15]),
    (32, 3, [11, 11, 10]), (32, 1, [32]), (32, 2, [16, 16]),
])
def test_pp_split_matches_vllm(n, pp, parts):
    assert pp_split(n, pp) == parts


def test_heads_per_rank():
    assert heads_per_rank(8, 4) == 2
    assert heads_per_rank(2, 4) == 1  # replicated
    with pytest.raises(HeadRuleError):
        heads_per_rank(8, 3)
    with pytest.raises(HeadRuleError):
        heads_per_rank(3, 4)
    with pytest.raises(HeadRuleError, match="does not replicate"):
        heads_per_rank(8, 16, replicates=False)  # gpt-oss


def per_token_bytes(p):
    """Sum of attention pages / block size at TP 1: KV bytes per token over all layers."""
    total = 0
    for name, spec in p.layers.stages[0].layers:
        if spec.kind != "mamba":
            total += spec.page_size_bytes // spec.block_size
    return total


@pytest.mark.parametrize("fixture,layout", [
    ("llama-3.1-8b.json", {"num_layers": 32, "num_kv_heads": 8, "head_size": 4096 // 32}),
    ("llama-3.1-70b.json", {"num_layers": 80, "num_kv_heads": 8, "head_size": 8192 // 64}),
    ("qwen3-32b.json", {"num_layers": 64, "num_kv_heads": 8, "head_size": 128}),
    ("deepseek-v3.json", {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}),
    ("gpt-oss-120b.json", {"num_layers": 36, "layer_pattern": ["sliding_attention", "full_attention"],
                           "num_kv_heads": 8, "head_size": 64, "sliding_window": 128}),
    ("gemma-3-27b.json", {"num_layers": 62, "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"],
                          "num_kv_heads": 16, "head_size": 128, "sliding_window": 1024}),
])
def test_bytes_per_token_match_model_fixtures(fixture, layout):
    expected = model_json(fixture)["_derived_bf16"]["kv_bytes_per_token_all_attention_layers"]
    p = make_plan({"model": layout, "cache": {"block_size": 16}}, "0.22.1")
    assert per_token_bytes(p) == expected


def test_nemotron_nas_per_layer_heads_match_fixture():
    cfg = model_json("nemotron-nas-mini-synthetic.json")
    heads, kinds = [], []
    for block in cfg["block_configs_attention"]:
        if block["no_op"] or block["replace_with_linear"]:
            heads.append(0)
            kinds.append("none")
        else:
            heads.append(cfg["num_attention_heads"] // block["n_heads_in_group"])
            kinds.append("full_attention")
    assert heads == cfg["_derived_bf16"]["per_layer_num_kv_heads"]
    layout = {"num_layers": 14, "layer_types": kinds, "num_kv_heads": heads,
              "head_size": cfg["hidden_size"] // cfg["num_attention_heads"]}
    p = make_plan({"model": layout, "cache": {"block_size": 16, "max_model_len": 2048}})
    assert per_token_bytes(p) == cfg["_derived_bf16"]["kv_bytes_per_token_all_attention_layers"]
    assert p.grouping.rule == "uniform_type"


def mamba_state_bytes(p):
    specs = [s for _, s in p.layers.stages[0].layers if s.kind == "mamba"]
    return specs[0].real_page_size_bytes, len(specs)


def test_jamba_mamba1_state_matches_fixture():
    cfg = model_json("jamba-1.5-mini.json")
    kinds = ["full_attention" if i % cfg["attn_layer_period"] == cfg["attn_layer_offset"] else "mamba"
             for i in range(cfg["num_hidden_layers"])]
    layout = {"num_layers": 32, "layer_types": kinds, "num_kv_heads": 8, "head_size": 128,
              "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                        "mamba_d_conv": 4}}
    p = make_plan({"model": layout, "cache": {"block_size": 16}}, "0.22.1", cache={"enable_prefix_caching": True})
    page, n = mamba_state_bytes(p)
    derived = cfg["_derived_bf16"]
    assert n * page == derived["state_bytes_per_sequence"] == 8716288
    assert page == derived["groups"][1]["state_bytes_per_seq_per_layer"]


def test_mamba2_state_matches_fixture():
    cfg = model_json("mamba2-2.7b.json")
    d = cfg["_implied_by_code_defaults"]
    inter = d["expand"] * cfg["d_model"]
    layout = {"num_layers": 64, "layer_types": ["mamba"] * 64,
              "mamba": {"kind": "mamba2", "mamba_num_heads": inter // d["headdim"], "mamba_head_dim": d["headdim"],
                        "n_groups": d["ngroups"], "ssm_state_size": d["d_state"], "conv_kernel": d["d_conv"]}}
    p = make_plan({"model": layout}, "0.22.1")
    page, n = mamba_state_bytes(p)
    assert n * page == cfg["_derived_bf16"]["state_bytes_per_sequence"]


def test_qwen3_next_gdn_state_matches_fixture():
    from test_vectors import QWEN3_NEXT
    p = make_plan({**QWEN3_NEXT}, "0.22.1")
    page, n = mamba_state_bytes(p)
    assert n * page == model_json("qwen3-next-80b-a3b.json")["_derived_bf16"]["state_bytes_per_sequence"]


def test_mamba2_groups_replicate_under_tp():
    # n_groups = 1 at TP 4: vLLM pads to 4 groups; conv_dim = 5120 + 2*4*128 = 6144 -> 1536 per rank.
    layout = {"num_layers": 4, "layer_types": ["mamba"] * 4,
              "mamba": {"kind": "mamba2", "mamba_num_heads": 80, "mamba_head_dim": 64, "n_groups": 1,
                        "ssm_state_size": 128, "conv_kernel": 4}}
    p = make_plan({"model": layout, "parallel": {"tensor_parallel_size": 4}}, "0.22.1")
    spec = p.layers.stages[0].layers[0][1]
    assert spec.shapes == ((3, 1536), (20, 64, 128))


def test_fp8_ds_mla_and_fp8_mla_pages():
    base = {"model": {"num_layers": 2, "kv_lora_rank": 512, "qk_rope_head_dim": 64}, "cache": {"block_size": 64}}
    # fp8_ds_mla is a sparse-MLA format: no dense MLA backend lists it, vLLM finds no backend for it.
    with pytest.raises(StartupRefusal, match="No valid attention backend found for cuda"):
        make_plan(base, cache={"kv_cache_dtype": "fp8_ds_mla"})
    sparse = {"model": {**base["model"], "index_head_dim": 128}, "cache": {"block_size": 64}}
    p = make_plan(sparse, cache={"kv_cache_dtype": "fp8_ds_mla"})
    assert {s.page_size_bytes for _, s in p.layers.stages[0].layers if s.head_size == 576} == {64 * 656}
    assert make_plan(base, cache={"kv_cache_dtype": "fp8"}).grouping.groups[0].spec.page_size_bytes == 64 * 576
    assert make_plan(base).grouping.groups[0].spec.page_size_bytes == 64 * 1152


def test_skip_layers_make_uniform_type_and_undercount():
    # fp8 everywhere but layer 0 (bf16): pages 2*8*128*16*1 = 32768 and 65536 for layer 0.
    layout = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128},
              "cache": {"block_size": 16, "kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0]}}
    p = make_plan(layout, "0.19.1")
    assert p.grouping.rule == "uniform_type"
    sigma = 65536 + 31 * 32768
    assert p.grouping.groups[0].spec.page_size_bytes == sigma
    n_gpu = 40 * 2**30 // sigma
    assert p.gpu.num_blocks == n_gpu
    r = p.offload.results["old"]
    assert r.stages[0].count.num_blocks == 64 * 2**30 // (sigma * 32)
    assert r.scheduler.num_blocks == 64 * 2**30 // (65536 * 32)
    assert r.out_of_bounds
    assert p.offload.results["fixed"].scheduler.num_blocks == 64 * 2**30 // sigma


def test_skip_layers_refused_before_019():
    layout = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128},
              "cache": {"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0]}}
    with pytest.raises(LayoutError, match="0.19.0"):
        make_plan(layout, "0.18.0")


def test_drafter_goes_to_last_pp_stage():
    layout = {"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128,
                        "draft": {"method": "eagle", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
              "parallel": {"pipeline_parallel_size": 2}}
    p = make_plan(layout)
    assert [n for n, _ in p.layers.stages[1].layers][-1] == "model.layers.4.self_attn.attn"
    assert len(p.layers.stages[0].layers) == 2
    assert len(p.layers.stages[1].layers) == 3
    # Stage 1 has 3 layers for stage 0's 2: its workers need more bytes per block -> OOB on every formula.
    assert p.offload.results['fixed'].out_of_bounds
    assert p.offload.results['old'].out_of_bounds


def test_mtp_layer_copies_mla_and_merges():
    layout = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                        "draft": {"method": "mtp", "num_layers": 1}}, "parallel": {"tensor_parallel_size": 4}}
    p = make_plan(layout)
    assert p.grouping.rule == 'uniform'
    assert len(p.grouping.groups[0].layer_names) == 62
    assert p.grouping.groups[0].layer_names[-1] == "model.layers.61.mtp_block.self_attn.attn"
    # deepseek-v3.json: with_mtp_layer_bytes_per_token = 71424 = 62 * 1152.
    spec = p.grouping.groups[0].spec
    assert 62 * spec.page_size_bytes // spec.block_size == model_json("deepseek-v3.json")[
        "_derived_bf16"]["with_mtp_layer_bytes_per_token"]


def test_jamba_prefix_caching_mode_all_aligns_to_chunk():
    # a1 = 2*8*128*2 = 4096 B/token, mp = 311,296: chunk = lcm(2048, 16) = 2048;
    # blk = 2048 * cdiv(cdiv(311296, 4096), 2048) = 2048; attention page 2048 * 4096 = 8 MiB pads the Mamba page.
    kinds = ["full_attention" if i % 8 == 4 else "mamba" for i in range(32)]
    layout = {"num_layers": 32, "layer_types": kinds, "num_kv_heads": 8, "head_size": 128,
              "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                        "mamba_d_conv": 4}}
    p = make_plan({"model": layout}, "0.22.1", cache={"enable_prefix_caching": True})
    assert p.layers.mamba_cache_mode == "all"
    assert p.layers.block_size == 2048
    assert p.layers.mamba_block_size == 2048
    assert {g.spec.page_size_bytes for g in p.grouping.groups} == {2048 * 4096}
    # 28 Mamba + 4 attention layers: 28 >= 1.5 * 4 -> group_size 4 -> 7 Mamba groups + 1 attention group.
    assert [len(g.layer_names) for g in p.grouping.groups] == [4] * 8


def test_short_conv_and_linear_attention_states():
    # LFM2-like short conv at TP 2: (conv_L_cache - 1) x (hidden / TP) = 2 x 1024 bf16 elements per rank.
    sc = {"num_layers": 2, "layer_types": ["mamba", "full_attention"], "num_kv_heads": 8, "head_size": 64,
          "mamba": {"kind": "short_conv", "hidden_size": 2048, "conv_L_cache": 3}}
    p = make_plan({"model": sc, "parallel": {"tensor_parallel_size": 2}}, "0.22.1")
    spec = p.layers.stages[0].layers[0][1]
    assert spec.shapes == ((2, 1024),)
    assert spec.real_page_size_bytes == 2 * 1024 * 2
    la = {"num_layers": 2, "layer_types": ["mamba", "full_attention"], "num_kv_heads": 8, "head_size": 128,
          "mamba": {"kind": "linear_attention", "num_attention_heads": 64, "head_dim": 128}}
    p = make_plan({"model": la, "parallel": {"tensor_parallel_size": 8}}, "0.22.1")
    spec = p.layers.stages[0].layers[0][1]
    assert spec.real_page_size_bytes == 8 * 128 * 128 * 2


# ---------------------------------------------------------------- the hybrid alignment, on its own (spec 4.3)

def test_hybrid_alignment_qwen3_next_tp4():
    from kvcalc.engines.vllm.layers import hybrid_alignment

    # Qwen3-Next at TP 4: one attention token = 2 heads // 4 -> 1 head x (256 + 256) x 2 B = 1,024 B.
    # GDN state: conv (4 - 1 + 0) x (128*16*2 + 128*32) // 4 = 3 x 2,048 x 2 B = 12,288 B;
    # ssm 32 // 4 x 128 x 128 x 2 B = 262,144 B; total 274,432 B.
    a1, mp = 1024, 3 * 2048 * 2 + 8 * 128 * 128 * 2
    assert mp == 274432
    al = hybrid_alignment(mode="none", block_size=16, attention_token_page=a1, mamba_page=mp, kernel_block=16,
                          mamba_chunk=2048)
    # 16 * cdiv(274,432, 16 * 1,024) = 16 * 17 = 272 tokens; the page 272 x 1,024 = 278,528 pads the state.
    assert al.block_size == 272
    assert al.raised_from == 16
    assert al.mamba_page_padded == 278528
    assert al.mamba_block_size is None
    # 0.20+ with a user block size of 32: kernel 32 -> 32 * cdiv(274,432, 32 * 1,024) = 32 * 9 = 288.
    assert hybrid_alignment(mode="none", block_size=32, attention_token_page=a1, mamba_page=mp, kernel_block=32,
                            mamba_chunk=2048).block_size == 288


def test_hybrid_alignment_mode_all_and_align():
    from kvcalc.engines.vllm.layers import hybrid_alignment

    # mode all: the block is a multiple of lcm(chunk, kernel) = lcm(2048, 16) = 2048 covering cdiv(mp, a1) tokens.
    al = hybrid_alignment(mode="all", block_size=16, attention_token_page=4096, mamba_page=4 * 1024 * 1024,
                          kernel_block=16, mamba_chunk=2048)
    assert al.block_size == 2048  # cdiv(4 MiB, 4 KiB) = 1,024 tokens -> one chunk of 2,048
    assert al.mamba_block_size == 2048
    assert al.mamba_page_padded == 2048 * 4096
    # mode align: the Mamba block follows the (bumped) attention block.
    al = hybrid_alignment(mode="align", block_size=64, attention_token_page=4096, mamba_page=100,
                          kernel_block=64, mamba_chunk=2048)
    assert al.block_size == 64  # 64 * cdiv(100, 64 * 4096) = 64: no bump
    assert al.raised_from is None
    assert al.mamba_block_size == 64
    assert al.mamba_page_padded == 64 * 4096
