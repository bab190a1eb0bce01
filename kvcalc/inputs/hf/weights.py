"""A Hugging Face config.json (and the model directory's model.safetensors.index.json, when it is there) -> the
parameter breakdown the GPU memory model weighs (vocab/weights.WeightsSpec). Read only when a KV budget is predicted.

Per architecture, the parameters vLLM's model class allocates (vllm/model_executor/models/<arch>.py, 0.14.0 - 0.33.0:
QKVParallelLinear, MergedColumnParallelLinear gate_up, RowParallelLinear o/down, VocabParallelEmbedding and
ParallelLMHead padded to 64, RMSNorm, FusedMoE experts and a replicated router): one function per family in RULES.
A model_type without a rule is None: the prediction then asks for --kv-cache-memory. Defaults for absent fields are
the transformers configuration classes' own.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ...vocab.errors import LayoutError
from ...vocab.weights import ParamBlock, WeightsSpec

# transformers' defaults for tie_word_embeddings (LlamaConfig & co. False; GemmaConfig / Gemma2Config / Gemma3TextConfig
# True).
_TIED_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True}
_DENSE = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "granite", "olmo2",
          "mistral3_text", "ministral")
_MOE = ("qwen2_moe", "qwen3_moe", "mixtral")
_MLA = ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32")


def _int(cfg: dict, key: str, default: int = 0) -> int:
    v = cfg.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _attention(cfg: dict, hidden: int) -> tuple[list[ParamBlock], int]:
    heads = _int(cfg, "num_attention_heads", 1)
    kv = _int(cfg, "num_key_value_heads", heads) or heads
    hd = _int(cfg, "head_dim") or hidden // heads
    bias = bool(cfg.get("attention_bias")) or cfg.get("model_type") == "qwen2"
    q = hidden * heads * hd + (heads * hd if bias else 0)
    o = heads * hd * hidden
    k_v = 2 * (hidden * hd + (hd if bias else 0))  # per KV head
    blocks = [ParamBlock(name="attention q/o", params=q + o, placement="layers", tp="shard", linear=True),
              ParamBlock(name="attention k/v", params=k_v, placement="layers", tp="kv", linear=True, kv_heads=kv)]
    return blocks, hd


def _embeddings(cfg: dict, hidden: int, tied_default: bool) -> list[ParamBlock]:
    vocab = _int(cfg, "vocab_size", 32000)
    out = [ParamBlock(name="embed_tokens", params=vocab * hidden, placement="first", tp="vocab", linear=False),
           ParamBlock(name="final norm", params=hidden, placement="last", tp="replicate", linear=False)]
    tied = cfg.get("tie_word_embeddings", tied_default)
    if not tied:
        out.append(ParamBlock(name="lm_head", params=vocab * hidden, placement="last", tp="vocab", linear=False))
    return out


def _rotary(cfg: dict, head_dim: int, copies: int = 1, dtype_bytes: int | None = None) -> list[ParamBlock]:
    """vLLM's RotaryEmbedding keeps a cos/sin cache of max_position_embeddings x rotary_dim in the model dtype
    (model_executor/layers/rotary_embedding; Llama-3.1-8B: 131,072 x 128 x 2 B = 32 MiB, the difference between its
    8.03 B parameters x 2 B and the logged 14.99 GiB)."""
    mpe = _int(cfg, "max_position_embeddings")
    factor = cfg.get("partial_rotary_factor", 1.0)
    rot = int(head_dim * factor) if isinstance(factor, (int, float)) else head_dim
    return [ParamBlock(name="rotary cos/sin cache", params=mpe * rot * copies, placement="layers", tp="replicate",
                       linear=False, layers=(0,), dtype_bytes=dtype_bytes)] if mpe else []


def dense(cfg: dict) -> list[ParamBlock]:
    hidden = _int(cfg, "hidden_size", 4096)
    mt = cfg.get("model_type", "")
    attn, hd = _attention(cfg, hidden)
    inter = _int(cfg, "intermediate_size")
    norms = (4 if mt in ("gemma2", "gemma3_text") else 2) * hidden + (2 * hd if mt in ("qwen3", "gemma3_text") else 0)
    blocks = attn + [ParamBlock(name="mlp", params=3 * hidden * inter, placement="layers", tp="shard", linear=True),
                     ParamBlock(name="norms", params=norms, placement="layers", tp="replicate", linear=False)]
    copies = 2 if mt == "gemma3_text" else 1  # Gemma-3: a local and a global rope
    return blocks + _embeddings(cfg, hidden, _TIED_DEFAULT.get(mt, False)) + _rotary(cfg, hd, copies)


def _moe_layers(cfg: dict, n: int) -> tuple[int, ...]:
    mt = cfg.get("model_type")
    if mt == "mixtral":
        return tuple(range(n))
    if mt in _MLA:
        first = _int(cfg, "first_k_dense_replace")
        freq = _int(cfg, "moe_layer_freq", 1) or 1
        return tuple(i for i in range(n) if i >= first and i % freq == 0)
    step = _int(cfg, "decoder_sparse_step", 1) or 1
    dense_only = set(cfg.get("mlp_only_layers") or [])
    return tuple(i for i in range(n) if i not in dense_only and (i + 1) % step == 0)


def _experts(cfg: dict, hidden: int, n: int) -> tuple[list[ParamBlock], tuple[int, ...]]:
    experts = _int(cfg, "num_local_experts") or _int(cfg, "num_experts") or _int(cfg, "n_routed_experts")
    inter = _int(cfg, "moe_intermediate_size") or _int(cfg, "intermediate_size")
    moe = _moe_layers(cfg, n)
    blocks = [ParamBlock(name="experts", params=experts * 3 * hidden * inter, placement="layers", tp="shard",
                         linear=True, layers=moe, experts=True),
              ParamBlock(name="router", params=experts * hidden, placement="layers", tp="replicate", linear=False,
                         layers=moe)]
    shared = _int(cfg, "shared_expert_intermediate_size") or _int(cfg, "n_shared_experts") * inter
    if shared:
        blocks.append(ParamBlock(name="shared experts", params=3 * hidden * shared + (
            hidden if cfg.get("model_type") == "qwen2_moe" else 0), placement="layers", tp="shard", linear=True,
            layers=moe))
    dense_layers = tuple(i for i in range(n) if i not in set(moe))
    if dense_layers:
        blocks.append(ParamBlock(name="mlp", params=3 * hidden * _int(cfg, "intermediate_size"), placement="layers",
                                 tp="shard", linear=True, layers=dense_layers))
    return blocks, moe


def moe(cfg: dict) -> list[ParamBlock]:
    hidden = _int(cfg, "hidden_size", 4096)
    n = _int(cfg, "num_hidden_layers", 1)
    attn, hd = _attention(cfg, hidden)
    norms = 2 * hidden + (2 * hd if cfg.get("model_type") == "qwen3_moe" else 0)
    experts, _ = _experts(cfg, hidden, n)
    return (attn + experts + [ParamBlock(name="norms", params=norms, placement="layers", tp="replicate",
                                         linear=False)]
            + _embeddings(cfg, hidden, False) + _rotary(cfg, hd))


def mla(cfg: dict) -> list[ParamBlock]:
    """DeepSeek-V2/V3 (Kimi-K2): MLA attention (q_a/q_b or q_proj, kv_a with the rope part, kv_b, o), MoE layers after
    first_k_dense_replace (model_executor/models/deepseek_v2.py)."""
    hidden = _int(cfg, "hidden_size", 7168)
    n = _int(cfg, "num_hidden_layers", 1)
    heads = _int(cfg, "num_attention_heads", 128)
    nope, rope, v = (_int(cfg, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    q_lora, kv_lora = _int(cfg, "q_lora_rank"), _int(cfg, "kv_lora_rank")
    q = (hidden * q_lora + q_lora + q_lora * heads * (nope + rope)) if q_lora else hidden * heads * (nope + rope)
    blocks = [ParamBlock(name="attention (MLA)", params=q + kv_lora * heads * (nope + v) + heads * v * hidden,
                         placement="layers", tp="shard", linear=True),
              ParamBlock(name="attention kv_a (MLA latent)", params=hidden * (kv_lora + rope) + kv_lora,
                         placement="layers", tp="replicate", linear=True),
              ParamBlock(name="norms", params=2 * hidden, placement="layers", tp="replicate", linear=False)]
    experts, _ = _experts(cfg, hidden, n)
    return blocks + experts + _embeddings(cfg, hidden, False)


def gpt_oss(cfg: dict) -> list[ParamBlock]:
    """gpt-oss: attention with sinks and biases, every layer MoE with biased experts (MXFP4 in the checkpoint)."""
    hidden = _int(cfg, "hidden_size", 2880)
    attn, hd = _attention({**cfg, "attention_bias": True}, hidden)
    experts = _int(cfg, "num_local_experts", 32)
    inter = _int(cfg, "intermediate_size", 2880)
    return attn + [
        ParamBlock(name="experts", params=experts * (3 * hidden * inter + 3 * inter), placement="layers",
                   tp="shard", linear=True, experts=True),
        ParamBlock(name="router", params=experts * (hidden + 1), placement="layers", tp="replicate", linear=False),
        # + o_proj's bias (RowParallelLinear's bias defaults to True, gpt_oss.py:105-110 @0.14.1; not split by TP)
        ParamBlock(name="norms, sinks, o_proj bias", params=3 * hidden + _int(cfg, "num_attention_heads", 64),
                   placement="layers", tp="replicate", linear=False),
    ] + _embeddings(cfg, hidden, False) + _rotary(cfg, hd, dtype_bytes=4)


RULES: dict[str, Callable[[dict], list[ParamBlock]]] = {
    **{t: dense for t in _DENSE}, **{t: moe for t in _MOE}, **{t: mla for t in _MLA}, "gpt_oss": gpt_oss}


def _vision(data: dict, text_hidden: int) -> list[ParamBlock]:
    """A ViT-style encoder (SigLIP, CLIP) and its projector, from vision_config: every layer 4 h^2 attention + 2 h i
    MLP (+ biases), patch and position embeddings. An estimate (the projector's shape varies by model)."""
    v = data.get("vision_config")
    if not isinstance(v, dict):
        return []
    h, i, n = _int(v, "hidden_size", 1152), _int(v, "intermediate_size", 4304), _int(v, "num_hidden_layers", 27)
    patch, image = _int(v, "patch_size", 14), _int(v, "image_size", 896)
    per_layer = 4 * h * h + 2 * h * i + 9 * h + i
    params = n * per_layer + patch * patch * 3 * h + (image // max(patch, 1)) ** 2 * h + h * text_hidden
    return [ParamBlock(name="vision encoder and projector (estimate)", params=params, placement="first",
                       tp="replicate", linear=False)]


def _params(blocks: list, num_layers: int) -> int:
    """The parameters the blocks count (a layer block once per decoder layer that has it)."""
    return sum(b.params * (b.kv_heads or 1) * ((num_layers if b.layers is None else len(b.layers))
                                                if b.placement == "layers" else 1) for b in blocks)


def _text_config(data: dict) -> dict:
    inner = data.get("text_config")
    if isinstance(inner, dict):
        return {**inner, "model_type": inner.get("model_type") or data.get("model_type")}
    return data


# model.safetensors.index.json lists every tensor: DeepSeek-V3's (91,000 tensors) is 8.9 MB.
MAX_INDEX_BYTES = 64 << 20
# The checkpoint's bytes per parameter: 4-bit weights with group scales hold more than 0.25 B, fp32 less than 8 B
# (vision towers and MTP layers the breakdown does not count stay inside the bound).
INDEX_BYTES_PER_PARAM = (1, 4), (8, 1)


# A safetensors file: 8 bytes little-endian header length, then the JSON header {name: {dtype, shape, data_offsets}}
# (the safetensors format; vLLM's loader reads the same files). A header past this size is refused.
MAX_HEADER_BYTES = 100 << 20


def safetensors_bytes(path: str) -> int:
    """The tensor bytes one safetensors file holds: the largest data_offsets end its header lists."""
    import json

    from ..files import read_bytes

    what = "a safetensors file (8-byte header length, JSON header)"
    raw = read_bytes(path, what, 8, head=True)
    size = int.from_bytes(raw, "little") if len(raw) == 8 else -1
    if not 2 <= size <= MAX_HEADER_BYTES:
        raise LayoutError(path, "header length", f"{what}: 2 to {MAX_HEADER_BYTES:,} bytes", size)
    try:
        header = json.loads(read_bytes(path, what, 8 + size, head=True)[8:].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise LayoutError(path, "header", f"{what}: UTF-8 JSON") from None
    ends = [v.get("data_offsets", [0, 0])[1] for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)]
    if not ends or not all(isinstance(e, int) and e >= 0 for e in ends):
        raise LayoutError(path, "header", f"{what}: tensors with data_offsets")
    return max(ends)


def checkpoint_bytes(directory: str | None, params: int = 0) -> int | None:
    """model.safetensors.index.json's metadata.total_size, when the model directory has it (read through the
    guarded reader: a FIFO or a device there is refused, not waited on). `params`: the parameters the config's
    shapes give; a total_size outside 0.25..8 bytes per parameter contradicts them and is refused."""
    if not directory:
        return None
    path = os.path.join(directory, "model.safetensors.index.json")
    single = os.path.join(directory, "model.safetensors")
    if os.path.lexists(path):
        from ..files import read_json

        data = read_json(path, "a readable model.safetensors.index.json", MAX_INDEX_BYTES)
        meta = data.get("metadata") if isinstance(data, dict) else None
        total = meta.get("total_size") if isinstance(meta, dict) else None
        if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
            return None
    elif os.path.lexists(single):  # one unsharded file: its header's tensor bytes
        path, total = single, safetensors_bytes(single)
    else:
        return None
    (lo_n, lo_d), (hi_n, hi_d) = INDEX_BYTES_PER_PARAM
    if params and not params * lo_n // lo_d <= total <= params * hi_n // hi_d:
        raise LayoutError(path, "metadata.total_size" if path.endswith(".json") else "header (tensor bytes)",
                          f"the checkpoint's bytes: 0.25 to 8 bytes for each of the "
                                                       f"{params:,} parameters config.json's shapes give", total)
    return total


# Model types whose released configs omit vocab_size because it is their transformers class's default (Gemma-3's
# text_config: Gemma3TextConfig's 262,208, vocab/releases/transformers.py SIZES). A trimmed config of another type
# stays refused: it must not be weighed with defaults it never had.
VOCAB_OMITTED = ("gemma3_text",)


def _vocab_default(cfg: dict, mt: Any) -> tuple[dict, int | None]:
    """transformers' config class fills an absent vocab_size with its default, which vLLM and SGLang read (only for
    VOCAB_OMITTED types): (the config with it, the default or None)."""
    if isinstance(cfg.get("vocab_size"), int) or mt not in VOCAB_OMITTED:
        return cfg, None
    from ...vocab.releases.transformers import SIZES  # on the rare path only (start-up time is a target)

    default = SIZES[mt]["vocab_size"]
    return {**cfg, "vocab_size": default}, default


def _checkpoint_name(directory: str | None) -> str:
    indexed = bool(directory) and os.path.lexists(os.path.join(directory or "", "model.safetensors.index.json"))
    return "model.safetensors.index.json's total_size" if indexed else "model.safetensors' header (tensor bytes)"


def weights_spec(data: Any, *, source: str, directory: str | None = None) -> WeightsSpec | str:
    """config.json contents -> the breakdown, or why there is none (a model_type without a rule, or a config
    without the shapes: a trimmed config must not be weighed with transformers' defaults)."""
    if not isinstance(data, dict):
        return f"{source}: not a config.json object"
    cfg = _text_config(data)
    mt = cfg.get("model_type")
    if mt == "gemma3":
        cfg = {**cfg, "model_type": "gemma3_text"}
        mt = "gemma3_text"
    rule = RULES.get(mt) if isinstance(mt, str) else None  # (a list or a mapping is no key)
    hidden = _int(cfg, "hidden_size", 4096)
    vocab_default = None
    if rule is None:  # every other mapped architecture: params.py's count by part (weights_generic.py)
        from .weights_generic import generic_blocks

        got = generic_blocks(data, source, _int(cfg, "num_hidden_layers", 1))
        if isinstance(got, str):
            return f"{source}: no parameter breakdown for model_type {mt!r}: {got}"
        blocks = got
        blocks += _rotary(cfg, _int(cfg, "head_dim") or hidden // max(_int(cfg, "num_attention_heads", 1), 1))
        vision = [b for b in blocks if b.name.startswith("vision")]
        how = "params.py parameter count by part"
    else:
        cfg, vocab_default = _vocab_default(cfg, mt)
        needed = ["hidden_size", "vocab_size", "num_hidden_layers",
                  "intermediate_size" if mt not in _MOE + _MLA else "num_attention_heads"]
        missing = [k for k in needed if not isinstance(cfg.get(k), int)]
        if missing:
            return f"{source}: the config states no {', '.join(missing)} (needed to weigh the model)"
        blocks = rule(cfg)
        vision = _vision(data, hidden)
        blocks, how = blocks + vision, "parameter shapes"
    from .quant import excluded_kinds, read_quantization

    method, linear, expert, skip = read_quantization(data, directory, source)
    if method is not None and linear is None and expert is None:
        return (f"{source}: quantization_config.quant_method {method!r}: kvcalc has no byte rule for it (rules: "
                "awq, gptq (and their Marlin forms), auto-round, fp8, fbgemm_fp8, ptpc_fp8, modelopt (FP8, NVFP4), "
                "compressed-tensors (int / fp8 / nvfp4 weights), quark (fp8, fp4, int4, int8), bitsandbytes, "
                "mxfp4)")
    arch = data.get("architectures")
    experts = _int(cfg, "num_local_experts") or _int(cfg, "num_experts") or _int(cfg, "n_routed_experts")
    index = checkpoint_bytes(directory, _params(blocks, _int(cfg, "num_hidden_layers", 1)))
    stored = {"float32": 4, "bfloat16": 2, "float16": 2}.get(str(cfg.get("torch_dtype") or data.get("torch_dtype")
                                                                 or cfg.get("dtype") or data.get("dtype")), 2)
    return WeightsSpec(
        blocks=tuple(blocks), num_layers=_int(cfg, "num_hidden_layers", 1), hidden_size=hidden,
        intermediate_size=_int(cfg, "intermediate_size"), vocab_size=_int(cfg, "vocab_size", 32000),
        architecture=arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else str(mt),
        num_experts=experts, experts_per_token=_int(cfg, "num_experts_per_tok") or _int(cfg, "experts_per_token"),
        moe_intermediate_size=_int(cfg, "moe_intermediate_size") or (_int(cfg, "intermediate_size") if experts
                                                                     else 0),
        quantization=method, linear_bytes=linear, expert_bytes=expert, checkpoint_bytes=index,
        expert_bias=mt == "gpt_oss", unquantized=excluded_kinds(skip, _int(cfg, "num_hidden_layers", 1)),
        checkpoint_dtype_bytes=stored,
        source=f"{source}: {mt} {how}" + (" + vision_config" if vision else "")
        + (f", vocab_size {vocab_default:,} (transformers' {mt} class default)" if vocab_default else "")
        + (f", scaled to {_checkpoint_name(directory)} {index:,} B" if index else ""),
        has_vision=bool(vision))
