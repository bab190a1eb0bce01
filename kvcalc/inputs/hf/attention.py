"""The attention readers: how one architecture's vLLM model file builds its attention layers, as a `Rule` (which
config key gives the KV heads and the head size, whether it reads `layer_types`, which window it passes), applied to
a config whose class behaviour (defaults, derived `layer_types`) `hf_classes` supplies.

vLLM 0.33.0's `Attention` (model_executor/layers/attention/attention.py:265-273) takes the per-layer window when the
model passes one, else `cache_config.sliding_window`, which engine/arg_utils.py:2288-2294 sets to the config's
`sliding_window` only when `layer_types` is absent or all sliding; config/model.py:815-821 drops a window of 0.
"""

from __future__ import annotations

from typing import Callable

from ...vocab.errors import LayoutError, UnsupportedError
from ...vocab.records import record
from .classes import class_layer_types, class_window
from .readers import Cfg, Mapped


@record
class Rule:
    """How a model file builds its standard attention (vLLM 0.33.0)."""

    # "kv": num_key_value_heads (None: num_attention_heads); "mha": num_attention_heads; "1": one head;
    # "aliases": vLLM's generic reading (n_head_kv, num_kv_heads, ...); any other string: that config key.
    heads: str = "kv"
    # "head_dim": head_dim or hidden_size // num_attention_heads; "hidden": hidden_size // num_attention_heads
    # (head_dim ignored); "head_dim!": head_dim itself; "generic": vLLM's (head_dim, hidden_size_per_head, hidden /
    # heads); any other string: that config key.
    head: str = "head_dim"
    layer_types: bool = True  # reads config.layer_types for a per-layer window
    plus_one: bool = False  # passes sliding_window + 1 (Cohere2: the window counts the current token)
    slides: str = "sliding_attention"  # the layer_types name that gets the window (Rnj1: chunked_attention)
    cache_window: bool = True  # False: the model clears cache_config.sliding_window (no model-level window)
    replicate: bool = True  # False: heads // TP with no floor at 1 (TP above the KV heads refused)


DEFAULT_RULE = Rule()


def layer_count(m: Mapped, cfg: Cfg, key: str = "num_hidden_layers") -> int:
    n = cfg.int_(key, minimum=1, maximum=100_000)
    m.put("num_layers", n, cfg.origin(key))
    return n


def kv_heads(cfg: Cfg, rule: str) -> tuple[int, str]:
    if rule == "1":
        return 1, "1 (the model file builds one KV head)"
    if rule == "chatglm":  # chatglm.py:60-65
        if cfg.get("multi_query_attention"):
            return cfg.int_("multi_query_group_num", minimum=1), f"{cfg.origin('multi_query_group_num')} " \
                                                                 "(multi_query_attention)"
        rule = "mha"
    if rule == "step1":  # step1.py:97-101: num_attention_groups, else num_key_value_heads, else 1
        for key in ("num_attention_groups", "num_key_value_heads"):
            if cfg.get(key) is not None and cfg.get(key) != 0:
                return cfg.int_(key, minimum=1), cfg.origin(key)
        return 1, "1 (no num_attention_groups / num_key_value_heads)"
    if rule == "aliases":  # config.py:56-63 CONFIG_FIELD_ALIASES["total_num_kv_heads"], else the attention heads
        for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                    "num_attention_groups"):
            if cfg.get(key) is not None:
                return cfg.int_(key, minimum=1), cfg.origin(key)
        rule = "mha"
    if rule == "mha":
        return cfg.int_("num_attention_heads", minimum=1), f"{cfg.origin('num_attention_heads')} (multi-head: " \
                                                           "one KV head per query head)"
    key = "num_key_value_heads" if rule == "kv" else rule
    if cfg.get(key) is None:
        if rule != "kv":
            cfg.int_(key)  # raises: the model file reads this key
        return cfg.int_("num_attention_heads", minimum=1), f"{cfg.prefix}num_attention_heads (no {key})"
    return cfg.int_(key, minimum=1), cfg.origin(key)


def head_size(cfg: Cfg, rule: str) -> tuple[int, str]:
    if rule == "generic":  # model_arch_config_convertor.py:104-118: head_dim > 0, hidden_size_per_head, hidden / heads
        if cfg.get("head_dim"):
            return cfg.int_("head_dim", minimum=1), cfg.origin("head_dim")
        if cfg.get("hidden_size_per_head") is not None:
            return cfg.int_("hidden_size_per_head", minimum=1), cfg.origin("hidden_size_per_head")
        rule = "head_dim"
    if rule in ("head_dim", "head_dim!") and (cfg.get("head_dim") or rule == "head_dim!"):
        return cfg.int_("head_dim", minimum=1), cfg.origin("head_dim")
    if rule == "qk":  # MLA dimensions run as plain attention (MiniCPM3): one head of qk_nope + qk_rope per head
        nope, rope = cfg.int_("qk_nope_head_dim"), cfg.int_("qk_rope_head_dim")
        return nope + rope, f"{cfg.origin('qk_nope_head_dim')} + {cfg.origin('qk_rope_head_dim')} ({nope} + {rope})"
    if rule not in ("head_dim", "hidden", "head_dim!"):
        return cfg.int_(rule, minimum=1), cfg.origin(rule)
    hidden, heads = cfg.int_("hidden_size", minimum=1), cfg.int_("num_attention_heads", minimum=1)
    why = " (the model file ignores head_dim)" if rule == "hidden" and cfg.get("head_dim") else ""
    return hidden // heads, f"{cfg.prefix}hidden_size // {cfg.prefix}num_attention_heads ({hidden} // {heads}){why}"


