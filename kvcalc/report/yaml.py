"""A raw layout dict + provenance -> schema-v1 layout YAML with a comment on every derived field (`kvcalc init`)."""

from __future__ import annotations

import json

_ORDER = {
    "model": ["name", "num_layers", "dtype", "layer_types", "layer_pattern", "num_kv_heads", "head_size",
              "head_size_v", "sliding_window", "attention_chunk_size", "kv_lora_rank", "qk_rope_head_dim",
              "index_head_dim", "max_position_embeddings", "kv_head_replication", "mamba", "draft"],
    "parallel": ["tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "pp_layer_partition"],
}
_SECTIONS = ("model", "parallel", "cache", "offload", "vllm")


def _scalar(value) -> str:
    # JSON is valid YAML; strings come out quoted, so '0.20' and 'on' stay strings.
    return json.dumps(value)


def _period(values: list) -> int:
    """Smallest p such that values[i] == values[i % p] for all i (so a layer_pattern can stand for the list)."""
    for p in range(1, len(values) + 1):
        if all(values[i] == values[i % p] for i in range(len(values))):
            return p
    return len(values)  # pragma: no cover


def render(top: dict, origin: dict, *, header: str) -> str:
    lines = [f"# {line}" for line in header.splitlines()]
    lines.append("schema_version: 1")
    for section in _SECTIONS:
        body = top.get(section)
        if not isinstance(body, dict) or not body:
            continue
        lines.append(f"{section}:")
        lines += _mapping(body, section, origin, indent=2)
    return "\n".join(lines) + "\n"


def _mapping(body: dict, path: str, origin: dict, indent: int) -> list[str]:
    pad = " " * indent
    order = _ORDER.get(path, [])
    keys = [k for k in order if k in body] + sorted(k for k in body if k not in order)
    out = []
    for key in keys:
        value = body[key]
        sub = f"{path}.{key}"
        note = origin.get(sub)
        comment = f"  # {note}" if note else ""
        if isinstance(value, dict):
            out.append(f"{pad}{key}:{comment}")
            out += _mapping(value, sub, origin, indent + 2)
        elif key == "layer_types" and isinstance(value, list) and _period(value) < len(value):
            pattern = value[:_period(value)]
            out.append(f"{pad}layer_pattern: [{', '.join(pattern)}]{comment or '  #'} (repeated to num_layers)")
        elif isinstance(value, list):
            out.append(f"{pad}{key}: [{', '.join(_scalar(v) for v in value)}]{comment}")
        else:
            out.append(f"{pad}{key}: {_scalar(value)}{comment}")
    return out
