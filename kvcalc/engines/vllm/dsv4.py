"""DeepSeek-V4 (DeepseekV4ForCausalLM, registered from vLLM 0.20.0): its cache layers as vLLM builds them, the five
KV cache groups each release makes of them and the bytes one block id costs on a worker.

Every decoder layer keeps a 64-token sliding-window cache; a compressed layer (compress ratio 4, "CSA", or 128,
"HCA") adds its compressed MLA cache and its compressor's state; a ratio-4 layer also has the lightning indexer's key
cache and the indexer compressor's state. The per-layer kinds are the layout's dsv4_swa / dsv4_csa / dsv4_hca. One
block id is shared by every group: 256 tokens of the MLA group, 64 of a sliding group, 4 or 8 of a state group.
Citations are vLLM files (0.20.0-0.21.0: model_executor/layers/deepseek_v4_attention.py,
deepseek_compressor.py; 0.22.0+: models/deepseek_v4/{attention,compressor}.py).
"""

from __future__ import annotations

from collections import Counter

from ...vocab.errors import StartupRefusal, UnsupportedError
from ...vocab.kinds import LayerKind
from ...vocab.records import record, replace
from ...vocab.units import cdiv
from .runs import Run
from .specs import KVCacheSpec, MLAAttentionSpec, SlidingWindowMLASpec, UniformTypeKVCacheSpecs, interned

RATIO = {LayerKind.DSV4_SWA: 1, LayerKind.DSV4_CSA: 4, LayerKind.DSV4_HCA: 128}
BLOCK_SIZE = 256  # DEEPSEEK_SPARSE_SWA's preferred block (0.20.0 sparse_swa.py:105-106; 0.33.0 :166)
SWA_BLOCK = 64  # DeepseekV4SWACache's block (0.20.0 sparse_swa.py:74; 0.33.0 :85)
ALIGNMENT = 576  # "FlashMLA requires 576B alignment" (0.20.0 deepseek_v4_attention.py; 0.33.0 compressor.py:191)
STATE_BLOCK = {4: 4, 128: 8}  # CompressorStateCache (0.20.0 deepseek_compressor.py:155-158; 0.33.0 :169-171)
V4 = "deepseek_v4"


def _swa(head: int, window: int) -> SlidingWindowMLASpec:
    return interned(SlidingWindowMLASpec, block_size=SWA_BLOCK, num_kv_heads=1, head_size=head, head_size_v=0,
                    dtype="uint8", sliding_window=window, cache_dtype_str="fp8_ds_mla", alignment=ALIGNMENT,
                    model_version=V4)


def _mla(block: int, head: int, ratio: int) -> MLAAttentionSpec:
    # 0.20.0 deepseek_v4_attention.py:630-660; 0.33.0 attention.py:860-885 (None when compress_ratio <= 1).
    return interned(MLAAttentionSpec, block_size=block, num_kv_heads=1, head_size=head, head_size_v=head,
                    dtype="uint8", cache_dtype_str="fp8_ds_mla", alignment=ALIGNMENT, compress_ratio=ratio,
                    model_version=V4)


def _indexer(block: int, index_head: int) -> MLAAttentionSpec:
    # DeepseekV4IndexerCache: 128 fp8 + one fp32 scale per 128 = 132 B a row, ratio 4 (0.20.0
    # deepseek_v4_attention.py:1024-1041; 0.33.0 attention.py:886-925, 1022-1035; the MXFP4 68-byte row of
    # --attention-config use_fp4_indexer_cache is not modelled).
    return interned(MLAAttentionSpec, block_size=block, num_kv_heads=1, head_size=index_head + index_head // 128 * 4,
                    head_size_v=index_head + index_head // 128 * 4, dtype="uint8", cache_dtype_str=None,
                    alignment=ALIGNMENT, compress_ratio=4)


