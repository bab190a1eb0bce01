"""Per-architecture readers of a Hugging Face config.json: the configuration class's defaults for the fields
kvcalc reads (transformers' configuration_*.py, version 5.x) and the rule that turns a config into per-layer kinds,
one table row per `model_type` (READERS). hf_config.map_config drives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...vocab.errors import LayoutError, UnsupportedError


class Cfg:
    """A config dict with its class defaults, and a record of which keys were read. `attribute_map` is the
    configuration class's (transformers): a standard name read under the file's own spelling (GPT-2's n_head)."""

    def __init__(self, data: dict, defaults: dict, source: str, prefix: str = "", attribute_map: dict | None = None):
        self.data = data
        self.defaults = defaults
        self.source = source
        self.prefix = prefix
        self.attribute_map = attribute_map or {}

    def _key(self, key: str) -> str:
        """The key as the file spells it (attribute_map), when the file has it under that spelling only."""
        alias = self.attribute_map.get(key)
        return alias if alias is not None and key not in self.data and alias in self.data else key

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        if "." in key:  # a nested key (Dbrx's attn_config.kv_n_heads)
            head, rest = key.split(".", 1)
            inner = self.get(head)
            return inner.get(rest, default) if isinstance(inner, dict) else default
        key = self._key(key)
        if key in self.data:
            return self.data[key]
        return self.defaults.get(key, default)

    def origin(self, key: str) -> str:
        key = self._key(key) if "." not in key else key
        if key in self.data or "." in key:
            return f"{self.prefix}{key}"
        if key in self.defaults:
            return f"{self.prefix}{key} (absent: class default {self.defaults[key]!r})"
        return f"{self.prefix}{key}"

    def int_(self, key: str, *, minimum: int = 0, maximum: int = 1 << 31) -> int:
        value = self.get(key)
        if value is None:
            raise LayoutError(self.source, f"{self.prefix}{self._key(key)}", "an integer (the mapping needs it)",
                              detail="write the layout YAML instead if the config lacks it")
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise LayoutError(self.source, f"{self.prefix}{self._key(key)}", f"an integer from {minimum} to {maximum}",
                              value)
        return value


@dataclass
class Mapped:
    """The result of a mapping: schema-v1 model keys, their provenance, and cache keys the model implies."""

    model_type: str
    config_type: str = ""  # the config class's model_type (its defaults and derived layer_types)
    arch: str = ""  # the architectures entry the reader follows
    model: dict = field(default_factory=dict)
    origin: dict = field(default_factory=dict)  # key path -> where it came from
    cache: dict = field(default_factory=dict)  # e.g. Nemotron-H's float32 SSM state dtype
    num_nextn_predict_layers: int = 0
    notes: list = field(default_factory=list)  # what the user should know about this mapping
    user_kinds: str = ""  # an unmapped config: where the layout's own layer kinds came from (its provenance)

    def put(self, key: str, value: Any, origin: str) -> None:
        self.model[key] = value
        self.origin[f"model.{key}"] = origin


# transformers' configuration defaults for the keys kvcalc reads, per model_type.
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"max_position_embeddings": 2048},
    "mistral": {"num_key_value_heads": 8, "sliding_window": 4096, "max_position_embeddings": 131072},
    "qwen2": {"num_key_value_heads": 32, "max_position_embeddings": 32768, "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28},
    "qwen3": {"num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
              "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28},
    "qwen3_moe": {"num_key_value_heads": 4, "max_position_embeddings": 32768, "use_sliding_window": False,
                  "sliding_window": 4096, "max_window_layers": 28},
    "phi3": {"max_position_embeddings": 4096},
    "gemma2": {"num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 8192, "sliding_window": 4096},
    "gemma3_text": {"num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
                    "sliding_window": 4096, "sliding_window_pattern": 6},
    "gpt_oss": {"num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128, "max_position_embeddings": 131072},
    "deepseek_v2": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "max_position_embeddings": 2048},
    "deepseek_v3": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "max_position_embeddings": 4096,
                    "num_nextn_predict_layers": 0},
    "deepseek_v32": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
                     "index_head_dim": 128, "index_topk": 2048, "num_nextn_predict_layers": 0},
    "llama4_text": {"num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
                    "no_rope_layer_interval": 4, "attention_chunk_size": 8192},
    "qwen3_next": {"num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768,
                   "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                   "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32},
    "jamba": {"num_key_value_heads": 8, "max_position_embeddings": 262144, "attn_layer_period": 8,
              "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2},
    "mamba2": {"num_heads": 128, "head_dim": 64, "state_size": 128, "conv_kernel": 4, "n_groups": 8, "expand": 2,
               "chunk_size": 256},
    "nemotron_h": {"num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 4096,
                   "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8,
                   "conv_kernel": 4, "chunk_size": 128, "mamba_ssm_cache_dtype": "float32"},
    "falcon_h1": {"num_key_value_heads": 8, "max_position_embeddings": 8192, "mamba_d_ssm": 1024,
                  "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 256,
                  "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256},
    # transformers 5.24.0 models/falcon/configuration_falcon.py:64-95 (num_kv_heads None -> num_attention_heads)
    "falcon": {"num_hidden_layers": 32, "num_attention_heads": 71, "hidden_size": 4544, "multi_query": True,
               "new_decoder_architecture": False, "alibi": False, "max_position_embeddings": 2048},
    "deci": {},
    "nemotron-nas": {},
}
# state-spaces' mamba_ssm checkpoints (no model_type): the Mamba2 class's code defaults.
MAMBA_SSM_DEFAULTS = {"Mamba2": {"d_state": 128, "d_conv": 4, "expand": 2, "headdim": 64, "ngroups": 1},
                       "Mamba1": {"d_state": 16, "d_conv": 4, "expand": 2}}
# Config classes vLLM substitutes (transformers_utils/config.py _CONFIG_REGISTRY @0.33.0: kimi_k2 -> DeepseekV3Config).
CONFIG_CLASS_OF = {"kimi_k2": "deepseek_v3"}


def defaults_for(config_type: str, *, sizes: bool = False) -> dict:
    """The configuration class's defaults: transformers' (hf_defaults), the hand-checked rows above over them; with
    `sizes`, the model's sizes too (a multimodal wrapper's sub-config relies on its class for them)."""
    from ...vocab.releases.transformers import CLASS_DEFAULTS, SIZES

    config_type = CONFIG_CLASS_OF.get(config_type, config_type)
    base = {**SIZES.get(config_type, {})} if sizes else {}
    return {**base, **CLASS_DEFAULTS.get(config_type, {}), **DEFAULTS.get(config_type, {})}


def read_dtype(m: Mapped, cfg: Cfg, outer: dict) -> None:
    for key in ("torch_dtype", "dtype"):
        for where, d in ((cfg.prefix, cfg.data), ("", outer)):
            value = d.get(key)
            if value is not None:
                if value == "float32":
                    m.put("dtype", "bfloat16", f"{where}{key} = float32: vLLM serves float32 checkpoints in bf16")
                elif value in ("bfloat16", "float16"):
                    m.put("dtype", value, f"{where}{key}")
                else:
                    raise LayoutError(cfg.source, f"{where}{key}", "bfloat16, float16 or float32", value)
                return
    m.put("dtype", "bfloat16", "no torch_dtype: vLLM treats it as float32 and serves bf16")


def heads_of(cfg: Cfg) -> tuple[int, str]:
    """KV heads, spec 3.2: first present of n_head_kv, num_kv_heads, num_key_value_heads, multi_query_group_num."""
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num"):
        if cfg.get(key) is not None:
            return cfg.int_(key, minimum=1), cfg.origin(key)
    return cfg.int_("num_attention_heads", minimum=1), f"{cfg.prefix}num_attention_heads (no KV head key)"


def head_size_of(cfg: Cfg) -> tuple[int, str]:
    """Spec 3.3: head_dim, then hidden_size_per_head, then hidden_size // num_attention_heads."""
    for key in ("head_dim", "hidden_size_per_head", "attention_head_dim"):
        if cfg.get(key) is not None:
            return cfg.int_(key, minimum=1), cfg.origin(key)
    hidden, heads = cfg.int_("hidden_size", minimum=1), cfg.int_("num_attention_heads", minimum=1)
    return hidden // heads, f"{cfg.prefix}hidden_size // {cfg.prefix}num_attention_heads ({hidden} // {heads})"


def _attention(m: Mapped, cfg: Cfg) -> None:
    heads, ho = heads_of(cfg)
    m.put("num_kv_heads", heads, ho)
    size, so = head_size_of(cfg)
    m.put("head_size", size, so)


def _layers(cfg: Cfg) -> int:
    return cfg.int_("num_hidden_layers", minimum=1, maximum=100_000)


def _read_layer_types(cfg: Cfg, n: int) -> list[str] | None:
    kinds = cfg.get("layer_types")
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) != n or not all(isinstance(k, str) for k in kinds):
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", f"a list of {n} layer kind names", kinds)
    return kinds


def mla(m: Mapped, cfg: Cfg, *, indexer: bool) -> None:
    """DeepSeek-style MLA (deepseek_v2.py:1276-1319): one latent head of kv_lora_rank + qk_rope_head_dim per layer;
    with `index_topk` (DeepSeek-V3.2's DSA, deepseek_v2.py:1138-1190) an indexer cache in every layer."""
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    if cfg.get("kv_lora_rank") is None:
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}kv_lora_rank is null: a DeepSeek model without MLA is "
                               "not mapped; write the layout YAML instead")
    m.put("kv_lora_rank", cfg.int_("kv_lora_rank", minimum=1), cfg.origin("kv_lora_rank"))
    m.put("qk_rope_head_dim", cfg.int_("qk_rope_head_dim"), cfg.origin("qk_rope_head_dim"))
    if cfg.get("qk_nope_head_dim") is not None:
        m.put("qk_nope_head_dim", cfg.int_("qk_nope_head_dim"), cfg.origin("qk_nope_head_dim"))
    if cfg.get("num_attention_heads") is not None:
        m.put("num_attention_heads", cfg.int_("num_attention_heads", minimum=1), cfg.origin("num_attention_heads"))
    if indexer:
        freq, pattern = cfg.get("index_topk_freq", 1), cfg.get("index_topk_pattern")
        if freq != 1 or pattern is not None:
            # deepseek_v2.py:1144-1168: only some layers build an indexer (IndexCache); kvcalc's layout puts one in
            # every MLA layer.
            raise UnsupportedError(f"{cfg.source}: {cfg.prefix}index_topk_freq / index_topk_pattern: an indexer in "
                                   "some layers only is not modelled; write the layout YAML instead")
        m.put("index_head_dim", cfg.int_("index_head_dim", minimum=1), cfg.origin("index_head_dim"))
    m.num_nextn_predict_layers = cfg.get("num_nextn_predict_layers") or 0


