"""The backends each vLLM release tries, in order: platforms/cuda.py and platforms/rocm.py `_get_backend_priorities`
as data (one family per change a kvcalc input can see), and the names `--attention-backend` takes per release
(v1/attention/backends/registry.py AttentionBackendEnum).

A CUDA family maps a slot (MLA or not, capability major 10 or 12 or other) to its list; `@sparse10` and `@sparse9` are
the sparse-MLA tails, chosen by the first condition of SPARSE_TAILS that holds. A ROCm entry `NAME?cond` is listed
only when the condition holds (attn_rules.ROCM_CONDITIONS). use_mm_prefix (TRITON_FLASH_ATTN / TRITON_FLASHINFER
first, 0.30+) and use_non_causal (0.26+, family 100 loses FlashInfer first) are never set by a causal text model and
are not listed.
"""

from __future__ import annotations

_FI_S, _FM_S = "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"
_MHA = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
_MHA10 = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
_MLA = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA")
_MLA10_15 = ("FLASHINFER_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")
_MLA10_21 = ("FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")

_C17 = {"mla10": _MLA10_15 + ("@sparse10",), "mla": _MLA + (_FM_S,), "mha10": _MHA10, "mha": _MHA}
_C20 = {**_C17, "mha10": _MHA10 + ("TURBOQUANT",), "mha": _MHA + ("TURBOQUANT",)}
_C21 = {**_C20, "mla10": _MLA10_21 + ("@sparse10",)}
_C24 = {**_C21, "mla12": ("TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120")}

# family id -> slot -> backends, in priority order. A slot a family lacks falls back: mla12 -> mla, mha12 -> mha.
CUDA_LISTS: dict[str, dict[str, tuple[str, ...]]] = {
    # 0.14.0 platforms/cuda.py:44-82
    "c14": {"mla10": ("CUTLASS_MLA", "FLASHINFER_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", _FM_S),
            "mla": _MLA + (_FM_S,), "mha10": _MHA10, "mha": _MHA},
    # 0.15.0 platforms/cuda.py:44-82: FLASHINFER_MLA ahead of CUTLASS_MLA on family 100
    "c15": {"mla10": _MLA10_15 + (_FM_S,), "mla": _MLA + (_FM_S,), "mha10": _MHA10, "mha": _MHA},
    # 0.17.0 platforms/cuda.py:47-97: the family-100 sparse tail by head count
    "c17": {**_C17},
    # 0.19.0 platforms/cuda.py:50-113: an fp8 KV cache puts FLASHINFER_MLA_SPARSE first
    "c19": {**_C17},
    # 0.20.0 platforms/cuda.py:78-143: TURBOQUANT last; the tail's fp8 test is is_quantized_kv_cache
    "c20": _C20,
    # 0.21.0 platforms/cuda.py:78-147: TOKENSPEED_MLA after FLASHINFER_MLA
    "c21": _C21,
    # 0.24.0 platforms/cuda.py:83-159: capability major 12 gets its own MLA list
    "c24": _C24,
    # 0.25.0 platforms/cuda.py:82-159: FLASH_ATTN_MLA_SPARSE ahead of FLASHMLA_SPARSE off family 100
    "c25": {**_C24, "mla": _MLA + ("FLASH_ATTN_MLA_SPARSE", _FM_S)},
    # 0.30.0 platforms/cuda.py:82-179: FLASHINFER_MLA_SPARSE_SM90 in the SM9x tail (first for head size 512)
    "c30": {**_C24, "mla": _MLA + ("@sparse9",)},
    # 0.33.0 platforms/cuda.py:83-181: bf16 sparse MLA with <= 16 heads on family 100: FLASH_ATTN_MLA_SPARSE_FA4 first
    "c33": {**_C24, "mla": _MLA + ("@sparse9",)},
}

