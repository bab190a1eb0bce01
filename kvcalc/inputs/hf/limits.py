"""What vLLM's config validation reads from a model's config.json beside the KV shapes: the derived maximum length
(the one --max-model-len may not pass) and the attention heads TP must divide. Input stage, pure."""

from __future__ import annotations

from typing import Any

from ...vocab.layout import ModelLimits

# vLLM config/model.py _get_and_verify_max_len (0.14.0:1957-1974, 0.33.0:2599-2634): rope types whose factor is
# not applied to the derived length. YaRN's rule changed between releases (0.14.0 - 0.25.0: its
# original_max_position_embeddings x factor; 0.33.0: unscaled): a YaRN config is not checked.
UNSCALED_ROPE = ("su", "longrope", "llama3")
RELEASE_DEPENDENT_ROPE = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")


def _rope_parameters(cfg: dict) -> list[dict] | None:
    """transformers' rope parameters (one dict per layer type when nested), or None when they cannot be read."""
    rope = cfg.get("rope_parameters", cfg.get("rope_scaling"))
    if rope is None:
        return []
    if not isinstance(rope, dict):
        return None
    if rope and all(isinstance(v, dict) for v in rope.values()):
        return [v for v in rope.values() if v]
    return [rope] if rope else []


def _derived(cfg: dict) -> tuple[int | float, str] | None:
    """(vLLM's derived max_model_len, the key it came from) for a text config, or None when kvcalc cannot tell it
    (no length key: vLLM then assumes 2048 and warns; rope parameters it cannot read)."""
    best = None
    for key in _MAX_LEN_KEYS:  # transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            if best is None or value < best[0] or key == "model_max_length":
                best = (value, key)
            if key == "model_max_length":
                break
    rope = _rope_parameters(cfg)
    if best is None or rope is None:
        return None
    derived: int | float = best[0]
    key = best[1]
    if rope and "gemma3" not in str(cfg.get("model_type")):
        factor: Any = 1.0
        for rp in rope:
            kind = rp.get("rope_type", rp.get("type"))
            if kind in RELEASE_DEPENDENT_ROPE:
                return None
            if kind not in UNSCALED_ROPE:
                factor = rp.get("factor", factor)
        if factor is None:
            factor = 1.0  # vLLM: a null factor falls back to 1.0
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
            return None
        derived *= float(factor)  # vLLM multiplies by a float: its message then shows 131072.0
    return derived, key


# SGLang srt/utils/hf_transformers/common.py:668-694 @0.5.23 get_context_length: the first of these keys, times
# rope_scaling's factor unless it names original_max_position_embeddings or is llama3.
SGLANG_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def sglang_context_length(cfg: dict) -> int | None:
    rope = cfg.get("rope_scaling")
    factor: Any = 1
    if isinstance(rope, dict) and rope:
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    elif rope:
        return None
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        return None
    for key in SGLANG_LENGTH_KEYS:
        value = cfg.get(key)
        if value is not None:
            return int(factor * value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return 2048


def model_limits(data: Any, source: str) -> ModelLimits | None:
    """The config's limits vLLM checks at start-up, or None when the config is not one kvcalc maps."""
    from ...vocab.errors import KvcalcError
    from .config import resolve

    if not isinstance(data, dict):
        return None
    try:
        _, cfg, _ = resolve(data, source)
    except KvcalcError:
        return None
    heads = cfg.get("num_attention_heads")
    got = _derived(cfg)
    mml = cfg.get("model_max_length")
    return ModelLimits(num_attention_heads=heads if isinstance(heads, int) and not isinstance(heads, bool) and
                       heads > 0 else None,
                       derived_max_model_len=got[0] if got else None, derived_key=got[1] if got else "",
                       model_max_length=mml if isinstance(mml, int) and not isinstance(mml, bool) else None,
                       sglang_context_length=sglang_context_length(cfg))
