"""Every SGLang release boundary of vocab/releases/sglang.STEPS, checked on the release before it and the first
release after it (the evidence is next to each Step). Numbers are derived by hand in each comment. A new Step
without a check here fails test_every_boundary_has_a_check."""

import os

import pytest

from kvcalc import layout_from_dict
from kvcalc.engines.sglang.memory import default_fraction
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError, StartupRefusal
from kvcalc.vocab.releases import SGLANG_RELEASES
from kvcalc.vocab.releases.sglang import STEPS, behaviour_for, parse_release

CHECKS = {}
DENSE = {"num_layers": 32, "num_kv_heads": 8, "head_size": 128}
PINNED = {"gpu_free_memory": "78GiB", "weights_bytes": "15GiB", "mem_fraction_static": 0.85}


def boundary(name, first):
    def register(fn):
        CHECKS[(name, first)] = fn
        return fn
    return register


def before(first: str) -> str:
    return SGLANG_RELEASES[SGLANG_RELEASES.index(first) - 1]


def lay(version, model=DENSE, tp=1, pp=1, cache=None, **sglang):
    return layout_from_dict({"engine": "sglang", "model": model,
                             "parallel": {"tensor_parallel_size": tp, "pipeline_parallel_size": pp},
                             "cache": cache or {"max_model_len": 8192}, "sglang": {"version": version, **sglang}})


def mfs(version, **kw):
    layout = lay(version, **{k: v for k, v in kw.items() if k in ("tp", "pp", "cache")},
                 **{k: v for k, v in kw.items() if k not in ("tp", "pp", "cache")})
    return default_fraction(layout, behaviour_for(version), False).mem_fraction_static


@boundary("small_gpu_tier", "0.5.20")
def _small_tier(first):
    # L4 (23,034 MiB), TP 1: before, chunked 2,048, max_bs 24: 512 + 3,072 + 128 + 48 + 42 prefill graphs x 8
    # (2,048: 8 + 14 + 8 + 8 + 4 sizes) = 4,096 -> round(18,938 / 23,034, 3) = 0.822; from 0.5.20 chunked 4,096,
    # max_bs 48: 512 + 6,144 + 128 + 96 + 50 x 8 = 7,280 -> 0.684.
    assert mfs(before(first), gpu_capacity_mib=23034) == 0.822
    assert mfs(first, gpu_capacity_mib=23034) == 0.684


@boundary("decode_reserve_without_graphs", "0.5.15")
def _decode_reserve(first):
    # H100 TP 1, --disable-cuda-graph: 512 + 12,288 + 128 = 12,928 (+ 256 x 2 = 13,440 on 0.5.14):
    # round(68,631 / 81,559, 3) = 0.841, round(68,119 / 81,559, 3) = 0.835.
    assert mfs(before(first), gpu_capacity_mib=81559, disable_cuda_graph=True) == 0.835
    assert mfs(first, gpu_capacity_mib=81559, disable_cuda_graph=True) == 0.841


@boundary("prefill_graphs_clamped_to_context", "0.5.17")
def _context_clamp(first):
    # H100 TP 1, --context-length 2048: 0.5.16 caps the prefill graphs at 2,048 tokens (42 graphs, 336 MiB) instead
    # of 8,192 (58, 464): 13,776 -> 0.831; from 0.5.17 13,904 -> 0.830.
    cache = {"max_model_len": 2048}
    assert mfs(before(first), gpu_capacity_mib=81559, cache=cache) == 0.831
    assert mfs(first, gpu_capacity_mib=81559, cache=cache) == 0.83


@boundary("pp_prefill_graph_cap", "0.5.19")
def _pp_cap(first):
    # A100-80GB (81,920 MiB), TP 4 x PP 2, chunked 16,384, the breakable prefill graph opted into: 512 + 24,576 +
    # 1,024 + 512 x 2 + graphs: 74 x 8 = 592 before (-> 27,728, round(54,192 / 81,920, 3) = 0.662), 58 x 8 = 464
    # capped at 8,192 (27,600 -> 0.663).
    kw = dict(gpu_capacity_mib=81920, chunked_prefill_size=16384, tp=4, pp=2, cuda_graph_backend_prefill="breakable")
    assert mfs(before(first), **kw) == 0.662
    assert mfs(first, **kw) == 0.663


