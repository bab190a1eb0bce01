"""JSON Schemas of the layout YAML (schema v1) and of the JSON output, for editors and pipelines.

`kvcalc schema layout` lets an editor validate a layout through a `# yaml-language-server: $schema=` line;
`kvcalc schema output` documents what `--format json` prints. Tests validate every example and every output.
"""

from __future__ import annotations

from .kinds import ATTENTION_BACKEND_NAMES, GPU_ARCHS, KV_CACHE_DTYPES, LAYER_KINDS, MAMBA_KIND_NAMES, MAMBA_KINDS
from .layout import DRAFT_METHODS, EXECUTOR_BACKENDS, HMA_CHOICES, MAMBA_CACHE_MODES, PLATFORMS
from .units import MODEL_DTYPES

_INT = {"type": "integer", "minimum": 0}
_POS = {"type": "integer", "minimum": 1}
_SIZE = {"description": "bytes: an integer, or a string such as 64GiB (64G = 64Gi = 64GiB = 64 x 2^30; "
                        "64GB = 64 x 10^9)",
         "anyOf": [{"type": "integer", "minimum": 0},
                   {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9_]*)?\s*([KMGTP](i|iB|ib|B|b)?|"
                                                 r"[kmgtp](iB|ib|B|b)|[Bb])?\s*$"}]}
_HUMAN = {"anyOf": [_POS, {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kmgtKMGT]?\s*$"}]}
_PER_LAYER = {"anyOf": [_INT, {"type": "array", "items": _INT}]}
_NULL_POS = {"anyOf": [_POS, {"type": "null"}]}


def _obj(props: dict, required: tuple = ()) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": props, "required": list(required)}


def layout_schema() -> dict:
    mamba_props = {"kind": {"enum": list(MAMBA_KIND_NAMES)}}
    for row in MAMBA_KINDS.values():
        for f in row.fields + row.optional:
            mamba_props[f] = _POS
    draft = _obj({"method": {"enum": list(DRAFT_METHODS)}, "num_layers": _POS, "num_kv_heads": _POS,
                  "head_size": _POS, "head_size_v": _NULL_POS, "num_speculative_tokens": _POS,
                  "hf_config": {"type": "string"}})
    model = _obj({
        "name": {"type": "string"}, "num_layers": _POS, "dtype": {"enum": list(MODEL_DTYPES)},
        "layer_types": {"type": "array", "items": {"enum": list(LAYER_KINDS)}},
        "layer_pattern": {"type": "array", "minItems": 1, "items": {"enum": list(LAYER_KINDS)}},
        "num_kv_heads": _PER_LAYER, "head_size": _PER_LAYER, "head_size_v": {"anyOf": [_PER_LAYER, {"type": "null"}]},
        "sliding_window": _NULL_POS, "attention_chunk_size": _NULL_POS, "kv_lora_rank": _NULL_POS,
        "qk_rope_head_dim": {"anyOf": [_INT, {"type": "null"}]}, "index_head_dim": _NULL_POS,
        "max_position_embeddings": _NULL_POS, "hf_config": {"type": "string"},
        "kv_head_replication": {"type": "boolean"},
        "mamba": {"type": "object", "additionalProperties": False, "properties": mamba_props, "required": ["kind"]},
        "draft": draft,
    })
    parallel = _obj({"tensor_parallel_size": _POS, "pipeline_parallel_size": _POS, "data_parallel_size": _POS,
                     "pp_layer_partition": {"type": "array", "items": _POS},
                     "data_parallel_size_local": _NULL_POS,
                     "distributed_executor_backend": {"enum": list(EXECUTOR_BACKENDS)}, "nnodes": _POS})
    cache = _obj({
        "block_size": _NULL_POS, "kv_cache_dtype": {"enum": list(KV_CACHE_DTYPES)},
        "kv_cache_dtype_skip_layers": {"type": "array", "items": {"anyOf": [_INT, {"const": "sliding_window"}]}},
        "kv_cache_memory": {"anyOf": [_SIZE, {"type": "array", "items": _SIZE}, {"type": "null"}]},
        "num_gpu_blocks_override": {"anyOf": [_INT, {"type": "null"}]}, "max_model_len": _HUMAN,
        "max_num_batched_tokens": _HUMAN, "enable_prefix_caching": {"type": ["boolean", "null"]},
        "hybrid_kv_cache_manager": {"anyOf": [{"enum": list(HMA_CHOICES)}, {"type": "boolean"}]},
        "mamba_cache_dtype": {"enum": ["auto", *MODEL_DTYPES]},
        "mamba_ssm_cache_dtype": {"enum": ["auto", *MODEL_DTYPES]},
        "mamba_block_size": _NULL_POS, "mamba_cache_mode": {"enum": list(MAMBA_CACHE_MODES)},
    })
    offload = _obj({"cpu_bytes_to_use": _SIZE, "kv_offloading_size": {"type": "number", "minimum": 0},
                    "block_size": _NULL_POS, "blocks_per_chunk": _NULL_POS})
    vllm = _obj({"version": {"type": "string", "pattern": r"^v?\d+\.\d+(\.\d+)?"}, "platform": {"enum": list(PLATFORMS)},
                 "attention_backend": {"anyOf": [{"enum": list(ATTENTION_BACKEND_NAMES)}, {"type": "null"}]},
                 "gpu_arch": {"enum": list(GPU_ARCHS)}})
    host = _obj({"page_size": {"type": "integer", "minimum": 4096, "maximum": 1 << 30,
                               "description": "the host's mmap.PAGESIZE, a power of two (4096; 65536 on some arm64)"},
                 "pinned_round_threshold_mb": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}],
                                               "description": "PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb "
                                                              "(torch 2.13+)"}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "kvcalc-layout-v1",
        "title": "kvcalc layout, schema version 1",
        **_obj({"schema_version": {"const": 1}, "model": model, "parallel": parallel, "cache": cache,
                "offload": offload, "host": host, "vllm": vllm}, ("model",)),
    }


def output_schema() -> dict:
    """The JSON Schema of `kvcalc plan --format json`, generated from the report records (kvcalc.report)."""
    from .records import json_schema
    from .report import RefusedReport, Report

    defs: dict = {}
    full = json_schema(Report, defs=defs)
    refused = json_schema(RefusedReport, defs=defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "kvcalc-output-v1",
            "title": "kvcalc plan --format json, schema version 1", "anyOf": [full, refused], "$defs": defs}
