"""Every vector of ../shared/spec/test-vectors.md (families old and fixed), through the Python API.

Expected numbers are the vector tables' own, re-derived inline from the spec formulas where cheap.
"""

import pytest

from conftest import GIB, make_plan

C = 64 * GIB
A = 40 * GIB

LLAMA8B = {"model": {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}, "cache": {"block_size": 16}}
MLA61 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}}


def counts(p, formula):
    r = p.offload.results[formula]
    return r.scheduler.num_blocks, [s.count.num_blocks for s in r.stages], r


# ---------------------------------------------------------------- (a) dense GQA


@pytest.mark.parametrize(
    "tp,pp,offload_block,page,n_gpu,tensors,bw,tokens,conc,cpu,pinned",
    [
        (1, 1, None, 65536, 20480, (32, 1342177280), 2097152, 327680, "2.50", 32768, 68719476736),  # a1
        (2, 1, None, 32768, 40960, (32, 1342177280), 1048576, 655360, "5.00", 32768, 34359738368),  # a2
        (1, 1, 256, 65536, 20480, (32, 1342177280), 2097152, 327680, "2.50", 2048, 68719476736),  # a3
        (1, 2, None, 65536, 40960, (16, 2684354560), 1048576, 655360, "5.00", 32768, 34359738368),  # a4
    ],
)
@pytest.mark.parametrize("version", ["0.19.1", "0.20.0", "0.21.0", "0.22.1"])
def test_a_dense(tp, pp, offload_block, page, n_gpu, tensors, bw, tokens, conc, cpu, pinned, version):
    extra = {"parallel": {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}}
    if offload_block:
        extra["offload"] = {"block_size": offload_block}
    p = make_plan({**LLAMA8B, **extra}, version)
    assert p.grouping.rule == "uniform"
    assert p.grouping.groups[0].spec.page_size_bytes == page
    assert p.gpu.num_blocks == n_gpu
    for w in p.gpu.workers:
        assert (len(w.tensors), w.tensors[0].size) == tensors
        assert all(t.size == tensors[1] for t in w.tensors)
        assert w.bytes_per_block == bw
    assert p.logs.kv_cache_size_tokens == tokens
    assert f"{p.logs.max_concurrency:.2f}" == conc
    for formula in ("old", "fixed"):
        sched, workers, r = counts(p, formula)
        assert sched == cpu
        assert workers == [cpu] * pp
        assert not r.out_of_bounds
        assert all(s.pinned_bytes_per_worker == pinned for s in r.stages)
        assert r.unused_bytes == 0


# ---------------------------------------------------------------- (b) pure MLA


@pytest.mark.parametrize(
    "block,page,n_gpu,tensor,bw,tokens,cpu,pinned,unused",
    [
        (64, 73728, 9549, 704028672, 4497408, 611136, 3819, 17175601152, 17072128),
        (16, 18432, 38199, 704083968, 1124352, 611184, 15279, 17178974208, 3579904),
    ],
)
def test_b_pure_mla(block, page, n_gpu, tensor, bw, tokens, cpu, pinned, unused):
    p = make_plan({**MLA61, "cache": {"block_size": block}, "parallel": {"tensor_parallel_size": 4}})
    assert p.grouping.rule == "uniform"
    assert p.grouping.groups[0].spec.page_size_bytes == page
    assert p.gpu.num_blocks == n_gpu
    w = p.gpu.workers[0]
    assert len(w.tensors) == 61
    assert {t.size for t in w.tensors} == {tensor}
    assert w.bytes_per_block == bw
    assert p.logs.kv_cache_size_tokens == tokens
    assert f'{p.logs.max_concurrency:.2f}' == '4.66'
    for formula in ("old", "fixed"):
        sched, workers, r = counts(p, formula)
        assert (sched, workers) == (cpu, [cpu])
        assert r.stages[0].pinned_bytes_per_worker == pinned
        assert r.unused_bytes == unused == C - 4 * pinned


