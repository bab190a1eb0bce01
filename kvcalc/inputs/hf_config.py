"""Hugging Face config.json -> the `model` section of a layout (schema v1), offline.

One table row per `model_type`: the configuration class's defaults for the fields kvcalc reads (from
transformers' configuration_*.py, version 5.x) and the rule that turns the config into per-layer kinds.
Every derived field records the config key it came from, for `kvcalc init`'s comments.
Nothing is guessed: an unknown model_type or a missing field is refused.
"""

from __future__ import annotations

from typing import Any

from ..vocab.errors import LayoutError, UnsupportedError
from .hf_readers import (ALIASES, DEFAULTS, MAMBA_SSM_DEFAULTS, READERS, SUPPORTED, WRAPPERS, Cfg, Mapped,
                         head_size_of, heads_of, read_dtype)


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
    if not isinstance(model_type, str):
        raise UnsupportedError(f"{source}: model_type is missing; supported: {', '.join(SUPPORTED)}; "
                               "or write the layout YAML")
    inner, prefix = data, ""
    if model_type in WRAPPERS or (isinstance(data.get("text_config"), dict) and model_type not in READERS):
        inner = data.get("text_config")
        if not isinstance(inner, dict):
            raise LayoutError(source, "text_config", f"the language model's config (model_type {model_type})")
        prefix = "text_config."
        model_type = inner.get("model_type") or WRAPPERS.get(model_type, model_type)
        if not isinstance(model_type, str):
            raise LayoutError(source, "text_config.model_type", "a model_type name", model_type)
    model_type = ALIASES.get(model_type, model_type)
    if model_type not in READERS:
        raise UnsupportedError(
            f"{source}: model_type {model_type!r} is not mapped; supported: {', '.join(SUPPORTED)}; "
            "write the layout YAML instead (see the README)")
    m = Mapped(model_type=model_type)
    cfg = Cfg(inner, DEFAULTS[model_type], source, prefix)
    _name(m, data)
    read_dtype(m, cfg, data)
    READERS[model_type](m, cfg)
    if model_type == "gpt_oss":
        # vLLM's gpt-oss attention divides the KV heads by TP with no floor at 1 (spec 3.2).
        m.put("kv_head_replication", False, "gpt-oss: heads // TP, no replication")
    mpe = cfg.get("max_position_embeddings")
    if mpe is not None:
        if isinstance(mpe, bool) or not isinstance(mpe, int) or mpe <= 0:
            # Present but unusable is not "missing": name the key and the value.
            raise LayoutError(source, cfg.origin("max_position_embeddings"), "a positive integer", mpe)
        m.put("max_position_embeddings", mpe, cfg.origin("max_position_embeddings"))
    return m


def _name(m: Mapped, data: dict) -> None:
    meta = data.get("_meta") if isinstance(data.get("_meta"), dict) else {}
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
