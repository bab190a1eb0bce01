"""The attention backend vLLM selects for each kind of attention layer, as each release's priorities and support
checks decide it (vocab/releases/attn_backends.py, attn_priorities.py, attn_rules.py), and the refusals that go with
it. Pure. The block size that follows is attention_block.py's.

One `Query` per distinct AttentionSelectorConfig the model's layers build (v1/attention/selector.py get_attn_backend:
head size, model dtype, KV dtype, the user's block size, MLA, sinks, sparse, sliding window, the KV connector); the
platform's get_attn_backend_cls answers it: a backend named by --attention-backend (or, 0.14-0.17, by
check_and_update_config's MLA defaults) is validated alone and refused with vLLM's error; otherwise the first backend
of the release's priority list that passes validate_configuration wins, and none valid is vLLM's "No valid attention
backend found" (CUDA and ROCm 0.18+). ROCm 0.14-0.17 chooses by an if-chain with no validation.
"""

from __future__ import annotations

from ...vocab.errors import StartupRefusal, known
from ...vocab.records import record
from ...vocab.releases.attn_backends import BackendRow, backend_row
from ...vocab.releases.attn_priorities import CUDA_LISTS, ROCM_LISTS, SPARSE_TAILS, TAIL_OF
from ...vocab.releases.attn_rules import (COMBO_REASONS, FLASHMLA_DENSE_REASON, FLASHMLA_SPARSE_REASONS, REFUSALS,
                                          AttentionRules, cap_in)

_NOT_QUANTIZED = ("auto", "bfloat16", "float16", "float32", "half", "float")
# get_name() where it differs from the enum member (the name the block-size log prints)
NAME_OF = {"ROCM_AITER_FA": "FLASH_ATTN", "ROCM_AITER_TRITON_MLA": "AITER_TRITON_MLA"}


def quantized(kv: str) -> bool:
    """vLLM's is_quantized_kv_cache (utils/torch_utils.py @0.20.0, v1/kv_cache_interface.py @0.33.0)."""
    return kv not in _NOT_QUANTIZED


@record
class Device:
    """The GPU the selection runs on."""

    platform: str  # cuda | rocm
    capability: str  # "9.0"; on ROCm the gfx target ("gfx942")
    name: str  # torch's device name (vLLM's refusals print it)
    basis: str  # where the GPU class came from: the layout's GPU row, --gpu-arch, or kvcalc's default


@record
class Model:
    """What the selection reads of the model (hf_text_config's MLA dims, index_topk)."""

    qk_nope_head_dim: int | None
    qk_rope_head_dim: int | None
    kv_lora_rank: int | None
    sparse: bool  # index_topk present (DeepSeek-V3.2's DSA)


@record
class Query:
    """One AttentionSelectorConfig (with the num_heads the MLA priorities read)."""

    head_size: int
    dtype: str
    kv: str
    block_size: int | None  # the user's --block-size (0.18+; 0.14-0.17 validate with None)
    mla: bool = False
    sink: bool = False
    sparse: bool = False
    sliding: bool = False
    heads: int | None = None  # query heads a rank
    head_size_v: int | None = None
    connector: bool = False  # a KV connector is configured (0.23+ asks)
    what: str = "attention layers"


@record
class Choice:
    """The backend one query gets, and why."""

    query: Query
    backend: str
    how: str  # "priority" (first valid), "selected" (--attention-backend), "forced" (0.14-0.17 MLA default), "chain"
    candidates: tuple[str, ...]  # the valid backends, in priority order (what vLLM logs)
    rejected: tuple[tuple[str, tuple[str, ...]], ...]  # (backend, vLLM's reasons) of the ones tried and refused
    tried: tuple[str, ...]  # the priority list