def llama4(m: Mapped, cfg: Cfg) -> None:
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    _attention(m, cfg)
    chunk = cfg.get("attention_chunk_size")
    rope = cfg.get("no_rope_layers")
    if rope:
        if not isinstance(rope, list) or len(rope) != n or not all(r in (0, 1) for r in rope):
            raise LayoutError(cfg.source, f"{cfg.prefix}no_rope_layers", f"a list of {n} flags", rope)
        origin = f"{cfg.prefix}no_rope_layers: RoPE layers (1) are chunked, NoPE layers (0) full"
    else:
        interval = cfg.int_("no_rope_layer_interval", minimum=1)
        rope = [int((i + 1) % interval != 0) for i in range(n)]
        origin = f"derived: every {cfg.origin('no_rope_layer_interval')} = {interval}th layer is NoPE (full)"
    if chunk is None:
        m.put("layer_types", ["full_attention"] * n, f"{cfg.prefix}attention_chunk_size is null: all full")
        return
    m.put("layer_types", ["chunked_attention" if r else "full_attention" for r in rope], origin)
    m.put("attention_chunk_size", cfg.int_("attention_chunk_size", minimum=1), cfg.origin("attention_chunk_size"))


def mamba_fields(m: Mapped, cfg: Cfg, kind: str, pairs: list[tuple[str, str]]) -> None:
    """pairs: (layout field under model.mamba, config key)."""
    section: dict[str, Any] = {"kind": kind}
    m.origin["model.mamba.kind"] = f"model_type {m.model_type}"
    for field_name, key in pairs:
        section[field_name] = cfg.int_(key, minimum=1)
        m.origin[f"model.mamba.{field_name}"] = cfg.origin(key)
    m.model["mamba"] = section


