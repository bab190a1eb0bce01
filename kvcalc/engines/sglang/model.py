"""SGLang's view of the model: which layers hold KV in which pool, and the bytes one token takes per pool on one rank
of each PP stage (the "cell size" SGLang divides its budget by). Read from the same ModelLayout as vLLM's stage (the
model mapping of inputs/hf/config.py), then judged as SGLang judges it:

- Full attention (MHA / GQA), srt/model_executor/pool_configurator.py:492-498 @0.5.23 (DefaultPoolConfigurator
  _compute_cell_size): `get_num_kv_heads(tp) x (head_dim + v_head_dim) x layers x kv itemsize`, heads per rank
  `max(1, heads // tp)` (srt/configs/model_config.py:1700-1711).
- MLA: `(kv_lora_rank + qk_rope_head_dim) x layers x kv itemsize` (pool_configurator.py:378-387,
  srt/mem_cache/kv_cache_configurator.py:3412-3420 calculate_mla_kv_cache_dim): one unsharded latent per rank.
- Sliding-window layers hold full KV unless the architecture is one SGLang sizes as hybrid SWA
  (vocab/releases/sglang.HYBRID_SWA_ARCHS): Gemma-3 and Mistral's windows are full attention in SGLang. A hybrid SWA
  model has two pools: full layers x full_per_token, and SWA layers x swa_per_token for swa_full_tokens_ratio x the
  full pool's tokens (pool_configurator.py:656-906 HybridSWAPoolConfigurator: cell = full + ratio x swa).
- PP: SGLang's own split (srt/distributed/utils.py:110-150 get_pp_indices): the last `layers % pp` stages get one
  layer more (SGLANG_PP_LAYER_PARTITION: parallel.pp_layer_partition).
"""

from __future__ import annotations

from ...vocab.errors import UnsupportedError
from ...vocab.kinds import LayerKind
from ...vocab.layout import Layout
from ...vocab.records import field, record

# SGLang's --kv-cache-dtype -> bytes per element (srt/mem_cache/kv_cache_dtype.py @0.5.23: auto = the model dtype,
# fp8_e4m3 / fp8_e5m2 = torch.float8_*, bf16 / bfloat16, fp16 / float16, fp32 / float32). kvcalc's spellings.
KV_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4}
MODEL_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


@record
class StageCells:
    """One PP stage's pools on one rank: bytes a token takes per layer and the layers holding it."""

    pp_rank: int = field("the stage")
    layers: tuple[int, int] = field("its decoder layers [start, end)")
    full_layers: int = field("layers in the full (or MLA) pool")
    swa_layers: int = field("layers in the sliding-window pool (hybrid SWA; 0 otherwise)")
    full_bytes_per_layer: int = field("bytes one token takes in one full (or MLA) layer on one rank")
    swa_bytes_per_layer: int = field("bytes one token takes in one SWA layer on one rank")
    mamba_layers: int = field("Mamba / linear-attention layers of the stage (their state is per request)", default=0)

    @property
    def full_bytes(self) -> int:
        return self.full_layers * self.full_bytes_per_layer

    @property
    def swa_bytes(self) -> int:
        return self.swa_layers * self.swa_bytes_per_layer


@record
class SglangModel:
    """The model as SGLang sizes it."""

    kind: str = field("mha | mla | hybrid_swa | dsv4")
    kv_itemsize: int = field("bytes per KV element")
    heads_per_rank: int = field("KV heads one rank holds (MLA: 1 latent)")
    head_dim: int = field("K width (MLA: kv_lora_rank + qk_rope_head_dim)")
    v_head_dim: int = field("V width (MLA: 0, one latent row)")
    stages: tuple[StageCells, ...] = field("per PP stage")
    mamba_layers: int = field("Mamba / linear-attention layers of the model (0: no state pool)", default=0)
    notes: tuple[str, ...] = field(json=False, default=())


def pp_indices(num_layers: int, pp: int, partition: tuple[int, ...] | None) -> list[tuple[int, int]]:
    """srt/distributed/utils.py:110-150 @0.5.23 get_pp_indices: SGLANG_PP_LAYER_PARTITION, else the last
    `num_layers % pp` stages get one layer more."""
    if partition is not None and pp > 1:
        starts = [sum(partition[:r]) for r in range(pp)]
        return [(s, s + n) for s, n in zip(starts, partition)]
    base, rem = divmod(num_layers, pp)
    out = []
    for r in range(pp):
        if r >= pp - rem:
            start = r * (base + 1) - (pp - rem)
            out.append((start, start + base + 1))
        else:
            out.append((r * base, r * base + base))
    return out


def _kv_itemsize(layout: Layout) -> int:
    dtype = layout.cache.kv_cache_dtype
    if dtype == "auto":
        return MODEL_BYTES.get(layout.model.dtype, 2)
    if dtype not in KV_BYTES:
        raise UnsupportedError(f"{layout.source}: cache.kv_cache_dtype: SGLang's KV pools are modelled for auto, "
                               f"fp8_e4m3, fp8_e5m2, bfloat16, float16 and float32, not {dtype}")
    return KV_BYTES[dtype]