def test_b_mla_default_block_follows_the_backend():
    # The spec's (b) vectors pin block 64 (FlashMLA's). Without --block-size the block is the selected backend's
    # (issue 29): 0.17.1 forces FlashMLA's 64 on an H100-class GPU (40 GiB // (61 x 64 x 1,152) = 9,549 blocks);
    # 0.19.1 selects FLASH_ATTN_MLA there, whose preferred size is 16 (40 GiB // 1,124,352 = 38,199), and
    # FLASHINFER_MLA on a B200, 32 (19,099).
    for version, arch, block, blocks in (("0.17.1", "sm90", 64, 9549), ("0.19.1", "sm90", 16, 38199),
                                         ("0.19.1", "sm100", 32, 19099)):
        p = make_plan({**MLA61, "parallel": {"tensor_parallel_size": 4}, "vllm": {"gpu_arch": arch}}, version)
        assert (p.layers.block_size, p.gpu.num_blocks) == (block, blocks), (version, arch)


# ---------------------------------------------------------------- (b2) MLA + EAGLE3


def kimi_eagle3(version="0.19.1"):
    layout = {**MLA61, "cache": {"block_size": 64}, "parallel": {"tensor_parallel_size": 4}}
    layout["model"] = {**MLA61["model"], "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8,
                                                   "head_size": 128}}
    return make_plan(layout, version)


def test_b2_mla_plus_eagle3_is_uniform_type():
    p = kimi_eagle3()
    assert p.grouping.rule == "uniform_type"
    g = p.grouping.groups[0]
    assert len(g.layer_names) == 62
    assert g.spec.page_size_bytes == 61 * 73728 + 65536 == 4562944
    assert g.layer_names[-1] == "model.layers.61.self_attn.attn"
    assert p.gpu.num_blocks == A // 4562944 == 9412
    sizes = [t.size for t in p.gpu.workers[0].tensors]
    assert sizes == [693927936] * 61 + [616824832]
    assert p.logs.kv_cache_size_tokens == 602368
    assert f'{p.logs.max_concurrency:.2f}' == '4.60'


def test_b2_old_formula_out_of_bounds():
    p = kimi_eagle3()
    sched, workers, r = counts(p, "old")
    assert r.stages[0].count.kv_bytes_per_block == 4562944 * 62 * 4 == 1131610112
    assert r.scheduler.kv_bytes_per_block == 73728 * 62 * 4 == 18284544
    assert (sched, workers) == (3758, [60])
    assert r.out_of_bounds
    assert r.stages[0].bad_ids == (60, 3757)
    assert r.stages[0].pinned_bytes_per_worker == 273776640
    assert r.pinned_bytes_per_engine == 1095106560
    assert r.unused_bytes == 67624370176


def test_b2_fixed_formula():
    p = kimi_eagle3("0.20.0")
    sched, workers, r = counts(p, "fixed")
    assert (sched, workers) == (3765, [3765])
    assert not r.out_of_bounds
    assert r.stages[0].pinned_bytes_per_worker == 17179484160
    assert r.pinned_bytes_per_engine == 68717936640
    assert r.unused_bytes == 1540096


# ---------------------------------------------------------------- (b3) DeepSeek-V3.2


def test_b3_v32_indexer_first():
    layout = {"model": {**MLA61["model"], "index_head_dim": 128},
              "cache": {"block_size": 64, "kv_cache_dtype": "fp8_ds_mla"}, "parallel": {"tensor_parallel_size": 4}}
    p = make_plan(layout)
    g = p.grouping.groups[0]
    assert p.grouping.rule == 'uniform_type'
    assert len(g.layer_names) == 122
    assert g.layer_names[0] == "model.layers.0.self_attn.indexer.k_cache"
    assert g.spec.page_size_bytes == 61 * (64 * 656 + 64 * 132) == 3076352
    assert p.gpu.num_blocks == 13961
    sizes = [t.size for t in p.gpu.workers[0].tensors]
    assert sizes[0::2] == [117942528] * 61
    assert sizes[1::2] == [586138624] * 61
    assert p.logs.kv_cache_size_tokens == 893504
    assert f'{p.logs.max_concurrency:.2f}' == '6.82'
    sched, workers, r = counts(p, "old")
    assert (sched, workers) == (16668, [45])
    assert r.stages[0].bad_ids == (45, 16667)
    assert r.stages[0].pinned_bytes_per_worker == 138435840
    assert r.unused_bytes == 68165733376
    sched, workers, r = counts(p, "fixed")
    assert r.scheduler.kv_bytes_per_block == 12305408
    assert (sched, workers) == (5584, [5584])
    assert not r.out_of_bounds
    assert r.stages[0].pinned_bytes_per_worker == 17178349568
    assert r.unused_bytes == 6078464


