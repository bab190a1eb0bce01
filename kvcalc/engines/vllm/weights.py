"""Weights on one GPU: the parameter breakdown (vocab/weights.WeightsSpec) -> bytes per PP stage and TP rank, as
vLLM allocates them. What vLLM logs as "Model loading took X GiB" is torch's allocated bytes after loading minus
before (v1/worker/gpu_model_runner.py load_model under DeviceMemoryProfiler, 0.14.0 - 0.33.0): these parameters and
buffers.

- TP: column/row-parallel linears split by TP (`shard`, rounded up); KV-head projections keep max(heads // TP, 1)
  heads a rank (QKVParallelLinear replicates a KV head when TP exceeds them); VocabParallelEmbedding and
  ParallelLMHead pad the vocabulary to a multiple of 64 (vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE,
  pad_vocab_size) and split it by TP.
- PP: the embedding (and a vision encoder) on stage 0, the LM head and final norm on the last stage, decoder layers
  by get_pp_indices (the stage ranges of the layer plan).
- Bytes per element: the model dtype; a linear weight at the checkpoint's quantized size (FP8 1 B; AWQ / GPTQ 4-bit
  with group scales; NVFP4 0.5 + 1/16 B; MXFP4 experts 0.5 + 1/32 B) or 1 B under runtime --quantization fp8.
"""

from __future__ import annotations

from ...vocab.errors import UnsupportedError
from ...vocab.records import record
from ...vocab.units import cdiv
from ...vocab.weights import ParamBlock, WeightsSpec, block_kind

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
VOCAB_PADDING = 64  # vLLM model_executor/layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE


@record
class StageWeights:
    """One PP stage's weights on each of its TP ranks."""

    pp_rank: int
    bytes_per_rank: int
    parts: tuple[tuple[str, int], ...]  # (block name, bytes on one rank), the blocks this stage holds


