"""A checkpoint's quantization -> the bytes vLLM allocates per linear-weight element (the scales and packing per
format) and the layers it leaves in the model dtype. Read where vLLM reads it: config.json's quantization_config,
else text_config's, else compression_config (model_loader/weight_utils.py:268-276 @0.19.0), else a ModelOpt
checkpoint's hf_quant_config.json beside it (transformers_utils/config.py:740-751 @0.19.0: ModelOpt 0.29 and
before). Bytes as (numerator, denominator) per element.

Per format, what create_weights allocates (vLLM 0.19.0 model_executor/layers/quantization/; the same shapes in
0.14.0 - 0.33.0):
- fp8 per-tensor / per-channel (fp8.py:323-379): float8_e4m3fn weight, fp32 scales per tensor or output row: 1 B.
- fp8 block (weight_block_size [bn, bk]; fp8.py:369-379 BlockQuantScaleParameter): + one fp32 scale_inv per block.
- NVFP4 (modelopt.py:1079-1144 ModelOptNvFp4LinearMethod; compressed_tensors_w4a4_nvfp4.py:34-90): uint8 weight
  [out, in/2] + float8_e4m3fn scale [out, in/16] (+ fp32 globals per partition): 0.5 + 1/16 B.
- AWQ (awq.py:175-245): int32 qweight [in, out/8], qzeros [in/g, out/8], fp16 scales [in/g, out]; GPTQ
  (gptq.py:238-330) the same with qweight [in/8, out]; their Marlin forms (awq_marlin.py:374, gptq_marlin.py:345)
  allocate the same tensors and repack in place of them (no change in bytes).
- compressed-tensors W4A16 / W8A16 pack-quantized (compressed_tensors_wNa16.py:83-160): int32 packed weight, scales
  in the model dtype per group (per row for channel strategy), int32 zero points when asymmetric.
- Quark (quark/schemes/quark_w8a8_fp8.py:121, quark_ocp_mx.py:308): fp8 1 B; OCP MX fp4 uint8 [out, in/2] + uint8
  E8M0 scale [out, in/32].
- bitsandbytes 4-bit (bitsandbytes.py:241-262): uint8 [in x out / 2] + the quant state's fp32 absmax per 64 values
  (uint8 per 64 + fp32 per 256 blocks when double-quantized); 8-bit int8 weight + an fp32 row scale.
- MXFP4 experts (gpt-oss): engines/vllm/mxfp4.py (per MoE backend).
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...vocab.errors import LayoutError

NVFP4 = (9, 16)
MXFP4_ELEMENT = (17, 32)
# kinds of linear block a module-exclusion pattern can name (module names as vLLM's models register them)
_KIND_WORDS = (("experts", ("mlp.experts", ".experts", "block_sparse_moe.experts")),
               ("shared", ("shared_expert",)),
               ("mamba", ("linear_attn", "mixer", "mamba", "conv", "short_conv")),
               ("attention", ("self_attn", "attention", ".attn", "q_proj", "k_proj", "v_proj", "o_proj", "qkv")),
               ("mlp", ("mlp", "gate_proj", "up_proj", "down_proj", "feed_forward")))


def _group_bytes(bits: int, group: int, scale_bits: int, zero: bool) -> tuple[int, int]:
    """bits per value + one scale (and a packed zero point) per group of `group` values, per element."""
    g = group if group > 0 else 4096  # per-channel: one scale per row (the input width; 4,096 taken: ~0 B)
    return bits * g + scale_bits + (bits if zero else 0), 8 * g


def _int(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _checked(q: dict, key: str, path: str, allowed: tuple[int, ...] | None = None) -> None:
    """A quantization_config integer that is there must be an integer (in `allowed`, or -1 / a positive size)."""
    v = q.get(key)
    if v is None:
        return
    ok = isinstance(v, int) and not isinstance(v, bool) and (v in allowed if allowed else v == -1 or v > 0)
    if not ok:
        raise LayoutError(path, key, f"an integer ({', '.join(map(str, allowed))})" if allowed
                          else "an integer: a group size, or -1 for one group per row", v)


BITS = (2, 3, 4, 8)


def _ct_scheme(q: dict, source: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None, list[str]]:
    """compressed-tensors: the bytes of the config group that targets Linear, of one that targets only the MoE
    experts (a mixed recipe: experts in 4 bits, attention in 8), and the ignore list."""
    best: tuple[int, int] | None = None
    experts: tuple[int, int] | None = None
    groups = q.get("config_groups")
    for name, grp in (groups.items() if isinstance(groups, dict) else ()):
        w = grp.get("weights") if isinstance(grp, dict) else None
        if not isinstance(w, dict):
            continue
        _checked(w, "num_bits", f"{source}: quantization_config.config_groups.{name}.weights", BITS)
        _checked(w, "group_size", f"{source}: quantization_config.config_groups.{name}.weights")
        bits, group = _int(w.get("num_bits"), 8), _int(w.get("group_size"), 0)
        kind = str(w.get("type", "int"))
        if bits >= 8:
            rule = (1, 1)
        elif kind == "float" and bits == 4:  # nvfp4-pack-quantized: fp8 scale per 16
            rule = NVFP4
        else:
            rule = _group_bytes(bits, group, 16, not w.get("symmetric", True))
        targets = grp.get("targets")
        names = [str(t) for t in targets] if isinstance(targets, list) else ["Linear"]
        if "Linear" not in names and names and all("experts" in t for t in names):
            experts = rule if experts is None else experts
        else:
            best = rule if best is None else best
    ignore = q.get("ignore")
    return best, experts, [str(x) for x in ignore] if isinstance(ignore, list) else []


def _fp8(q: dict) -> tuple[int, int]:
    block = q.get("weight_block_size")
    if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        n = block[0] * block[1]
        return n + 4, n  # + one fp32 weight_scale_inv per block
    return 1, 1


def _quark(q: dict) -> tuple[int, int] | None:
    glob = q.get("global_quant_config")
    w = glob.get("weight") if isinstance(glob, dict) else None
    w = w[0] if isinstance(w, list) and w else w
    dtype = str(w.get("dtype", "")) if isinstance(w, dict) else ""
    if dtype.startswith("fp8"):
        return 1, 1
    if dtype in ("fp4", "mxfp4"):
        return MXFP4_ELEMENT
    if dtype in ("int4", "uint4"):
        return _group_bytes(4, _int(w.get("group_size"), 128) if isinstance(w, dict) else 128, 16, dtype == "uint4")
    if dtype in ("int8", "uint8"):
        return 1, 1
    return None


def _bnb(q: dict) -> tuple[int, int]:
    if q.get("load_in_8bit"):
        return 1, 1
    if q.get("bnb_4bit_use_double_quant"):
        return 64 * 256 * 4 + 256 * 8 + 32, 64 * 256 * 8  # uint8 absmax per 64, fp32 per 256 blocks
    return 9, 16  # 0.5 B + fp32 absmax per 64


def hf_quant_config(directory: str | None) -> dict | None:
    """A ModelOpt checkpoint's hf_quant_config.json {"quantization": {...}} as a quantization_config dict."""
    if not directory:
        return None
    path = os.path.join(directory, "hf_quant_config.json")
    if not os.path.lexists(path):
        return None
    from ..files import read_json

    data = read_json(path, "a readable hf_quant_config.json", 1 << 20)
    inner = data.get("quantization") if isinstance(data, dict) else None
    return {"quant_method": "modelopt", **inner} if isinstance(inner, dict) else None


