"""Interned specs and every memo: a key cannot drift from the spec it names, and nothing grows without bound.

Issue 18: a hand-built intern key once dropped a field (two specs differing only there became one object, and 128
vector, golden and property tests stayed green), and an unbounded per-spec memo sat inside the bounded intern table.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
from enum import Enum

import pytest
import yaml

from kvcalc import load_layout, plan
from kvcalc.engines.vllm import specs
from kvcalc.engines.vllm.layers import build_layers
from kvcalc.engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
    interned,
)
from kvcalc.engines.vllm.runs import named_specs
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.vocab import units
from kvcalc.vocab.kinds import KVQuant
from kvcalc.vocab.records import fields
from kvcalc.vocab.releases.vllm import FAMILIES, RELEASES, behaviour_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")

_ATTN = dict(block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16", page_size_padded=None,
             kv_quant=KVQuant.NONE)
# Every field of every spec class with a value, and another value for each (what a dropped key field would conflate).
BASES = {
    FullAttentionSpec: dict(_ATTN, sliding_window=None, attention_chunk_size=None),
    MLAAttentionSpec: dict(_ATTN, sliding_window=None, attention_chunk_size=None, cache_dtype_str="auto",
                           alignment=None, compress_ratio=1, model_version=None),
    SlidingWindowMLASpec: dict(_ATTN, sliding_window=128, cache_dtype_str=None, alignment=None, model_version=None),
    SlidingWindowSpec: dict(_ATTN, sliding_window=4096),
    ChunkedLocalAttentionSpec: dict(_ATTN, attention_chunk_size=8192),
    CrossAttentionSpec: {k: v for k, v in _ATTN.items() if k != "head_size_v"},
    MambaSpec: dict(block_size=16, shapes=((3, 2048), (16, 128, 128)), dtypes=("bfloat16", "float32"),
                    page_size_padded=None, mamba_type="mamba2", num_speculative_blocks=0,
                    num_prefill_checkpoint_blocks=0),
}
OTHER = dict(block_size=32, num_kv_heads=4, head_size=64, head_size_v=96, dtype="uint8", page_size_padded=1 << 20,
             kv_quant=KVQuant.PER_TOKEN_HEAD, sliding_window=1024, attention_chunk_size=2048,
             cache_dtype_str="fp8_ds_mla", shapes=((3, 1024), (16, 128, 128)), dtypes=("float16", "float32"),
             mamba_type="gated_delta_net", num_speculative_blocks=2, num_prefill_checkpoint_blocks=1, alignment=576,
             compress_ratio=4, model_version="deepseek_v4")


def test_the_bases_name_every_field_of_every_spec_class():
    for cls, base in BASES.items():
        assert set(base) == {f.name for f in fields(cls)}, cls.__name__
    assert {f.name for cls in BASES for f in fields(cls)} <= set(OTHER)


@pytest.mark.parametrize("cls", list(BASES), ids=lambda c: c.__name__)
def test_two_specs_differing_in_one_field_never_intern_to_one_object(cls):
    base = BASES[cls]
    spec = interned(cls, **base)
    assert spec == cls(**base)
    assert interned(cls, **dict(base)) is spec  # the same fields: the same object
    for name in base:
        changed = dict(base, **{name: OTHER[name]})
        other = interned(cls, **changed)
        assert other is not spec, name
        assert other == cls(**changed), name  # the object the key names is the spec built from it
        assert other != spec, name


def test_a_spec_written_with_fewer_fields_is_the_spec_those_fields_build():
    # Left-out fields take the class defaults: the key of the short spelling names exactly that spec.
    short = interned(FullAttentionSpec, block_size=16, num_kv_heads=8, head_size=128, head_size_v=128,
                     dtype="bfloat16")
    quant = interned(FullAttentionSpec, block_size=16, num_kv_heads=8, head_size=128, head_size_v=128,
                     dtype="bfloat16", kv_quant=KVQuant.NVFP4)
    assert short is not quant
    assert short.kv_quant is KVQuant.NONE
    assert quant.kv_quant is KVQuant.NVFP4
    assert short.page_size_bytes != quant.page_size_bytes


# One input changed at a time, each feeding one spec field: the KV dtypes that share a storage dtype and differ in
# quantisation or MLA cache string, the block size, the model dtype, the Mamba state dtypes, prefix caching (the
# Mamba mode), the GPU and platform (GDN checkpoint blocks), the head sizes, the window, a drafter and its
# speculative tokens (Mamba speculative blocks).
_ONE_CHANGE = (
    {}, {"cache.kv_cache_dtype": "fp8"}, {"cache.kv_cache_dtype": "fp8_e5m2"},
    {"cache.kv_cache_dtype": "fp8_per_token_head"}, {"cache.kv_cache_dtype": "nvfp4"},
    {"cache.kv_cache_dtype": "fp8_ds_mla"}, {"cache.block_size": 32}, {"model.dtype": "float16"},
    {"cache.mamba_ssm_cache_dtype": "float32"}, {"cache.mamba_cache_dtype": "float16"},
    {"cache.enable_prefix_caching": True}, {"cache.enable_prefix_caching": False}, {"vllm.gpu_arch": "sm100"},
    {"vllm.platform": "rocm"}, {"model.head_size_v": 64}, {"model.sliding_window": 1024},
    {"model.draft.num_speculative_tokens": 3}, {"model.draft.method": "mtp", "model.draft.num_layers": 1},
    {"model.draft.method": "mtp", "model.draft.num_layers": 1, "model.draft.num_speculative_tokens": 3},
)


def _variants() -> list[tuple[str, dict]]:
    """Every example on two releases, with one spec-relevant input changed at a time: layouts whose specs differ
    in one field (what a dropped key field would conflate)."""
    out = []
    for name in sorted(os.listdir(EXAMPLES)):
        if name.endswith(".yaml"):
            for version in ("0.19.1", "0.33.0"):
                for change in _ONE_CHANGE:
                    over = {"vllm.version": (version, "--vllm-version")}
                    over.update({k: (v, k) for k, v in change.items()})
                    out.append((os.path.join(EXAMPLES, name), over))
    return out


def _specs_of(path: str, over: dict):
    try:
        layout = load_layout(path, overrides=over)
        layers = build_layers(layout, behaviour_for(layout.vllm_version))
    except Exception as e:  # noqa: BLE001 - a refused combination is the same refusal either way
        return f"refused: {type(e).__name__}: {e}"
    return [(s.pp_rank, [(name, repr(spec)) for name, spec in named_specs(s.runs)]) for s in layers.stages]


def test_interning_never_changes_a_plan():
    """Each variant's specs with an empty intern table, then all of them sharing one table, in both orders."""
    variants = _variants()
    cold = []
    for path, over in variants:
        specs._INTERNED.clear()
        cold.append(_specs_of(path, over))
    assert sum(not isinstance(c, str) for c in cold) > len(variants) // 2  # most variants plan
    specs._INTERNED.clear()
    assert [_specs_of(p, o) for p, o in variants] == cold
    assert [_specs_of(p, o) for p, o in reversed(variants)] == cold[::-1]


