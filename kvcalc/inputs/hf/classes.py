"""What a transformers configuration class does to a config.json before vLLM reads it: the `layer_types` it
derives when the file has none, and the window it keeps (transformers 5.24.0, models/<type>/configuration_*.py
`__post_init__`; vLLM 0.33.0 reads the class's attributes, not the raw file). Keyed by the config's model_type
(which picks the class), where `arch_table` is keyed by the architecture (which picks vLLM's model class).
"""

from __future__ import annotations

from typing import Any, Callable

from ...vocab.errors import LayoutError
from .readers import Cfg

S, F, L = "sliding_attention", "full_attention", "linear_attention"
_ABSENT = object()  # a key the file does not write (a key written as null is not absent)


def _every(key: str, default: int, full_when_zero: bool = True) -> Callable[[Cfg, int], list[str]]:
    """Layer i is full iff (i + 1) % pattern == 0 (Gemma-3, Cohere2, Exaone4, ...)."""

    def derive(cfg: Cfg, n: int) -> list[str]:
        # A key written as null is no default: the class computes `% None` and fails to load (transformers
        # configuration_gemma3.py __post_init__), so it is refused here like any non-integer.
        written = cfg.get(key, _ABSENT)
        p = default if written is _ABSENT else cfg.int_(key, minimum=1)  # null: int_ refuses it
        return [F if (i + 1) % p == 0 else S for i in range(n)]

    return derive


def _qwen(cfg: Cfg, n: int) -> list[str]:
    window, _ = class_window("qwen2", cfg)
    if window is None:
        return [F] * n
    mwl = cfg.int_("max_window_layers")
    return [S if i >= mwl else F for i in range(n)]


def _qwen2_moe(cfg: Cfg, n: int) -> list[str]:
    use = cfg.get("use_sliding_window") is True
    mwl = cfg.int_("max_window_layers") if use else 0
    return [S if (i + 1) % 2 and i < mwl else F for i in range(n)]


def _gemma4(cfg: Cfg, n: int) -> list[str]:
    kinds = [S if (i + 1) % 6 else F for i in range(n)]
    kinds[-1] = F  # configuration_gemma4.py:195-199: the last layer is always full
    return kinds


def _interval(key: str, default: int, other: str) -> Callable[[Cfg, int], list[str]]:
    """Layer i is full iff (i + 1) % interval == 0, else `other` (Qwen3.5's linear attention)."""

    def derive(cfg: Cfg, n: int) -> list[str]:
        p = default if cfg.get(key, _ABSENT) is _ABSENT else cfg.int_(key, minimum=1)
        return [F if (i + 1) % p == 0 else other for i in range(n)]

    return derive


# model_type -> (how the class derives layer_types when the file has none, the rule in words)
def _lfm2(c: Cfg, n: int) -> list[str]:
    idxs = c.get("full_attn_idxs")
    if idxs is None:
        return [F] * n
    if not isinstance(idxs, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in idxs):
        raise LayoutError(c.source, f"{c.prefix}full_attn_idxs", "a list of layer indices", idxs)
    full = set(idxs)
    return [F if i in full else "conv" for i in range(n)]


DERIVED: dict[str, tuple[Callable[[Cfg, int], list[str]], str]] = {
    "qwen2": (_qwen, "sliding iff sliding_window (use_sliding_window) and i >= max_window_layers"),
    "qwen3": (_qwen, "sliding iff sliding_window (use_sliding_window) and i >= max_window_layers"),
    "qwen2_moe": (_qwen2_moe, "sliding iff use_sliding_window, (i+1) % 2 and i < max_window_layers"),
    "gemma2": (lambda c, n: [S if (i + 1) % 2 else F for i in range(n)], "even layers slide"),
    "gpt_oss": (lambda c, n: [S if (i + 1) % 2 else F for i in range(n)], "even layers slide"),
    "gemma3_text": (_every("sliding_window_pattern", 6), "full iff (i+1) % sliding_window_pattern == 0"),
    "cohere2": (_every("sliding_window_pattern", 4), "full iff (i+1) % sliding_window_pattern (4) == 0"),
    "exaone4": (_every("sliding_window_pattern", 4), "full iff (i+1) % sliding_window_pattern == 0"),
    "exaone_moe": (_every("sliding_window_pattern", 4), "full iff (i+1) % sliding_window_pattern == 0"),
    "afmoe": (_every("global_attn_every_n_layers", 4), "full iff (i+1) % global_attn_every_n_layers == 0"),
    "olmo3": (lambda c, n: [S if (i + 1) % 4 else F for i in range(n)], "full iff (i+1) % 4 == 0"),
    "gemma3n_text": (lambda c, n: [F if (i + 1) % 5 == 0 else S for i in range(n)], "full iff (i+1) % 5 == 0"),
    "gemma4_text": (_gemma4, "full iff (i+1) % 6 == 0, and the last layer"),
    "granite_swa": (lambda c, n: [F if i % 4 == 0 else S for i in range(n)], "full iff i % 4 == 0"),
    "granitemoe_swa": (lambda c, n: [F if i % 4 == 0 else S for i in range(n)], "full iff i % 4 == 0"),
    "ministral": (lambda c, n: [S if c.get("sliding_window") is not None else F] * n,
                  "every layer sliding iff sliding_window is set"),
    "mimo_v2_flash": (lambda c, n: [F if i == 0 or (i + 1) % 6 == 0 else S for i in range(n)],
                      "full iff i == 0 or (i+1) % 6 == 0"),
    "cwm": (lambda c, n: [F if i % 4 == 0 else S for i in range(n)], "full iff i % 4 == 0"),
    "laguna": (lambda c, n: [F] * n, "every layer full"),
    # transformers 5.24 configuration_lfm2.py:82-87: full iff i in full_attn_idxs (absent: every layer), else conv.
    "lfm2": (_lfm2, "full iff i in full_attn_idxs (absent: every layer), else conv"),
    "qwen3_5_text": (_interval("full_attention_interval", 4, L), "full iff (i+1) % full_attention_interval == 0"),
    "qwen3_5_moe_text": (_interval("full_attention_interval", 4, L),
                         "full iff (i+1) % full_attention_interval == 0"),
}


def class_layer_types(config_type: str, cfg: Cfg, n: int) -> tuple[list[str] | None, str]:
    row = DERIVED.get(config_type)
    if row is None:
        return None, ""
    return row[0](cfg, n), f"derived by the {config_type} config class: {row[1]}"


def class_window(config_type: str, cfg: Cfg) -> tuple[Any, str]:
    """The sliding window the class keeps: Qwen2/Qwen3 drop it without use_sliding_window (Qwen2-MoE sets 0)."""
    window = cfg.get("sliding_window")
    if config_type in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "qwen3_next") and window is not None:
        use = cfg.get("use_sliding_window")
        if use is not None and not isinstance(use, bool):
            raise LayoutError(cfg.source, f"{cfg.prefix}use_sliding_window", "true or false", use)
        if not use:
            return None, f"{cfg.prefix}use_sliding_window is false: the {config_type} class drops sliding_window"
    return window, cfg.origin("sliding_window")