def reserve(version, model=DENSE, arch=None, **kw):
    from kvcalc.engines.sglang.memory import attention_backend
    from kvcalc.vocab.records import replace

    layout = lay(version, model=model, **{k: v for k, v in kw.items() if k in ("tp", "pp", "cache")},
                 **{k: v for k, v in kw.items() if k not in ("tp", "pp", "cache", "device")})
    device = kw.get("device", "sm90")
    layout = replace(layout, sglang=replace(layout.sglang, architecture=arch))
    mla = "kv_lora_rank" in model
    backend, _ = attention_backend(layout, device, mla)
    return default_fraction(layout, behaviour_for(version), mla, backend)


MLA = {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}


@boundary("default_prefill_backend", "0.5.15")
def _default_prefill(first):
    # The prefill graph's default backend: tc_piecewise in 0.5.14, breakable from 0.5.15; both count 8 MiB a capture
    # size (H100 TP 1: 58 sizes, 0.83 either way).
    old, new = reserve(before(first), gpu_capacity_mib=81559), reserve(first, gpu_capacity_mib=81559)
    assert (old.prefill_graphs.backend, new.prefill_graphs.backend) == ("tc_piecewise", "breakable")
    assert old.mem_fraction_static == new.mem_fraction_static == 0.83


@boundary("pp_prefill_graph", "0.5.15")
@boundary("pp_prefill_graph", "0.5.19")
def _pp_prefill(first):
    # Llama-3.3-70B-shaped TP 4 x PP 2 on H100: 512 + 12,288 + 1,024 + 512 x 2 = 14,848 MiB without the prefill graphs
    # (0.5.14, 0.5.19+: round(66,711 / 81,559, 3) = 0.818), + 58 x 8 = 15,312 with them (0.5.15 - 0.5.18: 0.812);
    # executed: a-pp-l70-tp4pp2-<release> in tests/fixtures/sglang/executed_vectors.json.
    want = {"0.5.15": (0.818, 0.812), "0.5.19": (0.812, 0.818)}[first]
    assert (mfs(before(first), gpu_capacity_mib=81559, tp=4, pp=2), mfs(first, gpu_capacity_mib=81559, tp=4, pp=2)) \
        == want


@boundary("mla_prefill_graph", "0.5.15")
@boundary("mla_prefill_graph", "0.5.18")
def _mla_prefill(first):
    # An MLA model, TP 8 on H200 (143,771 MiB): 512 + 12,288 + 1,024 + 512 x 2 = 14,848 MiB, + 1.5 GiB for the MLA
    # prefill graphs where they are kept (0.5.14, 0.5.18+: round(127,387 / 143,771, 3) = 0.886), off in 0.5.15 -
    # 0.5.17 (0.897).
    want = {"0.5.15": (0.886, 0.897), "0.5.18": (0.897, 0.886)}[first]
    got = (reserve(before(first), model=MLA, tp=8, gpu_capacity_mib=143771).mem_fraction_static,
           reserve(first, model=MLA, tp=8, gpu_capacity_mib=143771).mem_fraction_static)
    assert got == want


@boundary("hicache_prefill_graph", "0.5.15")
def _hicache_prefill(first):
    # H100 TP 1 with HiCache: 0.5.14's tc_piecewise rules turn the prefill graph off (13,440 MiB -> 0.835); 0.5.15's
    # breakable graph stays (13,904 -> 0.83).
    h = {"enabled": True}
    assert reserve(before(first), gpu_capacity_mib=81559, hicache=h).mem_fraction_static == 0.835
    assert reserve(first, gpu_capacity_mib=81559, hicache=h).mem_fraction_static == 0.83


