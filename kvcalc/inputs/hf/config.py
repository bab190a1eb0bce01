"""Hugging Face config.json -> the `model` section of a layout (schema v1), offline.

One table row per architecture (arch_table, arch_wrappers: the vLLM class that serves it and the reader that
turns its config into per-layer kinds), and the configuration class's defaults per model_type (hf_defaults, from
transformers' configuration_*.py, version 5.24.0).
Every derived field records the config key it came from, for `kvcalc init`'s comments.
Nothing is guessed: an unknown architecture or a missing field is refused.
"""

from __future__ import annotations

from typing import Any

from ...vocab.errors import LayoutError, UnsupportedError
from ..arch.index import MODEL_TYPES, READERS, Arch, arch_index
from ...vocab.releases.transformers import ATTRIBUTE_MAPS
from .readers import MAMBA_SSM_DEFAULTS, Cfg, Mapped, defaults_for, head_size_of, heads_of, read_dtype


def _mamba_ssm(m: Mapped, data: dict, source: str) -> None:
    """state-spaces' mamba_ssm checkpoints: d_model, n_layer, ssm_cfg (the Mamba2 class defaults fill the rest)."""
    ssm_cfg = data.get("ssm_cfg") or {}
    if not isinstance(ssm_cfg, dict):
        raise LayoutError(source, "ssm_cfg", "a mapping of Mamba settings", ssm_cfg)
    layer = ssm_cfg.get("layer", "Mamba1")
    if not isinstance(layer, str):
        raise LayoutError(source, "ssm_cfg.layer", "Mamba1 or Mamba2", layer)
    if layer not in MAMBA_SSM_DEFAULTS:
        raise UnsupportedError(f"{source}: ssm_cfg.layer {layer!r} is not mapped")
    if data.get("attn_layer_idx"):
        raise UnsupportedError(f"{source}: attn_layer_idx: mamba_ssm hybrids are not mapped; write the layout YAML")
    d = {**MAMBA_SSM_DEFAULTS[layer], **ssm_cfg}
    cfg = Cfg(d, {}, source, "ssm_cfg.")
    top = Cfg(data, {}, source)
    n = top.int_("n_layer", minimum=1, maximum=100_000)
    hidden = top.int_("d_model", minimum=1)
    m.put("num_layers", n, "n_layer")
    m.put("layer_types", ["mamba"] * n, f"every layer is {layer} (ssm_cfg.layer)")
    inter = cfg.int_("expand", minimum=1) * hidden
    if layer == "Mamba2":
        head = cfg.int_("headdim", minimum=1)
        m.model["mamba"] = {"kind": "mamba2", "mamba_num_heads": inter // head, "mamba_head_dim": head,
                            "n_groups": cfg.int_("ngroups", minimum=1), "ssm_state_size": cfg.int_("d_state"),
                            "conv_kernel": cfg.int_("d_conv"), "intermediate_size": inter}
        m.origin.update({"model.mamba.mamba_num_heads": "expand * d_model // headdim (mamba_ssm defaults)",
                         "model.mamba.intermediate_size": "expand * d_model (mamba_ssm defaults)"})
    else:
        m.model["mamba"] = {"kind": "mamba1", "hidden_size": hidden, "mamba_expand": cfg.int_("expand"),
                            "mamba_d_state": cfg.int_("d_state"), "mamba_d_conv": cfg.int_("d_conv")}
    m.origin["model.mamba.kind"] = "ssm_cfg.layer"


def map_config(data: Any, *, source: str) -> Mapped:
    """config.json contents -> Mapped. Refuses what it cannot map exactly."""
    if not isinstance(data, dict):
        raise LayoutError(source, "(top level)", "a JSON object (a Hugging Face config.json)", type(data).__name__)
    model_type = data.get("model_type")
    if model_type is None and "d_model" in data and "n_layer" in data:
        m = Mapped(model_type="mamba_ssm")
        read_dtype(m, Cfg(data, {}, source), data)
        _mamba_ssm(m, data, source)
        _name(m, data)
        return m
    row, inner, prefix = resolve(data, source)
    named = inner.get("model_type")
    config_type = named if isinstance(named, str) else ""
    m = Mapped(model_type=config_type or row.name, config_type=config_type, arch=row.name)
    cfg = Cfg(inner, defaults_for(config_type, sizes=bool(prefix)), source, prefix, ATTRIBUTE_MAPS.get(config_type))
    _name(m, data)
    read_dtype(m, cfg, data)
    READERS[row.reader](m, cfg, row)
    _config_ssm_dtype(m, cfg, lookup(data))
    _max_len(m, cfg)
    return m