def qwen3_next(m: Mapped, cfg: Cfg) -> None:
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    _attention(m, cfg)
    kinds = _read_layer_types(cfg, n)
    if kinds is not None:
        m.put("layer_types", ["mamba" if k == "linear_attention" else k for k in kinds], cfg.origin("layer_types"))
    else:
        interval = cfg.int_("full_attention_interval", minimum=1)
        m.put("layer_types", ["full_attention" if (i + 1) % interval == 0 else "mamba" for i in range(n)],
              f"derived: (i+1) % {cfg.origin('full_attention_interval')} ({interval}) == 0 is full, else GDN")
    mamba_fields(m, cfg, "gated_delta_net", [(k, k) for k in (
        "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim")])


def jamba(m: Mapped, cfg: Cfg) -> None:
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    _attention(m, cfg)
    period, offset = cfg.int_("attn_layer_period", minimum=1), cfg.int_("attn_layer_offset")
    m.put("layer_types", ["full_attention" if i % period == offset else "mamba" for i in range(n)],
          f"derived: i % attn_layer_period ({period}) == attn_layer_offset ({offset}) is attention, else Mamba-1")
    mamba_fields(m, cfg, "mamba1", [("hidden_size", "hidden_size"), ("mamba_expand", "mamba_expand"),
                                     ("mamba_d_state", "mamba_d_state"), ("mamba_d_conv", "mamba_d_conv")])