@boundary("mla_prefill_max_bs", "0.5.23")
def _mla_prefill_max(first):
    # An MLA backend's prefill graphs capture up to 2,048 tokens (42 sizes) before 0.5.23, min(8,192, chunked) after
    # (58); the reserve is 1.5 GiB either way.
    old = reserve(before(first), model=MLA, tp=8, gpu_capacity_mib=143771).prefill_graphs
    new = reserve(first, model=MLA, tp=8, gpu_capacity_mib=143771).prefill_graphs
    assert (old.max_bs, old.capture_sizes, new.max_bs, new.capture_sizes) == (2048, 42, 8192, 58)


@boundary("decode_max_bs_capped_by_requests", "0.5.22")
def _requests_cap(first):
    # H100 TP 2, --max-running-requests 64: max_bs 256 (512 MiB) before, 64 (128 MiB) from 0.5.22:
    # 512 + 12,288 + 256 + 512 + 464 = 14,032 -> 0.828; 13,648 -> 0.833.
    assert mfs(before(first), gpu_capacity_mib=81559, tp=2, max_running_requests=64) == 0.828
    assert mfs(first, gpu_capacity_mib=81559, tp=2, max_running_requests=64) == 0.833


@boundary("hybrid_swa_stage_layers", "0.5.21")
def _swa_stages(first):
    # A hybrid SWA model of 4 full + 4 sliding layers (full first) at PP 2: stage 0 holds the 4 full layers, stage 1
    # the 4 sliding ones. Before 0.5.21 every stage counts the whole model's 4 + 4; from 0.5.21 its own.
    from kvcalc.engines.sglang.model import sglang_model

    model = {"num_layers": 8, "num_kv_heads": 8, "head_size": 128, "sliding_window": 128,
             "layer_types": ["full_attention"] * 4 + ["sliding_attention"] * 4}
    old = sglang_model(lay(before(first), model=model, pp=2, **PINNED), True, behaviour_for(before(first))
                       .hybrid_swa_stage_layers)
    new = sglang_model(lay(first, model=model, pp=2, **PINNED), True, behaviour_for(first).hybrid_swa_stage_layers)
    assert [(s.full_layers, s.swa_layers) for s in old.stages] == [(4, 4), (4, 4)]
    assert [(s.full_layers, s.swa_layers) for s in new.stages] == [(4, 0), (0, 4)]


@boundary("host_smaller_than_device", "0.5.15")
def _smaller(first):
    # --hicache-ratio 0.5: half the device tokens + one page is smaller than the device pool: 0.5.14 refuses
    # (assert self.size > device_pool.size), 0.5.15 warns and starts.
    with pytest.raises(StartupRefusal, match="should be larger than the device memory"):
        plan(lay(before(first), hicache={"enabled": True, "ratio": 0.5}, **PINNED))
    assert plan(lay(first, hicache={"enabled": True, "ratio": 0.5}, **PINNED)).pool.section.enabled


@boundary("host_guard", "0.5.19")
def _guard(first):
    # TP 4 on one host with 300 GB available, --hicache-size 100 a rank: 0.5.18 checks against 300 GB - 10 GiB =
    # 289.3 GB (passes); 0.5.19 against that // 4 = 72.3 GB (refused).
    kw = dict(tp=4, hicache={"enabled": True, "size": 100}, **PINNED)
    layout = layout_from_dict({"engine": "sglang", "model": DENSE, "parallel": {"tensor_parallel_size": 4},
                               "cache": {"max_model_len": 8192}, "host": {"available_memory": "300GB"},
                               "sglang": {"version": before(first), **PINNED, "hicache": kw["hicache"]}})
    assert plan(layout).pool.section.guard_bytes_per_rank == 300 * 10**9 - 10 * (1 << 30)
    with pytest.raises(StartupRefusal, match="only have 72.32 GB free"):
        plan(layout_from_dict({"engine": "sglang", "model": DENSE, "parallel": {"tensor_parallel_size": 4},
                               "cache": {"max_model_len": 8192}, "host": {"available_memory": "300GB"},
                               "sglang": {"version": first, **PINNED, "hicache": kw["hicache"]}}))


