"""Layout -> per-PP-stage runs of layers with their specs. TP, PP, drafter and skip-layer rules live here only.

TP ranks of one stage hold identical specs, so one tuple of runs describes all its workers. The work is per
run of equal decoder layers (`ModelLayout.layer_runs`), not per layer. Spec sections 3 (layers), 4 (Mamba state
and hybrid alignment) and 1 (dtypes).
"""

from __future__ import annotations

from math import lcm

from ...vocab.errors import InternalError, LayoutError, StartupRefusal, UnsupportedError, known
from ...vocab.kinds import (GDN_FLASHINFER_CHECKPOINT_ALIGNMENT, KV_CACHE_DTYPES, KV_DTYPES, HeadRuleError, KVQuant,
                            LayerKind, heads_per_rank)
from ...vocab.layout import Layout
from ...vocab.records import record
from ...vocab.releases.attn_rules import cap_in
from .specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UsageContext,
    interned,
)
from .runs import Run, clip, named_specs, progressions
from .rules import in_flight_batches
from ...vocab.units import cdiv
from ...vocab.releases.vllm import Behaviour
from .attention_block import AttentionPlan, plan_attention

DEFAULT_MAMBA_CHUNK = 2048
_UNBOUNDED = 1 << 62  # the last stage owns every index past its decoder layers (drafter / MTP layers)


@record
class StageLayers:
    pp_rank: int
    decoder_layers: tuple[int, int]  # [start, end)
    owned: tuple[int, int]  # [lo, hi) of layer indices this stage's workers hold (the last: + drafter layers)
    runs: tuple[Run, ...]

    @property
    def layers(self) -> tuple[tuple[str, KVCacheSpec], ...]:
        """(layer name, spec) per layer in registration order, expanded on request."""
        return named_specs(self.runs)


@record
class HybridAlignment:
    """The hybrid attention block bump and Mamba page padding (spec 4.3), as one pure function's result."""

    block_size: int  # attention block size after the bump
    mamba_block_size: int | None  # mode "all": the chunk-aligned block; "align": the block size; else None
    mamba_page_padded: int | None  # the Mamba page padded to one attention page, when that is larger
    raised_from: int | None  # the block size before the bump, when it was raised


def hybrid_alignment(*, mode: str, block_size: int, attention_token_page: int, mamba_page: int, kernel_block: int,
                     mamba_chunk: int, multiple: int = 1) -> HybridAlignment:
    """Raise the attention block size until one attention page holds a Mamba state, and pad the Mamba page.

    `attention_token_page` is one token of the model's attention on one rank (full spec with B = 1, or MLA's);
    `mamba_page` the unpadded Mamba page; `kernel_block` the backend's kernel block (0.19.1: 16, 64 for MLA;
    0.20.0+: max(that, block_size)); `mamba_chunk` the user's mamba_block_size or the model's chunk size.
    Qwen3-Next TP 4 (a1 = 1,024 B, GDN state 272,384 B, kernel 16): block 16 · cdiv(272,384, 16 · 1,024) = 272.
    """
    raised_from = None
    mamba_block = None
    if mode == "all":
        chunk = lcm(mamba_chunk, kernel_block)
        blk = chunk * cdiv(cdiv(mamba_page, attention_token_page), chunk)
        mamba_block = blk
    else:
        blk = kernel_block * cdiv(mamba_page, kernel_block * attention_token_page)
    blk = multiple * cdiv(blk, multiple)  # 0.32.0+: a multiple of every backend's smallest kernel block
    if blk > block_size:
        raised_from = block_size
        block_size = blk
    attn_page = block_size * attention_token_page
    pad = attn_page if attn_page > mamba_page else None
    if mode == "align":
        mamba_block = block_size
    return HybridAlignment(block_size=block_size, mamba_block_size=mamba_block, mamba_page_padded=pad,
                           raised_from=raised_from)


@record
class LayerPlan:
    stages: tuple[StageLayers, ...]
    block_size: int  # attention block size after defaults and the hybrid bump
    block_size_note: str | None
    mamba_block_size: int | None
    mamba_cache_mode: str
    enable_prefix_caching: bool
    usage: UsageContext
    notes: tuple[str, ...]
    attention: AttentionPlan  # the backend of each kind of attention layer, and the block size they gave

    @property
    def runs(self) -> tuple[Run, ...]:
        """Every stage's runs (layer names are unique across stages)."""
        if len(self.stages) == 1:
            return self.stages[0].runs
        return tuple(r for s in self.stages for r in s.runs)


