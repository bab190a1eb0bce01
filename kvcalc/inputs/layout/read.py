"""A layout YAML, a Hugging Face config.json or a model directory -> the raw layout dict (CLI overrides applied,
`model.hf_config` / `model.draft.hf_config` read in) -> a validated `Layout`."""

from __future__ import annotations

import os
from typing import Any

from ...vocab.layout import Layout
from ..files import decode, parse_yaml, read_bytes, read_json
from ...vocab.errors import UnsupportedError
from ...vocab.keys import CHILDREN
from .validate import validate
from ..values import Reader

_EXCLUSIVE = {"offload.cpu_bytes_to_use": "offload.kv_offloading_size",
              "offload.kv_offloading_size": "offload.cpu_bytes_to_use"}


def _set_path(data: dict, path: str, value: Any) -> None:
    node = data
    parts = path.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {} if node.get(p) is None else node[p]
            if not isinstance(node[p], dict):
                return  # the validator reports the wrong type
        node = node[p]
    node[parts[-1]] = value


def _apply(top: dict, overrides: dict[str, tuple[Any, str]]) -> dict[str, str]:
    """Set every overridden key in `top`; returns {key path: the flag that set it}."""
    origin: dict[str, str] = {}
    for path, (value, flag) in overrides.items():
        _set_path(top, path, value)
        origin[path] = flag
        # A flag for one of two exclusive keys replaces the file's other one.
        other = _EXCLUSIVE.get(path)
        if other and other not in overrides and isinstance(top.get("offload"), dict):
            top["offload"].pop(other.split(".", 1)[1], None)
    return origin


CONFIG_KEY = "__config__"  # not a layout key: the model's config.json (path, contents), when one was read
WRITTEN_KEY = "__written__"  # not a layout key: the key paths the user set (Layout.written)


def _leaves(node: dict, prefix: str = "") -> set[str]:
    """The key paths of a layout's scalar and list values (a section's own keys, not the section)."""
    out: set[str] = set()
    for k, v in node.items():
        path = f"{prefix}{k}"
        out |= _leaves(v, path + ".") if isinstance(v, dict) else {path}
    return out


def expand(data: Any, *, source: str = "<layout>", overrides: dict[str, tuple[Any, str]] | None = None,
           base_dir: str = ".") -> tuple[dict, dict]:
    """Apply CLI overrides and pull in `model.hf_config` / `model.draft.hf_config`.

    Returns (the raw layout dict, {key path: where its value came from}) before validation."""
    overrides = overrides or {}
    if data is None:
        data = {}
    carried, written = None, None
    if isinstance(data, dict) and CONFIG_KEY in data:  # an expanded layout expanded again (a sweep point)
        carried = data[CONFIG_KEY]
    if isinstance(data, dict) and (CONFIG_KEY in data or WRITTEN_KEY in data):
        written = data.get(WRITTEN_KEY)
        data = {k: v for k, v in data.items() if k not in (CONFIG_KEY, WRITTEN_KEY)}
    r = Reader(source, {path: flag for path, (_, flag) in overrides.items()})
    top = r.mapping(data, "", CHILDREN[""])
    top = {k: (dict(v) if isinstance(v, dict) else v) for k, v in top.items()}
    mine = (set(written) if written is not None else _leaves(top) - {"model.hf_config"}) | set(overrides)
    origin = _apply(top, overrides)
    model = top.get("model")
    nextn = 0
    if isinstance(model, dict) and model.get("hf_config") is not None:
        model, origin, nextn = _model_config(r, top, dict(model), origin, base_dir)
    draft = model.get("draft") if isinstance(model, dict) else None
    if isinstance(draft, dict) and isinstance(model, dict):  # (a draft is read from a model mapping)
        draft = dict(draft)
        if draft.get("hf_config") is not None:
            from ..hf.config import map_draft

            # Provenance names the file as the layout spells it (relative to the layout): the resolved
            # absolute path differs per checkout and made the same plan print differently in each clone.
            written = draft.pop("hf_config")
            path = _config_path(r, written, "model.draft.hf_config", base_dir)
            method = draft.get("method")
            mapped_draft, draft_origin = map_draft(read_json(path), source=path,
                                                   method=method if isinstance(method, str) else None)
            draft = {**mapped_draft, **draft}
            origin.update({k: f"drafter config {written}: {v}" for k, v in draft_origin.items()
                           if k.split(".")[-1] not in draft
                           or draft[k.split(".")[-1]] == mapped_draft.get(k.split(".")[-1])})
        if draft.get("method") == "dspark" and draft.get("num_layers") is None:
            # DSparkDeepseekV4Model: getattr(config, "n_mtp_layers", None) or 3 decoder layers, the target's own
            # config (models/deepseek_v4/nvidia/dspark.py:69 @0.26.0, :106 @0.33.0).
            config = top.get(CONFIG_KEY, (None, {}))[1]
            given = config.get("n_mtp_layers") if isinstance(config, dict) else None
            draft["num_layers"] = given or 3
            origin["model.draft.num_layers"] = "n_mtp_layers" if given else \
                "DSpark's default of 3 layers (models/deepseek_v4/nvidia/dspark.py:69 @0.26.0)"
        if draft.get("method") == "mtp" and draft.get("num_layers") is None:
            if not nextn:
                raise r.fail("model.draft.num_layers", "the number of MTP layers (the model config's "
                             "num_nextn_predict_layers is 0 or absent)")
            draft["num_layers"] = nextn
            origin["model.draft.num_layers"] = "num_nextn_predict_layers"
        model["draft"] = draft
    if carried is not None:
        top.setdefault(CONFIG_KEY, carried)
    top[WRITTEN_KEY] = frozenset(mine)
    return top, origin