def _refuse_unmodelled(layout: Layout) -> None:
    m = layout.model
    if m.index_head_dim is not None and not m.is_dsv4:
        raise UnsupportedError(f"{layout.source}: SGLang is not modelled for the DeepSeek-V3.2 DSA indexer pool (its "
                               "scaled FP8 layout depends on the DSA kernels); plan it with --engine vllm")
    if m.draft is not None:
        raise UnsupportedError(f"{layout.source}: model.draft (--speculative / --draft-config) is vLLM's drafter; "
                               "SGLang's is --speculative-algorithm and --speculative-draft-model-path "
                               "(sglang.speculative_*)")


def _uniform(layout: Layout, idx: list[int], what: str) -> tuple[int, int, int]:
    m = layout.model
    shapes = {(m.num_kv_heads[i], m.head_size[i], m.head_size_v[i]) for i in idx}
    if len(shapes) != 1:
        raise UnsupportedError(f"{layout.source}: SGLang keeps one head shape per pool; this model's {what} layers "
                               f"have {len(shapes)} (per-layer KV heads or head sizes are not modelled for SGLang)")
    return shapes.pop()


def sglang_model(layout: Layout, hybrid_swa_arch: bool, stage_layers: bool = True,
                 attn_tp: int | None = None) -> SglangModel:
    """The pools and cells SGLang builds for this layout (`hybrid_swa_arch`: the release lists the architecture;
    `stage_layers`: a hybrid SWA stage counts its own layers, 0.5.21+, else the whole model's on every stage;
    `attn_tp`: the attention TP, TP / the attention DP: KV heads per rank, srt/runtime_context.py:73-76 @0.5.23)."""
    _refuse_unmodelled(layout)
    m, tp = layout.model, attn_tp or layout.parallel.tensor_parallel_size
    if m.is_dsv4:  # every layer keeps its sliding window, the compressed ones more (engines/sglang/dsv4.py)
        from .dsv4 import SLOT_BYTES

        return SglangModel(kind="dsv4", kv_itemsize=1, heads_per_rank=1, head_dim=m.head_size[0], v_head_dim=0,
                           stages=(StageCells(pp_rank=0, layers=(0, m.num_layers), full_layers=m.num_layers,
                                              swa_layers=0, full_bytes_per_layer=SLOT_BYTES, swa_bytes_per_layer=0),))
    itemsize = _kv_itemsize(layout)
    kinds = m.layer_types
    attn = [i for i, k in enumerate(kinds) if k.attention or k is LayerKind.MLA]
    if not attn:
        raise UnsupportedError(f"{layout.source}: the model has no attention layer: no KV pool to plan")
    sliding = {i for i in attn if kinds[i] in (LayerKind.SLIDING, LayerKind.CHUNKED)}
    hybrid = hybrid_swa_arch and bool(sliding) and len(sliding) < len(attn)
    notes = []
    if sliding and not hybrid:
        notes.append(f"{len(sliding)} sliding-window layer(s) hold full KV in SGLang: the architecture is not one "
                     "SGLang sizes as hybrid SWA (srt/configs/model_config.py is_hybrid_swa_model)")
    if m.is_mla:
        heads, head, v = 1, (m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0), 0
        full_layer = head * itemsize
        swa_layer = 0
        kind = "mla"
    else:
        full_idx = [i for i in attn if not hybrid or i not in sliding]
        h, head, v = _uniform(layout, full_idx, "full-attention")
        heads = max(1, h // tp)
        full_layer = heads * (head + v) * itemsize
        swa_layer = 0
        if hybrid:
            sh, sd, sv = _uniform(layout, sorted(sliding), "sliding-window")
            swa_layer = max(1, sh // tp) * (sd + sv) * itemsize
        kind = "hybrid_swa" if hybrid else "mha"
    ranges = pp_indices(m.num_layers, layout.parallel.pipeline_parallel_size, layout.parallel.pp_layer_partition)
    stages = []
    for r, (start, end) in enumerate(ranges):
        here = [i for i in attn if start <= i < end or hybrid and not stage_layers]
        swa = sum(1 for i in here if hybrid and i in sliding)
        stages.append(StageCells(pp_rank=r, layers=(start, end), full_layers=len(here) - swa, swa_layers=swa,
                                 full_bytes_per_layer=full_layer, swa_bytes_per_layer=swa_layer,
                                 mamba_layers=sum(1 for k in kinds[start:end] if k.mamba)))
    return SglangModel(kind=kind, kv_itemsize=itemsize, heads_per_rank=heads, head_dim=head, v_head_dim=v,
                       stages=tuple(stages), mamba_layers=sum(1 for k in kinds if k.mamba), notes=tuple(notes))
