"""Plan -> one plain dict (ints, strings, lists): everything a renderer needs, nothing it must compute.

The JSON renderer dumps this dict as it is; the table renderer only formats it.
"""

from __future__ import annotations

import re
from collections import Counter

from . import __version__
from .plan import Plan
from .specs import KVCacheSpec, MambaSpec, UniformTypeKVCacheSpecs
from .versions import FAMILIES

SCHEMA_VERSION = 1


def spec_summary(spec: KVCacheSpec) -> dict:
    out = {"kind": spec.kind, "block_size": spec.block_size, "page_size_bytes": spec.page_size_bytes}
    if isinstance(spec, UniformTypeKVCacheSpecs):
        out["member_kinds"] = sorted({s.kind for s in spec.distinct_specs})
        out["member_pages"] = sorted({s.page_size_bytes for s in spec.distinct_specs})
    elif isinstance(spec, MambaSpec):
        out["state_shapes"] = [list(s) for s in spec.shapes]
        out["state_dtypes"] = list(spec.dtypes)
        out["real_page_size_bytes"] = spec.real_page_size_bytes
    else:
        out["num_kv_heads"] = spec.num_kv_heads
        out["head_size"] = spec.head_size
        out["dtype"] = spec.dtype
        for key in ("sliding_window", "attention_chunk_size", "cache_dtype_str"):
            if getattr(spec, key, None) is not None:
                out[key] = getattr(spec, key)
    return out


def formula_entry(plan: Plan, name: str) -> dict | None:
    """One family's CPU count on this plan: the keys of `old`/`fixed` plus copies, alignment, padding."""
    r = plan.offload.results.get(name)
    if r is None:
        return None
    fam = FAMILIES[name]
    worst = min((s for s in r.stages if s.out_of_bounds), key=lambda s: s.count.num_blocks, default=None)
    dp = plan.layout.parallel.data_parallel_size
    return {
        "family": fam.id,
        "versions": fam.versions,
        "kv_bytes_per_block": r.scheduler.kv_bytes_per_block,
        "kv_bytes_per_offloaded_block": r.scheduler.kv_bytes_per_offloaded_block,
        "num_blocks_scheduler": r.scheduler.num_blocks,
        "num_blocks_workers": [s.count.num_blocks for s in r.stages],
        "kv_bytes_per_block_workers": [s.count.kv_bytes_per_block for s in r.stages],
        "cpu_tokens_scheduler": r.tokens_scheduler,
        "cpu_tokens_safe": r.tokens_safe,
        "out_of_bounds": r.out_of_bounds,
        "out_of_bounds_ids": None if worst is None else {
            "pp_rank": worst.pp_rank, "first": worst.bad_ids[0], "last": worst.bad_ids[1]},
        "pinned_bytes_per_worker": [s.pinned_bytes_per_worker for s in r.stages],
        "pinned_bytes_per_engine": r.pinned_bytes_per_engine,
        "pinned_bytes_all_replicas": r.pinned_bytes_per_engine * dp,
        "unused_bytes": r.unused_bytes,
        "wasted_bytes_per_worker": [s.wasted_bytes_per_worker for s in r.stages],
        "note": plan.formula_notes.get(name),
        "unit": "chunks" if r.chunks else "blocks",
        "block_size_factor": r.factor,
        "copies": r.scheduler.copies,
        "replicated": r.replicated,
        "alignment": FAMILIES[name].rule.alignment,
        "aligned_bytes": r.scheduler.aligned_bytes,
        "padding_bytes": r.scheduler.padding_bytes,
        "shared_region": r.shared_region,
    }


def _one(values: tuple) -> object:
    """A per-layer tuple shown as one value when every layer agrees."""
    return values[0] if len(set(values)) == 1 else list(values)