def _state(ratio: int, head: int) -> SlidingWindowMLASpec:
    # CompressorStateCache: float32 kv + score state of 2 * coff * head_dim, coff = 1 + (ratio == 4), window
    # coff * ratio (0.20.0 deepseek_compressor.py:140-170,231-236; 0.33.0 compressor.py:139-192, 282-283).
    coff = 1 + (ratio == 4)
    return interned(SlidingWindowMLASpec, block_size=STATE_BLOCK[ratio], num_kv_heads=1, head_size=2 * coff * head,
                    head_size_v=0, dtype="float32", sliding_window=coff * ratio, alignment=ALIGNMENT)


def layer_caches(kind: LayerKind, *, block: int, head: int, index_head: int | None, window: int
                 ) -> list[tuple[str, KVCacheSpec]]:
    """One decoder layer's cache layers (module name, spec) in registration order: the indexer's key cache and its
    compressor state (ratio 4 only), the sliding-window cache, the compressed MLA, its compressor state
    (0.20.0 deepseek_v4.py:981-1035, deepseek_v4_attention.py:224-273; 0.33.0 attention.py:286-380)."""
    ratio = RATIO[kind]
    out: list[tuple[str, KVCacheSpec]] = []
    if ratio == 4:
        if not index_head:
            raise UnsupportedError("a DeepSeek-V4 layer of compress ratio 4 needs model.index_head_dim (its indexer)")
        out += [("attn.indexer.k_cache", _indexer(block, index_head)),
                ("attn.indexer.compressor.state_cache", _state(4, index_head))]
    out.append(("attn.swa_cache", _swa(head, window)))
    if ratio > 1:
        out += [("attn", _mla(block, head, ratio)), ("attn.compressor.state_cache", _state(ratio, head))]
    return out


def decoder_runs(kind: LayerKind, indices: range, *, block: int, head: int, index_head: int | None, window: int,
                 prefix: str = "") -> list[Run]:
    """The cache layers of decoder layers `indices` (one kind) as runs, one per module."""
    caches = layer_caches(kind, block=block, head=head, index_head=index_head, window=window)
    return [Run(prefix + module, order, indices, spec) for order, (module, spec) in enumerate(caches)]


# ---------------------------------------------------------------------------------------------------------
# Grouping. A layer is a one-index run; groups are lists of them in the order vLLM keeps.

