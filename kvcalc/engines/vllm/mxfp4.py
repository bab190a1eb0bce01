"""MXFP4 MoE experts on one GPU, as vLLM allocates them: the experts' packed weights and E8M0 scales padded to the
MoE backend's tile, and what the backend keeps after loading. Imported only for an MXFP4 checkpoint (gpt-oss).

create_weights (quantization/mxfp4.py:255-405 @0.14.1; :138-230 @0.19.0) allocates per layer, with I the
experts' intermediate size per TP rank and H the hidden size, both after the backend's round-up:
  w13_weight uint8 [E, 2I, H/2], w13_weight_scale uint8 [E, 2I, H/32], w13_bias bf16 [E, 2I],
  w2_weight  uint8 [E, H, I/2],  w2_weight_scale  uint8 [E, H, I/32],  w2_bias  bf16 [E, H].
The round-up (BACKEND_PADDING; mxfp4.py:279-331 @0.14.1, fused_moe/oracle/mxfp4.py
mxfp4_round_up_hidden_size_and_intermediate_size :376-400 @0.19.0 ... :837-917 @0.33.0):
  MARLIN                        I to 128, H to 256
  FlashInfer TRT-LLM (SM100)    I to 256 (0.14 - 0.26) / 128 (0.27+: :657 @0.27.0), H to 256
  ROCm (Triton / AITER)         I and H to 256 (the generic ROCm branch)
  TRITON (SM90)                 I to 64, H as it is
After loading (process_weights_after_loading): TRITON and TRT-LLM turn the biases to float32 (mxfp4.py:749-753
@0.14.1; oracle/mxfp4.py:457-458, 663-665 @0.19.0); TRITON swizzles the scales into its PrecisionConfig and leaves
the loaded w13/w2_weight_scale on the layer (mxfp4.py:766-785 @0.14.1, :302-307 @0.19.0 replace them only for the
other backends): the scales are held twice. Marlin repacks to the same bytes.
"""

from __future__ import annotations

from ...vocab.releases.vllm import parse_release
from ...vocab.units import cdiv

MXFP4_BLOCK = 32  # mxfp4.py: mxfp4_block = 32 (one E8M0 scale per 32 values)
# (first release, TRT-LLM intermediate round-up): oracle/mxfp4.py:387 @0.19.0 .. :656 @0.26.0 256; :657 @0.27.0 128.
TRTLLM_INTERMEDIATE = (((0, 14, 0), 256), ((0, 27, 0), 128))


def backend(capability: str | None) -> tuple[str, str]:
    """(the backend vLLM's default selection takes on this GPU, why). Defaults only (no VLLM_MXFP4_USE_MARLIN, no
    --moe-backend): 0.14.1 get_mxfp4_backend (mxfp4.py:107-174): SM100 family with FlashInfer -> the FlashInfer
    BF16 backend (TRT-LLM padding); triton_kernels on 9.0 <= capability < 11.0 -> TRITON; else MARLIN. 0.19.0+
    keeps the order (oracle/mxfp4.py _get_priority_backends: FLASHINFER_TRTLLM_MXFP4_BF16, AITER/CK, TRITON, ...,
    MARLIN)."""
    if capability is None:
        return "TRITON", "no GPU named: the SM90 default (TRITON) assumed"
    if capability.startswith("gfx"):
        return "ROCM", f"ROCm {capability}: the ROCm round-up to 256"
    major = int(capability.split(".")[0]) if capability.split(".")[0].isdigit() else 0
    if major == 10:
        return "TRTLLM", f"compute capability {capability} (SM100 family): FlashInfer TRT-LLM MXFP4"
    if major == 9:
        return "TRITON", f"compute capability {capability}: triton_kernels MXFP4"
    return "MARLIN", f"compute capability {capability}: Marlin MXFP4 (no native FP4 MoE kernel)"


def _round(x: int, to: int) -> int:
    return cdiv(x, to) * to


def padded(kind: str, hidden: int, intermediate: int, version: str) -> tuple[int, int]:
    """(H, I) after the backend's round-up."""
    if kind == "MARLIN":
        return _round(hidden, 256), _round(intermediate, 128)
    if kind == "TRTLLM":
        release = parse_release(version)[0]
        to = [pad for first, pad in TRTLLM_INTERMEDIATE if release >= first][-1]
        return _round(hidden, 256), _round(intermediate, to)
    if kind == "ROCM":
        return _round(hidden, 256), _round(intermediate, 256)
    return hidden, _round(intermediate, 64)


def expert_layer_bytes(*, experts: int, hidden: int, intermediate: int, tp: int, bias: bool, capability: str | None,
                       version: str) -> tuple[int, str]:
    """One MoE layer's expert bytes on one TP rank, and the basis in words."""
    kind, why = backend(capability)
    h, i = padded(kind, hidden, cdiv(intermediate, tp), version)
    values = experts * (2 * i * h // 2 + h * i // 2)
    scales = experts * (2 * i * h // MXFP4_BLOCK + h * i // MXFP4_BLOCK)
    bias_bytes = experts * (2 * i + h) * (4 if kind in ("TRITON", "TRTLLM") else 2) if bias else 0
    held = values + scales * (2 if kind == "TRITON" else 1) + bias_bytes
    return held, f"MXFP4 experts, {why}: H {hidden} -> {h}, I {cdiv(intermediate, tp)} -> {i}" + (
        "; scales held twice (loaded + swizzled)" if kind == "TRITON" else "")