@boundary("hicache_size_split", "0.5.17")
def _split(first):
    # gpt-oss-like hybrid (4 full + 4 sliding, SWA pool 0.8 x the full one), --hicache-size 10: before, each of the
    # two host pools gets 10 GB (~20 GB a rank, sglang#29034 / #32373); from 0.5.17 the 10 GB are split by device
    # bytes (full : SWA = 1 : 0.8).
    model = {"num_layers": 8, "num_kv_heads": 8, "head_size": 128, "sliding_window": 128,
             "layer_types": ["full_attention", "sliding_attention"] * 4}

    def pools(version):
        layout = lay(version, model=model, hicache={"enabled": True, "size": 10}, **PINNED)
        from kvcalc.vocab.records import replace

        layout = replace(layout, sglang=replace(layout.sglang, architecture="GptOssForCausalLM"))
        return plan(layout).pool.section

    old, new = pools(before(first)), pools(first)
    assert [p.size_gb_share for p in old.pools] == [10.0, 10.0]
    assert any("sglang#29034" in w for w in plan_warnings(before(first), model))
    assert not any("sglang#29034" in w for w in plan_warnings(first, model))
    assert 19.9e9 < old.bytes_per_rank < 20.1e9
    assert sum(p.size_gb_share for p in new.pools) == pytest.approx(10.0)
    assert 9.9e9 < new.bytes_per_rank < 10.1e9


@boundary("hicache_auto_size", "0.5.21")
def _auto(first):
    # No ratio, no size, 100 GiB available: 0.5.20 keeps 2.0 (and its guard refuses ~2 x 59 GiB against 90 GiB);
    # 0.5.21 lowers the ratio to fit 0.8 x 90 GiB x 0.95.
    def at(version):
        return plan(layout_from_dict({"engine": "sglang", "model": DENSE, "cache": {"max_model_len": 8192},
                                      "host": {"available_memory": "100GiB"},
                                      "sglang": {"version": version, **PINNED, "hicache": {"enabled": True}}}))
    with pytest.raises(StartupRefusal, match="Not enough host memory"):
        at(before(first))
    assert at(first).pool.section.ratio_from == "auto-size"


@boundary("buffer_only", "0.5.19")
def _buffer_only(first):
    h = {"enabled": True, "host_memory_mode": "buffer_only", "storage_backend": "file"}
    with pytest.raises(KvcalcError, match="no buffer_only mode"):
        plan(lay(before(first), hicache=h, **PINNED))
    assert plan(lay(first, hicache=h, **PINNED)).pool.section.ratio == 1.2  # buffer_only's default ratio


def plan_warnings(version, model):
    from kvcalc.vocab.records import replace

    layout = lay(version, model=model, hicache={"enabled": True, "size": 10}, **PINNED)
    return plan(replace(layout, sglang=replace(layout.sglang, architecture="GptOssForCausalLM"))).warnings


def boundaries():
    out = []
    for name, steps in STEPS.items():
        for s in steps[1:]:
            first = next(v for v in SGLANG_RELEASES if parse_release(v) >= s.first)
            out.append((name, first))
    return out


def test_every_boundary_has_a_check():
    assert sorted(boundaries()) == sorted(CHECKS)


@pytest.mark.parametrize("name, first", boundaries())
def test_boundary(name, first):
    CHECKS[(name, first)](first)


SG_MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "sglang", "models")


def _line(version, model, *args, **flags):
    import shlex

    from kvcalc import load

    line = ["python", "-m", "sglang.launch_server", "--model-path", os.path.join(SG_MODELS, model), *args]
    return load(serve=shlex.join(line), flags={"sglang_version": version, **flags})


@boundary("dp_attention_prefill_graph", "0.5.17")
def _dp_prefill(first):
    # Llama-3.3-70B TP 8 x attention DP 8 on H100: 512 + 12,288 + 1,024 + 512 x 2 + 512 x 8 x 3 + 512 x 8 x 1.5 =
    # 33,280 MiB without the prefill graphs (0.5.16's DP-attention rule: round(48,279 / 81,559, 3) = 0.592), + 58 x 8
    # = 33,744 with them (0.5.17: 0.586, executed at 0.5.23 as d-l70-tp8-dp8).
    def at(version):
        layout = _line(version, "llama-3.3-70b", "--tp-size", "8", "--dp-size", "8", "--enable-dp-attention",
                       gpu="H100")
        return default_fraction(layout, behaviour_for(version), False).mem_fraction_static
    assert (at(before(first)), at(first)) == (0.592, 0.586)


