"""The JSON Schema of the layout YAML (schema v1), for editors.

`kvcalc schema layout` lets an editor validate a layout through a `# yaml-language-server: $schema=` line;
tests validate every example against it.
"""

from __future__ import annotations

from ..vocab.kinds import ATTENTION_BACKEND_NAMES, GPU_ARCHS, KV_CACHE_DTYPES, LAYER_KINDS, MAMBA_KIND_NAMES, MAMBA_KINDS
from ..vocab.keys import MAX_DRAFT_LAYERS, MAX_LAYERS, MAX_PP
from ..vocab.layout import DRAFT_METHODS, EXECUTOR_BACKENDS, HMA_CHOICES, MAMBA_CACHE_MODES, OFFLOAD_BACKENDS, PLATFORMS
from ..vocab.releases.lmcache import LMCACHE_RELEASES
from ..vocab.units import MODEL_DTYPES

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


# What each key means, for editors (every key has one: tests/test_pipeline.py walks the schema).
DESCRIPTIONS = {
    "schema_version": "layout schema version: 1",
    "model": "the model: layer kinds and shapes, or hf_config",
    "model.name": "free text, shown in the report",
    "model.num_layers": "decoder layers (at most 2,048)",
    "model.dtype": "model dtype; the KV dtype when cache.kv_cache_dtype is auto",
    "model.layer_types": "one kind per layer (full_attention, sliding_attention, chunked_attention, mla, mamba, "
                         "none, full_attention+mamba)",
    "model.layer_pattern": "kinds repeated cyclically up to num_layers (default: every layer full_attention, or mla "
                           "with kv_lora_rank)",
    "model.num_kv_heads": "KV heads of the model before TP: one number, or one per layer",
    "model.head_size": "head size: one number, or one per layer",
    "model.head_size_v": "value head size (default head_size): one number, or one per layer",
    "model.sliding_window": "window of the sliding_attention layers, tokens",
    "model.attention_chunk_size": "chunk of the chunked_attention layers, tokens",
    "model.kv_lora_rank": "MLA: latent size (one unsharded head of kv_lora_rank + qk_rope_head_dim)",
    "model.qk_rope_head_dim": "MLA: rope part of the head",
    "model.index_head_dim": "DeepSeek-V3.2: the indexer's head next to every mla layer",
    "model.max_position_embeddings": "default for cache.max_model_len",
    "model.hf_config": "a Hugging Face config.json to read the model from; keys here override it",
    "model.kv_head_replication": "false when the model's attention divides KV heads by TP without replicating "
                                 "(gpt-oss)",
    "model.mamba": "the Mamba layers' state: kind and that kind's Hugging Face fields",
    "model.mamba.kind": "mamba1 | mamba2 | gated_delta_net | short_conv | linear_attention",
    "model.draft": "speculative decoding layers on the last PP stage",
    "model.draft.method": "eagle | eagle3 (own attention shape) | mtp (the main model's layer shape)",
    "model.draft.num_layers": "draft layers (at most 64)",
    "model.draft.num_kv_heads": "eagle/eagle3: the drafter's KV heads",
    "model.draft.head_size": "eagle/eagle3: the drafter's head size",
    "model.draft.head_size_v": "eagle/eagle3: the drafter's value head size",
    "model.draft.num_speculative_tokens": "speculative tokens (Mamba conv state rows, MTP retained tokens)",
    "model.draft.hf_config": "the drafter's own config.json",
    "parallel": "parallelism of one engine, and the engines",
    "parallel.tensor_parallel_size": "TP size",
    "parallel.pipeline_parallel_size": "PP size (at most 64)",
    "parallel.data_parallel_size": "DP size: engines, each with its own CPU budget",
    "parallel.pp_layer_partition": "layers per PP stage, as VLLM_PP_LAYER_PARTITION",
    "parallel.data_parallel_size_local": "engines on one node (default: every DP replica)",
    "parallel.distributed_executor_backend": "mp | ray | uni | external_launcher (which multiplies the world size "
                                             "by DP)",
    "parallel.nnodes": "nodes one engine spans",
    "cache": "vLLM's cache config",
    "cache.block_size": "GPU block size in tokens (default: the attention backend's, 16; 64 for MLA)",
    "cache.kv_cache_dtype": "KV cache dtype (auto: the model dtype)",
    "cache.kv_cache_dtype_skip_layers": "layer indices, or sliding_window, kept at the model dtype (0.19.0+)",
    "cache.kv_cache_memory": "KV cache memory per GPU (one size, or one per worker); without it the GPU block count "
                             "is not computed",
    "cache.num_gpu_blocks_override": "GPU blocks instead of the count from memory",
    "cache.max_model_len": "the longest request, tokens (128K = 131072, 128k = 128000)",
    "cache.max_num_batched_tokens": "tokens per scheduler step",
    "cache.enable_prefix_caching": "null: vLLM's default (on; off for models with Mamba layers)",
    "cache.hybrid_kv_cache_manager": "auto (what vLLM decides for the release) | on | off",
    "cache.mamba_cache_dtype": "Mamba conv state dtype",
    "cache.mamba_ssm_cache_dtype": "Mamba SSM state dtype (auto: the conv dtype)",
    "cache.mamba_block_size": "Mamba block size in tokens",
    "cache.mamba_cache_mode": "auto | none | align | all (which the release accepts)",
    "offload": "the CPU offload pool: the native offloading connector's budget (without one the GPU side alone is "
               "planned), or LMCache's config",
    "offload.backend": "native (vLLM's OffloadingConnector) | lmcache (LMCacheConnectorV1)",
    "offload.lmcache": "backend lmcache: LMCache config keys under their LMCache names (any key the release "
                       "defines; those that do not change the CPU pool are listed in a note)",
    "offload.lmcache.version": "the LMCache release whose rules apply (0.3.10 - 0.5.6; default 0.5.6)",
    "offload.lmcache.chunk_size": "tokens per chunk (LMCache's default 256)",
    "offload.lmcache.local_cpu": "the CPU tier serves hits (false: the pool is only a staging buffer)",
    "offload.lmcache.max_local_cpu_size": "GiB of pinned host memory PER RANK (LMCache: int(x * 1024**3) bytes); "
                                          "default 5",
    "offload.lmcache.local_disk": "a directory (or comma-separated directories) for the disk tier",
    "offload.lmcache.max_local_disk_size": "GiB of disk per rank",
    "offload.lmcache.use_layerwise": "store every layer of a chunk as its own object",
    "offload.lmcache.local_cpu_use_hugepages": "0.4.6+: pin the pool on 2 MiB hugepages",
    "offload.lmcache.lookup_server_worker_ids": "ranks running a lookup server (with save_only_first_rank they "
                                                "allocate a pool too)",
    "offload.lmcache.enable_controller": "start LMCache workers (on lmcache_worker_ids)",
    "offload.lmcache.lmcache_worker_ids": "ranks with an LMCache worker",
    "offload.lmcache.extra_config": "LMCache's extra_config mapping",
    "offload.lmcache.extra_config.save_only_first_rank": "MLA: only rank 0 stores (LMCache's default for MLA "
                                                          "models)",
    "offload.lmcache.extra_config.first_rank_max_local_cpu_size": "MLA with save_only_first_rank: rank 0's pool, "
                                                                   "GiB",
    "offload.lmcache.extra_config.local_cpu.pinned_align_bytes": "0.3.15+: alignment of each chunk object, a power "
                                                                 "of two (default 4096)",
    "offload.cpu_bytes_to_use": "the CPU budget of one engine",
    "offload.kv_offloading_size": "the budget as vLLM's --kv-offloading-size: GiB through a float",
    "offload.block_size": "offloaded block size in tokens, a multiple of the GPU block size",
    "offload.blocks_per_chunk": "0.26+: GPU blocks per CPU chunk (instead of block_size)",
    "host": "the host the CPU tier lives on",
    "host.page_size": "the host's mmap.PAGESIZE, a power of two (4096; 65536 on some arm64)",
    "host.pinned_round_threshold_mb": "PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb (torch 2.13+, vLLM 0.27+)",
    "vllm": "the vLLM release and platform",
    "vllm.version": "the release, 0.14.0 to 0.33.0 (quoted if it has two parts)",
    "vllm.platform": "cuda | rocm | xpu",
    "vllm.attention_backend": "null: vLLM's pick on CUDA (FLASH_ATTN; FLASHMLA for MLA)",
    "vllm.gpu_arch": "sm90 (H100) | sm100 (B200): the hybrid block's kernel alignment",
}


