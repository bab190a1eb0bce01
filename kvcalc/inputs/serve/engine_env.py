"""The engine's environment switches kvcalc reads from a serve line's or a manifest's variables. Pure."""

from __future__ import annotations

from typing import Callable

LONG_VAR = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
AITER_VAR = "VLLM_ROCM_USE_AITER"  # ROCm's attention backend choice reads it (platforms/rocm.py)
BACKEND_VAR = "VLLM_ATTENTION_BACKEND"  # 0.14.x AttentionConfig.__post_init__ (config/attention.py:93 @0.14.0)


def long_allowed(value: str) -> bool:
    """envs.py (0.33.0:1115-1118): os.environ.get(..., "0").strip().lower() in ("1", "true")."""
    return value.strip().lower() in ("1", "true")


def aiter_enabled(value: str) -> bool:
    """envs.py (0.14.0:945-947, 0.19.0:941-943, 0.33.0:1267-1269): os.getenv(..., "False").lower() in ("true", "1")."""
    return value.lower() in ("true", "1")


def read_switches(env: dict[str, str], overrides: dict, where: str, fail: Callable[[str, str], Exception]
                  ) -> set[str]:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN, VLLM_ROCM_USE_AITER, VLLM_ATTENTION_BACKEND and
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS as layout overrides (key path -> (value, where from)); the names read.
    `fail(variable, value)`: the caller's bad-input error for a value vLLM's parse refuses (a ValueError there)."""
    from ...vocab.releases.steps import CG_VAR, cg_env_enabled

    read = set()
    for var, key, parse in ((LONG_VAR, "cache.allow_long_max_model_len", long_allowed),
                            (AITER_VAR, "vllm.rocm_use_aiter", aiter_enabled),
                            (BACKEND_VAR, "vllm.attention_backend_env", str),
                            (CG_VAR, "gpu.estimate_cudagraphs", cg_env_enabled)):
        if var in env:
            try:
                value = parse(env[var])
            except ValueError:
                raise fail(var, env[var]) from None
            overrides[key] = (value, f"{var}={env[var]} ({where})")
            read.add(var)
    return read