@boundary("deployment_pools", "0.5.23")
def _deployment_pools(first):
    # Qwen3-Next's GDN state pool: 0.5.22's pool code was not executed (refused by name), 0.5.23's was.
    kw = dict(gpu="H100", gpu_free_memory="79900MiB", weights_bytes="38770MiB")
    with pytest.raises(KvcalcError, match="Mamba / GDN state pool"):
        plan(_line(before(first), "qwen3-next-80b-a3b", "--tp-size", "4", **kw))
    assert plan(_line(first, "qwen3-next-80b-a3b", "--tp-size", "4", **kw)).stage.gpu.mamba.max_mamba_cache_size == 684


@boundary("mm_budget_reservation", "0.5.18")
def _mm_reservation(first):
    # Qwen2.5-VL-7B, --mem-fraction-static 0.8 on H100 (80,400 MiB free, 15,810 MiB of weights): 0.5.17 sizes the pool
    # from the whole budget; 0.5.18 first reserves SGLANG_VLM_CACHE_SIZE_MB (100 MiB).
    kw = dict(gpu="H100", gpu_free_memory="80400MiB", weights_bytes="15810MiB")
    old = plan(_line(before(first), "qwen2.5-vl-7b", "--mem-fraction-static", "0.8", **kw)).stage.gpu
    new = plan(_line(first, "qwen2.5-vl-7b", "--mem-fraction-static", "0.8", **kw)).stage.gpu
    assert (old.mm_reservation_mib, new.mm_reservation_mib) == (0.0, 100.0)
    assert old.budget_bytes - new.budget_bytes == 100 << 20


@boundary("cgroup_headroom", "0.5.21")
def _cgroup(first):
    # Llama-3.1-8B-shaped, HiCache --hicache-size 80 on one GPU, 1,900 GiB of host memory available but a 64 GiB
    # container with 4 GiB used: 0.5.20 checks psutil alone ((1,900 - 10) GiB: 80 GB fits); 0.5.21 min(psutil,
    # the cgroup's 60 GiB headroom) - 10 GiB = 53.69 GB: refused (executed at 0.5.23: i-l8-size100-cgroup-64g).
    def at(version):
        return plan(layout_from_dict({
            "engine": "sglang", "model": DENSE, "cache": {"max_model_len": 8192},
            "host": {"available_memory": "1900GiB", "cgroup_limit": "64GiB", "cgroup_usage": "4GiB"},
            "sglang": {"version": version, **PINNED, "hicache": {"enabled": True, "size": 80}}}))
    assert at(before(first)).pool.section.guard_bytes_per_rank == 1890 << 30
    with pytest.raises(StartupRefusal, match="Requesting 80.00 GB but only have 53.69 GB free"):
        at(first)


@boundary("cgroup_page_cache", "0.5.22")
def _cgroup_cache(first):
    # A 64 GiB container with memory.current 40 GiB, 30 GiB of it page cache (active_file 20 + inactive_file 10):
    # 0.5.21 counts the cache as used (headroom 64 - 40 = 24 GiB), 0.5.22 credits it (64 - (40 - 30) = 54 GiB);
    # both executed by each release's _cgroup_memory_headroom on a cgroup2 tree (24 / 54 GiB). The guard is the
    # headroom less the 10 GiB reserve (pool_host/base.py HICACHE_HOST_MEMORY_RESERVE_BYTES), one rank.
    def at(version):
        return plan(layout_from_dict({
            "engine": "sglang", "model": DENSE, "cache": {"max_model_len": 8192},
            "host": {"available_memory": "1900GiB", "cgroup_limit": "64GiB", "cgroup_usage": "40GiB",
                     "cgroup_file_cache": "30GiB"},
            "sglang": {"version": version, **PINNED, "hicache": {"enabled": True, "size": 10}}}))
    assert at(before(first)).pool.section.guard_bytes_per_rank == (24 - 10) << 30
    assert at(first).pool.section.guard_bytes_per_rank == (54 - 10) << 30