def explain(c: Choice) -> str:
    """Why the choice's backend, in words (the table's and JSON's attention section)."""
    if c.how == "priority":
        mine = c.tried.index(c.backend)
        before = [n for n, _ in c.rejected if n in c.tried and c.tried.index(n) < mine]
        first = f"the first valid ({', '.join(before)} refused before it)" if before else "the first"
        return f"{first} of the release's priority list {', '.join(c.tried)} (validate_configuration)"
    return {"selected": "named by --attention-backend (vllm.attention_backend), validated alone as vLLM does",
            "forced": "set for MLA by check_and_update_config (vLLM 0.14-0.17: platforms/cuda.py)",
            "chain": "ROCm 0.14-0.17's get_attn_backend_cls if-chain (VLLM_ROCM_USE_AITER and the GPU's gfx target)",
            "model": "the model builds its own attention (not selected from the priority lists)"}.get(c.how, c.how)


@record
class Context:
    rules: AttentionRules
    device: Device
    model: Model
    aiter: bool  # VLLM_ROCM_USE_AITER


def _major(cap: str) -> int:
    return int(cap.split(".")[0]) if not cap.startswith("gfx") else 0


def _fa_fp8_ok(ctx: Context, q: Query) -> bool:
    """flash_attn_supports_kv_cache_dtype with the layer's head size (0.27+): FA3 on SM9x (FA4 from head size 257,
    with fp8 only at 512), FA4 on SM10x while it keeps the head size (<= 128, or 192)."""
    cap, h = ctx.device.capability, q.head_size
    if cap_in(cap, "9.x"):
        return h <= 256 or h == 512
    if cap_in(cap, "10.x"):
        keep192 = h == 192 and (not ctx.rules.fa4_head192_v128 or q.head_size_v == 128)
        return h <= 128 or keep192
    return False


def _kv_ok(row: BackendRow, ctx: Context, q: Query) -> bool:
    kv, cap, rule = q.kv, ctx.device.capability, row.kv_rule
    listed = row.kv is None or kv in row.kv
    if rule == "list":
        return listed
    if rule == "fa14":  # fp8* -> flash_attn_supports_fp8(): FA3 on SM9x
        return cap_in(cap, "9.x") if kv.startswith("fp8") else listed
    if rule == "fa20":
        return cap_in(cap, "9.x") if quantized(kv) else listed
    if rule == "fa22":
        return cap_in(cap, "9.x") if kv in ("fp8", "fp8_e4m3") else listed
    if rule == "fa27":  # FA3 on SM9x or FA4 on SM10x (the device's default version)
        return listed and (not quantized(kv) or cap_in(cap, "9.x|10.x"))
    if rule in ("fi25", "fi32"):  # nvfp4: TRTLLM on SM10x; 0.32+ also the FA2 path on SM8x / 9x / 12x
        if kv == "nvfp4":
            return cap_in(cap, "10.x" if rule == "fi25" else "10.x|8.x|9.x|12.x")
        return listed
    raise KeyError(rule)


def _heads_ok(row: BackendRow, ctx: Context, h: int) -> bool:
    rule = row.heads
    if isinstance(rule, tuple):
        return not rule or h in rule
    if rule == "fa14":
        return h % 8 == 0 and h <= 256
    if rule == "fa20":
        return h % 8 == 0 and (h <= 256 or (cap_in(ctx.device.capability, ctx.rules.fa4_caps) and h <= 512))
    if rule == ">=32":
        return h >= 32
    raise KeyError(rule)


def _sink_ok(row: BackendRow, ctx: Context) -> bool:
    cap = ctx.device.capability
    return {"no": False, "yes": True, "fa": cap_in(cap, ctx.rules.fa_sink_caps),
            "fi": cap_in(cap, ctx.rules.fi_sink_caps), "mi3xx": cap_in(cap, "mi3xx")}[row.sink]


def kernel_sizes(row: BackendRow, platform: str) -> tuple[tuple[int, bool], ...]:
    """(base, multiple_of) per supported kernel block size ("*16" is MultipleOf(16); "rocm:1" only on ROCm)."""
    out = []
    for k in row.kernel:
        if isinstance(k, str) and ":" in k:
            where, _, k = k.partition(":")
            if where != platform:
                continue
        if isinstance(k, str):
            out.append((int(k[1:]), True) if k.startswith("*") else (int(k), False))
        else:
            out.append((k, False))
    return tuple(out)


