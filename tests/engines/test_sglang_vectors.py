"""kvcalc's SGLang rules against held-out vectors computed by SGLang's own code (tests/fixtures/sglang/vectors.json,
written by make_vectors.py, which executes each release's functions from its wheel): every release read, every
case. A vector kvcalc does not reproduce names the release and the case."""

import json
import os

import pytest

from kvcalc.engines.sglang.memory import default_fraction
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.vocab.releases import SGLANG_RELEASES
from kvcalc.vocab.releases.sglang import behaviour_for

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = json.load(open(os.path.join(HERE, "..", "fixtures", "sglang", "vectors.json"), encoding="utf-8"))
MHA = {"num_layers": 32, "num_kv_heads": 8, "head_size": 128, "max_position_embeddings": 131072}
MLA = {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "max_position_embeddings": 131072}


def layout_of(case: dict):
    sglang = {"version": case["release"], "gpu_capacity_mib": case["capacity_mib"]}
    for key in ("chunked_prefill_size", "cuda_graph_max_bs", "disable_cuda_graph", "max_running_requests",
                "max_total_tokens"):
        if case.get(key) is not None:
            sglang[key] = case[key]
    cache = {} if case.get("context_length") is None else {"max_model_len": case["context_length"]}
    return layout_from_dict({
        "engine": "sglang", "model": MLA if case.get("mla") else MHA,
        "parallel": {"tensor_parallel_size": case["tp"], "pipeline_parallel_size": case.get("pp", 1)},
        "cache": cache, "sglang": sglang})


def test_every_release_is_covered():
    assert sorted({v["release"] for v in VECTORS["mem_fraction_static"]}) == sorted(SGLANG_RELEASES)


@pytest.mark.parametrize("case", VECTORS["mem_fraction_static"],
                         ids=lambda c: f"{c['release']}-{c['gpu']}-tp{c['tp']}-" + "-".join(
                             f"{k}={v}" for k, v in sorted(c.items()) if k not in (
                                 "release", "gpu", "tp", "capacity_mib", "mem_fraction_static")))
def test_mem_fraction_static_default(case):
    layout = layout_of(case)
    got = default_fraction(layout, behaviour_for(case["release"]), bool(case.get("mla"))).mem_fraction_static
    assert got == case["mem_fraction_static"], f"SGLang {case['release']}: {case}"


@pytest.mark.parametrize("case", VECTORS["hicache"], ids=lambda c: f"{c['release']}-{c['device_tokens']}-"
                         f"{c['bytes_per_token']}-p{c['page']}-r{c['ratio']}-s{c['size_gb']}-x{c['ranks']}")
def test_hicache_host_pool(case):
    """A host pool's tokens and bytes, the start-up refusals (host not larger than the device before 0.5.15, the
    guard) as HostKVCache.__init__ computes them."""
    from kvcalc.backends.hicache import guard_bytes, guard_refusal, host_tokens

    b = behaviour_for(case["release"])
    size = host_tokens(case["device_tokens"], (case["bytes_per_token"],), case["page"], case["ratio"],
                       case["size_gb"] or None)
    requested = size * case["bytes_per_token"]
    if "error" in case:
        smaller = b.host_smaller_refused and size <= case["device_tokens"]
        refusal = guard_refusal(requested, guard_bytes(case["available"], case["ranks"], b.guard_per_rank))
        expected = case["error"]
        got = ("The host memory should be larger than the device memory with the current protocol" if smaller
               else refusal)
        assert got == expected, f"SGLang {case['release']}: {case}"
        return
    assert size == case["size_tokens"], f"SGLang {case['release']}: host tokens, {case}"
    assert requested == case["bytes"], f"SGLang {case['release']}: host bytes, {case}"
    assert guard_refusal(requested, guard_bytes(case["available"], case["ranks"], b.guard_per_rank)) is None


def pool_layout(case: dict):
    if case["kind"] == "mla":
        model = {"num_layers": case["layers"], "kv_lora_rank": case["kv_lora_rank"],
                 "qk_rope_head_dim": case["rope"]}
    elif case["kind"] == "mha":
        model = {"num_layers": case["layers"], "num_kv_heads": case["heads"], "head_size": case["head_dim"]}
    else:
        kinds = ["full_attention"] * case["full_layers"] + ["sliding_attention"] * case["swa_layers"]
        model = {"num_layers": len(kinds), "num_kv_heads": case["heads"], "head_size": case["head_dim"],
                 "layer_types": kinds, "sliding_window": case["window"]}
    sglang = {"version": case["release"], "gpu_free_memory": "80GiB", "weights_bytes": "1GiB",
              "mem_fraction_static": 0.9, "page_size": case["page"]}
    if case.get("ratio") is not None:
        sglang["swa_full_tokens_ratio"] = case["ratio"]
    return layout_from_dict({"engine": "sglang", "model": model, "parallel": {"tensor_parallel_size": case["tp"]},
                             "cache": {"max_model_len": 8192,
                                       "kv_cache_dtype": "fp8_e4m3" if case["itemsize"] == 1 else "auto"},
                             "sglang": sglang})


@pytest.mark.parametrize("case", VECTORS["pools"], ids=lambda c: f"{c['release']}-{c['kind']}-tp{c['tp']}-"
                         f"p{c['page']}-{c['budget']}")
def test_token_pool(case):
    """The cell (bytes per token of max_total_num_tokens) and the tokens a byte budget holds, as SGLang's
    DefaultPoolConfigurator / HybridSWAPoolConfigurator compute them."""
    from kvcalc.engines.sglang.memory import stage_tokens
    from kvcalc.engines.sglang.model import sglang_model

    layout = pool_layout(case)
    model = sglang_model(layout, hybrid_swa_arch=True)
    s = model.stages[0]
    ratio = case.get("ratio") or 0.8
    cell = s.full_bytes + ratio * s.swa_bytes if model.kind == "hybrid_swa" else s.full_bytes
    assert cell == case["cell_size"], f"SGLang {case['release']}: cell, {case}"
    full, swa = stage_tokens(model, 0, case["budget"], case["page"], ratio)
    assert full == case["max_total_num_tokens"], f"SGLang {case['release']}: tokens, {case}"
    if case["swa_max_total_num_tokens"] is not None:
        assert swa == case["swa_max_total_num_tokens"], f"SGLang {case['release']}: SWA tokens, {case}"


@pytest.mark.parametrize("case", VECTORS["split"], ids=lambda c: f"{c['release']}-{c['size_gb']}-"
                         f"{len(c['device_bytes'])}pools")
def test_hicache_size_split(case):
    """A fixed --hicache-size over a hybrid's host pools: in proportion to the device pools' bytes from 0.5.17
    (_split_hicache_size), the whole size to each before (sglang#29034: 2x per rank)."""
    from kvcalc.backends.hicache import split_size

    b = behaviour_for(case["release"])
    assert split_size(case["size_gb"], case["device_bytes"], b.hicache_size_split) == case["shares"]