def pp_split(num_layers: int, pp: int, partition: tuple[int, ...] | None = None) -> list[int]:
    """vLLM's get_pp_indices: layers per stage; the remainder goes to stages PP-2, PP-3, ... (61/4 -> 15,15,16,15)."""
    if partition is not None:
        return list(partition)
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[pp - i] += 1
    return parts


@record
class _KVDtype:
    storage: str
    quant: KVQuant
    mla_str: str  # the cache-dtype string recorded on MLA specs


def resolve_kv_dtype(layout: Layout, behaviour: Behaviour, *, for_layer_auto: bool = False,
                     name: str | None = None) -> _KVDtype:
    """The KV dtype of the layers: the layout's (`name`: the format vLLM switched to, fp8_ds_mla), or auto."""
    name = "auto" if for_layer_auto else name or layout.cache.kv_cache_dtype
    row = KV_DTYPES.get(name)
    if row is None:
        raise UnsupportedError(
            f"{layout.source}: cache.kv_cache_dtype: unsupported KV dtype {name!r}; "
            f"kvcalc models {', '.join(KV_CACHE_DTYPES)}"
        )
    if row.since > behaviour.release:
        raise LayoutError(layout.source, "cache.kv_cache_dtype", f"a KV dtype vLLM {behaviour.version} knows", name,
                          detail="added in 0.20.0")
    if name == "fp8_ds_mla" and not layout.model.is_mla:
        raise LayoutError(layout.source, "cache.kv_cache_dtype", "fp8_ds_mla only for MLA models", name)
    if row.quant is not KVQuant.NONE and layout.model.is_mla:
        raise UnsupportedError(f"{layout.source}: cache.kv_cache_dtype: {name} with MLA layers is not modelled")
    key = (row.storage or layout.model.dtype, row.quant, name)
    found = _KV_DTYPE_OF.get(key)  # a handful of (storage, quant, name) triples: one record each, made once
    if found is None:
        found = _KV_DTYPE_OF[key] = _KVDtype(storage=key[0], quant=key[1], mla_str=name)
    return found


_KV_DTYPE_OF: dict[tuple, _KVDtype] = {}  # bounded by KV_DTYPES x the model dtypes


def _split_skip(indices: range, skip: frozenset) -> tuple[list[int], list[int]]:
    """(indices not skipped, indices skipped) of one run."""
    keep: list[int] = []
    skipped: list[int] = []
    for i in indices:
        (skipped if i in skip else keep).append(i)
    return keep, skipped