def block_supported(row: BackendRow, platform: str, block: int) -> bool:
    """AttentionBackend.supports_block_size (0.18+: a multiple of one kernel size; an override's own rule)."""
    if row.block_ok is not None:
        return block % int(row.block_ok[1:]) == 0
    sizes = kernel_sizes(row, platform)
    return not sizes or any(block % base == 0 for base, _ in sizes)


def _combo(name: str, row: BackendRow, ctx: Context, q: Query) -> str | None:
    """One supports_combination check: vLLM's reason, or None when it passes."""
    cap, m = ctx.device.capability, ctx.model
    nope = m.qk_nope_head_dim if m.qk_nope_head_dim is not None else 1  # getattr(..., "qk_nope_head_dim", 1)
    fails = {
        "sink_below_90": q.sink and not cap_in(cap, ">=9.0"),
        "fa_fp8_head": quantized(q.kv) and not _fa_fp8_ok(ctx, q),
        "fi_nvfp4": q.kv == "nvfp4" and cap_in(cap, "8.x|9.x|12.x") and (q.head_size == 64 or q.sink),
        "fa_mla": not cap_in(cap, "9.x"), "fa_mla_sparse_kv": q.kv not in ("auto", "float16", "bfloat16"),
        "flashmla": not cap_in(cap, "9.x|10.x" if q.sparse else "9.x"),
        "qk_nope_128": nope != 128, "qk_nope_64_128": nope not in (64, 128),
        "qk_nope_64_128_192": nope not in (64, 128, 192), "qk_nope_128_sparse": nope != 128,
        "qk_nope_128_192_sparse": nope not in (128, 192), "tokenspeed_absent": True, "fi_sm90_absent": True,
        "flashmla_sparse_512": q.head_size == 512 and not (cap_in(cap, "9.x") and q.kv in ("auto", "bfloat16")
                                                          and m.qk_rope_head_dim == 0),
        "index_topk_fi": not m.sparse, "index_topk_2048": not m.sparse, "index_topk_fa": not m.sparse,
        "no_fp8_ds_mla": q.kv == "fp8_ds_mla",
        "fa4_sparse_dims": q.heads not in (8, 16, 32, 64, 128) or (m.kv_lora_rank, m.qk_rope_head_dim) != (512, 64),
    }
    if not fails[name]:
        return None
    if name == "flashmla":
        if q.sparse:
            return max((r for r in FLASHMLA_SPARSE_REASONS if ctx.rules.release >= r[0]), key=lambda r: r[0])[1]
        return FLASHMLA_DENSE_REASON
    if name == "fi_nvfp4" and q.head_size != 64:
        return "the sink prefill wrapper cannot read an NVFP4 KV cache"
    return COMBO_REASONS[name].format(qk_nope=nope, heads=q.heads)


def validate(row: BackendRow, ctx: Context, q: Query) -> list[str]:
    """AttentionBackend.validate_configuration's reasons, in vLLM's order (empty: valid)."""
    r, rules, cap = [], ctx.rules, ctx.device.capability
    if not _heads_ok(row, ctx, q.head_size):
        r.append("head_size not supported")
    if q.dtype not in row.dtypes:
        r.append("dtype not supported")
    if not _kv_ok(row, ctx, q):
        r.append("kv_cache_dtype not supported")
    if q.block_size is not None and rules.block_rule != "forced" \
            and not block_supported(row, ctx.device.platform, q.block_size):
        r.append("block_size not supported")
    if q.mla != row.mla:
        r.append("MLA not supported" if q.mla else "non-MLA not supported")
    if q.sink and not _sink_ok(row, ctx):
        r.append(rules.sink_reason)
    if q.sparse != row.sparse:
        r.append("sparse not supported" if q.sparse else "non-sparse not supported")
    if ctx.device.platform == "cuda" and not cap_in(cap, row.cap) or ctx.device.platform == "rocm" \
            and row.cap != "*" and not cap_in(cap, row.cap):
        r.append("compute capability not supported")
    if rules.asks_sliding and q.sliding and not row.sliding:
        r.append("sliding window not supported")
    if rules.asks_connector and q.connector and not row.connector:
        r.append("KV connector not supported")
    for name in row.combo:
        reason = _combo(name, row, ctx, q)
        if reason is not None:
            r.append(reason)
            break  # supports_combination returns its first reason
    return r


