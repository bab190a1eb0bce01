"""Layout -> per-PP-stage ordered {layer name: spec}. TP, PP, drafter and skip-layer rules live here only.

TP ranks of one stage hold identical specs, so one list per stage describes all its workers.
Spec sections 3 (layers), 4 (Mamba state and hybrid alignment) and 1 (dtypes).
"""

from __future__ import annotations

from typing import NamedTuple
from math import lcm

from .errors import LayoutError, UnsupportedError
from .layout import KV_CACHE_DTYPE_TABLE, KV_CACHE_DTYPES, Layout, ModelLayout, base_block_size
from .specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UsageContext,
)
from .units import MODEL_DTYPES, cdiv
from .versions import Behaviour

# 0.19.1's fixed kernel block for the hybrid alignment (section 4.3): 16, or 64 for MLA.
HYBRID_KERNEL_BLOCK = {False: 16, True: 64}
DEFAULT_MAMBA_CHUNK = 2048

# vLLM's module names for each Mamba kind, from the reference model of that kind.
_MAMBA_MODULE = {
    "mamba1": "mamba",  # Jamba
    "mamba2": "mixer",  # Nemotron-H, Mamba2
    "gated_delta_net": "linear_attn",  # Qwen3-Next
    "short_conv": "conv",  # LFM2
    "linear_attention": "self_attn",  # MiniMax
}
# Kinds whose models support Mamba prefix caching in mode "all" (0.19.1 list: Jamba, Mamba, Mamba2,
# NemotronH, Bamba, Zamba2, GraniteMoeHybrid, FalconH1); the others use "align".
_MAMBA_MODE_ALL = {"mamba1", "mamba2"}

class StageLayers(NamedTuple):
    pp_rank: int
    decoder_layers: tuple[int, int]  # [start, end)
    layers: tuple[tuple[str, KVCacheSpec], ...]


class LayerPlan(NamedTuple):
    stages: tuple[StageLayers, ...]
    block_size: int  # attention block size after defaults and the hybrid bump
    block_size_note: str | None
    mamba_block_size: int | None
    mamba_cache_mode: str
    enable_prefix_caching: bool
    usage: UsageContext
    notes: tuple[str, ...]


def pp_split(num_layers: int, pp: int, partition: tuple[int, ...] | None = None) -> list[int]:
    """vLLM's get_pp_indices: layers per stage; the remainder goes to stages PP-2, PP-3, ... (61/4 -> 15,15,16,15)."""
    if partition is not None:
        return list(partition)
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[pp - i] += 1
    return parts


def heads_per_rank(total: int, tp: int, *, source: str, key: str) -> int:
    """KV heads one TP rank holds: total/TP, or 1 replicated head when TP exceeds the heads."""
    if total >= tp:
        if total % tp:
            raise LayoutError(source, key, f"a KV head count divisible by tensor_parallel_size {tp}", total)
        return total // tp
    if tp % total:
        raise LayoutError(source, key, f"a KV head count that divides tensor_parallel_size {tp} (heads are replicated)", total)
    return 1


class _KVDtype(NamedTuple):
    storage: str
    quant: str | None
    mla_str: str  # the cache-dtype string recorded on MLA specs


def resolve_kv_dtype(layout: Layout, behaviour: Behaviour, *, for_layer_auto: bool = False) -> _KVDtype:
    name = "auto" if for_layer_auto else layout.cache.kv_cache_dtype
    if name not in KV_CACHE_DTYPE_TABLE:
        raise UnsupportedError(
            f"{layout.source}: cache.kv_cache_dtype: unsupported KV dtype {name!r}; kvcalc models {', '.join(KV_CACHE_DTYPES)}"
        )
    storage, quant, needs_020 = KV_CACHE_DTYPE_TABLE[name]
    if needs_020 and not behaviour.supports_scaled_kv_dtypes:
        raise LayoutError(layout.source, "cache.kv_cache_dtype", f"a KV dtype vLLM {behaviour.version} knows", name,
                          detail="added in 0.20.0")
    if name == "fp8_ds_mla" and not layout.model.is_mla:
        raise LayoutError(layout.source, "cache.kv_cache_dtype", "fp8_ds_mla only for MLA models", name)
    if quant and layout.model.is_mla:
        raise UnsupportedError(f"{layout.source}: cache.kv_cache_dtype: {name} with MLA layers is not modelled")
    return _KVDtype(storage or layout.model.dtype, quant, name)


