"""The JSON Schema of every document kvcalc prints (`kvcalc schema output`, issue 35): the plan's (report/schema.py,
generated from the report records), the refusal every exit 2 prints with --format json, and each other command's
(size on the host side per backend and on the GPU side per engine, sweep's JSON lines, check --log / --metrics,
vllm-args, models, versions). A document is one of them (anyOf); each names every key it has (no other key), so a
document that drifts from its command's shape fails. Generated from the records where the document is one."""

from __future__ import annotations

INT, NUM, STR, BOOL, NULL = ({"type": t} for t in ("integer", "number", "string", "boolean", "null"))


def opt(schema: dict) -> dict:
    return {"anyOf": [schema, NULL]}


def arr(schema: dict) -> dict:
    return {"type": "array", "items": schema}


def obj(title: str | None, required: dict, optional: dict | None = None) -> dict:
    out = {"type": "object", "additionalProperties": False, "required": sorted(required),
           "properties": {**required, **(optional or {})}}
    return {"title": title, **out} if title else out


def _record(cls, defs: dict) -> dict:
    from ..vocab.records import json_schema

    return json_schema(cls, defs=defs)


def error_document() -> dict:
    """Every refusal after the command line parsed, with --format json (cli/__init__.py)."""
    return obj("an exit-2 refusal (--format json)", {"schema_version": {"const": 1}, "error": STR,
                                                     "exit_code": {"type": "integer", "minimum": 1}})


def size_documents(defs: dict) -> list[dict]:
    """`kvcalc size --format json`: the host side by backend, and the GPU side by engine."""
    from ..backends.lmcache import LMCacheSizeRow
    from ..backends.lmcache_mp_sizing import MPSize
    from ..backends.native_sizing import SizeRow
    from ..backends.simple_sizing import SimpleSize
    from ..backends.base import SizeTarget
    from ..engines.sglang.tools import HiCacheSize

    target = {"schema_version": {"const": 1}, "source": STR, "target_tokens": opt(INT),
              "target_resident_bytes": opt(INT)}
    row = _record(SizeRow, defs)
    native = obj("size (native connector)", {**target, "target_blocks": opt(INT), **row["properties"],
                                             "families": arr(row)})
    lmcache = obj("size (LMCache)", {**target, "backend": {"const": "lmcache"}, "target_chunks": opt(INT),
                                     "lmcache": _record(LMCacheSizeRow, defs)})
    lmcache_mp = obj("size (the LMCache MP server)", {**target, "backend": {"const": "lmcache_mp"},
                                                      "target_chunks": opt(INT), "lmcache_mp": _record(MPSize, defs)})
    simple = obj("size (SimpleCPUOffloadConnector)", {**target, "backend": {"const": "simple"},
                                                      "target_blocks": opt(INT), "simple": _record(SimpleSize, defs)})
    hicache = obj("size (SGLang HiCache)", {"source": STR, "engine": {"const": "sglang"},
                                            "target": _record(SizeTarget, defs),
                                            **_record(HiCacheSize, defs)["properties"]})
    parallel = {"tensor_parallel_size": INT, "pipeline_parallel_size": INT}
    gpu = obj("size --gpu-tokens / --concurrency (vLLM)", {
        "source": STR, "vllm_version": STR, "gpu_tokens": opt(INT), "concurrency": opt(NUM), "max_model_len": INT,
        "num_gpu_blocks": INT, "kv_cache_size_tokens": INT, "max_concurrency": NUM, "kv_cache_memory_bytes": INT,
        "gpu_memory_utilization": opt(NUM), "utilization_note": opt(STR),
        "smallest_parallel": opt(obj(None, {**parallel, "num_gpu_blocks": INT, "kv_cache_size_tokens": INT,
                                            "kv_cache_bytes": INT}))})
    sglang_gpu = obj("size --gpu-tokens / --concurrency (SGLang)", {
        "engine": {"const": "sglang"}, "sglang_version": STR, "target_tokens": INT, "context_length": INT,
        "mem_fraction_static": opt(NUM), "max_total_num_tokens": opt(INT), "refusal": opt(STR),
        "smallest_parallel": opt(obj(None, {**parallel, "max_total_num_tokens": INT}))})
    return [native, lmcache, lmcache_mp, simple, hicache, gpu, sglang_gpu]