def _tail(family: str, slot: str, q: Query) -> tuple[str, ...]:
    for cond, names in SPARSE_TAILS[TAIL_OF[(family, slot)]]:
        holds = {"*": True, "heads<=16": q.heads is not None and q.heads <= 16, "kv:fp8*": q.kv.startswith("fp8"),
                 "kv:quantized": quantized(q.kv), "head==512": q.head_size == 512}[cond]
        if holds:
            return names
    raise KeyError(slot)


def priorities(ctx: Context, q: Query) -> tuple[str, ...]:
    """The release's priority list for the query (platforms/cuda.py, platforms/rocm.py _get_backend_priorities)."""
    dev, rules = ctx.device, ctx.rules
    if dev.platform == "rocm":
        lists = ROCM_LISTS[known(rules.rocm_priorities, "a ROCm priority family (0.18+)")]
        slot = "sparse" if q.sparse else "mla" if q.mla else "mha"
        return tuple(e.partition("?")[0] for e in lists[slot] if "?" not in e or _rocm_cond(e.partition("?")[2],
                                                                                           ctx, q))
    lists, major = CUDA_LISTS[rules.cuda_priorities], _major(dev.capability)
    kind = "mla" if q.mla else "mha"
    names = lists.get(f"{kind}{major}") or lists[kind]
    out: list[str] = []
    for name in names:
        out += _tail(rules.cuda_priorities, name, q) if name.startswith("@") else [name]
    return tuple(out)


def _rocm_cond(cond: str, ctx: Context, q: Query) -> bool:
    supported = cap_in(ctx.device.capability, ctx.rules.aiter_arches)
    return {"aiter": ctx.aiter, "mha_enabled": supported and ctx.aiter, "mla_enabled": supported and ctx.aiter,
            "aiter_supported": supported, "no_connector": not q.connector}[cond]


def refusal(text: str, version: str) -> StartupRefusal:
    return StartupRefusal(f"vLLM {version} refuses to start: {text}")


def _row_or_refuse(name: str, ctx: Context, version: str) -> BackendRow:
    row = backend_row(name, ctx.rules.release)
    if row is None:
        raise refusal(f"the {name} attention backend is not modelled by kvcalc (its support checks were not "
                      "read); leave --attention-backend unset or name a modelled backend", version)
    return row


def select(ctx: Context, q: Query, forced: str | None, how: str, version: str) -> Choice:
    """One query's backend on CUDA or ROCm 0.18+ (CudaPlatformBase / RocmPlatform.get_attn_backend_cls)."""
    if forced is not None:
        reasons = validate(_row_or_refuse(forced, ctx, version), ctx, q)
        if reasons:
            raise refusal(f"ValueError: Selected backend AttentionBackendEnum.{forced} is not valid for this "
                          f"configuration. Reason: {reasons}", version)
        return _refused_impl(Choice(query=q, backend=forced, how=how, candidates=(forced,), rejected=(),
                                    tried=(forced,)), ctx, version)
    tried = priorities(ctx, q)
    valid, rejected = [], []
    for name in tried:
        row = backend_row(name, ctx.rules.release)
        reasons = validate(row, ctx, q) if row is not None else ["not modelled by kvcalc"]
        (rejected.append((name, tuple(reasons))) if reasons else valid.append(name))
    if not valid:
        text = ", ".join(f"{n}: [{', '.join(rs)}]" for n, rs in rejected)
        raise refusal(f"ValueError: No valid attention backend found for {ctx.device.platform} with "
                      f"{selector_repr(ctx, q)}. Reasons: {{{text}}}.", version)
    return _refused_impl(Choice(query=q, backend=valid[0], how="priority", candidates=tuple(valid),
                                rejected=tuple(rejected), tried=tried), ctx, version)


