"""The model's attention layers -> the backend each kind of them gets (attention.py) and the KV block size that
follows, before the hybrid Mamba alignment (layers.py), as each release decides it (vocab/releases/attn_rules.py
ATTENTION_STEPS):

- 0.14-0.17: `check_and_update_config` sets 16 at config time and forces MLA sizes: 0.14 CUTLASS_MLA (128) on family
  100, FlashMLA's 64 on SM9x; 0.15+ FLASHINFER_MLA (64) on family 100 when qk_nope_head_dim is 128; 64 for sparse MLA
  (FlashMLASparse) -- the backend chosen afterwards does not move it;
- 0.18-0.19: `update_block_size_for_backend` after load_model: the first attention layer's backend's preferred size
  (16 if it takes 16, else its smallest kernel block); ROCm 0.18 keeps check_and_update_config's 16;
- 0.20-0.30: the first non-SSM backend's preferred size;
- 0.31+: one size every non-SSM backend supports (16 when all do; else the smallest LCM of one kernel size each).
A --block-size the user gives is kept (0.14-0.17 still force MLA sizes over it).
"""

from __future__ import annotations

import itertools
from math import lcm
from operator import attrgetter

from ...vocab.errors import known
from ...vocab.kinds import LayerKind
from ...vocab.layout import Layout
from ...vocab.records import record
from ...vocab.releases.attn_backends import BackendRow, backend_row
from ...vocab.releases.attn_rules import FORCED_MLA_BLOCKS, AttentionRules, attention_rules, cap_in
from ...vocab.releases.vllm import Behaviour
from .attention import (NAME_OF, Choice, Context, Device, Model, Query, block_supported, kernel_sizes, quantized,
                        refusal, rocm_chain, select)

DEFAULT_BLOCK = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
FA4_HD256_PAGE = 128  # v1/attention/backends/fa_utils.py FA4_HD256_PAGE_SIZE (0.29+)
INDEXER = "DEEPSEEK_V32_INDEXER"
DSV4_BACKEND = "DEEPSEEK_SPARSE_SWA"  # DeepSeek-V4's own attention (engines/vllm/dsv4.py), not selected
ASSUMED_QK_NOPE = 128  # DeepSeek-V2 / V3 / V3.2, Kimi-K2: the FlashInfer MLA kernels' check reads it


@record
class AttentionPlan:
    """The backends of the model's attention layers and the block size they give."""

    device: Device
    choices: tuple[Choice, ...]  # one per kind of attention layer, in layer order
    backends: tuple[str, ...]  # the distinct non-SSM backends in layer order (DeepSeek-V3.2's indexer among them)
    block_size: int  # before the hybrid alignment
    block_basis: str  # why that size
    kv_cache_dtype: str  # the KV format the layers store (fp8_ds_mla where vLLM switches to it)
    kv_basis: str | None  # why it differs from the user's, or None
    log_lines: tuple[str, ...]  # what vLLM logs about them (CUDA's formats; ROCm's are approximate)
    kernel_block: int  # the first non-SSM backend's smallest kernel block (the hybrid alignment's)
    kernel_lcm: int  # the lcm of every non-SSM backend's smallest kernel block (0.32+ hybrid alignment)
    config_backend: str | None  # the backend 0.14-0.17's check_and_update_config named (CUTLASS_MLA, FLASHINFER_MLA)
    rules: AttentionRules

    @property
    def backend(self) -> str:
        """The backend of the main attention layers (the first choice)."""
        return self.choices[0].backend if self.choices else "none"

    @property
    def block_note(self) -> str:
        """The "block size not set" note: the size and the backend it came from."""
        if self.backend == DSV4_BACKEND:
            return (f"block size not set: using {self.block_size}, DeepSeek-V4's DEEPSEEK_SPARSE_SWA backend's "
                    "preferred block (the sliding caches keep 64 tokens, the compressor states 4 and 8)")
        if not self.choices:
            return f"block size not set: using {self.block_size}, vLLM's default (no attention layers)"
        return f"block size not set: using {self.block_size}, the {self.deciding} backend's default"

    @property
    def deciding(self) -> str:
        """The backend whose preference (or, 0.14-0.17, whose forced size) set the block size."""
        return self.config_backend or (self.backends[0] if self.backends else self.backend)

    @property
    def kv_first(self) -> bool:
        """Its KV cache is (2, num_blocks, ...): K and V separate halves."""
        row = backend_row(self.backend, (0, 99, 0))
        return bool(row and row.kv_first)