# ---------------------------------------------------------------- (c) per-layer KV heads


@pytest.mark.parametrize(
    "tp,heads,sigma,n_gpu,tokens,conc,old_s,bad_last,pinned_old,pinned_fixed",
    [
        (1, [8, 4], 1572864, 27306, 436896, "3.33", 32768, 32767, 2146959360, 68718428160),  # c1
        (2, [8, 4], 786432, 54613, 873808, "6.67", 32768, 32767, 1073479680, 34359214080),  # c2
        (1, [4, 8], 1572864, 27306, 436896, "3.33", 65536, 65535, 2146959360, 68718428160),  # c3
    ],
)
def test_c_varying_heads(tp, heads, sigma, n_gpu, tokens, conc, old_s, bad_last, pinned_old, pinned_fixed):
    layout = {"model": {"num_layers": 32, "num_kv_heads": heads * 16, "head_size": 128},
              "cache": {"block_size": 16}, "parallel": {"tensor_parallel_size": tp}}
    p = make_plan(layout)
    assert p.grouping.rule == 'uniform_type'
    assert p.grouping.groups[0].spec.page_size_bytes == sigma
    assert p.gpu.num_blocks == n_gpu
    assert p.logs.kv_cache_size_tokens == tokens
    assert f'{p.logs.max_concurrency:.2f}' == conc
    sched, workers, r = counts(p, "old")
    assert (sched, workers) == (old_s, [1365])
    assert r.stages[0].bad_ids == (1365, bad_last)
    assert r.stages[0].pinned_bytes_per_worker == pinned_old
    assert r.unused_bytes == 66572517376
    sched, workers, r = counts(p, "fixed")
    assert (sched, workers) == (43690, [43690])
    assert not r.out_of_bounds
    assert r.stages[0].pinned_bytes_per_worker == pinned_fixed
    assert r.unused_bytes == 1048576


# ---------------------------------------------------------------- (d) gpt-oss sliding/full


GPT_OSS = {"model": {"num_layers": 36, "layer_pattern": ["sliding_attention", "full_attention"],
                     "num_kv_heads": 8, "head_size": 64, "sliding_window": 128}, "cache": {"block_size": 16}}


@pytest.mark.parametrize("tp,tensor,n_gpu,tokens,conc", [
    (1, 1193017344, 36408, 582528, "4.44"), (2, 1193033728, 72817, 1165072, "8.89"),
    (4, 1193041920, 145635, 2330160, "17.78")])
def test_d1_hma_off_folds(tp, tensor, n_gpu, tokens, conc):
    p = make_plan({**GPT_OSS, "parallel": {"tensor_parallel_size": tp}}, "0.19.1")
    assert not p.hma_enabled
    assert p.grouping.folded
    assert p.grouping.rule == 'uniform'
    assert p.gpu.num_blocks == n_gpu
    assert {t.size for t in p.gpu.workers[0].tensors} == {tensor}
    assert len(p.gpu.workers[0].tensors) == 36
    assert p.logs.kv_cache_size_tokens == tokens
    assert f'{p.logs.max_concurrency:.2f}' == conc
    for formula in ("old", "fixed"):
        sched, workers, r = counts(p, formula)
        assert (sched, workers) == (58254, [58254])
        assert r.unused_bytes == 262144