def _mamba_shapes(model: ModelLayout, tp: int, ns: int, source: str) -> list[tuple[int, ...]]:
    m = model.mamba
    assert m is not None
    g = m.get

    def exact(a: int, b: int, what: str) -> int:
        if a % b:
            raise LayoutError(source, f"model.mamba ({what})", f"a value divisible by tensor_parallel_size {tp}", a)
        return a // b

    if m.kind == "mamba1":
        inter = g("mamba_expand") * g("hidden_size")
        per = exact(inter, tp, "mamba_expand * hidden_size")
        return [(g("mamba_d_conv") - 1, per), (per, g("mamba_d_state"))]
    if m.kind == "mamba2":
        nh, hd, groups, d_state = g("mamba_num_heads"), g("mamba_head_dim"), g("n_groups"), g("ssm_state_size")
        inter = g("intermediate_size") if m.has("intermediate_size") else nh * hd
        # vLLM replicates the groups up to TP when they do not shard evenly (n_groups=1, TP=4 -> 4).
        groups = groups if groups % tp == 0 else tp
        conv_dim = inter + 2 * groups * d_state
        return [(g("conv_kernel") - 1 + ns, exact(conv_dim, tp, "conv dim")), (exact(nh, tp, "mamba_num_heads"), hd, d_state)]
    if m.kind == "gated_delta_net":
        nk, nv = g("linear_num_key_heads"), g("linear_num_value_heads")
        dk, dv = g("linear_key_head_dim"), g("linear_value_head_dim")
        conv_dim = dk * nk * 2 + dv * nv
        return [
            (g("linear_conv_kernel_dim") - 1 + ns, exact(conv_dim, tp, "conv dim")),
            (exact(nv, tp, "linear_num_value_heads"), dv, dk),
        ]
    if m.kind == "short_conv":
        return [(g("conv_L_cache") - 1, exact(g("hidden_size"), tp, "hidden_size"))]
    if m.kind == "linear_attention":
        return [(g("num_attention_heads") // tp, g("head_dim"), g("head_dim"))]
    raise UnsupportedError(f"{source}: model.mamba.kind: {m.kind!r} is not modelled")  # pragma: no cover


def _mamba_dtypes(layout: Layout, n_states: int) -> tuple[str, ...]:
    conv = layout.cache.mamba_cache_dtype
    conv = layout.model.dtype if conv == "auto" else MODEL_DTYPES[conv]
    ssm = layout.cache.mamba_ssm_cache_dtype
    ssm = conv if ssm == "auto" else MODEL_DTYPES[ssm]
    if layout.model.mamba and layout.model.mamba.kind == "linear_attention":
        if conv == "float32":
            raise UnsupportedError(f"{layout.source}: cache.mamba_cache_dtype: float32 is refused by vLLM for linear attention")
        return (conv,)
    if n_states == 1:
        return (conv,)
    return (conv, ssm)


def build_layers(layout: Layout, behaviour: Behaviour) -> LayerPlan:
    model, cache, par = layout.model, layout.cache, layout.parallel
    src = layout.source
    tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
    notes: list[str] = []
    kv = resolve_kv_dtype(layout, behaviour)
    kv_auto = resolve_kv_dtype(layout, behaviour, for_layer_auto=True)
    skip = set(cache.kv_cache_dtype_skip_layers)
    if skip and not behaviour.supports_skip_layers:
        raise LayoutError(src, "cache.kv_cache_dtype_skip_layers", f"an empty list for vLLM {behaviour.version}",
                          sorted(map(str, skip)), detail="the option exists from 0.19.0")

    # --- prefix caching and Mamba cache mode (section 4.2)
    has_mamba = model.has_mamba
    prefix = cache.enable_prefix_caching
    if prefix is None:
        prefix = not has_mamba  # vLLM: on by default, off by default for hybrid (Mamba) models
    mode = "none"
    if has_mamba:
        if cache.mamba_cache_mode != "auto":
            mode = cache.mamba_cache_mode
        elif prefix:
            mode = "all" if model.mamba.kind in _MAMBA_MODE_ALL else "align"
        if mode != "none" and not prefix:
            raise LayoutError(src, "cache.mamba_cache_mode", "none when prefix caching is off", mode)

    # --- block size (section 3.9) and the hybrid bump (section 4.3)
    block_size = base_block_size(cache.block_size, model.is_mla)
    block_note = None
    if cache.block_size is None:
        block_note = (f"block size not set: using {block_size}, "
                      + ("the MLA backends' default" if model.is_mla else "vLLM's default"))
    ns = model.draft.num_speculative_tokens if model.draft else 0

    def attn_kv(idx: int, is_sliding: bool) -> _KVDtype:
        if idx in skip or (is_sliding and "sliding_window" in skip):
            return kv_auto
        return kv

    # Layers of one shape share one spec object, so its derived sizes are computed once (61 MLA layers: 1).
    memo: dict[tuple, KVCacheSpec] = {}

    def attn_spec(kind: str, idx: int, heads: int, d: int, dv: int, bs: int) -> KVCacheSpec:
        k = attn_kv(idx, kind == "sliding_attention")
        if not behaviour.sliding_page_uses_head_size_v and kind in ("sliding_attention", "chunked_attention"):
            dv = d  # before 0.20.0 these pages were 2 * B * H * D * s
        key = (kind, heads, d, dv, bs, k)
        if key not in memo:
            memo[key] = _attn_spec(kind, heads, d, dv, bs, k)
        return memo[key]

    def _attn_spec(kind: str, heads: int, d: int, dv: int, bs: int, k: _KVDtype) -> KVCacheSpec:
        common = dict(block_size=bs, num_kv_heads=heads, head_size=d, head_size_v=dv, dtype=k.storage, kv_quant=k.quant)
        if kind == "sliding_attention":
            return SlidingWindowSpec(sliding_window=model.sliding_window, **common)
        if kind == "chunked_attention":
            return ChunkedLocalAttentionSpec(attention_chunk_size=model.attention_chunk_size, **common)
        return FullAttentionSpec(**common)

    def mla_spec(bs: int) -> MLAAttentionSpec:
        if ("mla", bs) not in memo:
            memo[("mla", bs)] = MLAAttentionSpec(
                block_size=bs, num_kv_heads=1, head_size=model.kv_lora_rank + model.qk_rope_head_dim,
                head_size_v=model.kv_lora_rank + model.qk_rope_head_dim, dtype=kv.storage,
                cache_dtype_str=kv.mla_str,
            )
        return memo[("mla", bs)]

    def indexer_spec(bs: int) -> MLAAttentionSpec:
        # DeepSeek-V3.2 indexer: 1-byte keys plus one fp32 scale per 128 dims (128 -> 132 bytes/token).
        if ("indexer", bs) not in memo:
            d = model.index_head_dim + (model.index_head_dim // 128) * 4
            memo[("indexer", bs)] = MLAAttentionSpec(block_size=bs, num_kv_heads=1, head_size=d, head_size_v=d,
                                                     dtype="uint8", cache_dtype_str=None)
        return memo[("indexer", bs)]

    mamba_block = None
    mamba_pad = None
    mamba_shapes = _mamba_shapes(model, tp, ns, src) if has_mamba else []
    if has_mamba:
        mamba_dtypes = _mamba_dtypes(layout, len(mamba_shapes))
        probe = MambaSpec(block_size=1, shapes=tuple(mamba_shapes), dtypes=mamba_dtypes)
        mp = probe.real_page_size_bytes
        attn_idx = next((i for i, t in enumerate(model.layer_types) if t not in ("mamba", "none")), None)
        if attn_idx is not None and mp > 0:
            # One token of the model's attention on one rank.
            if model.layer_types[attn_idx] == "mla":
                a1 = mla_spec(1).page_size_bytes
            else:
                heads = heads_per_rank(model.num_kv_heads[attn_idx], tp, source=src, key="model.num_kv_heads")
                a1 = FullAttentionSpec(block_size=1, num_kv_heads=heads, head_size=model.head_size[attn_idx],
                                       head_size_v=model.head_size_v[attn_idx], dtype=kv.storage,
                                       kv_quant=kv.quant).page_size_bytes
            if behaviour.hybrid_kernel_uses_block_size:
                kernel = max(HYBRID_KERNEL_BLOCK[model.is_mla], block_size)
            else:
                kernel = HYBRID_KERNEL_BLOCK[model.is_mla]
            if mode == "all":
                chunk_src = cache.mamba_block_size or (
                    model.mamba.get("chunk_size") if model.mamba.has("chunk_size") else DEFAULT_MAMBA_CHUNK)
                chunk = lcm(chunk_src, kernel)
                blk = chunk * cdiv(cdiv(mp, a1), chunk)
                mamba_block = blk
            else:
                blk = kernel * cdiv(mp, kernel * a1)
            if blk > block_size:
                notes.append(f"hybrid model: attention block size raised from {block_size} to {blk} so one "
                             f"attention page ({blk} x {a1} B) holds a Mamba state ({mp} B)")
                block_size = blk
                block_note = None
            attn_page = block_size * a1
            if attn_page > mp:
                mamba_pad = attn_page
                notes.append(f"Mamba page padded from {mp} to {attn_page} B "
                             f"(+{(attn_page - mp) * 10000 // mp / 100:.2f} %)")
        if mode == "align":
            mamba_block = block_size
        elif mode == "none":
            mamba_block = cache.mamba_block_size or cache.max_model_len

    def mamba_spec() -> MambaSpec:
        if "mamba" not in memo:
            memo["mamba"] = MambaSpec(block_size=mamba_block, shapes=tuple(mamba_shapes), dtypes=mamba_dtypes,
                                      page_size_padded=mamba_pad, mamba_type=model.mamba.kind,
                                      num_speculative_blocks=ns)
        return memo["mamba"]

    def decoder_layer(i: int, kind: str, prefix: str, idx: int | None = None) -> list[tuple[str, KVCacheSpec]]:
        """The KV modules of decoder layer `i` (shape source), named under `prefix`; `idx` is the layer
        index vLLM parses from the name for skip layers (an MTP layer copies layer i's shape)."""
        idx = i if idx is None else idx
        if kind == "none":
            return []
        if kind == "mla":
            out = []
            if model.index_head_dim:
                # Registered before the MLA wrapper in every read release (spec section 3.1).
                out.append((f"{prefix}.self_attn.indexer.k_cache", indexer_spec(block_size)))
            out.append((f"{prefix}.self_attn.attn", mla_spec(block_size)))
            return out
        if kind == "mamba":
            return [(f"{prefix}.{_MAMBA_MODULE[model.mamba.kind]}", mamba_spec())]
        if kind == "full_attention+mamba":
            # Falcon-H1: attention is built (and registered) before the Mamba mixer in every layer.
            return decoder_layer(i, "full_attention", prefix, idx) + [(f"{prefix}.mamba", mamba_spec())]
        heads = heads_per_rank(model.num_kv_heads[i], tp, source=src, key="model.num_kv_heads")
        return [(f"{prefix}.self_attn.attn",
                 attn_spec(kind, idx, heads, model.head_size[i], model.head_size_v[i], block_size))]

    def draft_layers() -> list[tuple[str, KVCacheSpec]]:
        d = model.draft
        out: list[tuple[str, KVCacheSpec]] = []
        base = model.num_layers
        if d.method == "mtp":
            # MTP layers repeat the target's main attention layer (DeepSeek: the MLA spec, with its indexer).
            main = next(i for i, t in enumerate(model.layer_types) if t in ("mla", "full_attention"))
            for j in range(d.num_layers):
                out += decoder_layer(main, model.layer_types[main], f"model.layers.{base + j}.mtp_block", base + j)
            return out
        heads = heads_per_rank(d.num_kv_heads, tp, source=src, key="model.draft.num_kv_heads")
        for j in range(d.num_layers):
            out.append((f"model.layers.{base + j}.self_attn.attn",
                        attn_spec("full_attention", base + j, heads, d.head_size, d.head_size_v or d.head_size,
                                  block_size)))
        return out

    parts = pp_split(model.num_layers, pp, par.pp_layer_partition)
    stages = []
    start = 0
    for rank, n in enumerate(parts):
        layers: list[tuple[str, KVCacheSpec]] = []
        for i in range(start, start + n):
            layers += decoder_layer(i, model.layer_types[i], f"model.layers.{i}")
        if rank == pp - 1 and model.draft:
            layers += draft_layers()
        stages.append(StageLayers(pp_rank=rank, decoder_layers=(start, start + n), layers=tuple(layers)))
        start += n

    usage = UsageContext(max_model_len=cache.max_model_len, max_num_batched_tokens=cache.max_num_batched_tokens,
                         mamba_cache_mode=mode)
    return LayerPlan(stages=tuple(stages), block_size=block_size, block_size_note=block_note,
                     mamba_block_size=mamba_block, mamba_cache_mode=mode, enable_prefix_caching=prefix,
                     usage=usage, notes=tuple(notes))
