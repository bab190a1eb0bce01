"""Every vector column of test-vectors.md for the later families (0.24 - 0.33), version mapping, and
properties the spec says must hold across families."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import GIB, make_plan
from kvcalc.vocab.errors import UnsupportedError
from kvcalc.vocab.releases.vllm import behaviour_for
from test_vectors import GPT_OSS, LLAMA8B, MLA61, QWEN3_NEXT

C = 64 * GIB
LATER = ["0.24.0", "0.26.0", "0.28.0", "0.30.0", "0.32.0", "0.33.0"]


def sel(p):
    r = p.offload.results[p.behaviour.formula]
    return r.scheduler.num_blocks, [s.count.num_blocks for s in r.stages], r


@pytest.mark.parametrize("version", LATER)
@pytest.mark.parametrize("extra,cpu", [
    ({}, 32768), ({"parallel": {"tensor_parallel_size": 2}}, 32768), ({"offload": {"block_size": 256}}, 2048),
    ({"parallel": {"pipeline_parallel_size": 2}}, 32768)])
def test_a_dense_every_family(version, extra, cpu):
    p = make_plan({**LLAMA8B, **extra}, version)
    s, w, r = sel(p)
    assert s == cpu
    assert set(w) == {cpu}
    assert not r.out_of_bounds


@pytest.mark.parametrize("version,family", [("0.28.0", "replicated"), ("0.30.0", "single-alloc"),
                                            ("0.32.0", "single-alloc"), ("0.33.0", "single-alloc")])
@pytest.mark.parametrize("block,replicated,region,unused,not_replicated", [
    (64, 15279, 68715896832, 3579904, 3819),  # chunk 4,497,408 is already 4096-aligned
    (16, 61008, 68719411200, 65536, 15279),  # chunk 1,124,352 padded to 1,126,400 (unpadded would give 61,119)
])
def test_b_mla_single_copy(version, family, block, replicated, region, unused, not_replicated):
    base = {**MLA61, "cache": {"block_size": block}, "parallel": {"tensor_parallel_size": 4}}
    p = make_plan(base, version)
    assert p.behaviour.formula == family
    s, w, r = sel(p)
    assert (s, w) == (replicated, [replicated])
    assert r.replicated
    assert r.scheduler.copies == 1
    assert r.pinned_bytes_per_engine == region
    assert r.unused_bytes == unused
    ray = make_plan({**base, "parallel": {"tensor_parallel_size": 4, "distributed_executor_backend": "ray"}},
                    version)
    assert sel(ray)[0] == not_replicated
    assert sel(ray)[2].scheduler.copies == 4


def test_b16_padding_matters():
    r = sel(make_plan({**MLA61, "cache": {"block_size": 16}, "parallel": {"tensor_parallel_size": 4}}, "0.28.0"))[2]
    assert r.scheduler.kv_bytes_per_offloaded_block == 1124352
    assert r.scheduler.aligned_bytes == 1126400
    assert C // 1124352 == 61119
    assert r.scheduler.num_blocks == 61008


def test_replication_platforms():
    base = {**MLA61, "cache": {"block_size": 64}, "parallel": {"tensor_parallel_size": 4}}
    assert sel(make_plan({**base, "vllm": {"platform": "rocm"}}, "0.28.0"))[0] == 15279  # 0.28-0.30: CUDA or ROCm
    assert sel(make_plan({**base, "vllm": {"platform": "rocm"}}, "0.33.0"))[0] == 3819  # 0.33: not ROCm
    assert sel(make_plan({**base, "vllm": {"platform": "xpu"}}, "0.33.0"))[0] == 15279
    two_nodes = {**base, "parallel": {"tensor_parallel_size": 4, "nnodes": 2}}
    assert sel(make_plan(two_nodes, "0.33.0"))[0] == 3819


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_b2_eagle3_not_replicated(version):
    layout = {**MLA61, "cache": {"block_size": 64}, "parallel": {"tensor_parallel_size": 4}}
    layout["model"] = {**MLA61["model"], "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8,
                                                   "head_size": 128}}
    s, w, r = sel(make_plan(layout, version))
    assert (s, w) == (3765, [3765])
    assert not r.replicated
    assert r.scheduler.padding_bytes == 0


def test_b3_v32():
    layout = {"model": {**MLA61["model"], "index_head_dim": 128},
              "cache": {"block_size": 64, "kv_cache_dtype": "fp8_ds_mla"}, "parallel": {"tensor_parallel_size": 4}}
    # 0.28-0.30: UniformType is not plain MLA -> not replicated; 12,305,408 padded to 12,308,480 -> 5,583.
    for version in ("0.28.0", "0.30.0"):
        s, w, r = sel(make_plan(layout, version))
        assert (s, w) == (5583, [5583])
        assert r.scheduler.aligned_bytes == 12308480
    # 0.32+: MLA and the indexer both declare one shard -> kv_tp_replicas = TP -> one copy. The spec gives
    # 22,310 as an illustration with every backend alignment 1 (what kvcalc models): 3,076,352 -> 3,080,192.
    s, w, r = sel(make_plan(layout, "0.33.0"))
    assert r.replicated
    assert s == C // 3080192 == 22310


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_c_varying_heads(version):
    layout = {"model": {"num_layers": 32, "num_kv_heads": [8, 4] * 16, "head_size": 128},
              "cache": {"block_size": 16}}
    assert sel(make_plan(layout, version))[:2] == (43690, [43690])


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_d_gpt_oss(version):
    assert sel(make_plan(GPT_OSS, version))[:2] == (116508, [116508])  # d2, HMA on by default
    off = {**GPT_OSS, "cache": {"block_size": 16, "hybrid_kv_cache_manager": "off"}}
    assert sel(make_plan(off, version))[:2] == (58254, [58254])  # d1 with --disable-hybrid-kv-cache-manager


@pytest.mark.parametrize("version", ["0.24.0", "0.26.0", "0.28.0", "0.33.0"])
@pytest.mark.parametrize("tp", [4, 1])
def test_e_qwen3_next(version, tp):
    p = make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": tp}}, version)
    if version != "0.33.0":
        assert sel(p)[:2] == (5140, [5140])
        return
    # 0.33.0 platforms/interface.py: align mode with FlashInfer GDN prefill (SM90) rounds the kernel block to
    # lcm(16, 64) = 64. TP 4: a1 = 1 head x 512 x 2 = 1,024 B, GDN state 274,432 B -> 64 x cdiv(274,432, 65,536)
    # = 320 tokens; 12 tensors x 320 x 1,024 x W 4 = 15,728,640 B per chunk -> 64 GiB // that = 4,369.
    # TP 1: a1 = 2,048 B, state 1,097,728 B -> 64 x 9 = 576 tokens; 12 x 576 x 2,048 = 14,155,776 B -> 4,854.
    assert p.layers.block_size == (320 if tp == 4 else 576)
    assert sel(p)[:2] == ((4369, [4369]) if tp == 4 else (4854, [4854]))


def test_e1_prefix_caching_off_fails_on_026_naming_the_flag():
    p = make_plan({**QWEN3_NEXT, "parallel": {"tensor_parallel_size": 4},
                   "cache": {"enable_prefix_caching": False}}, "0.26.0")
    assert "--enable-prefix-caching" in p.offload.startup_error


@pytest.mark.parametrize("version", LATER)
def test_f_uneven_pp_is_oob_in_every_family(version):
    f1 = sel(make_plan({**MLA61, "cache": {"block_size": 64}, "parallel": {"pipeline_parallel_size": 4}}, version))
    assert f1[:2] == (15534, [15534, 15534, 14563, 15534])
    assert f1[2].out_of_bounds
    assert f1[2].stages[2].bad_ids == (14563, 15533)
    f2 = sel(make_plan({**MLA61, "cache": {"block_size": 64}, "parallel": {"pipeline_parallel_size": 2}}, version))
    assert f2[:2] == (15033, [15033, 15534])
    assert not f2[2].out_of_bounds


def test_l3_log_line():
    p = make_plan(LLAMA8B, "0.28.0")
    assert p.logs.lines == ("GPU KV cache size: 327,680 tokens, Maximum concurrency for 131,072 tokens per "
                            "request: 2.50x",)
    # d2 TP1 on L3: N / (8,192 full + 521 SW blocks) = 72,817 / 8,713 = 8.36x, 1,095,405 tokens.
    d2 = make_plan(GPT_OSS, "0.33.0")
    assert d2.logs.kv_cache_size_tokens == 1095405
    assert f'{d2.logs.max_concurrency:.2f}' == '8.36'


def test_blocks_per_chunk_026():
    p = make_plan({**LLAMA8B, "offload": {"blocks_per_chunk": 16}}, "0.26.0")
    s, _, r = sel(p)
    assert s == 2048
    assert r.chunks
    assert r.factor == 16
    assert r.tokens_scheduler == 2048 * 16 * 16
    both = make_plan({**LLAMA8B, "offload": {"blocks_per_chunk": 16, "block_size": 256}}, "0.26.0")
    assert "mutually exclusive" in both.offload.startup_error
    assert make_plan({**LLAMA8B, "offload": {"blocks_per_chunk": 16, "block_size": 256}}, "0.22.1") \
        .offload.startup_error is None


def test_external_launcher_multiplies_world_by_dp():
    p = make_plan({**LLAMA8B, "parallel": {"data_parallel_size": 2, "distributed_executor_backend":
                                           "external_launcher"}}, "0.22.1")
    assert sel(p)[0] == C // (2097152 * 2) == 16384


@pytest.mark.parametrize("version,family", [
    # Each release's own source (versions.FAMILIES cites the file at each boundary).
    ("0.19.1", "old"), ("0.20.0", "fixed"), ("0.23.0", "fixed"), ("0.24.0", "packed"), ("0.25.1", "packed"),
    ("0.26.0", "config"), ("0.27.0", "replicated"), ("0.28.0", "replicated"), ("0.29.0", "single-alloc"),
    ("0.31.0", "single-alloc"), ("0.33.0", "single-alloc"),
])
def test_version_mapping(version, family):
    b = behaviour_for(version)
    assert b.family.id == family
    assert b.warning is None


@pytest.mark.parametrize("version", ["0.23.1", "0.27.2", "0.29.1"])
def test_releases_that_were_never_published_are_refused(version):
    with pytest.raises(UnsupportedError, match="is not a release"):
        behaviour_for(version)


def test_kv_tp_replicas_from_031():
    # V3.2 (UniformType: MLA + indexer) at TP 4, fp8_ds_mla, block 64: b_w = 61 x 64 x (656 + 132) = 3,076,352 B.
    # 0.30.0 (narrow test: one group whose spec is exactly MLA) stores it 4 times: 4 x 3,076,352 = 12,305,408 B
    # per chunk, rounded up to 4096 -> 12,308,480 -> 64 GiB // that = 5,583.
    # 0.31.0 offloading/config.py (kv_tp_replicas == TP) stores one copy: 3,076,352 -> 3,080,192 aligned -> 22,310.
    layout = {"model": {**MLA61["model"], "index_head_dim": 128},
              "cache": {"block_size": 64, "kv_cache_dtype": "fp8_ds_mla"}, "parallel": {"tensor_parallel_size": 4}}
    assert sel(make_plan(layout, "0.30.0"))[0] == 68719476736 // 12308480 == 5583
    assert sel(make_plan(layout, "0.31.0"))[0] == 68719476736 // 3080192 == 22310


@pytest.mark.parametrize("version,match", [("0.13.0", "num_cpu_blocks"), ("0.34.0", "newer"), ("1.0", "newer")])
def test_refused_versions(version, match):
    with pytest.raises(UnsupportedError, match=match):
        behaviour_for(version)


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(1, 40), heads_log=st.integers(0, 4), head=st.sampled_from([64, 128, 256]),
       block=st.sampled_from([16, 32, 64]), tp_log=st.integers(0, 3))
def test_dense_families_agree_when_4096_aligned(layers, heads_log, head, block, tp_log):
    """Spec 0.3: dense models give one count in every family when the per-block bytes are 4096-aligned."""
    layout = {"model": {"num_layers": layers, "num_kv_heads": 2 ** heads_log, "head_size": head},
              "cache": {"block_size": block, "max_model_len": 4096}, "parallel": {"tensor_parallel_size": 2 ** tp_log}}
    counts = {v: sel(make_plan(layout, v))[0] for v in ["0.19.1", "0.20.0", *LATER]}
    per_block = sel(make_plan(layout, "0.33.0"))[2].scheduler.kv_bytes_per_offloaded_block
    if per_block % 4096 == 0:
        assert len(set(counts.values())) == 1, counts
    else:
        assert counts["0.19.1"] == counts["0.26.0"] >= counts["0.28.0"] == counts["0.33.0"]


def test_each_family_is_represented_by_one_of_its_own_releases():
    from kvcalc.vocab.releases.vllm import FAMILIES

    for fam in FAMILIES.values():
        if fam.rule is None:
            assert fam.representative is None, fam.id
        else:
            assert fam.representative in fam.releases, fam.id


def test_adding_a_release_changes_no_other_release_size_answer(monkeypatch):
    # `size` answers the asked release for its own family and each other family's pinned representative (issue 18:
    # it used to answer each family by its newest release, so a new release changed every other release's rows).
    # A hypothetical 0.34.0 joins the newest family: 0.22.1's answers stay as they were.
    import kvcalc.vocab.releases.vllm as v
    from kvcalc.backends.base import SizeTarget
    from kvcalc.tools.sizing import size
    from kvcalc.vocab.records import to_json
    from conftest import COMMON, deep_merge
    from kvcalc.inputs.layout.read import layout_from_dict

    layout = layout_from_dict(deep_merge(COMMON, {**LLAMA8B, "vllm": {"version": "0.22.1"}}), source="test.yaml")
    target = SizeTarget(tokens=2 << 20)
    before = to_json(list(size(layout, target).rows))
    caches = (v._family_releases, v._family_versions, v.behaviour_for)
    monkeypatch.setattr(v, "RELEASES", v.RELEASES + ("0.34.0",))
    monkeypatch.setattr(v, "RELEASE_TUPLES", v.RELEASE_TUPLES + ((0, 34, 0),))
    monkeypatch.setattr(v, "NEWEST", (0, 34, 0))
    try:
        for c in caches:
            c.cache_clear()
        assert v.FAMILIES["single-alloc"].releases[-1] == "0.34.0"  # the release really joined the family
        after = to_json(list(size(layout, target).rows))
    finally:
        monkeypatch.undo()
        for c in caches:
            c.cache_clear()
    assert [r["vllm_version"] for r in after] == [r["vllm_version"] for r in before]
    assert after == before