def read_quantization(data: dict, directory: str | None = None, source: str = "config.json"
                      ) -> tuple[str | None, tuple[int, int] | None, tuple[int, int] | None, list[str]]:
    """(method, bytes per linear element, bytes per expert element, module patterns left unquantized). A method
    kvcalc has no byte rule for gives (method, None, None, ...): the caller says so."""
    q = data.get("quantization_config")
    if not isinstance(q, dict):
        inner = data.get("text_config")
        q = inner.get("quantization_config") if isinstance(inner, dict) else None
    if not isinstance(q, dict):
        q = data.get("compression_config")
    if not isinstance(q, dict):
        q = hf_quant_config(directory)
    if not isinstance(q, dict):
        return None, None, None, []
    if not isinstance(q.get("quant_method", ""), str):
        raise LayoutError(source, "quantization_config.quant_method", "a method name", q.get("quant_method"))
    for key in ("bits", "w_bit"):
        _checked(q, key, f"{source}: quantization_config", BITS)
    for key in ("group_size", "q_group_size"):
        _checked(q, key, f"{source}: quantization_config")
    method = str(q.get("quant_method", "")).lower()
    skip = [str(x) for key in ("modules_to_not_convert", "exclude_modules", "exclude", "ignored_layers")
            for x in (q.get(key) or []) if isinstance(q.get(key), list)]
    if method == "mxfp4":
        return method, None, MXFP4_ELEMENT, skip
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "auto_round", "auto_gptq", "auto_awq"):
        bits = _int(q.get("bits", q.get("w_bit")), 4)
        group = _int(q.get("group_size", q.get("q_group_size")), 128)
        zero = "awq" in method or not q.get("sym", True)  # AWQ always packs zero points
        return method, _group_bytes(bits, group, 16, zero), None, skip
    if method in ("fp8", "fbgemm_fp8", "ptpc_fp8"):
        return method, _fp8(q), None, skip
    if method in ("modelopt", "modelopt_fp4", "modelopt_mixed"):
        algo = str(q.get("quant_algo", "")).upper()
        return method, (NVFP4 if "FP4" in algo else (1, 1)), None, skip
    if method == "compressed-tensors":
        rule, experts, ignore = _ct_scheme(q, source)
        return method, rule, experts, skip + ignore
    if method == "quark":
        return method, _quark(q), None, skip
    if method == "bitsandbytes":
        return method, _bnb(q), None, skip
    return method, None, None, skip


def excluded_kinds(patterns: list[str], num_layers: int) -> tuple[tuple[str, tuple[int, ...] | None], ...]:
    """Exclusion patterns -> (block kind, the decoder layers it covers or None for all) for the linear blocks they
    name (lm_head, embeddings, routers and vision towers are unquantized in kvcalc's breakdown anyway)."""
    found: dict[str, set[int] | None] = {}
    for raw in patterns:
        text = raw[3:] if raw.startswith("re:") else raw
        kind = next((k for k, words in _KIND_WORDS if any(w in text for w in words)), None)
        last = text.rstrip("$").rsplit(".", 1)[-1]
        # norms, routers / gates, embeddings: not quantized linears in the breakdown (Qwen's FP8 checkpoints list
        # every layer's input_layernorm, post_attention_layernorm and mlp.gate)
        if kind is None or "norm" in last or last in ("gate", "router", "shared_expert_gate", "embed_tokens",
                                                      "lm_head", "*gate", "*router"):
            continue
        m = re.search(r"layers\.(\d+)\.", text)
        if m is None or kind in found and found[kind] is None:
            found[kind] = None
        else:
            bucket = found.setdefault(kind, set())
            if bucket is not None and int(m.group(1)) < num_layers:
                bucket.add(int(m.group(1)))
    return tuple((k, None if v is None else tuple(sorted(v))) for k, v in sorted(found.items()))
