"""Interned specs: a key cannot drift from the spec it names.

Issue 18: a hand-built intern key once dropped a field (two specs differing only there became one object, and 128
vector, golden and property tests stayed green).
"""

from __future__ import annotations

import os

import pytest

from kvcalc import load_layout
from kvcalc.engines.vllm import specs
from kvcalc.engines.vllm.layers import build_layers
from kvcalc.engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    interned,
    named_specs,
)
from kvcalc.vocab.kinds import KVQuant
from kvcalc.vocab.records import fields
from kvcalc.vocab.releases.vllm import behaviour_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

_ATTN = dict(block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16", page_size_padded=None,
             kv_quant=KVQuant.NONE)
# Every field of every spec class with a value, and another value for each (what a dropped key field would conflate).
BASES = {
    FullAttentionSpec: dict(_ATTN, sliding_window=None, attention_chunk_size=None),
    MLAAttentionSpec: dict(_ATTN, sliding_window=None, attention_chunk_size=None, cache_dtype_str="auto"),
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
             mamba_type="gated_delta_net", num_speculative_blocks=2, num_prefill_checkpoint_blocks=1)


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
