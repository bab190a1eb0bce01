"""Runs of layers -> KV cache groups: vLLM's get_kv_cache_groups decision tree (spec section 5, rules A-E).

Every rule looks at the distinct specs (in order of first appearance) and their layer counts, never at the
layers one by one; only rule E's strided split of a bucket spread over several runs walks its layers.
"""

from __future__ import annotations

from ...vocab.errors import StartupRefusal
from ...vocab.records import record, replace
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
from .runs import Run, layer_count, layer_names, spec_counts, strided_split
from ...vocab.units import cdiv


@record
class KVCacheGroup:
    runs: tuple[Run, ...]  # its layers (a UniformType group's runs carry each layer's own spec)
    spec: KVCacheSpec

    @property
    def num_layers(self) -> int:
        return layer_count(self.runs)

    @property
    def layer_names(self) -> tuple[str, ...]:
        """vLLM's layer names, in registration order (expanded on request: reports, --verify)."""
        return layer_names(self.runs)


@record
class Grouping:
    groups: tuple[KVCacheGroup, ...]
    rule: str  # "empty" | "uniform" | "uniform_type" | "hybrid"
    folded: bool  # rule A rewrote sliding/chunked layers as full attention
    padding_layers: int  # rule E: empty slots in the last strided group of a bucket


def _respec(runs: tuple[Run, ...], mapping: dict[KVCacheSpec, KVCacheSpec]) -> tuple[Run, ...]:
    return tuple(r._replace(spec=mapping[r.spec]) if r.spec in mapping else r for r in runs)


def _fold_hybrid(runs: tuple[Run, ...], values: list[KVCacheSpec]) -> tuple[tuple[Run, ...], bool]:
    """Rule A (HMA off), called when rules B and C fail: fold sliding and chunked layers into full attention, or
    refuse as vLLM does."""
    local = (SlidingWindowSpec, ChunkedLocalAttentionSpec)
    folded: dict[KVCacheSpec, KVCacheSpec] = {}
    if any(isinstance(s, FullAttentionSpec) for s in values) and any(isinstance(s, local) for s in values):
        for s in values:
            if isinstance(s, local):
                folded[s] = FullAttentionSpec(
                    block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
                    head_size_v=s.head_size_v, dtype=s.dtype, page_size_padded=s.page_size_padded,
                    kv_quant=s.kv_quant, sliding_window=getattr(s, "sliding_window", None),
                    attention_chunk_size=getattr(s, "attention_chunk_size", None),
                )
    after = list(dict.fromkeys(folded.get(s, s) for s in values))
    if not (is_uniform(after) or is_uniform_type(after)):
        kinds = sorted({s.kind for s in after})
        raise StartupRefusal(
            "with the hybrid KV cache manager disabled, vLLM failed to convert the KV cache specs to one "
            f"unified type (layer kinds: {', '.join(kinds)})"
        )
    return (_respec(runs, folded), True) if folded else (runs, False)


def _unify_page_size(values: list[KVCacheSpec], runs: tuple[Run, ...]) -> dict[KVCacheSpec, KVCacheSpec]:
    """Rule D: grow smaller pages' block size until every page equals the largest (spec -> grown spec)."""
    pages = {s.page_size_bytes for s in values}
    if len(pages) <= 1:
        return {}
    pmax = max(pages)
    out = {}
    for s in values:
        p = s.page_size_bytes
        if p == pmax:
            continue
        if pmax % p:
            name = next(layer_names((r,))[0] for r in runs if r.spec == s)
            raise StartupRefusal(
                f"page size {p} of layer {name} does not divide the largest page {pmax}: vLLM cannot unify "
                "the page sizes by adjusting block_size"
            )
        grown = replace(s, block_size=s.block_size * (pmax // p))
        if grown.page_size_bytes != pmax:
            name = next(layer_names((r,))[0] for r in runs if r.spec == s)
            raise StartupRefusal(f"layer {name}: its page does not scale with the block size (vLLM asserts)")
        out[s] = grown
    return out


def _split_by_spec(runs: tuple[Run, ...], threshold: tuple[int, int], counts: dict[KVCacheSpec, int]
                   ) -> tuple[list[KVCacheGroup], int]:
    """Rule E: bucket equal specs (`counts`: spec_counts(runs)), then cut each bucket into strided groups of
    `group_size` layers."""
    buckets: dict[KVCacheSpec, list[Run]] = {s: [] for s in counts}
    for r in runs:
        buckets[r.spec].append(r)
    mn, mx = min(counts.values()), max(counts.values())
    # Buckets close in size share the larger size (fewer groups, some padding); otherwise the smaller.
    num, den = threshold
    group_size = mx if mx * den < num * mn else mn  # mx < 1.5 * mn, exactly
    groups = []
    padding = 0
    for spec, members in buckets.items():
        n = counts[spec]
        if n % group_size:
            padding += group_size - n % group_size
        for part in strided_split(tuple(members), cdiv(n, group_size)):
            groups.append(KVCacheGroup(runs=part, spec=spec))
    return groups, padding


def group_layers(runs: tuple[Run, ...], *, hma_enabled: bool, threshold: tuple[int, int]) -> Grouping:
    """All workers' runs -> groups, as get_kv_cache_groups does on the merged, ordered {layer: spec}."""
    runs = tuple(r for r in runs if r.indices)
    if not runs:
        return Grouping(groups=(), rule="empty", folded=False, padding_layers=0)
    counts = spec_counts(runs)
    values = list(counts)
    folded = False
    uniform = is_uniform(values)
    uniform_type = not uniform and is_uniform_type(values)
    if not hma_enabled and not uniform and not uniform_type:
        runs, folded = _fold_hybrid(runs, values)
        if folded:
            counts = spec_counts(runs)
            values = list(counts)
            uniform = is_uniform(values)
            uniform_type = not uniform and is_uniform_type(values)
    if uniform:
        return Grouping(groups=(KVCacheGroup(runs=runs, spec=merge_specs(values)),), rule="uniform", folded=folded,
                        padding_layers=0)
    if uniform_type:
        return Grouping(groups=(KVCacheGroup(runs=runs, spec=UniformTypeKVCacheSpecs.of(runs)),),
                        rule="uniform_type", folded=folded, padding_layers=0)
    grown = _unify_page_size(values, runs)
    if grown:
        runs = _respec(runs, grown)
        counts = spec_counts(runs)
    groups, padding = _split_by_spec(runs, threshold, counts)
    return Grouping(groups=tuple(groups), rule="hybrid", folded=folded, padding_layers=padding)