# tail -> (condition, backends) in order; the first condition that holds gives the tail ("*": always).
SPARSE_TAILS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "c17": (("heads<=16", (_FI_S, _FM_S)), ("*", (_FM_S, _FI_S))),
    "c19": (("kv:fp8*", (_FI_S, _FM_S)), ("heads<=16", (_FI_S, _FM_S)), ("*", (_FM_S, _FI_S))),
    "c20": (("kv:quantized", (_FI_S, _FM_S)), ("heads<=16", (_FI_S, _FM_S)), ("*", (_FM_S, _FI_S))),
    "c30:9": (("head==512", ("FLASHINFER_MLA_SPARSE_SM90", "FLASH_ATTN_MLA_SPARSE", _FM_S)),
              ("*", ("FLASH_ATTN_MLA_SPARSE", _FM_S, "FLASHINFER_MLA_SPARSE_SM90"))),
    "c33": (("kv:quantized", (_FI_S, _FM_S)), ("heads<=16", ("FLASH_ATTN_MLA_SPARSE_FA4", _FI_S, _FM_S)),
            ("*", (_FM_S, _FI_S))),
}
# which tail a family's @sparse10 / @sparse9 slot reads
TAIL_OF: dict[tuple[str, str], str] = {
    ("c17", "@sparse10"): "c17", ("c19", "@sparse10"): "c19", ("c20", "@sparse10"): "c20",
    ("c21", "@sparse10"): "c20", ("c24", "@sparse10"): "c20", ("c25", "@sparse10"): "c20",
    ("c30", "@sparse10"): "c20", ("c30", "@sparse9"): "c30:9", ("c33", "@sparse10"): "c33",
    ("c33", "@sparse9"): "c30:9",
}

# ROCm from 0.18.0 (0.14-0.17: attn_rules' if-chain). family id -> slot -> entries.
_R19_MHA = ("ROCM_ATTN", "ROCM_AITER_FA?mha_enabled", "ROCM_AITER_UNIFIED_ATTN?aiter_supported", "TRITON_ATTN")
_R_MLA = {"sparse": ("ROCM_AITER_MLA_SPARSE",), "mla": ("ROCM_AITER_MLA?mla_enabled", "TRITON_MLA",
                                                        "ROCM_AITER_TRITON_MLA?mla_enabled")}
ROCM_LISTS: dict[str, dict[str, tuple[str, ...]]] = {
    # 0.18.0 platforms/rocm.py:309-352 (the unified-attention env and use_prefill_decode_attention at their defaults,
    # False: not listed)
    "r18": {**_R_MLA, "mha": ("ROCM_AITER_FA?aiter", "TRITON_ATTN")},
    # 0.19.0 platforms/rocm.py:308-338: ROCM_ATTN first; ROCM_AITER_UNIFIED_ATTN where aiter runs
    "r19": {**_R_MLA, "mha": _R19_MHA},
    # 0.20.0 platforms/rocm.py:357-388: + TURBOQUANT
    "r20": {**_R_MLA, "mha": _R19_MHA + ("TURBOQUANT",)},
    # 0.23.0 platforms/rocm.py:389-423: ROCM_ATTN left out with a KV connector (:411-415)
    "r23": {**_R_MLA, "mha": ("ROCM_ATTN?no_connector",) + _R19_MHA[1:] + ("TURBOQUANT",)},
    # 0.32.0 platforms/rocm.py:478-515: + ULTRAQUANT
    "r32": {**_R_MLA, "mha": ("ROCM_ATTN?no_connector",) + _R19_MHA[1:] + ("TURBOQUANT", "ULTRAQUANT")},
    # 0.33.0 platforms/rocm.py:531-569: + ROCM_OCTAVE
    "r33": {**_R_MLA, "mha": ("ROCM_ATTN?no_connector",) + _R19_MHA[1:] + ("TURBOQUANT", "ROCM_OCTAVE",
                                                                            "ULTRAQUANT")},
}