def _layers(runs: tuple[Run, ...]) -> list[Run]:
    """Every layer as a one-index run, in registration order (decoder index, then module order)."""
    out = [Run(r.module, r.order, range(i, i + 1), r.spec) for r in runs for i in r.indices]
    return sorted(out, key=lambda r: (r.indices[0], r.order))


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM's _approximate_gcd (0.20.0 v1/core/kv_cache_utils.py:1446-1478; 0.33.0 kv_cache_planning.py): the
    divisor in [lower_bound, max] with the least total upward padding, ties to the larger."""
    lo, hi = max(1, lower_bound), max(values)
    if lo > hi:
        return lo
    best, best_pad = lo, None
    for d in range(lo, hi + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _per_page(layers: list[Run]) -> dict[int, list[Run]]:
    out: dict[int, list[Run]] = {}
    for r in layers:
        out.setdefault(r.spec.page_size_bytes, []).append(r)
    return out


def _split(layers: list[Run], num_groups: int) -> list[list[Run]]:
    """Pattern repeats (one layer of each page size, zip of the per-page lists) dealt round-robin into groups."""
    repeats = list(zip(*_per_page(layers).values()))
    return [[r for rep in repeats[i::num_groups] for r in rep] for i in range(num_groups)]


def group_keyed(runs: tuple[Run, ...], *, pad_states: bool) -> list[list[Run]]:
    """0.20.0-0.28.0: group_and_unify_kv_cache_specs then _get_kv_cache_groups_uniform_groups (0.20.0
    v1/core/kv_cache_utils.py:1408-1579; 0.27.0 :1592-1756). The MLA layers make one group; the sliding ones are
    keyed by (block size, window) and each set cut into strided groups of about as many layer tuples as the MLA
    group has. Up to 0.26.0 a sliding page is padded to the nearest MLA page at or above it (:1549; gone in 0.27.0,
    PR #48993)."""
    layers = _layers(runs)
    mla = [r for r in layers if isinstance(r.spec, MLAAttentionSpec)]
    keyed: dict[tuple[int, int], list[Run]] = {}
    for r in layers:
        if isinstance(r.spec, SlidingWindowMLASpec):
            keyed.setdefault((r.spec.block_size, r.spec.sliding_window), []).append(r)
    if not mla:
        raise UnsupportedError("a DeepSeek-V4 model without a compressed layer: vLLM asserts an MLA group")
    sets = [mla, *keyed.values()]
    tuples = [max(Counter(r.spec.page_size_bytes for r in s).values()) for s in sets]
    n = approximate_gcd(tuples, tuples[0])
    pages = sorted({r.spec.page_size_bytes for r in mla})
    groups = [mla]
    for s in keyed.values():
        if pad_states:
            s = [_pad_to(r, pages) for r in s]
        per = _per_page(s)
        counts = {len(v) for v in per.values()}
        if len(counts) != 1:
            raise StartupRefusal("a DeepSeek-V4 sliding set whose page sizes have different layer counts: vLLM "
                                 "asserts (kv_cache_utils.py _get_kv_cache_groups_uniform_groups)")
        groups += _split(s, cdiv(counts.pop(), n))
    return groups


def _pad_to(r: Run, pages: list[int]) -> Run:
    page = r.spec.page_size_bytes
    higher = [p for p in pages if p >= page]
    if not higher:
        raise StartupRefusal(f"a DeepSeek-V4 state page of {page:,} B is larger than every MLA page: vLLM asserts")
    if higher[0] == page:
        return r
    return r._replace(spec=replace(r.spec, page_size_padded=higher[0]))


def _same_type(bucket: list[Run], spec: KVCacheSpec) -> bool:
    """UniformTypeKVCacheSpecs.is_uniform_type on bucket + one spec: one block size, one type by the first's class
    (sliding: one window)."""
    first = bucket[0].spec
    if spec.block_size != first.block_size:
        return False
    if isinstance(first, SlidingWindowMLASpec):
        return isinstance(spec, SlidingWindowMLASpec) and spec.sliding_window == first.sliding_window
    return isinstance(spec, MLAAttentionSpec)


def group_packed(runs: tuple[Run, ...]) -> list[list[Run]]:
    """0.29.0+: _get_packed_kv_cache_groups (0.29.0 v1/core/kv_cache_utils.py:1668-1790; 0.33.0
    v1/core/kv_cache_planning.py:914): greedy uniform-type buckets in registration order; a bucket with equal
    layer counts per page size ("balanced") is cut into groups of the repeats _approximate_gcd picks, at least the
    largest mixed balanced bucket's; the others stay whole."""
    buckets: list[list[Run]] = []
    for r in _layers(runs):
        for b in buckets:
            if _same_type(b, r.spec):
                b.append(r)
                break
        else:
            buckets.append([r])
    rows = []
    for b in buckets:
        per = _per_page(b)
        rows.append((b, per, len({len(v) for v in per.values()}) == 1, max(len(v) for v in per.values())))
    floor = max((m for _, per, bal, m in rows if bal and len(per) > 1), default=0)
    repeats = approximate_gcd([m for _, _, bal, m in rows if bal], floor) if floor else None
    groups: list[list[Run]] = []
    for b, _, balanced, most in rows:
        k = cdiv(most, repeats) if balanced and repeats is not None else 1
        groups += [b] if k == 1 else _split(b, k)
    return groups


# ---------------------------------------------------------------------------------------------------------
# Bytes one block id costs on a worker (its projected groups), by the release's allocator.

@record
class Allocation:
    bytes_per_block: int
    num_tensors: int  # len(kv_cache_tensors)
    tensor_pages: tuple[int, ...]  # each tensor's bytes per block as the offloader pins them (packed: one)


def _pages(groups: list[list[Run]]) -> list[list[int]]:
    return [[r.spec.page_size_bytes for r in g] for g in groups]


def allocate(layout: str, groups: list[list[Run]], packed: bool = False) -> Allocation:
    """`layout`: the release's DeepSeek-V4 allocator (vocab/releases/steps.py MODEL_STEPS['dsv4_layout']); `packed`:
    0.24.0+ (one backing allocation of the buckets' slots)."""
    pages = _pages(groups)
    if layout == "tuples":
        # 0.20.0 kv_cache_utils.py:1162-1216 _get_kv_cache_config_deepseek_v4: the longest page-size bucket of any
        # group times the sum of the MLA group's distinct pages.
        full = sorted(set(pages[0]))
        n = max(max(Counter(p).values()) for p in pages if p)
        return Allocation(bytes_per_block=n * sum(full), num_tensors=n * len(full), tensor_pages=tuple(full) * n)
    if layout == "buckets":
        # 0.23.0 kv_cache_utils.py:1196-1244 (0.24.0-0.26.0 packed the same slots): per page size, as many slots
        # as the group with most layers of it.
        slots: dict[int, int] = {}
        for p in pages:
            for size, n in Counter(p).items():
                slots[size] = max(slots.get(size, 0), n)
        bpb = sum(s * n for s, n in slots.items())
        # 0.24.0+ packs the same slots into one allocation (_get_kv_cache_config_packed, 0.26.0 :1306-1341).
        pinned = (bpb,) if packed else tuple(s for s, n in slots.items() for _ in range(n))
        return Allocation(bytes_per_block=bpb, num_tensors=sum(slots.values()), tensor_pages=pinned)
    stride = max(sum(p) for p in pages)
    if layout == "slab":
        # 0.27.0 kv_cache_utils.py:1283-1358 _get_packed_kv_cache_layout: each group dense in one block slab,
        # groups overlaid; a tensor per distinct byte offset.
        offsets = set()
        for p in pages:
            at = 0
            for size in p:
                offsets.add(at)
                at += size
        return Allocation(bytes_per_block=stride, num_tensors=len(offsets), tensor_pages=(stride,))
    # 0.29.0+ one backing allocation, block-outermost: the widest group; one placement per (group, spec)
    # (0.29.0 kv_cache_utils.py:1407-1500; 0.33.0 kv_cache_planning.py:642-780).
    return Allocation(bytes_per_block=stride, tensor_pages=(stride,),
                      num_tensors=sum(len(dict.fromkeys(r.spec for r in g)) for g in groups))


def group_spec(layers: list[Run]) -> UniformTypeKVCacheSpecs:
    return UniformTypeKVCacheSpecs.of(tuple(layers))


def _max_pages(layers: list[Run], usage) -> int:
    """UniformTypeKVCacheSpecs.max_memory_usage_pages: the most blocks any layer's max usage takes."""
    return max(cdiv(r.spec.max_usage(usage), r.spec.page_size_bytes) for r in layers)


def needed_bytes(layout: str, groups: list[list[Run]], usage, bytes_per_block: int) -> int:
    """What one max_model_len request needs on a worker (_max_memory_usage_bytes_from_groups): up to 0.28.0 each
    group's pages x the most layer tuples x the MLA group's tuple bytes (0.20.0 kv_cache_utils.py:1745-1770, the same
    through 0.28.0); from 0.29.0 the blocks of every group x the bytes a block id costs (0.29.0 :2040-2070)."""
    pages = sum(_max_pages(g, usage) for g in groups if g)
    if layout == "packed":
        return pages * bytes_per_block
    tuples = max(max(Counter(r.spec.page_size_bytes for r in g).values()) for g in groups if g)
    return pages * tuples * sum({r.spec.page_size_bytes for r in groups[0]})