class _Builder:
    """Specs for one layout, one object per distinct shape (61 MLA layers share one spec and its cached sizes)."""

    def __init__(self, layout: Layout, behaviour: Behaviour, block_size: int, kv: _KVDtype, kv_auto: _KVDtype,
                 mamba: MambaSpec | None):
        self.layout, self.behaviour = layout, behaviour
        self.model = layout.model
        self.tp = layout.parallel.tensor_parallel_size
        self.block_size = block_size
        self.kv, self.kv_auto = kv, kv_auto
        self.mamba = mamba  # with Mamba layers: their spec
        skip = layout.cache.kv_cache_dtype_skip_layers
        self.skip = frozenset(i for i in skip if isinstance(i, int)) if skip else frozenset()
        self.skip_sliding = bool(skip) and "sliding_window" in skip

    @property
    def mamba_spec(self) -> MambaSpec:
        if self.mamba is None:
            raise InternalError(f"{self.layout.source}: Mamba layers without their spec")
        return self.mamba

    def heads(self, total: int, key: str) -> int:
        try:
            return heads_per_rank(total, self.tp, replicates=self.model.kv_head_replication)
        except HeadRuleError as e:
            raise LayoutError(self.layout.source, key, str(e), total) from None

    def attention(self, kind: LayerKind, heads: int, d: int, dv: int, kv: _KVDtype) -> KVCacheSpec:
        if not self.behaviour.sliding_page_uses_head_size_v and kind in (LayerKind.SLIDING, LayerKind.CHUNKED):
            dv = d  # before 0.20.0 these pages were 2 * B * H * D * s
        since = self.model.head_size_v_since
        if since is not None and self.behaviour.release < tuple(int(x) for x in since.split(".")):
            dv = d  # the model zero-pads V to the K head size (MiMo-V2 before 0.20.0)
        bs = self.block_size
        if kind is LayerKind.SLIDING:
            return interned(SlidingWindowSpec, block_size=bs, num_kv_heads=heads, head_size=d, head_size_v=dv,
                            dtype=kv.storage, kv_quant=kv.quant, sliding_window=self.model.sliding_window)
        if kind is LayerKind.CHUNKED:
            return interned(ChunkedLocalAttentionSpec, block_size=bs, num_kv_heads=heads, head_size=d, head_size_v=dv,
                            dtype=kv.storage, kv_quant=kv.quant, attention_chunk_size=self.model.attention_chunk_size)
        return interned(FullAttentionSpec, block_size=bs, num_kv_heads=heads, head_size=d, head_size_v=dv,
                        dtype=kv.storage, kv_quant=kv.quant)

    def mla(self) -> MLAAttentionSpec:
        d, bs, kv = self.model.mla_head_size, self.block_size, self.kv
        return interned(MLAAttentionSpec, block_size=bs, num_kv_heads=1, head_size=d, head_size_v=d, dtype=kv.storage,
                        cache_dtype_str=kv.mla_str)

    def indexer(self, dim: int) -> MLAAttentionSpec:
        # DeepSeek-V3.2 indexer: 1-byte keys plus one fp32 scale per 128 dims (128 -> 132 bytes/token).
        d, bs = dim + (dim // 128) * 4, self.block_size
        return interned(MLAAttentionSpec, block_size=bs, num_kv_heads=1, head_size=d, head_size_v=d, dtype="uint8",
                        cache_dtype_str=None)

    def attention_runs(self, kind: LayerKind, total: int, d: int, dv: int, indices: range, module: str, order: int,
                       key: str) -> list[Run]:
        """Standard attention layers of one shape; skipped layers (kv_cache_dtype_skip_layers) keep dtype auto."""
        heads = self.heads(total, key)
        if self.skip_sliding and kind is LayerKind.SLIDING:
            return [Run(module, order, indices, self.attention(kind, heads, d, dv, self.kv_auto))]
        if not self.skip or not any(i in indices for i in self.skip):  # range membership is O(1); lists are short
            return [Run(module, order, indices, self.attention(kind, heads, d, dv, self.kv))]
        keep, skipped = _split_skip(indices, self.skip)
        out = [Run(module, order, r, self.attention(kind, heads, d, dv, self.kv)) for r in progressions(keep)]
        out += [Run(module, order, r, self.attention(kind, heads, d, dv, self.kv_auto)) for r in progressions(skipped)]
        return out

    def decoder_runs(self, kind: LayerKind, h: int, d: int, dv: int, indices: range, prefix: str = "") -> list[Run]:
        """The KV modules of decoder layers `indices` of one kind and shape, their names under `prefix`."""
        if kind is LayerKind.NONE:
            return []
        if kind.dsv4:
            m = self.model
            from . import dsv4  # DeepSeek-V4 layouts only (start-up time is a target)

            return dsv4.decoder_runs(kind, indices, block=self.block_size, head=d, index_head=m.index_head_dim,
                                     window=known(m.sliding_window, "DeepSeek-V4's window"), prefix=prefix)
        if kind is LayerKind.MLA and self.model.mla_per_layer > 1:
            # LongCat-Flash: self_attn is a ModuleList of two DeepseekV2MLAAttention (longcat_flash.py:267-287).
            return [Run(f"{prefix}self_attn.{j}.attn", j, indices, self.mla()) for j in range(self.model.mla_per_layer)]
        if kind is LayerKind.MLA:
            out = []
            if self.model.index_head_dim:
                # Registered before the MLA wrapper in every read release (spec section 3.1).
                indexer = self.indexer(self.model.index_head_dim)
                keep, _ = _split_skip(indices, self.model.index_skip_layers)  # HY-V4: shared-indexer layers
                out += [Run(f"{prefix}self_attn.indexer.k_cache", 0, r, indexer) for r in progressions(keep)]
            out.append(Run(prefix + "self_attn.attn" if prefix else "self_attn.attn", 1, indices, self.mla()))
            return out
        if kind is LayerKind.MAMBA:
            module = self.model.mamba_section.row.module
            return [Run(prefix + module if prefix else module, 0, indices, self.mamba_spec)]
        out = self.attention_runs(LayerKind.FULL if kind is LayerKind.FULL_MAMBA else kind, h, d, dv, indices,
                                  f"{prefix}self_attn.attn", 0, "model.num_kv_heads")
        if kind is LayerKind.FULL_MAMBA:
            # Falcon-H1: attention is built (and registered) before the Mamba mixer in every layer.
            out.append(Run(f"{prefix}mamba", 1, indices, self.mamba_spec))
        return out

    def draft_runs(self) -> list[Run]:
        d = self.model.draft_section
        base = self.model.num_layers
        indices = range(base, base + d.num_layers)
        if d.method in ("mtp", "dspark") and self.model.is_dsv4:
            # DeepSeek-V4's MTP layer: compress ratio 1, a sliding-window cache only (0.20.0 deepseek_v4.py:900-903).
            # Its DSpark drafter builds DeepseekV4DecoderLayers at layers.{num_hidden_layers + i} (dspark.py:88-97
            # @0.26.0), ratio 1 past num_hidden_layers (models/deepseek_v4/attention.py:187-190 @0.26.0): the same.
            m = self.model
            head = next(h for k, h in zip(m.layer_types, m.head_size) if k.dsv4)
            prefix = "mtp_block." if d.method == "mtp" else "dspark."
            return self.decoder_runs(LayerKind.DSV4_SWA, 0, head, 0, indices, prefix)
        if d.method == "mtp":
            # MTP layers repeat the target's main attention layer (DeepSeek: the MLA spec, with its indexer).
            m = self.model
            main = next(i for i, t in enumerate(m.layer_types) if t in (LayerKind.MLA, LayerKind.FULL))
            return self.decoder_runs(m.layer_types[main], m.num_kv_heads[main], m.head_size[main],
                                     m.head_size_v[main], indices, "mtp_block.")
        heads, head_size, head_size_v = d.shape
        return self.attention_runs(LayerKind.FULL, heads, head_size, head_size_v, indices, "self_attn.attn", 0,
                                   "model.draft.num_kv_heads")


def _attention_token_page(b: _Builder, layout: Layout) -> int | None:
    """One token of the model's first attention layer on one rank (spec 4.3's a1), or None without attention."""
    first = None
    for (kind, h, d, dv), r in layout.model.layer_runs:
        if kind not in (LayerKind.MAMBA, LayerKind.NONE) and (first is None or r.start < first[1].start):
            first = ((kind, h, d, dv), r)
    if first is None:
        return None
    kind, h, d, dv = first[0]
    kv = b.kv
    if kind is LayerKind.MLA:
        d = layout.model.mla_head_size
        return interned(MLAAttentionSpec, block_size=1, num_kv_heads=1, head_size=d, head_size_v=0, dtype=kv.storage,
                        cache_dtype_str=kv.mla_str).page_size_bytes
    heads = b.heads(h, "model.num_kv_heads")
    return interned(FullAttentionSpec, block_size=1, num_kv_heads=heads, head_size=d, head_size_v=dv, dtype=kv.storage,
                    kv_quant=kv.quant).page_size_bytes


def _hybrid_kernel_block(layout: Layout, behaviour: Behaviour, block_size: int, mode: str,
                         attention: AttentionPlan) -> int:
    """The kernel block the hybrid alignment rounds to, as each release computes it (spec 4.3)."""
    model = layout.model
    rules = attention.rules
    if not behaviour.hybrid_kernel_uses_block_size:
        # 0.19.1 model_executor/models/config.py: 16, or 64 for MLA (128 with CUTLASS_MLA); 0.14-0.17: 32 for head
        # size 256 on family 100 with FlashInfer or no backend named (attn_rules hybrid_fi_hd256).
        if model.is_mla:
            return 128 if layout.attention_backend == "CUTLASS_MLA" or attention.config_backend == "CUTLASS_MLA" \
                else 64
        first = model.first_attention
        if rules.hybrid_fi_hd256 and cap_in(attention.device.capability, "10.x") and first is not None \
                and model.head_size[first] == 256 and layout.attention_backend in (None, "FLASHINFER"):
            return 32
        return 16
    kernel = max(attention.kernel_block, block_size)  # 0.20.0+ platforms/interface.py _align_hybrid_block_size
    if model.is_mla and behaviour.hybrid_mla_floor_128:
        kernel = max(kernel, 128)  # 0.27.0+: MLA hybrids keep 128-token blocks for the TRTLLM/FlashInfer kernels
    if mode == "align" and behaviour.hybrid_checkpoint_alignment and _gdn_checkpoints(layout):
        kernel = lcm(kernel, GDN_FLASHINFER_CHECKPOINT_ALIGNMENT)  # 0.33.0: prefill checkpoints on block edges
    return kernel


def backend_multiple(behaviour: Behaviour, attention: AttentionPlan) -> int:
    """0.32.0+: the hybrid block is also a multiple of every non-SSM backend's smallest kernel block (their lcm)."""
    return attention.kernel_lcm if behaviour.hybrid_backend_lcm else 1


def _gdn_checkpoints(layout: Layout) -> bool:
    """0.33.0: GDN layers with FlashInfer's prefill export mid-prefill checkpoints (64-token alignment): CUDA SM90
    (mamba/gdn/qwen_gdn_linear_attn.py:248-262 _resolve_gdn_prefill_backend). SM10x / SM12x take it only with head_k_dim
    128 and a CUDA 13 runtime, which kvcalc does not assume (the executed vectors ran without one: B200 / RTX 5090
    Qwen3-Next kept 544-token blocks)."""
    m = layout.model.mamba
    if m is None or m.kind != "gated_delta_net" or layout.platform != "cuda":
        return False
    return layout.capability == "9.0"


def _check_cache_options(layout: Layout, behaviour: Behaviour) -> None:
    """What the release itself refuses of the cache options: a block size outside its choices, skip layers before
    the option existed."""
    cache, src = layout.cache, layout.source
    if cache.block_size is None and not cache.kv_cache_dtype_skip_layers:
        return  # (the common case: nothing to refuse)
    choices = behaviour.block_size_choices
    if cache.block_size is not None and choices is not None and cache.block_size not in choices:
        raise LayoutError(src, "cache.block_size", f"one of {', '.join(map(str, choices))} for vLLM "
                          f"{behaviour.version} (its --block-size choices; any size from 0.18.0)", cache.block_size)
    if cache.kv_cache_dtype_skip_layers and not behaviour.supports_skip_layers:
        raise LayoutError(src, "cache.kv_cache_dtype_skip_layers", f"an empty list for vLLM {behaviour.version}",
                          sorted(map(str, cache.kv_cache_dtype_skip_layers)), detail="the option exists from 0.19.0")


def _mamba_side(layout: Layout, behaviour: Behaviour, block_size: int, mode: str, kv: _KVDtype, kv_auto: _KVDtype,
                notes: list[str], attention: AttentionPlan) -> tuple[int, int | None, MambaSpec | None, bool]:
    """(the attention block size, raised for a hybrid model so one attention page holds a Mamba state (spec 4.3);
    the Mamba block size; the Mamba spec; whether the block size was raised, so its "not set" note no longer
    applies). Only a model with Mamba layers gets past the first line."""
    if not layout.model.has_mamba:
        return block_size, None, None, False
    model, cache, tp = layout.model, layout.cache, layout.parallel.tensor_parallel_size
    mamba = model.mamba_section
    row, ns = mamba.row, (model.draft.num_speculative_tokens if model.draft else 0)

    def exact(a: int, b: int, what: str) -> int:
        if a % b:
            raise LayoutError(layout.source, f"model.mamba ({what})", f"a value divisible by tensor_parallel_size {tp}",
                              a)
        return a // b

    shapes = tuple(row.shapes(mamba.values, tp, ns if behaviour.release >= row.spec_rows_since else 0, exact))
    from .mamba import mamba_dtypes

    dtypes = mamba_dtypes(layout, len(shapes))
    mp = interned(MambaSpec, block_size=1, shapes=shapes, dtypes=dtypes).real_page_size_bytes
    a1 = _attention_token_page(_Builder(layout, behaviour, block_size, kv, kv_auto, None), layout)
    mamba_block = pad = None
    raised = False
    if a1 is not None and mp > 0:
        kernel = _hybrid_kernel_block(layout, behaviour, block_size, mode, attention)
        chunk = cache.mamba_block_size or (mamba.get("chunk_size") if mamba.has("chunk_size")
                                           else DEFAULT_MAMBA_CHUNK)
        multiple = backend_multiple(behaviour, attention)  # 0.32.0+
        al = hybrid_alignment(mode=mode, block_size=block_size, attention_token_page=a1, mamba_page=mp,
                              kernel_block=kernel, mamba_chunk=chunk, multiple=multiple)
        if al.raised_from is not None:
            notes.append(f"hybrid model: attention block size raised from {al.raised_from} to {al.block_size} so "
                         f"one attention page ({al.block_size} x {a1} B) holds a Mamba state ({mp} B)")
            raised = True
        block_size, mamba_block, pad = al.block_size, al.mamba_block_size, al.mamba_page_padded
        if pad is not None:
            notes.append(f"Mamba page padded from {mp} to {pad} B (+{(pad - mp) * 10000 // mp / 100:.2f} %)")
    elif mode in ("align", "all"):
        # An attention-free model: no page to align with. MambaModelConfig.verify_and_update_config (0.19.1 and
        # 0.33.0 model_executor/models/config.py:471 / :778): with prefix caching, mamba_block_size defaults to the
        # block size.
        mamba_block = cache.mamba_block_size or block_size
    if mode == "none":
        mamba_block = cache.mamba_block_size or cache.max_model_len
    # 0.33.0 qwen_gdn_linear_attn.py get_kv_cache_spec: a GDN layer exporting prefill checkpoints keeps one
    # more state block in align mode (kv_cache_interface.py MambaSpec.max_memory_usage_bytes).
    checkpoint_blocks = int(mode == "align" and behaviour.hybrid_checkpoint_alignment and _gdn_checkpoints(layout))
    spec = interned(MambaSpec, block_size=mamba_block, shapes=shapes, dtypes=dtypes, page_size_padded=pad,
                    mamba_type=row.name, num_speculative_blocks=ns, num_prefill_checkpoint_blocks=checkpoint_blocks)
    return block_size, mamba_block, spec, raised


def _stages(layout: Layout, b: _Builder) -> tuple[StageLayers, ...]:
    """Each PP stage's runs: its decoder layers (get_pp_indices), the drafter's on the last stage."""
    model, par = layout.model, layout.parallel
    pp = par.pipeline_parallel_size
    stages = []
    start = 0
    for rank, n in enumerate(pp_split(model.num_layers, pp, par.pp_layer_partition)):
        end = start + n
        runs: list[Run] = []
        for (kind, h, d, dv), r in model.layer_runs:
            mine = clip(r, start, end)
            if mine:
                runs += b.decoder_runs(kind, h, d, dv, mine)
        last = rank == pp - 1
        if last and model.draft and model.draft.num_layers:  # ngram / suffix drafting: no draft layers
            runs += b.draft_runs()
        stages.append(StageLayers(pp_rank=rank, decoder_layers=(start, end), owned=(start, _UNBOUNDED if last else end),
                                  runs=tuple(runs)))
        start = end
    return tuple(stages)


def _kv_dtypes(layout: Layout, behaviour: Behaviour, name: str) -> tuple[_KVDtype, _KVDtype, str | None]:
    """(the KV dtype, the one skipped layers keep, a note when the model's attention ignores the flag); `name`: the
    KV format the attention backend settled (fp8_ds_mla where vLLM switches to it)."""
    cache, model = layout.cache, layout.model
    kv = resolve_kv_dtype(layout, behaviour, name=name)
    # Only layers named by kv_cache_dtype_skip_layers keep dtype auto: without them the second dtype is never read.
    kv_auto = resolve_kv_dtype(layout, behaviour, for_layer_auto=True) if cache.kv_cache_dtype_skip_layers else kv
    if not model.kv_cache_dtype_auto:
        return kv, kv_auto, None
    # Falcon (falcon.py:173-197, every release read): Attention without cache_config takes kv_cache_dtype "auto"
    # (layers/attention/attention.py:276-279 @0.33.0): the model dtype, whatever --kv-cache-dtype says.
    auto = resolve_kv_dtype(layout, behaviour, for_layer_auto=True)
    note = None if cache.kv_cache_dtype == "auto" else (
        f"--kv-cache-dtype {cache.kv_cache_dtype} does not reach this model's attention (built without the cache "
        f"config): its KV cache keeps the model dtype {model.dtype}")
    return auto, auto, note


def build_layers(layout: Layout, behaviour: Behaviour) -> LayerPlan:
    """Layout -> every PP stage's KV-owning layers as runs of specs, the block sizes and the Mamba cache mode."""
    model, cache = layout.model, layout.cache
    since = model.registered_since
    if since is not None and behaviour.release < tuple(int(x) for x in since.split(".")):
        # vLLM's registry (model_executor/models/registry.py of that release) has no entry: refused at start-up.
        raise StartupRefusal(f"{layout.source}: vLLM {behaviour.version}'s model registry does not list "
                             f"{model.name}'s architecture (added in {since}; model.registered_since)")
    resolve_kv_dtype(layout, behaviour)  # the release's KV dtypes first (vLLM's argument parser refuses others)
    attention = plan_attention(layout, behaviour)
    if model.requires_backend is not None and attention.backend != model.requires_backend:
        raise StartupRefusal(f"{layout.source}: vLLM {behaviour.version} picks {attention.backend} for {model.name}, "
                             f"whose layers assert {model.requires_backend} (model.requires_backend): give "
                             f"--attention-backend {model.requires_backend}")
    kv, kv_auto, auto_note = _kv_dtypes(layout, behaviour, attention.kv_cache_dtype)
    _check_cache_options(layout, behaviour)
    if model.has_mamba:
        from .mamba import mamba_mode  # hybrid and Mamba layouts only (start-up time is a target)

        prefix, mode, mode_notes = mamba_mode(layout, behaviour)
    else:
        prefix, mode, mode_notes = cache.enable_prefix_caching is not False, "none", ()  # vLLM: on by default
    notes = list(mode_notes) + ([auto_note] if auto_note else [])
    if attention.kv_basis:
        notes.append(f"KV cache dtype {attention.kv_cache_dtype}: {attention.kv_basis}")
    # --- block size (the backend's: attention_block.py) and the hybrid bump (section 4.3)
    block_size, block_note = attention.block_size, None
    if cache.block_size is None:
        block_note = attention.block_note
    block_size, mamba_block, mamba_spec, raised = _mamba_side(layout, behaviour, block_size, mode, kv, kv_auto, notes,
                                                              attention)
    if raised:
        block_note = None
    if model.sink_len is not None and model.sink_len % block_size:
        # 0.33.0 v1/core/single_type_kv_cache_manager.py:2219-2220 SinkFullAttentionManager (an assertion at start-up)
        raise StartupRefusal(f"{layout.source}: model.sink_len {model.sink_len} is not a multiple of the block size "
                             f"{block_size}: vLLM asserts sink_len % block_size == 0")
    if model.sink_len is not None and behaviour.sink_blocks_reserved:
        notes.append(f"vLLM {behaviour.version} takes sink_len / block_size = {model.sink_len // block_size} blocks "
                     "from the free pool at start for the static sinks: the logged capacity still counts them")
    stages = _stages(layout, _Builder(layout, behaviour, block_size, kv, kv_auto, mamba_spec))
    # 0.26+: a window keeps the batches in flight x max_num_batched_tokens (rules.in_flight_batches).
    batches = in_flight_batches(layout, behaviour, stages, notes)
    usage = UsageContext(max_model_len=cache.max_model_len, max_num_batched_tokens=cache.max_num_batched_tokens
                         * batches, mamba_cache_mode=mode)
    return LayerPlan(stages=stages, block_size=block_size, block_size_note=block_note,
                     mamba_block_size=mamba_block, mamba_cache_mode=mode, enable_prefix_caching=prefix,
                     usage=usage, notes=tuple(notes), attention=attention)