def put_heads(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    heads, ho = kv_heads(cfg, rule.heads)
    m.put("num_kv_heads", heads, ho)
    size, so = head_size(cfg, rule.head)
    m.put("head_size", size, so)
    if not rule.replicate:
        m.put("kv_head_replication", False, "the model file divides the KV heads by TP with no replication")


def config_layer_types(m: Mapped, cfg: Cfg, n: int) -> tuple[list[str] | None, str]:
    """The config's layer_types: the file's list (legacy names remapped as transformers does,
    configuration_utils.py:94-99), else the one its configuration class derives (or None)."""
    key = "layer_types" if "layer_types" in cfg.data else "layers_block_type"  # an older spelling (Granite-4)
    kinds = cfg.data.get(key)
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) < n or not all(isinstance(k, str) for k in kinds):
            raise LayoutError(cfg.source, f"{cfg.prefix}{key}", f"a list of {n} layer kind names", kinds)
        names: list[str] = kinds[:n]  # strings, checked above
        return [_LEGACY_LAYER_TYPES.get(k, k) for k in names], cfg.origin(key)
    return class_layer_types(m.config_type, cfg, n)


_LEGACY_LAYER_TYPES: dict[str, str] = {"mamba": "linear_attention", "attention": "full_attention"}


def window_of(m: Mapped, cfg: Cfg) -> tuple[int | None, str]:
    """The config's sliding_window as its class leaves it (0 and null: none, config/model.py:815-821)."""
    window, origin = class_window(m.config_type, cfg)
    if window is None or window == 0:
        return None, origin
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window", "a positive integer or null", window)
    return window, origin


def attention(m: Mapped, cfg: Cfg, rule: Rule = DEFAULT_RULE, *, n: int | None = None) -> None:
    """Standard attention in every decoder layer: heads, head size, and which layers slide (with the window)."""
    n = layer_count(m, cfg) if n is None else n
    put_heads(m, cfg, rule)
    sliding_layers(m, cfg, rule, n)


def sliding_layers(m: Mapped, cfg: Cfg, rule: Rule, n: int,
                   kinds: list[str] | None = None, kinds_origin: str = "") -> None:
    """Which of n attention layers slide, as vLLM decides it: a per-layer window for the config's sliding layers
    (when the model reads layer_types), else the model-level window when layer_types is absent or all sliding."""
    if kinds is None:
        kinds, kinds_origin = config_layer_types(m, cfg, n)
    window, w_origin = window_of(m, cfg)
    sliding = [k == rule.slides for k in kinds] if kinds is not None else [False] * n
    per_layer = rule.layer_types and any(sliding)
    # arg_utils.py:2290: the model-level window needs layer_types absent or all "sliding_attention".
    model_level = rule.cache_window and window is not None and (
        kinds is None or all(k == "sliding_attention" for k in kinds))
    if per_layer:
        if window is None:
            raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window", "an integer for the sliding layers of "
                              f"{kinds_origin}")
        if rule.plus_one:
            window, w_origin = window + 1, f"{w_origin} + 1 (the model file passes the window plus one)"
        if all(sliding):
            m.put("layer_types", ["sliding_attention"] * n, f"{kinds_origin}: every layer slides")
        else:  # the full layers get no model-level window: layer_types is interleaved
            m.put("layer_types", ["sliding_attention" if s else "full_attention" for s in sliding], kinds_origin)
        m.put("sliding_window", window, w_origin)
    elif model_level:
        m.put("layer_types", ["sliding_attention"] * n,
              f"{w_origin} = {window} with no interleaved layer_types: every layer slides (vLLM's model-level window)")
        m.put("sliding_window", window, w_origin)


def pattern_kinds(n: int, full: Callable[[int], bool]) -> list[str]:
    return ["full_attention" if full(i) else "sliding_attention" for i in range(n)]


def refuse(cfg: Cfg, what: str) -> None:
    raise UnsupportedError(f"{cfg.source}: {what}; write the layout YAML instead (see the README)")


def window_list(m: Mapped, cfg: Cfg, rule: Rule, key: str, *, cyclic: bool = False) -> None:
    """Per-layer windows from a list (Plamo3's interleaved_sliding_window): a null entry is a full layer."""
    n = layer_count(m, cfg)
    put_heads(m, cfg, rule)
    windows = cfg.get(key)
    if not isinstance(windows, list) or not windows or (not cyclic and len(windows) < n):
        raise LayoutError(cfg.source, f"{cfg.prefix}{key}", f"a list of {n} windows (null: full attention)", windows)
    put_windows(m, cfg, [windows[i % len(windows)] for i in range(n)], key)


def put_windows(m: Mapped, cfg: Cfg, per_layer: list, key: str) -> None:
    """Layer kinds from per-layer windows (None: full); kvcalc's layout holds one window, so they must agree."""
    sizes = {w for w in per_layer if w is not None}
    if any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in sizes):
        raise LayoutError(cfg.source, f"{cfg.prefix}{key}", "positive integers or null", sorted(map(str, sizes)))
    if len(sizes) > 1:
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}{key}: {len(sizes)} different windows ({sorted(sizes)}); "
                               "kvcalc's layout holds one sliding window; write the layout YAML instead")
    if sizes:
        m.put("layer_types", ["full_attention" if w is None else "sliding_attention" for w in per_layer],
              f"{cfg.origin(key)}: a window per layer, null for full attention")
        m.put("sliding_window", sizes.pop(), cfg.origin(key))