def mamba2(m: Mapped, cfg: Cfg) -> None:
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    m.put("layer_types", ["mamba"] * n, "every layer is Mamba-2")
    mamba_fields(m, cfg, "mamba2", [("mamba_num_heads", "num_heads"), ("mamba_head_dim", "head_dim"),
                                     ("n_groups", "n_groups"), ("ssm_state_size", "state_size"),
                                     ("conv_kernel", "conv_kernel"), ("chunk_size", "chunk_size")])
    inter = cfg.int_("expand", minimum=1) * cfg.int_("hidden_size", minimum=1)
    m.model["mamba"]["intermediate_size"] = inter
    m.origin["model.mamba.intermediate_size"] = f"{cfg.origin('expand')} * {cfg.prefix}hidden_size"


def nemotron_h(m: Mapped, cfg: Cfg) -> None:
    chars = {"M": "mamba", "*": "full_attention", "-": "none", "E": "none"}
    names = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "full_attention",
             "attention": "full_attention", "mlp": "none", "moe": "none"}
    pattern = cfg.get("hybrid_override_pattern")
    block_types = cfg.get("layers_block_type")
    if isinstance(pattern, str) and pattern:
        bad = set(pattern) - set(chars)
        if bad:
            raise LayoutError(cfg.source, f"{cfg.prefix}hybrid_override_pattern", "characters M * - E", sorted(bad))
        kinds = [chars[c] for c in pattern]
        origin = f"{cfg.prefix}hybrid_override_pattern: M Mamba-2, * attention, - and E no KV"
    elif isinstance(block_types, list) and block_types:
        if not all(isinstance(b, str) for b in block_types) or set(block_types) - set(names):
            raise LayoutError(cfg.source, f"{cfg.prefix}layers_block_type", f"kinds {sorted(names)}", block_types)
        kinds = [names[b] for b in block_types]
        origin = f"{cfg.prefix}layers_block_type"
    else:
        raise LayoutError(cfg.source, f"{cfg.prefix}hybrid_override_pattern", "the layer pattern string")
    m.put("num_layers", len(kinds), f"len({origin.split(':')[0]})")
    m.put("layer_types", kinds, origin)
    _attention(m, cfg)
    mamba_fields(m, cfg, "mamba2", [(k, k) for k in (
        "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel", "chunk_size")])
    ssm = cfg.get("mamba_ssm_cache_dtype")
    m.cache["mamba_ssm_cache_dtype"] = (ssm, cfg.origin("mamba_ssm_cache_dtype") + ": vLLM's auto takes it")


