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

from ...vocab.records import record
from ...vocab.units import cdiv
from ...vocab.weights import ParamBlock, WeightsSpec

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


def _bytes_per_element(block: ParamBlock, spec: WeightsSpec, dtype_bytes: int, runtime_quant: str | None
                       ) -> tuple[int, int]:
    if block.dtype_bytes is not None:
        return block.dtype_bytes, 1
    if block.linear:
        if block.experts and spec.expert_bytes is not None:
            return spec.expert_bytes
        if spec.linear_bytes is not None:
            return spec.linear_bytes
        if runtime_quant == "fp8":
            return 1, 1  # vLLM's runtime fp8: Fp8LinearMethod stores float8_e4m3fn weights (+ a per-tensor scale)
    return dtype_bytes, 1


def _checkpoint_scale(spec: WeightsSpec, runtime_quant: str | None) -> tuple[int, int]:
    """(num, den): the checkpoint's own bytes (model.safetensors.index.json total_size) over the breakdown's at the
    checkpoint dtype, applied to every block but the rotary cache (not in the checkpoint): the parameter rules stay
    the split over PP and TP, the checkpoint the total. (1, 1) without an index, or under runtime quantization."""
    if spec.checkpoint_bytes is None or runtime_quant is not None:
        return 1, 1
    mine = 0
    for block in spec.blocks:
        if block.dtype_bytes is None and block.name != "rotary cos/sin cache":
            layers = spec.num_layers if block.layers is None else len(block.layers)
            count = block.params * (block.kv_heads or 1) * (layers if block.placement == "layers" else 1)
            num, den = _bytes_per_element(block, spec, spec.checkpoint_dtype_bytes, None)
            mine += count * num // den
    return (spec.checkpoint_bytes, mine) if mine else (1, 1)


def stage_weights(spec: WeightsSpec, *, dtype: str, tp: int, stages: list[tuple[int, int]],
                  runtime_quant: str | None = None) -> list[StageWeights]:
    """Bytes one TP rank of each PP stage holds. `stages`: each stage's decoder layers [start, end)."""
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
                layers = end - start if block.layers is None else sum(start <= i < end for i in block.layers)
            else:
                layers = 1
            if not layers:
                continue
            num, den = _bytes_per_element(block, spec, dtype_bytes, runtime_quant)
            if block.name != "rotary cos/sin cache":
                num, den = num * scale_num, den * scale_den
            parts.append((block.name, _elements(block, spec, tp, layers) * num // den))
        out.append(StageWeights(pp_rank=rank, bytes_per_rank=sum(b for _, b in parts), parts=tuple(parts)))
    return out