def _model_config(r: Reader, top: dict, model: dict, origin: dict, base_dir: str) -> tuple[dict, dict, int]:
    """`model.hf_config` read in: the config's fields under the layout's own model keys (which win), its cache
    defaults, and (model section, origin, MTP layers). `top` gets the cache section and the config itself."""
    path = _config_path(r, model.pop("hf_config"), "model.hf_config", base_dir)
    config = read_json(path)
    mapped = _map_or_user_keys(config, path, model)
    top[CONFIG_KEY] = (path, config)  # for the memory model's weights (validate reads it only when predicting)
    for key in model:  # the layout's own keys win over the config's
        origin[f"model.{key}"] = "layout file"
    if "layer_pattern" in model or "layer_types" in model:
        mapped.model.pop("layer_types", None)
    model = {**mapped.model, **model}
    origin = {**mapped.origin, **origin}
    if mapped.user_kinds:
        origin["model.layer_types"] = mapped.user_kinds
    cache = dict(top["cache"]) if isinstance(top.get("cache"), dict) else {}
    for key, (value, why) in mapped.cache.items():
        if key not in cache:
            cache[key] = value
            origin[f"cache.{key}"] = why
    top["cache"] = cache
    top["model"] = model
    return model, origin, mapped.num_nextn_predict_layers


def _map_or_user_keys(data: Any, path: str, model: dict):
    """The config mapped by its architecture; an architecture kvcalc does not map is planned from the layout's own
    keys beside hf_config (num_layers and the shapes the validator asks for), the config giving only its dtype, length
    and name, and the layer kinds marked as the user's."""
    from ..hf.config import map_config, map_generic

    try:
        return map_config(data, source=path)
    except UnsupportedError as e:
        reason = str(e).removesuffix(_HINT)
        if "num_layers" not in model:
            raise UnsupportedError(f"{reason}; write the layout YAML instead, or give num_layers and the layer shapes "
                                   "beside model.hf_config (see the README)") from None
        return map_generic(data, source=path, reason=reason.split(": ", 1)[-1], model=model)


_HINT = "; write the layout YAML instead (see the README)"


def _config_path(r: Reader, value: Any, key: str, base_dir: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise r.fail(key, "a path to a Hugging Face config.json (or its directory)", value)
    path = value if os.path.isabs(value) else os.path.join(base_dir, value)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    if not os.path.isfile(path):
        raise r.fail(key, "a readable Hugging Face config.json (or its directory)", value,
                     detail=f"{path} does not exist")
    return path


def layout_from_dict(data: Any, *, source: str = "<layout>", overrides: dict[str, tuple[Any, str]] | None = None,
                     base_dir: str = ".") -> Layout:
    """Validate a parsed layout. `overrides` maps a key path to (value, flag that set it)."""
    top, origin = expand(data, source=source, overrides=overrides, base_dir=base_dir)
    return validate(top, source=source, overrides=overrides, origin=origin)



def read_input(path: str, *, overrides: dict[str, tuple[Any, str]] | None = None) -> tuple[dict, dict, str]:
    """A layout YAML, a config.json, a model directory, or a hub id in the local Hugging Face cache -> (raw layout,
    provenance, source)."""
    if not os.path.exists(path) and not path.endswith((".yaml", ".yml", ".json")):
        import re

        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}", path):
            from ..hf.hub import resolve_model  # a hub id: its config.json in the local cache

            path = resolve_model(path, flag="MODEL")
    if os.path.isdir(path) or path.endswith(".json"):
        config = os.path.join(path, "config.json") if os.path.isdir(path) else path
        data = {"model": {"hf_config": os.path.abspath(config)}}
        top, origin = expand(data, source=config, overrides=overrides)
        return top, origin, config
    data = parse_yaml(decode(read_bytes(path, "a readable layout file"), path), source=path)
    base = os.path.dirname(os.path.abspath(path))
    top, origin = expand(data, source=path, overrides=overrides, base_dir=base)
    return top, origin, path


def load_layout(path: str, *, overrides: dict[str, tuple[Any, str]] | None = None) -> Layout:
    """Read and validate a layout YAML file, a Hugging Face config.json, or a directory holding one."""
    top, origin, source = read_input(path, overrides=overrides)
    return validate(top, source=source, overrides=overrides, origin=origin)