def sweep_row() -> dict:
    """One line of `kvcalc sweep --format jsonl`: every axis (null where it is not swept) and every result."""
    from .sweep import AXES, RESULTS

    value = {"anyOf": [INT, NUM, STR, NULL]}
    results = {name: opt(INT) for name in RESULTS}
    results.update(family=opt(STR), unit=opt(STR), out_of_bounds=opt(BOOL), error=opt(STR))
    return obj("sweep --format jsonl: one row", {**{name: value for name in AXES}, **results})


def check_documents() -> list[dict]:
    head = {"source": STR, "vllm_version": STR, "notes": arr(STR), "match": BOOL}
    log = obj("check --log", {**head, "memory": STR, "num_gpu_blocks": opt(INT), "num_gpu_blocks_range": opt(arr(INT)),
                              "num_gpu_blocks_matching": opt(arr(INT)),
                              "rows": arr(obj(None, {"quantity": STR, "predicted": STR, "logged": STR,
                                                     "match": BOOL})),
                              "stages": arr(obj("each worker's budget as the log bounds it, per PP stage (the "
                                                "engine keeps the smallest block count)", {
                                  "pp_rank": INT, "memory": STR, "basis": {"enum": ["logged", "derived", "estimate"]},
                                  "memory_bytes": arr(INT), "bytes_per_block": INT, "num_blocks": arr(opt(INT))}))})
    metrics = obj("check --metrics", {**head, "rows": arr(obj(None, {
        "series": STR, "engine": STR, "line": INT, "label": STR, "expected": STR, "found": opt(STR), "match": BOOL,
        "from_scrape": BOOL, "tolerance": {"type": "integer", "minimum": 0}}))})
    return [log, metrics]


def vllm_args_document() -> dict:
    command = obj(None, {"spelling": {"enum": ["kv_offloading_size", "kv_transfer_config"]}, "command": STR,
                         "line_given": BOOL, "added": opt(arr(STR)), "dropped": opt(arr(STR)),
                         "changed": opt(arr(obj(None, {"flag": STR, "was": STR})))})
    pod = obj(None, {"memory_limit": STR, "memory_limit_bytes": INT, "shm_size_limit": opt(STR),
                     "shm_size_limit_bytes": INT})
    patch = obj(None, {"needs_memory_bytes": INT, "needs_shm_bytes": INT, "memory_enough": BOOL, "shm_enough": BOOL,
                       "patch_needed": BOOL, "yaml": STR})
    return obj("vllm-args", {
        "vllm_version": STR, "backend": STR, "args_kv_offloading_size": opt(arr(STR)),
        "args_kv_transfer_config": opt(arr(STR)), "commands": arr(command), "lmcache_yaml": opt(STR),
        "lmcache_env": opt(arr(STR)), "notes": arr(STR), "starts": BOOL, "pod": opt(pod), "out_of_bounds": BOOL},
        {"env_kv_offloading_size": opt({"type": "object", "additionalProperties": STR}),
         "server_command": opt(STR), "manifest_patch": opt(patch)})


def listing_documents() -> list[dict]:
    count = {"type": "object", "additionalProperties": INT}
    models = obj("models", {"vllm_version": STR, "counts": {"type": "object", "additionalProperties": count},
                            "architectures": arr({"type": "object", "required": ["architecture", "status"],
                                                  "properties": {"architecture": STR, "status": STR}})})
    versions = obj("versions", {"default_version": STR, "families": arr({"type": "object",
                                                                         "required": ["family", "versions"]}),
                                "lmcache": obj(None, {"default_version": STR, "releases_read": arr(STR)})})
    boundaries = obj("versions --boundaries", {"boundaries": arr(obj(None, {
        "flag": STR, "value": {}, "first": opt(STR), "last": opt(STR), "evidence": STR}))})
    return [models, versions, boundaries]


def every_output_schema() -> dict:
    from ..report.schema import output_schema

    schema = output_schema()
    defs = schema["$defs"]
    others = [error_document(), *size_documents(defs), sweep_row(), *check_documents(), vllm_args_document(),
              *listing_documents()]
    schema["anyOf"] = [*schema["anyOf"], *others]
    schema["title"] = ("every kvcalc JSON document, schema version 1: plan (and its refusal), the exit-2 error, "
                       "size, sweep rows, check, vllm-args, models, versions")
    return schema