def _config_ssm_dtype(m: Mapped, cfg: Cfg, top: Arch | None) -> None:
    """Qwen3.5's text config names its gated-delta-net state dtype (mamba_ssm_dtype, float32 in Qwen3.5 / 3.6
    checkpoints), which vLLM's config hook makes cache.mamba_ssm_cache_dtype's auto value for the classes of
    vocab/releases/archs.CONFIG_SSM_DTYPE (Qwen3.6-35B-A3B on vLLM 0.24.0: 567,978 GPU tokens logged with the float32
    state, noonghunna/club-3090#612). A class that reads it only from a later release than serves it gets a note."""
    from ...vocab.releases.archs import CONFIG_SSM_DTYPE, first_release

    hint = cfg.get("mamba_ssm_dtype")
    since = CONFIG_SSM_DTYPE.get(top.name) if top is not None else None
    if top is None or not isinstance(hint, str) or since is None or not isinstance(m.model.get("mamba"), dict):
        return
    if first_release(top.name) in (None, since):
        m.model["mamba"]["mamba_ssm_cache_dtype"] = hint
        m.origin["model.mamba.mamba_ssm_cache_dtype"] = (cfg.origin("mamba_ssm_dtype") + f" (vLLM's {top.name} "
                                                         "config hook makes it the auto SSM state dtype)")
    else:
        m.notes.append(f"{cfg.origin('mamba_ssm_dtype')} {hint!r}: vLLM reads it as the SSM state dtype for "
                       f"{top.name} from {since} on; give --mamba-ssm-cache-dtype {hint} for those releases")


# vLLM 0.33.0 transformers_utils/model_arch_config_convertor.py:370-403 (derive_max_model_len_and_key): the smallest
# of these keys the text config has, except that model_max_length (Command-R) wins outright.
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")


def _max_len(m: Mapped, cfg: Cfg) -> None:
    best = None
    for key in _MAX_LEN_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            # Present but unusable is not "missing": name the key and the value.
            raise LayoutError(cfg.source, cfg.origin(key), "a positive integer", value)
        if best is None or value < best[0] or key == "model_max_length":
            best = (value, key)
        if key == "model_max_length":
            break
    if best is not None:
        origin = cfg.origin(best[1])
        if best[1] != "max_position_embeddings":
            origin += " (vLLM's derived max_model_len: the smallest length key)"
        m.put("max_position_embeddings", best[0], origin)


def resolve(data: dict, source: str) -> tuple[Arch, dict, str]:
    """The architecture row that serves this config, the (sub-)config its language model reads, and that
    sub-config's key path. vLLM picks the model class by `architectures`; a config without a known one is taken
    by its model_type. Multimodal wrappers hand their language model's config on (arch_wrappers)."""
    row = lookup(data)
    if row is None:
        raise UnsupportedError(_unmapped(data, source))
    inner, prefix = data, ""
    while row.text:
        key, sub = _sub_config(inner, row.text)
        if not isinstance(sub, dict):
            raise LayoutError(source, prefix + row.text.split("|")[0], "the language model's config (architecture "
                              f"{row.name})", sub)
        prefix += "" if key == "." else key + "."
        inner, wrapper = sub, row
        row = lookup(sub, default=wrapper.inner) if key != "." else arch_index()[wrapper.inner]
        if row is None:
            raise UnsupportedError(f"{source}: {prefix}model_type {sub.get('model_type')!r} (the language model of "
                                   f"{wrapper.name}) is not mapped; see `kvcalc models`; write the layout YAML "
                                   "instead (see the README)")
    if row.reader.startswith("draft_"):
        raise UnsupportedError(f"{source}: architecture {row.name} is a drafter: give its config with --draft-config "
                               "(model.draft.hf_config) beside the target's")
    if not row.mapped:
        raise UnsupportedError(f"{source}: architecture {row.name} ({row.vllm or 'not in vLLM 0.33.0'}): "
                               f"{row.reason}; write the layout YAML instead (see the README)")
    return row, inner, prefix


def _sub_config(data: dict, paths: str) -> tuple[str, Any]:
    """The first of `a|b|...` the config has (a dotted path; `.` is the config itself): (that path, its value)."""
    for path in paths.split("|"):
        if path == ".":
            return path, data
        node: Any = data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return path, node
    return paths.split("|")[0], None


def lookup(data: dict, default: str = "") -> Arch | None:
    """The row of the config's first known `architectures` entry, else of its model_type, else `default`'s."""
    index = arch_index()
    archs = data.get("architectures")
    for name in archs if isinstance(archs, list) else ():
        if isinstance(name, str) and name in index:
            return index[name]
    model_type = data.get("model_type")
    if isinstance(model_type, str) and model_type in MODEL_TYPES:
        return index[MODEL_TYPES[model_type]]
    return index.get(default)