@pytest.mark.parametrize("tp,tensor,n_gpu,l1,l2,conc", [
    (1, 2386067456, 72817, 582528, 1095405, "8.36"), (2, 2386083840, 145635, 1165072, 2190826, "16.71"),
    (4, 2386092032, 291271, 2330160, 4381667, "33.43")])
def test_d2_hma_on_two_groups(tp, tensor, n_gpu, l1, l2, conc):
    p = make_plan({**GPT_OSS, "parallel": {"tensor_parallel_size": tp}}, "0.22.1")
    assert p.hma_enabled
    assert p.grouping.rule == 'hybrid'
    assert len(p.grouping.groups) == 2
    assert [len(g.layer_names) for g in p.grouping.groups] == [18, 18]
    w = p.gpu.workers[0]
    assert len(w.tensors) == 18
    assert {t.size for t in w.tensors} == {tensor}
    assert w.tensors[3].shared_by == ("model.layers.6.self_attn.attn", "model.layers.7.self_attn.attn")
    assert p.gpu.num_blocks == n_gpu
    assert p.logs.kv_cache_size_tokens == l2
    assert f'{p.logs.max_concurrency:.2f}' == conc
    # The same config logged by a <= 0.20 release (L1): N // G * B.
    assert n_gpu // 2 * 16 == l1
    sched, workers, r = counts(p, "fixed")
    assert (sched, workers) == (116508, [116508])
    assert r.unused_bytes == 262144
    assert counts(p, "old")[0] == 116508  # "the formula would give 116,508"


def test_d2_gpt_oss_20b_with_hma():
    p = make_plan({**GPT_OSS, "model": {**GPT_OSS["model"], "num_layers": 24}}, "0.22.1")
    assert [len(g.layer_names) for g in p.grouping.groups] == [12, 12]
    assert {t.size for t in p.gpu.workers[0].tensors} == {3579117568}
    assert p.gpu.num_blocks == 109226
    assert p.logs.kv_cache_size_tokens == 1643116
    assert f'{p.logs.max_concurrency:.2f}' == '12.54'
    assert counts(p, "fixed")[0] == 174762


# ---------------------------------------------------------------- (e) Qwen3-Next


QWEN3_NEXT = {"model": {"num_layers": 48, "layer_pattern": ["mamba", "mamba", "mamba", "full_attention"],
                        "num_kv_heads": 2, "head_size": 256,
                        "mamba": {"kind": "gated_delta_net", "linear_num_key_heads": 16,
                                  "linear_num_value_heads": 32, "linear_key_head_dim": 128,
                                  "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}},
              "cache": {"enable_prefix_caching": True}}


@pytest.mark.parametrize("tp,block,page,tensor,n_gpu,bw,conc,l2,pinned", [
    (4, 272, 278528, 3579084800, 12850, 3342336, "26.33", 3451383, 17179607040),
    (1, 544, 1114112, 3578527744, 3212, 13369344, "13.00", 1704466, 68718428160)])
def test_e_qwen3_next(tp, block, page, tensor, n_gpu, bw, conc, l2, pinned):
    p = make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": tp}}, "0.22.1")
    assert p.layers.mamba_cache_mode == "align"
    assert p.layers.block_size == block == p.layers.mamba_block_size
    assert [len(g.layer_names) for g in p.grouping.groups] == [12] * 4
    assert p.grouping.groups[0].layer_names[:2] == ("model.layers.0.linear_attn", "model.layers.4.linear_attn")
    assert {g.spec.page_size_bytes for g in p.grouping.groups} == {page}
    w = p.gpu.workers[0]
    assert len(w.tensors) == 12
    assert {t.size for t in w.tensors} == {tensor}
    assert len(w.tensors[0].shared_by) == 4
    assert p.gpu.num_blocks == n_gpu
    assert w.bytes_per_block == bw
    assert f'{p.logs.max_concurrency:.2f}' == conc
    assert p.logs.kv_cache_size_tokens == l2
    sched, workers, r = counts(p, "fixed")
    assert (sched, workers) == (5140, [5140])
    assert not r.out_of_bounds
    assert r.stages[0].pinned_bytes_per_worker == pinned
    assert r.unused_bytes == 1048576


def test_e1_l1_tokens_under_020_with_forced_hma():
    p = make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": 4},
                   "cache": {"enable_prefix_caching": True, "hybrid_kv_cache_manager": "on"}}, "0.21.0")
    assert p.hma_enabled
    assert p.logs.family == 'L2'
    assert p.gpu.num_blocks // 4 * 272 == 873664


