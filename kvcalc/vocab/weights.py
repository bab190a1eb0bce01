"""The model's parameters as the GPU memory model needs them: a breakdown into blocks (embedding, LM head, per-layer
attention and MLP / experts, a vision tower) with where each lives (which PP stage, split over TP or replicated) and
how it is stored. Pure data: inputs/hf/weights.py derives it from a config.json (and a safetensors index where the
model directory has one), engines/vllm/weights.py turns it into bytes per PP stage and TP rank.

An architecture's own rule is a function that returns these blocks (inputs/hf/weights.py RULES): a new architecture
adds one, nothing else changes.
"""

from __future__ import annotations

from .records import field, record

# Where a block lives: on the first PP stage (embedding, vision tower), the last (LM head, final norm), or once per
# decoder layer (split by the stage's layers).
PLACEMENTS = ("first", "last", "layers")
# How TP splits it: "shard" (column/row parallel: / TP), "replicate" (every rank holds it all), "vocab" (vocab-
# parallel: the vocabulary padded to 64, then / TP), "kv" (KV-head projections: max(heads / TP, 1) heads a rank).
TP_RULES = ("shard", "replicate", "vocab", "kv")


def block_kind(name: str) -> str:
    """A parameter block's kind, as WeightsSpec.unquantized names it: attention, mlp, experts, shared, mamba."""
    if name.startswith("shared"):
        return "shared"
    return next((kind for kind in ("experts", "mamba", "attention", "mlp") if name.startswith(kind)), name)


@record
class ParamBlock:
    """One block of parameters."""

    name: str = field("embed_tokens, lm_head, attention, mlp, experts, router, norms, vision, rotary cache, ...")
    params: int = field("elements (per decoder layer when placement is layers)")
    placement: str = field("first | last | layers")
    tp: str = field("shard | replicate | vocab | kv")
    linear: bool = field("a linear layer's weight: quantization (checkpoint or --quantization) applies to it")
    layers: tuple[int, ...] | None = field("placement layers: the decoder layers that have it (None: every one)",
                                           default=None)
    kv_heads: int = field("tp kv: the model's KV heads (the block is params per head x heads)", default=0)
    experts: bool = field("an MoE expert weight (MXFP4 checkpoints quantize only these)", default=False)
    dtype_bytes: int | None = field("stored at this many bytes per element whatever the model dtype (fp32 "
                                    "buffers), or None: the model dtype", default=None)


@record
class WeightsSpec:
    """What the memory model knows of a model's weights and shapes."""

    blocks: tuple[ParamBlock, ...] = field("the parameter breakdown")
    num_layers: int = field("decoder layers")
    hidden_size: int = field("the residual stream width")
    intermediate_size: int = field("the dense MLP's width (0: none)")
    vocab_size: int = field("the vocabulary before padding")
    architecture: str = field("the config's architectures[0] (vLLM's model class)")
    num_experts: int = field("routed experts (0: dense)", default=0)
    experts_per_token: int = field("experts a token is routed to", default=0)
    moe_intermediate_size: int = field("one expert's width", default=0)
    quantization: str | None = field("the checkpoint's quantization_config.quant_method", default=None)
    # bytes per linear-layer element as stored (numerator, denominator): fp8 (1, 1), 4-bit AWQ g128 (133, 256) ...
    linear_bytes: tuple[int, int] | None = field("the checkpoint's bytes per linear weight element (num, den); "
                                                 "None: the model dtype", default=None)
    expert_bytes: tuple[int, int] | None = field("MXFP4-style checkpoints: bytes per expert element", default=None)
    expert_bias: bool = field("the experts carry biases (gpt-oss: w13_bias, w2_bias)", default=False)
    unquantized: tuple[tuple[str, tuple[int, ...] | None], ...] = field(
        "linear block kinds the checkpoint leaves in the model dtype (ignore / modules_to_not_convert / "
        "exclude_modules), with the decoder layers named (None: every layer)", default=())
    checkpoint_bytes: int | None = field("model.safetensors.index.json metadata.total_size (the checkpoint's own "
                                         "bytes), when the model directory has it", default=None)
    checkpoint_dtype_bytes: int = field("bytes per element of the checkpoint's torch_dtype (its unquantized "
                                        "tensors)", default=2)
    source: str = field("where the breakdown came from")
    has_vision: bool = field("a multimodal model (its encoder is loaded and profiled too)", default=False)

    def basis(self, runtime_quantization: str | None = None) -> str:
        """The weights figure's basis, one word wherever it is shown (the first screen, gpu.memory.terms, SGLang's
        weights_basis): "exact" from the parameter shapes at their stored dtype; "estimate" for a quantized model
        (a checkpoint's method or --quantization: its scales and packing are approximated) or a vision tower."""
        return "estimate" if self.has_vision or self.quantization or runtime_quantization else "exact"
