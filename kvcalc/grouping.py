"""Specs -> KV cache groups: vLLM's get_kv_cache_groups decision tree (spec section 5, rules A-E)."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from .errors import StartupRefusal
from .specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
    is_uniform,
    is_uniform_type,
    merge_specs,
)
from .units import cdiv


class KVCacheGroup(NamedTuple):
    layer_names: tuple[str, ...]
    spec: KVCacheSpec


class Grouping(NamedTuple):
    groups: tuple[KVCacheGroup, ...]
    rule: str  # "empty" | "uniform" | "uniform_type" | "hybrid"
    folded: bool  # rule A rewrote sliding/chunked layers as full attention
    padding_layers: int  # rule E: empty slots in the last strided group of a bucket


def _distinct(specs: dict[str, KVCacheSpec]) -> list[KVCacheSpec]:
    """The spec objects in first-seen order, each once: layers of one shape share an object, and the
    uniform / uniform-type tests give the same answer on the distinct specs as on all of them."""
    return list({id(s): s for s in specs.values()}.values())


def _fold_hybrid(specs: dict[str, KVCacheSpec]) -> tuple[dict[str, KVCacheSpec], bool]:
    """Rule A (HMA off): fold sliding and chunked layers into full attention, or refuse as vLLM does."""
    values = _distinct(specs)
    if is_uniform(values) or is_uniform_type(values):
        return specs, False
    has_full = any(isinstance(s, FullAttentionSpec) for s in values)
    has_local = any(isinstance(s, (SlidingWindowSpec, ChunkedLocalAttentionSpec)) for s in values)
    folded = dict(specs)
    did_fold = False
    made: dict[int, KVCacheSpec] = {}  # one folded spec per distinct local spec
    if has_full and has_local:
        for name, s in specs.items():
            if isinstance(s, (SlidingWindowSpec, ChunkedLocalAttentionSpec)):
                if id(s) in made:
                    folded[name] = made[id(s)]
                    continue
                folded[name] = made[id(s)] = FullAttentionSpec(
                    block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
                    head_size_v=s.head_size_v, dtype=s.dtype, page_size_padded=s.page_size_padded,
                    kv_quant=s.kv_quant,
                    sliding_window=getattr(s, "sliding_window", None),
                    attention_chunk_size=getattr(s, "attention_chunk_size", None),
                )
                did_fold = True
    values = _distinct(folded)
    if not (is_uniform(values) or is_uniform_type(values)):
        kinds = sorted({s.kind for s in values})
        raise StartupRefusal(
            "with the hybrid KV cache manager disabled, vLLM failed to convert the KV cache specs to one "
            f"unified type (layer kinds: {', '.join(kinds)})"
        )
    return folded, did_fold


def _unify_page_size(specs: dict[str, KVCacheSpec]) -> dict[str, KVCacheSpec]:
    """Rule D: grow smaller pages' block size until every page equals the largest."""
    pages = {s.page_size_bytes for s in specs.values()}
    if len(pages) <= 1:
        return specs
    pmax = max(pages)
    out = {}
    for name, s in specs.items():
        p = s.page_size_bytes
        if p == pmax:
            out[name] = s
            continue
        if pmax % p:
            raise StartupRefusal(
                f"page size {p} of layer {name} does not divide the largest page {pmax}: vLLM cannot unify "
                "the page sizes by adjusting block_size"
            )
        grown = replace(s, block_size=s.block_size * (pmax // p))
        if grown.page_size_bytes != pmax:
            raise StartupRefusal(f"layer {name}: its page does not scale with the block size (vLLM asserts)")
        out[name] = grown
    return out


def _split_by_spec(specs: dict[str, KVCacheSpec], threshold: tuple[int, int]) -> tuple[list[KVCacheGroup], int]:
    """Rule E: bucket equal specs, then cut each bucket into strided groups of `group_size` layers."""
    buckets: dict[KVCacheSpec, list[str]] = {}
    for name, s in specs.items():
        buckets.setdefault(s, []).append(name)
    sizes = [len(v) for v in buckets.values()]
    mn, mx = min(sizes), max(sizes)
    # Buckets close in size share the larger size (fewer groups, some padding); otherwise the smaller.
    num, den = threshold
    group_size = mx if mx * den < num * mn else mn  # mx < 1.5 * mn, exactly
    groups = []
    padding = 0
    for s, names in buckets.items():
        if len(names) % group_size:
            padding += group_size - len(names) % group_size
        k = cdiv(len(names), group_size)
        for i in range(k):
            members = names[i::k]
            groups.append(KVCacheGroup(layer_names=tuple(members), spec=merge_specs([specs[n] for n in members])))
    return groups, padding


def group_layers(specs: dict[str, KVCacheSpec], *, hma_enabled: bool, threshold: tuple[int, int]) -> Grouping:
    """The merged, ordered {layer: spec} of all workers -> groups, as get_kv_cache_groups does."""
    folded = False
    if not hma_enabled and specs:
        specs, folded = _fold_hybrid(specs)
    if not specs:
        return Grouping(groups=(), rule="empty", folded=False, padding_layers=0)
    values = _distinct(specs)
    names = tuple(specs)
    if is_uniform(values):
        return Grouping(groups=(KVCacheGroup(layer_names=names, spec=merge_specs(values)),), rule="uniform",
                        folded=folded, padding_layers=0)
    if is_uniform_type(values):
        ut = UniformTypeKVCacheSpecs(block_size=values[0].block_size, specs=tuple(specs.items()))
        return Grouping(groups=(KVCacheGroup(layer_names=names, spec=ut),), rule="uniform_type", folded=folded,
                        padding_layers=0)
    groups, padding = _split_by_spec(_unify_page_size(specs), threshold)
    return Grouping(groups=tuple(groups), rule="hybrid", folded=folded, padding_layers=padding)