def test_e1_hma_off_is_a_startup_error():
    from kvcalc.vocab.errors import StartupRefusal
    with pytest.raises(StartupRefusal, match="unified type"):
        make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": 4}}, "0.19.1")


def test_e1_prefix_caching_off_fails_offload_divisibility():
    p = make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": 4},
                   "cache": {"enable_prefix_caching": False}}, "0.22.1")
    assert p.layers.block_size == 272
    assert p.layers.mamba_block_size == 131072
    assert f'{p.logs.max_concurrency:.2f}' == '26.49'
    assert p.logs.kv_cache_size_tokens == 3472732
    assert p.offload.startup_error
    assert '131072' in p.offload.startup_error
    assert 131072 % 272 == 240


def test_e_block_32_bump_differs_by_version():
    layout = {**QWEN3_NEXT, "parallel": {"tensor_parallel_size": 4},
              "cache": {"enable_prefix_caching": True, "block_size": 32}}
    assert make_plan(layout, "0.22.1").layers.block_size == 288
    forced = {**layout, "cache": {**layout["cache"], "hybrid_kv_cache_manager": "on"}}
    assert make_plan(forced, "0.21.0").layers.block_size == 288
    # 0.19.1 aligns with a fixed kernel block of 16: 16 * cdiv(274432, 16 * 1024) = 272.
    from kvcalc.engines.vllm.layers import build_layers
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.vocab.releases.vllm import behaviour_for
    from conftest import COMMON, deep_merge
    lay = layout_from_dict(deep_merge(COMMON, layout))
    assert build_layers(lay, behaviour_for("0.19.1")).block_size == 272


# ---------------------------------------------------------------- (f) uneven PP


@pytest.mark.parametrize("pp,split,before,n_gpu,bws,workers,sched,tokens,conc,pinned,unused", [
    (4, [15, 15, 16, 15], [38836, 38836, 36408, 38836], 36408, [1105920, 1105920, 1179648, 1105920],
     [15534, 15534, 14563, 15534], 15534, 2330112, "17.78",
     [17179361280, 17179361280, 17179213824, 17179361280], 2179072),
    (2, [31, 30], [18791, 19418], 18791, [2285568, 2211840], [15033, 15534], 15033, 1202624, "9.18",
     [34358943744, 34358722560], 1810432),
])
@pytest.mark.parametrize("formula", ["old", "fixed"])
def test_f_uneven_pp(pp, split, before, n_gpu, bws, workers, sched, tokens, conc, pinned, unused, formula):
    p = make_plan({**MLA61, "cache": {"block_size": 64}, "parallel": {"pipeline_parallel_size": pp}})
    assert [len(s.layers) for s in p.layers.stages] == split
    assert [w.num_blocks_before_min for w in p.gpu.workers] == before
    assert p.gpu.num_blocks == n_gpu
    assert [w.bytes_per_block for w in p.gpu.workers] == bws
    assert p.logs.kv_cache_size_tokens == tokens
    assert f'{p.logs.max_concurrency:.2f}' == conc
    s, w, r = counts(p, formula)
    assert (s, w) == (sched, workers)
    assert [st.pinned_bytes_per_worker for st in r.stages] == pinned
    assert r.unused_bytes == unused
    if pp == 4:
        assert r.out_of_bounds
        assert r.stages[2].bad_ids == (14563, 15533)
    else:
        assert not r.out_of_bounds
        assert r.stages[1].wasted_bytes_per_worker == 1108131840
