"""Invariants over randomly generated valid layouts (spec sections 6 and 8)."""

import json

from hypothesis import assume, given
from hypothesis import strategies as st

from kvcalc.vocab.errors import KvcalcError
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.report.json import render
from kvcalc.report.report import build_report
from test_fuzz import assert_integers

GIB = 1 << 30
VERSIONS = ["0.17.0", "0.19.1", "0.20.0", "0.21.0", "0.22.1", "0.24.0", "0.26.0", "0.28.0", "0.30.0", "0.33.0"]


@st.composite
def layouts(draw):
    n = draw(st.integers(1, 40))
    family = draw(st.sampled_from(["dense", "sliding", "mla", "mla_draft", "varheads", "gdn", "chunked", "v32"]))
    version = draw(st.sampled_from(VERSIONS))
    heads = draw(st.sampled_from([1, 2, 4, 8, 16]))
    model = {"num_layers": n, "num_kv_heads": heads, "head_size": draw(st.sampled_from([64, 128, 256]))}
    if family == "sliding":
        model.update(layer_pattern=draw(st.sampled_from([["sliding_attention", "full_attention"],
                                                         ["sliding_attention"] * 5 + ["full_attention"]])),
                     sliding_window=draw(st.sampled_from([128, 1024, 4096])))
    elif family == "chunked":
        model.update(layer_pattern=["chunked_attention"] * 3 + ["full_attention"], attention_chunk_size=8192)
    elif family in ("mla", "mla_draft", "v32"):
        model = {"num_layers": n, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
        if family == "mla_draft":
            model["draft"] = {"method": "eagle3", "num_layers": 1, "num_kv_heads": heads, "head_size": 128}
        if family == "v32":
            model["index_head_dim"] = 128
    elif family == "varheads":
        model["num_kv_heads"] = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(n)]
    elif family == "gdn":
        assume(version >= "0.22")  # HMA is off with the offloader before 0.22: Mamba hybrids cannot start
        model.update(layer_pattern=["mamba", "mamba", "mamba", "full_attention"],
                     mamba={"kind": "gated_delta_net", "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                            "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4})
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.integers(1, min(4, n)))
    cache = {"kv_cache_memory": draw(st.sampled_from([8 * GIB, 40 * GIB, 80 * GIB])), "max_model_len": 8192,
             "block_size": draw(st.sampled_from([16, 32, 64]))}
    if family == "gdn":
        cache["enable_prefix_caching"] = True
    if family == "sliding" and draw(st.booleans()):
        cache["hybrid_kv_cache_manager"] = "off"
    offload = {"cpu_bytes_to_use": draw(st.integers(0, 2 ** 40))}
    return {"model": model, "parallel": {"tensor_parallel_size": tp, "pipeline_parallel_size": pp},
            "cache": cache, "offload": offload, "vllm": {"version": version}}


def planned(data):
    try:
        return plan(layout_from_dict(data, source="prop.yaml"))
    except KvcalcError:
        assume(False)


@given(data=layouts())
def test_gpu_invariants(data):
    p = planned(data)
    specs = [name for stage in p.layers.stages for name, _ in stage.layers]
    assert len(set(specs)) == len(specs), "a layer name appears twice"
    # Every layer is in exactly one group.
    grouped = [name for g in p.grouping.groups for name in g.layer_names]
    assert sorted(grouped) == sorted(specs)
    world = p.layout.parallel.world_size
    for w in p.gpu.workers:
        # Tensor sizes sum to num_blocks x bytes per block.
        if w.num_blocks is not None:
            assert sum(t.size for t in w.tensors) == w.num_blocks * w.bytes_per_block
        # Each of the worker's layers sits in exactly one tensor's shared_by; no tensor holds two layers of a group.
        shared = [name for t in w.tensors for name in t.shared_by]
        mine = [name for g in w.groups for name in g.layer_names]
        assert sorted(shared) == sorted(mine)
        group_of = {name: i for i, g in enumerate(w.groups) for name in g.layer_names}
        for t in w.tensors:
            assert len({group_of[n] for n in t.shared_by}) == len(t.shared_by)
    fixed = p.offload.results.get("fixed")
    if fixed is not None and p.gpu.num_blocks:
        # The fixed formula reads the worker's true bytes per block, times the world size.
        assert fixed.scheduler.kv_bytes_per_block == p.gpu.workers[0].bytes_per_block * world
        for st_, w in zip(fixed.stages, p.gpu.workers):
            assert st_.count.kv_bytes_per_block == w.bytes_per_block * world


@given(data=layouts())
def test_offload_invariants(data):
    p = planned(data)
    budget = p.layout.offload.cpu_bytes_to_use
    for r in p.offload.results.values():
        assert 0 <= r.pinned_bytes_per_engine <= budget
        assert r.unused_bytes == budget - r.pinned_bytes_per_engine
        for s in r.stages:
            assert s.out_of_bounds == (r.scheduler.num_blocks > s.count.num_blocks)
    old, fixed = p.offload.results.get("old"), p.offload.results.get("fixed")
    if old and fixed and p.gpu.num_blocks and p.grouping.rule != "uniform_type":
        # Old and fixed agree on every side unless the group is UniformType.
        assert old.scheduler.num_blocks == fixed.scheduler.num_blocks
        assert [s.count.num_blocks for s in old.stages] == [s.count.num_blocks for s in fixed.stages]
    if old and fixed and p.gpu.num_blocks and p.grouping.rule == "uniform_type" and budget:
        # UniformType: the old worker count is about 1/L of the fixed one.
        layers = len(p.gpu.workers[0].tensors)
        assert old.stages[0].count.kv_bytes_per_block == fixed.stages[0].count.kv_bytes_per_block * layers


def shuffled(node, order):
    if isinstance(node, dict):
        items = list(node.items())
        items = [items[i] for i in order(len(items))]
        return {k: shuffled(v, order) for k, v in items}
    if isinstance(node, list):
        return [shuffled(v, order) for v in node]
    return node


@given(data=layouts(), seed=st.randoms(use_true_random=False))
def test_key_order_never_matters_and_bytes_are_integers(data, seed):
    p = planned(data)
    a = render(build_report(p))
    other = shuffled(data, lambda n: seed.sample(range(n), n))
    b = render(build_report(plan(layout_from_dict(other, source="prop.yaml"))))
    assert a == b
    assert_integers(json.loads(a))