def model_fields(plan: Plan) -> list[dict]:
    """The model fields the numbers rest on, with where each came from, for checking against a config."""
    m = plan.layout.model
    prov = dict(plan.layout.provenance)
    kinds = m.layer_types
    rows: list[tuple[str, object]] = [("dtype", m.dtype)]
    attn = [i for i, k in enumerate(kinds) if k in ("full_attention", "sliding_attention", "chunked_attention",
                                                     "full_attention+mamba")]
    if attn:
        rows += [("num_kv_heads", _one(tuple(m.num_kv_heads[i] for i in attn))),
                 ("head_size", _one(tuple(m.head_size[i] for i in attn)))]
        if any(m.head_size_v[i] != m.head_size[i] for i in attn):
            rows.append(("head_size_v", _one(tuple(m.head_size_v[i] for i in attn))))
    for key in ("sliding_window", "attention_chunk_size", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim"):
        if getattr(m, key) is not None:
            rows.append((key, getattr(m, key)))
    if m.mamba is not None:
        rows.append(("mamba.kind", m.mamba.kind))
        rows += [(f"mamba.{k}", v) for k, v in m.mamba.params]
    if m.draft is not None:
        rows += [(f"draft.{k}", getattr(m.draft, k)) for k in ("method", "num_layers", "num_kv_heads", "head_size")
                 if getattr(m.draft, k) is not None]
    out = [{"field": k, "value": v, "from": prov.get(f"model.{k}", "layout file")} for k, v in rows]
    if m.mamba is not None:
        for key in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            value = getattr(plan.layout.cache, key)
            out.append({"field": f"cache.{key}", "value": value,
                        "from": prov.get(f"cache.{key}", "layout file" if value != "auto" else "default")})
    return out


def build_report(plan: Plan) -> dict:
    lay, par, cache = plan.layout, plan.layout.parallel, plan.layout.cache
    gpu, off = plan.gpu, plan.offload
    kinds = Counter(lay.model.layer_types)
    selected = formula_entry(plan, plan.selected)
    old, fixed = formula_entry(plan, "old"), formula_entry(plan, "fixed")
    return {
        "schema_version": SCHEMA_VERSION,
        "kvcalc_version": __version__,
        "source": lay.source,
        "vllm_version": plan.behaviour.version,
        "family": plan.behaviour.family.id,
        "model": {
            "name": lay.model.name,
            "num_layers": lay.model.num_layers,
            "dtype": lay.model.dtype,
            "layer_kinds": dict(sorted(kinds.items())),
            "layer_kinds_from": dict(plan.layout.provenance).get("model.layer_types", "layout file"),
            "fields": model_fields(plan),
            "draft": None if lay.model.draft is None else {
                "method": lay.model.draft.method, "num_layers": lay.model.draft.num_layers},
        },
        "parallel": {
            "tensor_parallel_size": par.tensor_parallel_size,
            "pipeline_parallel_size": par.pipeline_parallel_size,
            "data_parallel_size": par.data_parallel_size,
            "world_size": par.world_size,
        },
        "cache": {
            "kv_cache_dtype": cache.kv_cache_dtype,
            "kv_cache_memory": None if cache.kv_cache_memory is None else list(cache.kv_cache_memory),
            "num_gpu_blocks_override": cache.num_gpu_blocks_override,
            "max_model_len": cache.max_model_len,
            "max_num_batched_tokens": cache.max_num_batched_tokens,
            "enable_prefix_caching": plan.layers.enable_prefix_caching,
            "mamba_cache_mode": plan.layers.mamba_cache_mode if lay.model.has_mamba else None,
            "mamba_block_size": plan.layers.mamba_block_size,
            "hybrid_kv_cache_manager": plan.hma_enabled,
            "hybrid_kv_cache_manager_reason": plan.hma_reason,
        },
        "gpu": {
            "block_size": gpu.hash_block_size,  # the engine's block size: the smallest group block size
            "attention_block_size": plan.layers.block_size,
            "num_blocks": gpu.num_blocks,
            "kv_cache_size_tokens": None if plan.logs is None else plan.logs.kv_cache_size_tokens,
            "max_concurrency": None if plan.logs is None else plan.logs.max_concurrency,
            "log_family": plan.behaviour.log_family,
            "log_lines": [] if plan.logs is None else list(plan.logs.lines),
            "grouping": plan.grouping.rule,
            "groups": [dict(spec_summary(g.spec), layers=list(g.layer_names)) for g in plan.grouping.groups],
            "scheduler_groups": [spec_summary(g.spec) for g in gpu.scheduler_groups],
            "workers": [
                {
                    "pp_rank": w.pp_rank,
                    "decoder_layers": list(plan.layers.stages[w.pp_rank].decoder_layers),
                    "num_blocks": w.num_blocks,
                    "num_blocks_before_min": w.num_blocks_before_min,
                    "bytes_per_block": w.bytes_per_block,
                    "total_bytes": w.total_bytes,
                    "tensors": [{"size": t.size, "page_bytes": t.page_bytes, "shared_by": list(t.shared_by)}
                                for t in w.tensors],
                    # 0.30+: the tensors above are per-layer views inside one backing allocation, and vLLM's
                    # KVCacheTensor entries each carry that allocation's total size.
                    "backing_allocation": {"bytes_per_block": w.bytes_per_block, "size": w.total_bytes}
                    if plan.behaviour.rule.single_allocation else None,
                }
                for w in gpu.workers
            ],
        },
        "offload": {
            "cpu_bytes_to_use": off.cpu_bytes_to_use,
            "cpu_bytes_source": lay.offload.cpu_bytes_source,
            "block_size": off.block_size,
            "block_size_factor": off.block_size_factor,
            "startup_error": off.startup_error,
            "selected": selected,
            "errors": dict(plan.offload.errors),
            "old": old,
            "fixed": fixed,
            "out_of_bounds": bool(selected and selected["out_of_bounds"]),
            "pinned_bytes_per_engine": None if selected is None else selected["pinned_bytes_per_engine"],
            "unused_bytes": None if selected is None else selected["unused_bytes"],
            "data_parallel_size": par.data_parallel_size,
            "cpu_bytes_all_replicas": off.cpu_bytes_to_use * par.data_parallel_size,
        },
        "notes": list(plan.notes),
        "warnings": list(plan.warnings),
    }


_LAYER_RE = r"^model\.layers\.(\d+)\.(.+)$"


def collapse_layers(names: list[str]) -> str:
    """Layer names -> a short range text, per module suffix in order of first appearance:
    61 x 'model.layers.{i}.self_attn.attn' -> 'layers 0–60 self_attn.attn';
    Qwen3-Next's GDN group {0, 4, ..., 44} -> 'layers 0–44 step 4 linear_attn'."""
    by_suffix: dict[str, list[int]] = {}
    others: list[str] = []
    for name in names:
        m = re.match(_LAYER_RE, name)
        if m:
            by_suffix.setdefault(m.group(2), []).append(int(m.group(1)))
        else:
            others.append(name)
    parts = []
    for suffix, idx in by_suffix.items():
        parts.append(f"{_ranges(idx)} {suffix}")
    text = "; ".join(parts)
    if others:
        text = "; ".join(filter(None, [text] + others))
    return ("layers " + text) if by_suffix else text


def _ranges(idx: list[int]) -> str:
    """[0, 1, 2, 3, 10] -> '0–3, 10'; [0, 4, 8] -> '0–8 step 4'."""
    out = []
    i = 0
    while i < len(idx):
        j = i
        if i + 1 < len(idx):
            step = idx[i + 1] - idx[i]
            while j + 1 < len(idx) and idx[j + 1] - idx[j] == step and step > 0:
                j += 1
        if j - i >= 2:
            step = idx[i + 1] - idx[i]
            out.append(f"{idx[i]}–{idx[j]}" + ("" if step == 1 else f" step {step}"))
            i = j + 1
        else:
            out.append(str(idx[i]))
            i += 1
    return ", ".join(out)


def release_entry(version: str, result) -> dict:
    """One column of --compare-versions: what that release builds and how many CPU blocks it gets."""
    if not isinstance(result, Plan):
        return {"vllm_version": version, "family": None, "startup_error": result.one_line(), "offload": None}
    entry = formula_entry(result, result.selected)
    return {
        "vllm_version": version,
        "family": result.behaviour.family.id,
        "warning": result.behaviour.warning,
        "hybrid_kv_cache_manager": result.hma_enabled,
        "grouping": result.grouping.rule,
        "num_groups": len(result.grouping.groups),
        "gpu_num_blocks": result.gpu.num_blocks,
        "kv_cache_size_tokens": None if result.logs is None else result.logs.kv_cache_size_tokens,
        "max_concurrency": None if result.logs is None else result.logs.max_concurrency,
        "startup_error": result.offload.startup_error,
        "offload": entry,
    }


def add_comparison(report: dict, releases: list[tuple[str, object]]) -> dict:
    entries = [release_entry(v, r) for v, r in releases]
    report["releases"] = entries
    families: dict[str, dict] = {}
    for e in entries:
        if e["family"] and e["offload"] is not None:
            families[e["family"]] = dict(e["offload"], vllm_version=e["vllm_version"])
    report["offload"]["families"] = families
    return report
