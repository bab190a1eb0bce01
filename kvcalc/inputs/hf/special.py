"""Readers of attention models whose layers differ in more than the window: KV shared between layers (Gemma-3n,
Gemma-4: a layer that reads another layer's cache registers no KV cache of its own, spec section 3.1, so it maps to
kind "none"), per-layer head counts and head sizes (Gemma-4's full layers)."""

from __future__ import annotations

from ...vocab.errors import LayoutError
from .attention import Rule, config_layer_types, layer_count, put_heads, sliding_layers, window_of
from .readers import Cfg, Mapped


def _shared_from(cfg: Cfg, n: int) -> int:
    """The first layer that reads another layer's KV cache (num_hidden_layers - num_kv_shared_layers)."""
    shared = cfg.get("num_kv_shared_layers", 0) or 0
    if isinstance(shared, bool) or not isinstance(shared, int) or not 0 <= shared <= n:
        raise LayoutError(cfg.source, f"{cfg.prefix}num_kv_shared_layers", f"an integer from 0 to {n}", shared)
    return n - shared


def gemma3n(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    """Gemma3nForCausalLM (gemma3n.py:296-399): sliding_attention layers slide, the last num_kv_shared_layers read the
    cache of an earlier layer of their kind (kv_sharing_target_layer_name) and own none."""
    n = layer_count(m, cfg)
    put_heads(m, cfg, rule)
    kinds, origin = config_layer_types(m, cfg, n)
    sliding_layers(m, cfg, rule, n, kinds, origin)
    first = _shared_from(cfg, n)
    if first < n:
        layer_types = list(m.model.get("layer_types") or ["full_attention"] * n)
        layer_types[first:] = ["none"] * (n - first)
        before = m.origin.get("model.layer_types", origin or "every layer full")
        m.put("layer_types", layer_types, f"{before}; layers {first}-{n - 1} share an earlier layer's KV cache "
              f"({cfg.origin('num_kv_shared_layers')})")


def gemma4(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    """Gemma4ForCausalLM (gemma4.py:388-510,560-590): per-layer head size and KV heads from the config class's
    per_layer_config (configuration_gemma4.py:208-220: full_attention layers take global_head_dim, default 512, and,
    with attention_k_eq_v, num_global_key_value_heads); sliding layers slide; the last num_kv_shared_layers share the
    cache of the last earlier layer of their kind and own none."""
    n = layer_count(m, cfg)
    if "per_layer_config" in cfg.data:
        raise LayoutError(cfg.source, f"{cfg.prefix}per_layer_config", "absent (kvcalc derives it as the Gemma-4 "
                          "class does); write the layout YAML instead")
    put_heads(m, cfg, rule)
    kinds, origin = config_layer_types(m, cfg, n)
    if kinds is None:
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", "the Gemma-4 layer kinds")
    kinds = list(kinds)
    kinds[-1] = "full_attention"  # configuration_gemma4.py:195-199
    heads, size = m.model["num_kv_heads"], m.model["head_size"]
    full_size = cfg.get("global_head_dim", 512)
    full_heads = cfg.get("num_global_key_value_heads") if cfg.get("attention_k_eq_v") else None
    full = [k == "full_attention" for k in kinds]
    m.put("head_size", [full_size if f else size for f in full],
          f"{cfg.origin('head_dim')} on sliding layers; {cfg.prefix}global_head_dim ({full_size}) on full layers")
    if full_heads is not None:
        m.put("num_kv_heads", [full_heads if f else heads for f in full],
              f"{cfg.origin('num_key_value_heads')} on sliding layers; {cfg.prefix}num_global_key_value_heads "
              f"({full_heads}) on full layers (attention_k_eq_v)")
    window, w_origin = window_of(m, cfg)
    first = _shared_from(cfg, n)
    layer_types = ["sliding_attention" if k == "sliding_attention" else "full_attention" for k in kinds]
    layer_types[first:] = ["none"] * (n - first)
    why = f"{origin}; the last layer full" + (f"; layers {first}-{n - 1} share an earlier layer's KV cache "
                                              f"({cfg.origin('num_kv_shared_layers')})" if first < n else "")
    m.put("layer_types", layer_types, why)
    if "sliding_attention" in layer_types:
        if window is None:
            raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window", "an integer for the sliding layers")
        m.put("sliding_window", window, w_origin)