def selector_repr(ctx: Context, q: Query) -> str:
    """AttentionSelectorConfig's repr as the release prints it (the flags kvcalc never sets are False)."""
    block = q.block_size if ctx.rules.block_rule != "forced" else None
    values = {"attn_type": "AttentionType.DECODER", "has_sliding_window": q.sliding, "use_kv_connector": q.connector}
    tail = ", ".join(f"{k}={values.get(k, False)}" for k in ctx.rules.selector_repr)
    return (f"AttentionSelectorConfig(head_size={q.head_size}, dtype=torch.{q.dtype}, kv_cache_dtype={q.kv}, "
            f"block_size={block}, use_mla={q.mla}, has_sink={q.sink}, use_sparse={q.sparse}, use_mm_prefix=False, "
            f"{tail})")


def _refused_impl(choice: Choice, ctx: Context, version: str) -> Choice:
    """The selected backend's impl refusing the layer at construction (attn_rules.REFUSALS)."""
    row, q, dev = backend_row(choice.backend, ctx.rules.release), choice.query, ctx.device
    for name in row.refuse if row is not None else ():
        major, minor = (int(x) for x in dev.capability.split(".")) if dev.platform == "cuda" else (0, 0)
        hits = {"triton_fp8_sm89": dev.platform == "cuda" and q.kv.startswith("fp8") and (major, minor) < (8, 9),
                "triton_mla_fp8_sm89": dev.platform == "cuda" and q.kv.startswith("fp8") and (major, minor) < (8, 9),
                "triton_mla_v1_fp8": quantized(q.kv), "aiter_fa_sinks": q.sink}[name]
        if hits:
            raise refusal(REFUSALS[name].format(device=dev.name, cap=dev.capability,
                                                suggested="float16" if major < 8 else "bfloat16"), version)
    return choice


def rocm_chain(ctx: Context, q: Query, forced: str | None, version: str) -> Choice:
    """ROCm 0.14-0.17 RocmPlatform.get_attn_backend_cls (0.14.0 platforms/rocm.py:190-300, 0.17.0:352-469): an
    if-chain on the environment, with no validation (VLLM_ROCM_USE_AITER_MLA / _MHA at their default True, the
    unified-attention switch and the prefill-decode split at their default False)."""
    gfx9 = cap_in(ctx.device.capability, "gfx9")
    mla_on = ctx.aiter and cap_in(ctx.device.capability, ctx.rules.aiter_arches)
    block = q.block_size
    if q.sparse:
        if q.kv.startswith("fp8"):
            raise refusal("ValueError: ROCMAiterMLASparseBackend doesn't support fp8 kv_cache_dtype.", version)
        if block != 1:
            raise refusal("AssertionError: Sparse MLA backend on ROCm only supports block size 1 for now.", version)
        name = "ROCM_AITER_MLA_SPARSE"
    elif q.mla:
        name = forced or ("ROCM_AITER_MLA" if mla_on or block == 1 else "TRITON_MLA")
        if name == "TRITON_MLA" and block == 1:
            raise refusal(f"ValueError:  The selected backend, {name},does not support block size {block}.", version)
        if name not in ("TRITON_MLA", "ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA"):
            raise refusal(f"ValueError:  The selected backend, {name},is not MLA type while requested for MLA "
                          "backend.", version)
    elif forced is not None:
        if forced not in ("FLEX_ATTENTION", "TRITON_ATTN", "ROCM_ATTN", "ROCM_AITER_FA", "ROCM_AITER_UNIFIED_ATTN"):
            raise refusal(f"RuntimeError: Attention backend {forced} is not supported on ROCm. Note that V0 attention "
                          "backends have been removed.", version)
        if forced == "ROCM_AITER_FA" and not gfx9:
            raise refusal(f"ValueError: The selected backend, {forced}, is only supported on gfx9 architectures.",
                          version)
        name = forced
    else:
        name = "ROCM_AITER_FA" if ctx.aiter and gfx9 else "TRITON_ATTN"
    return _refused_impl(Choice(query=q, backend=name, how="selected" if forced else "chain", candidates=(name,),
                                rejected=(), tried=(name,)), ctx, version)