def device_of(layout: Layout) -> Device:
    cap, basis = layout.gpu_class
    return Device(platform=layout.platform if layout.platform in ("cuda", "rocm") else "cuda", capability=cap,
                  name=layout.gpu.name or {"9.0": "NVIDIA H100 80GB HBM3", "10.0": "NVIDIA B200",
                                           "gfx942": "AMD Instinct MI300X"}.get(cap, f"a {cap} GPU"), basis=basis)


def mm_prefix(m, rules: AttentionRules) -> bool:
    """ModelConfig.is_mm_prefix_lm: Gemma-4's convertor reads use_bidirectional_attention == "vision" (0.20+);
    else the config's own is_mm_prefix_lm; else its model_type in the release's list (gemma3, paligemma, ...: a
    Gemma-3 checkpoint attends bidirectionally over its image tokens, and FLASH_ATTN / FLASHINFER refuse it).
    Assumed with multimodal inputs enabled (0.27+ turns it off when the deployment disables them: not read)."""
    if m.hf_model_type in rules.vision_prefix_types:
        return m.bidirectional_vision
    if m.mm_prefix_lm is not None:
        return m.mm_prefix_lm
    return m.hf_model_type in rules.mm_prefix_models


def _queries(layout: Layout, kv: str, dtype: str, connector: bool, prefix: bool = False) -> tuple[Query, ...]:
    """One query per distinct kind of attention layer, in layer order (main model, then the drafter)."""
    model, block = layout.model, layout.cache.block_size
    tp = layout.parallel.tensor_parallel_size
    out: list[tuple[int, Query]] = []
    for (kind, _, d, dv), r in model.layer_runs:
        if kind in (LayerKind.MAMBA, LayerKind.NONE):
            continue
        if kind is LayerKind.MLA:
            heads = (model.num_attention_heads // tp) if model.num_attention_heads else None
            q = Query(head_size=model.mla_head_size, dtype=dtype, kv=kv, block_size=block,
                      mla=True, sparse=model.index_head_dim is not None, heads=heads, connector=connector,
                      what="MLA layers")
        else:
            q = Query(head_size=d, head_size_v=dv, dtype=dtype, kv=kv, block_size=block, sink=model.attention_sinks,
                      sliding=kind is LayerKind.SLIDING, connector=connector, mm_prefix=prefix,
                      what=f"{'sliding-window' if kind is LayerKind.SLIDING else 'attention'} layers (head {d})")
        out.append((r.start, q))
    draft = model.draft
    if draft is not None and draft.num_layers and draft.method not in ("mtp", "dspark"):
        out.append((model.num_layers, Query(head_size=known(draft.head_size), head_size_v=draft.head_size_v,
                                            dtype=dtype, kv=kv, block_size=block, connector=connector,
                                            what=f"the {draft.method} drafter's layers")))
    seen: list[Query] = []
    for _, q in sorted(out, key=lambda t: t[0]):
        if q not in seen:
            seen.append(q)
    return tuple(seen)


def _model_kv(layout: Layout, rules) -> tuple[str, str | None]:
    """The KV dtype the layers pass: 0.14-0.17 DeepSeek-V3.2 turns fp8* into fp8_ds_mla and bfloat16 into auto."""
    kv = layout.cache.kv_cache_dtype
    if rules.sparse_kv_format == "model" and layout.model.index_head_dim is not None:
        if kv.startswith("fp8") and kv != "fp8_ds_mla":
            return "fp8_ds_mla", ("DeepSeek-V3.2 stores an fp8 KV cache as fp8_ds_mla (model_executor/models/"
                                  "config.py DeepseekV32ForCausalLM)")
        if kv == "bfloat16":
            return "auto", None
    return kv, None


def _forced_mla(layout: Layout, ctx: Context, block: int) -> tuple[str | None, int, str | None]:
    """0.14-0.17 CudaPlatformBase.check_and_update_config for MLA: (the backend it sets, the block size, the log)."""
    rules, cap, model = ctx.rules, ctx.device.capability, layout.model
    user = layout.attention_backend
    sparse = model.index_head_dim is not None
    backend, sizes = None, []
    if user is None:
        if cap_in(cap, "10.x") and not sparse and rules.mla_forcing == "flashinfer" \
                and (model.qk_nope_head_dim if model.qk_nope_head_dim is not None else 1) == 128:
            backend = "FLASHINFER_MLA"
            sizes = ["FLASHINFER_MLA"]
        elif cap_in(cap, "10.x") and not sparse:
            backend = "CUTLASS_MLA" if rules.mla_forcing == "cutlass" else None
            sizes = ["CUTLASS_MLA"]
        elif rules.mla_forcing == "cutlass" or cap_in(cap, "9.x"):
            sizes = ["FLASHMLA"]
    else:
        sizes = [user]
    if sparse:
        sizes.append(user if user == "FLASHINFER_MLA_SPARSE" else "FLASHMLA_SPARSE")
    log = None
    for name in sizes:
        if name not in FORCED_MLA_BLOCKS or name == "FLASHMLA" and not cap_in(cap, "9.x"):
            continue
        keep, size, label = FORCED_MLA_BLOCKS[name]
        if not any(block % int(k[1:]) == 0 if k.startswith("%") else block == int(k) for k in keep.split("|")):
            block, log = size, f"Forcing kv cache block size to {size} for {label} backend."
    return backend, block, log


def preferred(row: BackendRow, ctx: Context, q: Query | None) -> int:
    """get_preferred_block_size(16): the backend's own, FA4's 128-token hd256 pages, 16 when it takes 16, else the
    smallest kernel block."""
    if row.preferred is not None:
        return row.preferred
    hd256 = _fa4_hd256(row, ctx, q)
    if hd256:
        return max(DEFAULT_BLOCK, hd256)
    sizes = kernel_sizes(row, ctx.device.platform)
    if not sizes or block_supported(row, ctx.device.platform, DEFAULT_BLOCK):
        return DEFAULT_BLOCK
    return min(base for base, _ in sizes)


def _fa4_hd256(row: BackendRow, ctx: Context, q: Query | None) -> int | None:
    """FlashAttention 4's head-size-256 kernel (0.29+ flash_attn.py _get_fa4_hd256_block_size): SM10x / 11x, head
    256 (value 256), no sinks, no quantized KV cache, a block size (if given) of 128-token pages."""
    if row.kernel_rule != "fa4_hd256" or q is None or not cap_in(ctx.device.capability, "10.x|11.x"):
        return None
    if q.head_size != 256 or q.head_size_v not in (None, 256) or q.sink or quantized(q.kv):
        return None
    return FA4_HD256_PAGE if q.block_size is None or q.block_size % FA4_HD256_PAGE == 0 else None


def smallest_kernel(row: BackendRow, ctx: Context, q: Query | None) -> int:
    sizes = kernel_sizes(row, ctx.device.platform)
    return _fa4_hd256(row, ctx, q) or (min(base for base, _ in sizes) if sizes else DEFAULT_BLOCK)


def _lcm_size(rows: list[BackendRow], ctx: Context, version: str) -> int:
    """_preferred_block_size_for_backends (0.31+ platforms/interface.py:615-663) for several backends."""
    platform = ctx.device.platform
    if all(block_supported(r, platform, DEFAULT_BLOCK) for r in rows):
        return DEFAULT_BLOCK
    per = [[base for base, _ in kernel_sizes(r, platform)] or [1] for r in rows]
    for candidate in sorted({lcm(*sizes) for sizes in itertools.product(*per)}):
        if all(block_supported(r, platform, candidate) for r in rows):
            return candidate
    raise refusal("ValueError: The attention backends share no supported KV cache block size.", version)


def _dtype(layout: Layout, cap: str) -> str:
    """The dtype the layers run in: a bf16 checkpoint is served in fp16 below compute capability 8.0 (vLLM's auto
    dtype on a T4)."""
    dtype = layout.model.dtype
    if dtype == "bfloat16" and not cap.startswith("gfx") and not cap_in(cap, ">=8.0"):
        return "float16"
    return dtype


# What the selection reads of a layout: its plan is kept per these values and the release. Selecting costs ~470 k
# instructions of a 61-layer MLA + EAGLE3 plan's ~790 k (callgrind, 2026-12-02); a sweep over CPU sizes, TP-free axes
# or repeated plans selects once. tests/engines/test_attention_memo.py records every attribute the selection reads
# and fails when one is not in this table.
READS = ("model", "gpu", "gpu_arch", "platform", "cache.block_size", "cache.kv_cache_dtype",
         "parallel.tensor_parallel_size", "offload.backend", "attention_backend", "rocm_use_aiter")
_read = attrgetter(*READS)
_PLANS: dict[tuple, AttentionPlan] = {}
_PLANS_KEPT = 256  # bounded: a sweep of 10,000 points over models would otherwise keep them all


def plan_attention(layout: Layout, behaviour: Behaviour) -> AttentionPlan:
    """Every kind of attention layer's backend and the block size they give (before the hybrid alignment)."""
    key = (_read(layout), behaviour.release, behaviour.version)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        plan = _PLANS[key] = select_attention(layout, behaviour)
    return plan


def select_attention(layout: Layout, behaviour: Behaviour) -> AttentionPlan:
    """plan_attention without the memo: reads only READS of the layout."""
    rules, version = attention_rules(behaviour.release), behaviour.version
    device = device_of(layout)
    m = layout.model
    if m.is_dsv4:
        return _dsv4_plan(layout, device, rules)
    # A layout that states no qk_nope_head_dim (a hand-written one) is taken as DeepSeek's 128.
    nope = m.qk_nope_head_dim if m.qk_nope_head_dim is not None or not m.is_mla else ASSUMED_QK_NOPE
    ctx = Context(rules=rules, device=device, aiter=layout.rocm_use_aiter,
                  model=Model(qk_nope_head_dim=nope, qk_rope_head_dim=m.qk_rope_head_dim,
                              kv_lora_rank=m.kv_lora_rank, sparse=m.index_head_dim is not None))
    kv, kv_basis = _model_kv(layout, rules)
    queries = _queries(layout, kv, _dtype(layout, device.capability), layout.offload.backend != "none",
                       mm_prefix(m, rules))
    user_block = layout.cache.block_size
    block, logs = user_block or DEFAULT_BLOCK, []
    forced, how, config_backend = layout.attention_backend, "selected", None
    if rules.block_rule == "forced" and device.platform == "cuda" and m.is_mla:
        config_backend, block, log = _forced_mla(layout, ctx, block)
        if forced is None and config_backend is not None:
            forced, how = config_backend, "forced"
        logs += [log] if log else []
    choices = []
    for q in queries:  # attention_config.backend is one for every layer, the drafter's too
        if device.platform == "rocm" and rules.rocm_priorities is None:
            choices.append(rocm_chain(ctx, q, forced, version))
        else:
            choices.append(select(ctx, q, forced, how, version))
    kv, kv_basis = _backend_kv(choices, kv, kv_basis)
    backends = _non_ssm(layout, choices)
    rows = [backend_row(n, behaviour.release) for n in backends]
    first_q = choices[0].query if choices else None
    block, basis = _block(layout, ctx, rows, backends, first_q, block, logs, version)
    kernels = [smallest_kernel(r, ctx, first_q if i == 0 else None) for i, r in enumerate(rows) if r is not None]
    return AttentionPlan(device=device, choices=tuple(choices), backends=backends, block_size=block,
                         block_basis=basis, kv_cache_dtype=kv, kv_basis=kv_basis,
                         log_lines=tuple(_log_lines(ctx, choices)) + tuple(logs),
                         kernel_block=kernels[0] if kernels else DEFAULT_BLOCK,
                         kernel_lcm=lcm(*kernels) if kernels else 1, config_backend=config_backend, rules=rules)


def _backend_kv(choices: list[Choice], kv: str, basis: str | None) -> tuple[str, str | None]:
    """0.18+: the MLA layer switches its KV format for the backend it got (mla_attention.py
    _canonicalize_sparse_mla_kv_cache_dtype @0.24.0; a FLASHMLA_SPARSE check @0.18.0)."""
    for c in choices:
        row = backend_row(c.backend, (0, 99, 0))
        fmt = row.kv_format if row is not None and c.query.mla else None
        if fmt == "ds_mla" and quantized(kv) and kv != "fp8_ds_mla" or fmt == "ds_mla_sm120" and kv in (
                "auto", "fp8", "fp8_e4m3"):
            return "fp8_ds_mla", f"vLLM stores the {c.backend} backend's KV cache as fp8_ds_mla"
    return kv, basis


def _non_ssm(layout: Layout, choices: list[Choice]) -> tuple[str, ...]:
    """The distinct non-SSM backends in layer order: DeepSeek-V3.2's indexer cache registers before its MLA layer."""
    out: list[str] = []
    for c in choices:
        names = (INDEXER, c.backend) if c.query.sparse else (c.backend,)
        out += [n for n in names if n not in out]
    return tuple(out)


def _block(layout: Layout, ctx: Context, rows, backends, q: Query | None, block: int, logs: list, version: str
           ) -> tuple[int, str]:
    rule, user = ctx.rules.block_rule, layout.cache.block_size
    if rule == "forced" or ctx.device.platform == "rocm" and ctx.rules.rocm_block == "config":
        if logs:
            return block, f"{logs[-1]} (check_and_update_config, at config time)"
        return block, "the user's --block-size" if user else "vLLM's default 16 (check_and_update_config)"
    if user is not None:
        return user, "the user's --block-size (kept by update_block_size_for_backend)"
    if not rows or rows[0] is None:
        return DEFAULT_BLOCK, "vLLM's default 16 (no attention backend)"
    if rule == "first" and layout.model.has_mamba:
        return DEFAULT_BLOCK, "16 for a hybrid model (update_block_size_for_backend; the Mamba alignment follows)"
    if rule == "lcm" and len(rows) > 1:
        size = _lcm_size(rows, ctx, version)
        names = "/".join(NAME_OF.get(b, b) for b in backends)
        if size != DEFAULT_BLOCK:
            logs.append(f"Setting kv cache block size to {size} for {names} backend(s).")
        return size, f"a size every non-SSM backend ({', '.join(backends)}) supports (0.31+)"
    first_q = q if backends[0] != INDEXER else None
    size = preferred(rows[0], ctx, first_q)
    which = "first attention layer's" if rule == "first" else "first non-SSM"
    if size != DEFAULT_BLOCK:
        tail = "backend(s)." if rule == "lcm" else "backend."
        logs.append(f"Setting kv cache block size to {size} for {NAME_OF.get(backends[0], backends[0])} {tail}")
    return size, f"the {which} backend {backends[0]}'s preferred size (update_block_size_for_backend)"


def _log_lines(ctx: Context, choices: list[Choice]) -> list[str]:
    out = []
    for c in choices:
        if c.how in ("selected", "forced") and ctx.device.platform == "cuda":
            line = f"Using AttentionBackendEnum.{c.backend} backend."
        elif ctx.device.platform == "rocm":
            line = f"Using {c.backend} backend out of potential backends: {list(c.candidates)}."
        elif ctx.rules.candidates_log == "tuple":
            line = f"Using {c.backend} attention backend out of potential backends: {tuple(c.candidates)}"
        else:
            line = f"Using {c.backend} attention backend out of potential backends: {list(c.candidates)}."
        if line not in out:
            out.append(line)
    return out


def _dsv4_plan(layout: Layout, device: Device, rules: AttentionRules) -> AttentionPlan:
    """DeepSeek-V4 builds its own attention (DEEPSEEK_SPARSE_SWA, not chosen from the priority lists): its preferred
    256-token block (engines/vllm/dsv4.py)."""
    from . import dsv4

    q = Query(head_size=0, dtype=layout.model.dtype, kv=layout.cache.kv_cache_dtype,
              block_size=layout.cache.block_size, mla=True, sparse=True, what="DeepSeek-V4's layers")
    choice = Choice(query=q, backend=DSV4_BACKEND, how="model", candidates=(DSV4_BACKEND,), rejected=(),
                    tried=(DSV4_BACKEND,))
    block = layout.cache.block_size or dsv4.BLOCK_SIZE
    return AttentionPlan(device=device, choices=(choice,), backends=(DSV4_BACKEND,), block_size=block,
                         block_basis="DeepSeek-V4's DEEPSEEK_SPARSE_SWA backend's preferred block" if
                         layout.cache.block_size is None else "the user's --block-size",
                         kv_cache_dtype=layout.cache.kv_cache_dtype, kv_basis=None, log_lines=(),
                         kernel_block=block, kernel_lcm=block, config_backend=None, rules=rules)