def _unmapped(data: dict, source: str) -> str:
    archs = [a for a in data.get("architectures") or () if isinstance(a, str)] \
        if isinstance(data.get("architectures"), list) else []
    model_type = data.get("model_type")
    what = f"architecture {archs[0]}" if archs else "no architectures entry"
    if model_type is None:
        return (f"{source}: model_type is missing ({what}); see `kvcalc models` for the supported architectures; "
                "or write the layout YAML")
    return (f"{source}: model_type {model_type!r} is not mapped ({what}); the supported architectures are listed "
            "by `kvcalc models`; write the layout YAML instead (see the README)")


def _name(m: Mapped, data: dict) -> None:
    meta = data.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    for value, origin in ((data.get("_name_or_path"), "_name_or_path"), (meta.get("name"), "_meta.name")):
        if isinstance(value, str) and value.strip():
            m.put("name", value.strip()[:200], origin)
            return
    arch = data.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str):
        m.put("name", arch[0][:200], "architectures[0]")
    else:
        m.put("name", m.model_type, "model_type")


def map_draft(data: Any, *, source: str, method: str | None) -> tuple[dict, dict]:
    """An EAGLE / EAGLE3 drafter's config.json -> the `model.draft` section and its provenance."""
    if not isinstance(data, dict):
        raise LayoutError(source, "(top level)", "a JSON object (the drafter's config.json)", type(data).__name__)
    inner, prefix = data, ""
    if data.get("model_type") == "eagle" and isinstance(data.get("model"), dict):
        inner, prefix = data["model"], "model."  # EAGLE-1 configs wrap the draft model's own config
    row = lookup(data)
    if row is not None and not row.mapped:
        raise UnsupportedError(f"{source}: drafter architecture {row.name} ({row.vllm}): {row.reason}")
    if row is not None and row.reader == "draft_mtp":
        return _mtp_draft(data, source, row)
    archs = " ".join(a for a in data.get("architectures") or [] if isinstance(a, str)).lower()
    if method is None:
        method = "eagle3" if "eagle3" in archs else "eagle"
    cfg = Cfg(inner, {}, source, prefix)
    heads, ho = heads_of(cfg)
    size, so = head_size_of(cfg)
    draft = {"method": method, "num_layers": cfg.int_("num_hidden_layers", minimum=1), "num_kv_heads": heads,
             "head_size": size}
    origin = {"model.draft.method": "architectures" if "eagle" in archs else "--speculative / default eagle",
              "model.draft.num_layers": cfg.origin("num_hidden_layers"), "model.draft.num_kv_heads": ho,
              "model.draft.head_size": so}
    return draft, origin


def _mtp_draft(data: dict, source: str, row: Arch) -> tuple[dict, dict]:
    """An MTP drafter's config (the target's own config under an MTP architecture): its layer count is
    num_nextn_predict_layers (Qwen3.5: mtp_num_hidden_layers, model_arch_config_convertor.py:699-735)."""
    cfg = Cfg(data, {}, source)
    key = "mtp_num_hidden_layers" if cfg.get("mtp_num_hidden_layers") is not None else "num_nextn_predict_layers"
    draft = {"method": "mtp", "num_layers": cfg.int_(key, minimum=1)}
    return draft, {"model.draft.method": f"architectures ({row.name})", "model.draft.num_layers": cfg.origin(key)}


def map_generic(data: Any, *, source: str, reason: str, model: dict) -> Mapped:
    """An unmapped architecture planned from the layout's own keys: only the dtype, the length and the name come from
    the config; the layer kinds are the layout's (every layer full attention, or MLA with kv_lora_rank, when it
    gives none), and say so."""
    if not isinstance(data, dict):
        raise LayoutError(source, "(top level)", "a JSON object (a Hugging Face config.json)", type(data).__name__)
    text = data.get("text_config")
    text = text if isinstance(text, dict) else data
    m = Mapped(model_type=str(data.get("model_type") or "unmapped"))
    cfg = Cfg(text, {}, source, "text_config." if text is not data else "")
    _name(m, data)
    read_dtype(m, cfg, data)
    _max_len(m, cfg)
    why = f"the layout's keys (kvcalc does not map this config: {reason})"
    if "layer_types" not in model and "layer_pattern" not in model:
        kind = "mla" if model.get("kv_lora_rank") is not None else "full_attention"
        n = model.get("num_layers")
        if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 100_000:
            m.put("layer_types", [kind] * n, f"{why}: every layer {kind}, the layout giving no layer kinds")
    else:
        key = "layer_types" if "layer_types" in model else "layer_pattern"
        m.user_kinds = f"{why}: the layout's {key}"
    return m