def _elements(block: ParamBlock, spec: WeightsSpec, tp: int, layers: int) -> int:
    if block.tp == "vocab":
        padded = cdiv(spec.vocab_size, VOCAB_PADDING) * VOCAB_PADDING
        return cdiv(padded, tp) * (block.params // max(spec.vocab_size, 1))
    if block.tp == "kv":
        return block.params * max(block.kv_heads // tp, 1) * layers
    if block.tp == "shard":
        return cdiv(block.params, tp) * layers
    return block.params * layers


# Runtime --quantization of an unquantized checkpoint: bytes per linear element (the online methods quantize the
# loaded weights into the same tensors the checkpoint format would have: quantization/fp8.py Fp8OnlineLinearMethod,
# online/ (0.22.0+), experts_int8.py (experts only), bitsandbytes.py in-flight 4-bit).
RUNTIME_BYTES = {"fp8": (1, 1), "fp8_per_tensor": (1, 1), "fp8_per_channel": (1, 1), "ptpc_fp8": (1, 1),
                 "fbgemm_fp8": (1, 1), "int8_per_channel_weight_only": (1, 1), "fp8_per_block": (16388, 16384),
                 "mxfp8": (33, 32), "nvfp4_per_token": (9, 16), "bitsandbytes": (9, 16), "experts_int8": (1, 1)}
RUNTIME_EXPERTS_ONLY = ("experts_int8",)


def _bytes_per_element(block: ParamBlock, spec: WeightsSpec, dtype_bytes: int, runtime_quant: str | None,
                       excluded: bool = False) -> tuple[int, int]:
    if block.dtype_bytes is not None:
        return block.dtype_bytes, 1
    if block.linear and not excluded:
        if block.experts and spec.expert_bytes is not None:
            return spec.expert_bytes
        if spec.linear_bytes is not None:
            return spec.linear_bytes
        if spec.quantization is None and runtime_quant in RUNTIME_BYTES and (
                block.experts or runtime_quant not in RUNTIME_EXPERTS_ONLY):
            return RUNTIME_BYTES[runtime_quant]
    return dtype_bytes, 1


def _excluded(block: ParamBlock, spec: WeightsSpec, layer_ids: list[int]) -> int:
    """How many of the block's layers on this stage the checkpoint leaves unquantized (spec.unquantized)."""
    if not block.linear or not spec.unquantized:
        return 0
    kind = block_kind(block.name)
    for name, layers in spec.unquantized:
        if name == kind:
            return len(layer_ids) if layers is None else sum(i in layers for i in layer_ids)
    return 0


def _checkpoint_scale(spec: WeightsSpec, runtime_quant: str | None) -> tuple[int, int]:
    """(num, den): the checkpoint's own bytes (model.safetensors.index.json total_size) over the breakdown's at the
    checkpoint dtype, applied to every block but the rotary cache (not in the checkpoint): the parameter rules stay
    the split over PP and TP, the checkpoint the total. (1, 1) without an index, or under runtime quantization."""
    if spec.checkpoint_bytes is None or runtime_quant is not None:
        return 1, 1
    mine = 0
    for block in spec.blocks:
        if block.dtype_bytes is None and block.name != "rotary cos/sin cache":
            ids = list(range(spec.num_layers) if block.layers is None else block.layers)
            layers = len(ids) if block.placement == "layers" else 1
            skipped = _excluded(block, spec, ids) if block.placement == "layers" else 0
            for count, excluded in ((layers - skipped, False), (skipped, True)):
                num, den = _bytes_per_element(block, spec, spec.checkpoint_dtype_bytes, None, excluded)
                mine += block.params * (block.kv_heads or 1) * count * num // den
    return (spec.checkpoint_bytes, mine) if mine else (1, 1)


def _mxfp4_experts(spec: WeightsSpec, tp: int, layers: int, capability: str | None, version: str) -> int:
    """An MXFP4 checkpoint's experts on one rank: the backend's padded allocation (engines/vllm/mxfp4.py)."""
    from .mxfp4 import expert_layer_bytes

    per, _ = expert_layer_bytes(experts=spec.num_experts, hidden=spec.hidden_size,
                                intermediate=spec.moe_intermediate_size, tp=tp, bias=spec.expert_bias,
                                capability=capability, version=version)
    return per * layers


def weights_basis(spec: WeightsSpec, *, tp: int, capability: str | None, version: str) -> str:
    """What the weights figure assumes beyond the shapes, in words: an MXFP4 checkpoint's MoE backend and padding
    (a default vLLM picks from the GPU), the blocks a checkpoint leaves unquantized."""
    notes = []
    if spec.quantization == "mxfp4" and spec.num_experts:
        from .mxfp4 import expert_layer_bytes

        notes.append(expert_layer_bytes(experts=spec.num_experts, hidden=spec.hidden_size,
                                        intermediate=spec.moe_intermediate_size, tp=tp, bias=spec.expert_bias,
                                        capability=capability, version=version)[1])
    if spec.unquantized:
        notes.append("left unquantized: " + ", ".join(
            kind + ("" if layers is None else f" (layers {', '.join(map(str, layers))})")
            for kind, layers in spec.unquantized))
    return "; ".join(notes)


def check_quantization(spec: WeightsSpec, runtime: str | None, version: str) -> None:
    """vLLM's start-up refusals of a --quantization value (config/model.py _verify_quantization :924-1004 @0.19.0),
    and the runtime methods kvcalc has no byte rule for (exit 2 either way)."""
    if runtime is None:
        return
    from ...vocab.releases.vllm import parse_release
    from ...vocab.releases.vllm_quant import OVERRIDES, accepted

    row, names = accepted(parse_release(version)[0])
    if runtime not in names:
        raise UnsupportedError(f"vLLM {version} refuses --quantization {runtime}: \"Unknown quantization method: "
                               f"{runtime}\" (it accepts {', '.join(names)}; {row})")
    method = spec.quantization
    if method is not None and runtime != method and runtime not in OVERRIDES.get(method, ()):
        raise UnsupportedError(f"vLLM {version} refuses --quantization {runtime} for this checkpoint: \"Quantization "
                               f"method specified in the model config ({method}) does not match the quantization "
                               f"method specified in the `quantization` argument ({runtime})\" (config/model.py "
                               "_verify_quantization)")
    if method is None and runtime not in RUNTIME_BYTES:
        raise UnsupportedError(f"--quantization {runtime} needs a checkpoint quantized as {runtime} (this config has "
                               f"no quantization_config); the runtime methods kvcalc weighs: "
                               f"{', '.join(sorted(RUNTIME_BYTES))}")


def stage_weights(spec: WeightsSpec, *, dtype: str, tp: int, stages: list[tuple[int, int]],
                  runtime_quant: str | None = None, capability: str | None = None,
                  version: str = "0.33.0") -> list[StageWeights]:
    """Bytes one TP rank of each PP stage holds. `stages`: each stage's decoder layers [start, end). `capability`
    (the GPU's compute capability or gfx target) and `version` pick an MXFP4 checkpoint's MoE backend padding."""
    check_quantization(spec, runtime_quant, version)
    dtype_bytes = DTYPE_BYTES.get(dtype, 2)
    scale_num, scale_den = _checkpoint_scale(spec, runtime_quant)
    last = len(stages) - 1
    out = []
    for rank, (start, end) in enumerate(stages):
        parts = []
        for block in spec.blocks:
            if block.placement == "first" and rank != 0 or block.placement == "last" and rank != last:
                continue
            if block.placement == "layers":
                ids = [i for i in (range(start, end) if block.layers is None else block.layers) if start <= i < end]
            else:
                ids = [0]
            if not ids:
                continue
            if block.experts and spec.quantization == "mxfp4" and spec.num_experts:
                parts.append((block.name, _mxfp4_experts(spec, tp, len(ids), capability, version)))
                continue
            skipped = _excluded(block, spec, ids) if block.placement == "layers" else 0
            held = 0
            for count, excluded in ((len(ids) - skipped, False), (skipped, True)):
                if count:
                    num, den = _bytes_per_element(block, spec, dtype_bytes, runtime_quant, excluded)
                    if block.name != "rotary cos/sin cache":
                        num, den = num * scale_num, den * scale_den
                    held += _elements(block, spec, tp, count) * num // den
            parts.append((block.name, held))
        out.append(StageWeights(pp_rank=rank, bytes_per_rank=sum(b for _, b in parts), parts=tuple(parts)))
    return out