def falcon_h1(m: Mapped, cfg: Cfg) -> None:
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    m.put("layer_types", ["full_attention+mamba"] * n, "every Falcon-H1 layer has attention, then Mamba-2")
    _attention(m, cfg)
    hidden = cfg.int_("hidden_size", minimum=1)
    inter = cfg.get("mamba_d_ssm")
    inter_origin = cfg.origin("mamba_d_ssm")
    if inter is None:
        inter = cfg.int_("mamba_expand", minimum=1) * hidden
        inter_origin = f"{cfg.origin('mamba_expand')} * hidden_size"
    n_heads = cfg.int_("mamba_n_heads", minimum=1)
    d_head = cfg.get("mamba_d_head")
    head_origin = cfg.origin("mamba_d_head")
    if d_head in (None, "auto"):
        d_head = inter // n_heads
        head_origin = f"mamba intermediate // mamba_n_heads ({inter} // {n_heads})"
    # transformers 5.24.0 models/falcon_h1/configuration_falcon_h1.py validate_architecture: the class refuses
    # these, so kvcalc does too instead of planning a state shape the model cannot have.
    if not isinstance(inter, int) or isinstance(inter, bool) or inter < 1:
        raise LayoutError(cfg.source, f"{cfg.prefix}mamba_d_ssm", "a positive integer (or null: mamba_expand x "
                                                                  "hidden_size)", inter)
    if inter % n_heads:
        raise LayoutError(cfg.source, f"{cfg.prefix}mamba_n_heads", f"a divisor of the Mamba intermediate size "
                          f"{inter} ({inter_origin})", n_heads, detail="FalconH1Config: mamba_n_heads must divide it")
    if not isinstance(d_head, int) or isinstance(d_head, bool) or d_head * n_heads != inter:
        raise LayoutError(cfg.source, f"{cfg.prefix}mamba_d_head", f"mamba_d_head x mamba_n_heads = the Mamba "
                          f"intermediate size {inter} ({inter_origin})", d_head,
                          detail="FalconH1Config: the dimensions for the Mamba head state do not match")
    mamba_fields(m, cfg, "mamba2", [("mamba_num_heads", "mamba_n_heads"), ("n_groups", "mamba_n_groups"),
                                     ("ssm_state_size", "mamba_d_state"), ("conv_kernel", "mamba_d_conv"),
                                     ("chunk_size", "mamba_chunk_size")])
    m.model["mamba"]["mamba_head_dim"] = d_head
    m.origin["model.mamba.mamba_head_dim"] = head_origin
    m.model["mamba"]["intermediate_size"] = inter
    m.origin["model.mamba.intermediate_size"] = inter_origin


def deci(m: Mapped, cfg: Cfg) -> None:
    """Variable-GQA NAS models: per-layer KV heads from num_key_value_heads_per_layer or block_configs."""
    n = _layers(cfg)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    q_heads = cfg.int_("num_attention_heads", minimum=1)
    size, so = head_size_of(cfg)
    m.put("head_size", size, so)
    per_layer = cfg.get("num_key_value_heads_per_layer")
    blocks = cfg.get("block_configs")
    flat = cfg.get("block_configs_attention")
    kinds, heads = [], []
    if isinstance(per_layer, list):
        if len(per_layer) != n:
            raise LayoutError(cfg.source, f"{cfg.prefix}num_key_value_heads_per_layer", f"{n} entries", per_layer)
        heads = list(per_layer)
        kinds = ["full_attention"] * n
        origin = f"{cfg.prefix}num_key_value_heads_per_layer"
    elif isinstance(blocks, list) or isinstance(flat, list):
        attn = [b.get("attention", {}) if isinstance(b, dict) else {} for b in blocks] if isinstance(blocks, list) \
            else flat
        key = "block_configs[i].attention" if isinstance(blocks, list) else "block_configs_attention[i]"
        if len(attn) != n:
            raise LayoutError(cfg.source, f"{cfg.prefix}{key.split('[')[0]}", f"{n} blocks", len(attn))
        for i, a in enumerate(attn):
            if not isinstance(a, dict):
                raise LayoutError(cfg.source, f"{cfg.prefix}{key.replace('[i]', f'[{i}]')}", "a mapping", a)
            if a.get("no_op") or a.get("replace_with_linear"):
                kinds.append("none")
                heads.append(0)
            else:
                group = a.get("n_heads_in_group")
                if not isinstance(group, int) or group < 1 or q_heads % group:
                    raise LayoutError(cfg.source, f"{cfg.prefix}{key.replace('[i]', f'[{i}]')}.n_heads_in_group",
                                      f"a divisor of num_attention_heads ({q_heads})", group)
                kinds.append("full_attention")
                heads.append(q_heads // group)
        origin = f"{cfg.prefix}{key}: num_attention_heads // n_heads_in_group; no_op / replace_with_linear: no KV"
    else:
        raise LayoutError(cfg.source, f"{cfg.prefix}block_configs", "per-layer attention blocks (or "
                          "num_key_value_heads_per_layer)")
    m.put("layer_types", kinds, origin)
    m.put("num_kv_heads", heads, origin)