# AttentionBackendEnum, every member of any release in the order the releases list them, with the first and last
# release that has it (v1/attention/backends/registry.py:34 in every release). `--attention-backend X` names a
# member (config/attention.py validate_backend_before: AttentionBackendEnum[X.upper()]), else vLLM's ValueError
# "Unknown attention backend: 'X'. Valid options are: ..." lists that release's members.
ENUM: tuple[tuple[str, str, str], ...] = (
    ("FLASH_ATTN", "0.14.0", "0.33.0"), ("FLASH_ATTN_DIFFKV", "0.14.0", "0.33.0"), ("TRITON_ATTN", "0.14.0", "0.33.0"),
    ("TRITON_ATTN_DIFFKV", "0.24.0", "0.33.0"), ("TRITON_FLASH_ATTN", "0.30.0", "0.33.0"),
    ("ROCM_ATTN", "0.14.0", "0.33.0"), ("ROCM_SEGMENTED_ATTN", "0.32.0", "0.33.0"),
    ("ROCM_AITER_MLA", "0.14.0", "0.33.0"), ("ROCM_AITER_TRITON_MLA", "0.14.0", "0.33.0"),
    ("ROCM_AITER_FA", "0.14.0", "0.33.0"), ("ROCM_AITER_MLA_SPARSE", "0.14.0", "0.33.0"),
    ("XPU_MLA_SPARSE", "0.18.0", "0.33.0"), ("TORCH_SDPA", "0.14.0", "0.33.0"), ("FLASHINFER", "0.14.0", "0.33.0"),
    ("TRITON_FLASHINFER", "0.30.0", "0.33.0"), ("FLASHINFER_MLA", "0.14.0", "0.33.0"),
    ("TOKENSPEED_MLA", "0.21.0", "0.33.0"), ("FLASHINFER_MLA_SPARSE", "0.17.0", "0.33.0"),
    ("FLASHINFER_MLA_SPARSE_SM120", "0.24.0", "0.33.0"), ("FLASHINFER_MLA_SPARSE_SM90", "0.30.0", "0.33.0"),
    ("TRITON_MLA", "0.14.0", "0.33.0"), ("CUTLASS_MLA", "0.14.0", "0.33.0"), ("FLASHMLA", "0.14.0", "0.33.0"),
    ("FLASHMLA_SPARSE", "0.14.0", "0.33.0"), ("FLASHMLA_SPARSE_DSV4", "0.23.0", "0.33.0"),
    ("FLASHINFER_MLA_SPARSE_DSV4", "0.23.0", "0.33.0"), ("ROCM_FLASHMLA_SPARSE_DSV4", "0.23.0", "0.33.0"),
    ("FLASHMLA_SPARSE_DSV41", "0.30.0", "0.33.0"), ("FLASHINFER_MLA_SPARSE_DSV41", "0.30.0", "0.33.0"),
    ("ROCM_FLASHMLA_SPARSE_DSV41", "0.33.0", "0.33.0"), ("FLASHMLA_MEGA_ATTN_DSV41", "0.31.0", "0.33.0"),
    ("B12X", "0.30.0", "0.33.0"), ("FLASH_ATTN_MLA", "0.14.0", "0.33.0"), ("FLASH_ATTN_MLA_SPARSE", "0.25.0", "0.33.0"),
    ("FLASH_ATTN_MLA_SPARSE_FA4", "0.33.0", "0.33.0"), ("MINIMAX_M3_SPARSE", "0.24.0", "0.33.0"),
    ("CUTLASS_MSA", "0.27.0", "0.33.0"), ("TRITON_MSA", "0.27.0", "0.33.0"), ("STEP5_DSA", "0.33.0", "0.33.0"),
    ("IPEX", "0.14.0", "0.15.1"), ("NO_ATTENTION", "0.14.0", "0.33.0"), ("FLEX_ATTENTION", "0.14.0", "0.33.0"),
    ("HPC_ATTN", "0.25.0", "0.33.0"), ("TREE_ATTN", "0.14.0", "0.20.2"),
    ("ROCM_AITER_UNIFIED_ATTN", "0.14.0", "0.33.0"),
    ("CPU_ATTN", "0.14.0", "0.33.0"), ("CPU_MLA", "0.28.0", "0.33.0"), ("AMX_MLA", "0.29.0", "0.33.0"),
    ("TURBOQUANT", "0.20.0", "0.33.0"), ("ROCM_OCTAVE", "0.33.0", "0.33.0"), ("ULTRAQUANT", "0.32.0", "0.33.0"),
    ("CUSTOM", "0.14.0", "0.33.0"),
)
ENUM_NAMES = tuple(name for name, _, _ in ENUM)


def _release(text: str) -> tuple[int, int, int]:
    a, b, c = text.split(".")
    return int(a), int(b), int(c)


def enum_members(release: tuple[int, int, int]) -> tuple[str, ...]:
    """The AttentionBackendEnum members of one release, in its order."""
    return tuple(n for n, lo, hi in ENUM if _release(lo) <= release <= _release(hi))