# ---------------------------------------------------------------------------------------------------------
# Every memo bounded.

def _kvcalc_containers() -> dict[str, object]:
    """Every module-level (and class-level) container and functools cache of the kvcalc package."""
    out: dict[str, object] = {}
    for mod_name, mod in list(sys.modules.items()):
        if not (mod_name == "kvcalc" or mod_name.startswith("kvcalc.")) or mod is None:
            continue
        scopes = [(mod_name, vars(mod))]
        scopes += [(f"{mod_name}.{k}", vars(v)) for k, v in vars(mod).items()
                   if isinstance(v, type) and v.__module__ == mod_name and not issubclass(v, Enum)]
        for where, scope in scopes:
            for k, v in list(scope.items()):
                if k.startswith("__"):
                    continue  # __warningregistry__, __dict__, ...: Python's, not kvcalc's
                if isinstance(v, (dict, list, set)) or hasattr(v, "cache_info"):
                    out[f"{where}.{k}"] = v
    return out


def _size(v) -> int:
    return v.cache_info().currsize if hasattr(v, "cache_info") else len(v)


# The memos, each with its bound: a number, or the finite domain it is keyed by.
BOUNDS = {
    "kvcalc.engines.vllm.specs._INTERNED": specs.INTERN_LIMIT,
    "kvcalc.vocab.units._PARSED": units.PARSED_LIMIT,
    "kvcalc.vocab.units._size_re": 1,  # no argument
    "kvcalc.vocab.releases.vllm.behaviour_for": len(RELEASES),  # keyed by the version string: see the note below
    "kvcalc.vocab.releases.vllm._family_releases": len(FAMILIES),  # keyed by a family id
    "kvcalc.vocab.releases.vllm._family_versions": len(FAMILIES),
    "kvcalc.inputs.files.strict_loader": 2,  # keyed by a bool
}
# behaviour_for is keyed by the version string as written: every release is one entry, but a suffixed spelling
# (0.19.1+cu128, 0.19.1.post1, ...) is another, so its bound here holds for this test's plain release strings only.