def _tree(node):
    """A copy of a schema fragment in which no dict or list is shared: the fragments above are used in many places,
    and a description attached to one property must not show up on every other use of the same fragment."""
    if isinstance(node, dict):
        return {k: _tree(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_tree(v) for v in node]
    return node


def _describe(schema: dict, path: str = "") -> dict:
    """Attach DESCRIPTIONS to every property (a Mamba kind's fields: their Hugging Face name and kinds)."""
    for key, sub in schema.get("properties", {}).items():
        full = f"{path}.{key}" if path else key
        text = DESCRIPTIONS.get(full)
        if text is None and path == "model.mamba":
            kinds = [k for k, row in MAMBA_KINDS.items() if key in row.fields + row.optional]
            names = sorted({row.aliases[key] for row in MAMBA_KINDS.values() if key in row.aliases})
            text = (f"the Hugging Face config field {key} ({', '.join(kinds)})" if kinds else
                    f"another config's name for {' / '.join(names)}")
        if text is not None:
            sub["description"] = text
        _describe(sub, full)
    return schema


def layout_schema() -> dict:
    mamba_props = {"kind": {"enum": list(MAMBA_KIND_NAMES)}}
    for row in MAMBA_KINDS.values():
        for f in row.fields + row.optional + tuple(row.aliases):
            mamba_props[f] = _POS
    draft = _obj({"method": {"enum": list(DRAFT_METHODS)}, "num_layers": {**_POS, "maximum": MAX_DRAFT_LAYERS},
                  "num_kv_heads": _POS,
                  "head_size": _POS, "head_size_v": _NULL_POS, "num_speculative_tokens": _POS,
                  "hf_config": {"type": "string"}})
    model = _obj({
        "name": {"type": "string"}, "num_layers": {**_POS, "maximum": MAX_LAYERS},
        "dtype": {"enum": list(MODEL_DTYPES)},
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
    parallel = _obj({"tensor_parallel_size": _POS, "pipeline_parallel_size": {**_POS, "maximum": MAX_PP},
                     "data_parallel_size": _POS,
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
    gib = {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": r"^\s*[0-9.]+\s*$"}]}
    flag = {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false", "1", "0", "True", "False"]}]}
    ids = {"anyOf": [{"type": "array", "items": _INT}, _INT, {"type": "string"}, {"type": "null"}]}
    extra = {"type": ["object", "null"], "additionalProperties": True, "properties": {
        "save_only_first_rank": {"type": "boolean"}, "first_rank_max_local_cpu_size": {"type": "number", "minimum": 0},
        "local_cpu.pinned_align_bytes": _POS}}
    lmcache = {"type": "object", "additionalProperties": True, "properties": {
        "version": {"enum": list(LMCACHE_RELEASES)}, "chunk_size": _POS, "local_cpu": flag, "max_local_cpu_size": gib,
        "local_disk": {"type": ["string", "null"]}, "max_local_disk_size": gib, "use_layerwise": flag,
        "local_cpu_use_hugepages": flag, "lookup_server_worker_ids": ids, "enable_controller": flag,
        "lmcache_worker_ids": ids, "extra_config": extra}}
    offload = _obj({"backend": {"enum": list(OFFLOAD_BACKENDS)}, "cpu_bytes_to_use": _SIZE,
                    "kv_offloading_size": {"type": "number", "minimum": 0},
                    "block_size": _NULL_POS, "blocks_per_chunk": _NULL_POS, "lmcache": lmcache})
    vllm = _obj({"version": {"type": "string", "pattern": r"^v?\d+\.\d+(\.\d+)?"}, "platform": {"enum": list(PLATFORMS)},
                 "attention_backend": {"anyOf": [{"enum": list(ATTENTION_BACKEND_NAMES)}, {"type": "null"}]},
                 "gpu_arch": {"enum": list(GPU_ARCHS)}})
    host = _obj({"page_size": {"type": "integer", "minimum": 4096, "maximum": 1 << 30},
                 "pinned_round_threshold_mb": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}})
    return _describe(_tree({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "kvcalc-layout-v1",
        "title": "kvcalc layout, schema version 1",
        **_obj({"schema_version": {"const": 1}, "model": model, "parallel": parallel, "cache": cache,
                "offload": offload, "host": host, "vllm": vllm}, ("model",)),
    }))