def test_bounds_name_memos_that_exist():
    found = _kvcalc_containers()
    for name in BOUNDS:
        if name.startswith(("kvcalc.engines.", "kvcalc.vocab.units")):
            assert name in found, name


def test_many_api_plans_with_distinct_max_model_len_leave_every_memo_under_its_bound():
    n = max(specs.INTERN_LIMIT, units.PARSED_LIMIT, specs.USAGE_MEMO_LIMIT) + 500  # more plans than any bound
    with open(os.path.join(EXAMPLES, "qwen3-next-80b-tp4.yaml")) as fh:
        hybrid = yaml.safe_load(fh)
    hybrid["cache"]["enable_prefix_caching"] = False  # Mamba mode none: the Mamba block is max_model_len
    with open(os.path.join(EXAMPLES, "kimi-k2.5-eagle3-tp4.yaml")) as fh:
        uniform_type = yaml.safe_load(fh)  # one UniformType group: its summed usage is remembered too
    plan(layout_from_dict(hybrid))
    plan(layout_from_dict(uniform_type))  # (their releases' behaviours are read before the count starts)
    before = {k: _size(v) for k, v in _kvcalc_containers().items()}
    for i in range(n):
        for data, every in ((hybrid, 1), (uniform_type, 4)):
            if i % every:
                continue
            data = copy.deepcopy(data)
            data["cache"]["max_model_len"] = 4096 + i
            data["offload"]["cpu_bytes_to_use"] = f"{i + 1}MiB"  # a size string not read before
            p = plan(layout_from_dict(data))
            assert p.layers.usage.max_model_len == 4096 + i
    after = _kvcalc_containers()
    grown = {k: _size(v) for k, v in after.items() if _size(v) > before.get(k, 0)}
    assert set(grown) <= set(BOUNDS), f"a container grew that is not a known, bounded memo: {set(grown) - set(BOUNDS)}"
    for k, size in grown.items():
        assert size <= BOUNDS[k], (k, size)
    # The memos kept on the interned specs themselves (usage per context, and any other dict they hold).
    for spec in list(specs._INTERNED.values()):
        for name, value in vars(spec).items():
            if isinstance(value, dict):
                assert len(value) <= specs.USAGE_MEMO_LIMIT, (spec, name, len(value))
    assert len(specs._INTERNED) <= specs.INTERN_LIMIT


def test_the_usage_memo_forgets_rather_than_grows():
    spec = interned(FullAttentionSpec, block_size=16, num_kv_heads=8, head_size=128, head_size_v=128,
                    dtype="bfloat16")
    for mml in range(1000, 1000 + 10 * specs.USAGE_MEMO_LIMIT):
        ctx = specs.UsageContext(max_model_len=mml, max_num_batched_tokens=8192)
        assert spec.max_usage(ctx) == spec.max_memory_usage_bytes(ctx)
        assert len(vars(spec)["_usage"]) <= specs.USAGE_MEMO_LIMIT
    uniform = UniformTypeKVCacheSpecs(block_size=16, members=((spec, 2),), first=spec)
    for mml in range(1000, 1000 + 10 * specs.USAGE_MEMO_LIMIT):
        ctx = specs.UsageContext(max_model_len=mml, max_num_batched_tokens=8192)
        assert uniform.summed_usage(ctx) == 2 * spec.max_memory_usage_bytes(ctx)
        assert len(vars(uniform)["_summed"]) <= specs.USAGE_MEMO_LIMIT


def test_functools_is_not_used_as_an_unbounded_cache_in_the_engine():
    # The engine's memos are the intern table and the bounded per-spec usage memo; a functools cache there would
    # be keyed by whatever a plan passes.
    for name, value in _kvcalc_containers().items():
        if name.startswith("kvcalc.engines."):
            assert not isinstance(value, functools._lru_cache_wrapper) or value.cache_info().maxsize, name
