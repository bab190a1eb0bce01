"""Plan -> the typed report (report/sections.py), built once, read by every renderer.

Renderers and gates read these objects; nothing reads a section back by string keys.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..engines.vllm.specs import AttentionSpec, KVCacheSpec, MambaSpec, UniformTypeKVCacheSpecs
from ..pipeline import Plan
from ..vocab.errors import KvcalcError, known
from ..vocab.records import replace
from ..vocab.releases.vllm import FAMILIES
from .sections import (SCHEMA_VERSION, AttentionChoiceEntry, AttentionSection, BackingAllocation, CacheSection,
                       DraftSummary, FamilyEntry, GpuSection, GroupSummary, ModelField, ModelSection, OffloadSection,
                       ParallelSection, Report, SpecSummary, TensorEntry, WorkerSection)
from .verdict import verdict

if TYPE_CHECKING:
    from typing import TypeVar

    from ..pipeline import EnginePlan
    from .optional import BackendEntry, Check, LMCacheSection, PlannedRelease, RefusedRelease, VerifySection

    _Summary = TypeVar("_Summary", bound=SpecSummary)


def spec_summary(spec: KVCacheSpec, cls: type[_Summary], **extra: Any) -> _Summary:
    kw: dict = {"kind": spec.kind, "block_size": spec.block_size, "page_size_bytes": spec.page_size_bytes}
    if isinstance(spec, UniformTypeKVCacheSpecs):
        kw["member_kinds"] = sorted({s.kind for s in spec.distinct_specs})
        kw["member_pages"] = sorted({s.page_size_bytes for s in spec.distinct_specs})
    elif isinstance(spec, MambaSpec):
        kw["state_shapes"] = [list(s) for s in spec.shapes]
        kw["state_dtypes"] = list(spec.dtypes)
        kw["real_page_size_bytes"] = spec.real_page_size_bytes
    else:
        assert isinstance(spec, AttentionSpec)  # every other spec is an attention layer's
        kw.update(num_kv_heads=spec.num_kv_heads, head_size=spec.head_size, dtype=spec.dtype,
                  sliding_window=getattr(spec, "sliding_window", None),
                  attention_chunk_size=getattr(spec, "attention_chunk_size", None),
                  cache_dtype_str=getattr(spec, "cache_dtype_str", None))
    return cls(**kw, **extra)


def family_entry(plan: Plan, name: str, notes: dict[str, str]) -> FamilyEntry | None:
    """One family's CPU count on this plan; `notes`: family id -> how that family's release lays the model out,
    when it differs from the selected release (representative_entry), or {}."""
    r = plan.offload.results.get(name)
    if r is None:
        return None
    fam = FAMILIES[name]
    worst = min((s for s in r.stages if s.out_of_bounds), key=lambda s: s.count.num_blocks, default=None)
    dp = plan.layout.parallel.data_parallel_size
    return FamilyEntry(
        family=fam.id, versions=fam.versions,
        kv_bytes_per_block=r.scheduler.kv_bytes_per_block,
        kv_bytes_per_offloaded_block=r.scheduler.kv_bytes_per_offloaded_block,
        num_blocks_scheduler=r.scheduler.num_blocks,
        num_blocks_workers=[s.count.num_blocks for s in r.stages],
        kv_bytes_per_block_workers=[s.count.kv_bytes_per_block for s in r.stages],
        cpu_tokens_scheduler=r.tokens_scheduler, cpu_tokens_safe=r.tokens_safe, out_of_bounds=r.out_of_bounds,
        out_of_bounds_ids=None if worst is None else worst.ids,
        pinned_bytes_per_worker=[s.pinned_bytes_per_worker for s in r.stages],
        pinned_bytes_per_engine=r.pinned_bytes_per_engine,
        pinned_bytes_all_replicas=r.pinned_bytes_per_engine * dp,
        unused_bytes=r.unused_bytes,
        wasted_bytes_per_worker=[s.wasted_bytes_per_worker for s in r.stages],
        note=notes.get(name),
        unit="chunks" if r.chunks else "blocks", block_size_factor=r.factor, copies=r.scheduler.copies,
        replicated=r.replicated, alignment=r.alignment, aligned_bytes=r.scheduler.aligned_bytes,
        padding_bytes=r.scheduler.padding_bytes, shared_region=r.shared_region,
        capacity=r.capacity, host=r.host,
    )


def _one(values: tuple[int, ...]) -> int | list[int]:
    """A per-layer tuple shown as one value when every layer agrees."""
    return values[0] if len(set(values)) == 1 else list(values)


def _layer_kinds_from(lay) -> str:
    """Where the layer kinds came from: the config key that set them, the default a config implies, or the layout."""
    prov = dict(lay.provenance)
    if "model.layer_types" in prov:
        return prov["model.layer_types"]
    if prov:  # read from a config.json that states no layer types
        return ("config: every layer mla (kv_lora_rank is set)" if lay.model.is_mla else
                "config: every layer full_attention (it states no layer types)")
    return "layout file"


def model_fields(plan: Plan) -> list[ModelField]:
    """The model fields the numbers rest on, with where each came from, for checking against a config."""
    m = plan.layout.model
    prov = dict(plan.layout.provenance)
    rows: list[tuple[str, int | str | list[int]]] = [("dtype", m.dtype)]
    attn = [i for i, k in enumerate(m.layer_types) if k.attention]
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
    out = [ModelField(field_=k, value=v, from_=prov.get(f"model.{k}", "layout file")) for k, v in rows]
    if m.mamba is not None:
        for key in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            value = getattr(plan.layout.cache, key)
            out.append(ModelField(field_=f"cache.{key}", value=value,
                                  from_=prov.get(f"cache.{key}", "layout file" if value != "auto" else "default")))
    return out


def attention_section(plan: Plan) -> AttentionSection:
    """The backend of each kind of attention layer, why, and the GPU class the selection assumed."""
    from ..engines.vllm.attention import explain

    a = plan.layers.attention
    return AttentionSection(
        gpu_class=a.device.capability, gpu_class_basis=a.device.basis, platform=a.device.platform,
        choices=[AttentionChoiceEntry(layers=c.query.what, backend=c.backend, how=c.how, why=explain(c),
                                      rejected=[f"{n}: {', '.join(r)}" for n, r in c.rejected]) for c in a.choices],
        block_size=a.block_size, block_basis=a.block_basis)


def gpu_section(plan: Plan) -> GpuSection:
    gpu = plan.gpu
    single = plan.behaviour.rule.single_allocation
    return GpuSection(
        block_size=gpu.hash_block_size, attention_block_size=plan.layers.block_size, num_blocks=gpu.num_blocks,
        kv_cache_size_tokens=None if plan.logs is None else plan.logs.kv_cache_size_tokens,
        max_concurrency=None if plan.logs is None else plan.logs.max_concurrency,
        log_family=plan.behaviour.log_family, log_lines=[] if plan.logs is None else list(plan.logs.lines),
        grouping=plan.grouping.rule,
        groups=[spec_summary(g.spec, GroupSummary, layers=list(g.layer_names)) for g in plan.grouping.groups],
        scheduler_groups=[spec_summary(g.spec, SpecSummary) for g in gpu.scheduler_groups],
        workers=[
            WorkerSection(
                pp_rank=w.pp_rank, decoder_layers=list(plan.layers.stages[w.pp_rank].decoder_layers),
                num_blocks=w.num_blocks, num_blocks_before_min=w.num_blocks_before_min,
                bytes_per_block=w.bytes_per_block, total_bytes=w.total_bytes,
                tensors=[TensorEntry(size=t.size, page_bytes=t.page_bytes, shared_by=list(t.shared_by))
                         for t in w.tensors],
                # 0.30+: the tensors above are per-layer views inside one backing allocation, and vLLM's
                # KVCacheTensor entries each carry that allocation's total size.
                backing_allocation=BackingAllocation(bytes_per_block=w.bytes_per_block, size=w.total_bytes)
                if single else None,
            )
            for w in gpu.workers
        ],
        memory=gpu_memory(plan), attention=attention_section(plan),
    )


FIT_SEARCH = 1 << 24  # max_model_len_that_fits is searched up to this many tokens


def gpu_memory(plan: Plan):
    """The budget with a GPU named: the prediction, or the flag's budget beside the device; with the longest
    max_model_len it fits."""
    memory = plan.memory
    if memory is None:
        if not plan.layout.gpu.predicts:
            return None
        from ..engines.vllm.memory import given

        memory = given(plan.layout, "flag")
        if memory is None:  # num_gpu_blocks_override: a block count, no budget in bytes
            return None
    from ..engines.vllm.tensors import largest_fitting_len

    budgets: list[int | None] = [w.kv_cache_bytes for w in memory.workers]
    budgets = budgets or [memory.kv_cache_bytes] * len(plan.gpu.workers)
    fits = [largest_fitting_len(w.groups, plan.layers.usage, w.num_tensors, b, FIT_SEARCH)
            for w, b in zip(plan.gpu.workers, budgets) if w.groups and b is not None and b > 0]
    return replace(memory, max_model_len_that_fits=min(fits) if fits else None)


def lmcache_section(plan: Plan) -> LMCacheSection:
    """LMCache's in-process pool (offload.backend lmcache; from vLLM 0.23.0 its flag's pool is the MP server's:
    lmcache_mp_section)."""
    from ..backends.lmcache import LMCachePool  # that backend's reports only (start-up time is a target)
    from ..vocab.releases.lmcache import lmcache_of
    from .optional import LMCacheSection

    lc = LMCachePool.of(plan.pool)
    dp = plan.layout.parallel.data_parallel_size
    return LMCacheSection(
        lmcache_version=lc.version, connector=lc.connector, modelled=True, chunk_size=lc.chunk_size, use_mla=lc.use_mla,
        save_only_first_rank=lc.save_only_first_rank, local_cpu=lc.local_cpu, use_layerwise=lc.use_layerwise,
        max_local_cpu_size=lc.max_local_cpu_size, first_rank_max_local_cpu_size=lc.first_rank_max_local_cpu_size,
        alignment=lc.alignment, stages=lc.stages, storing_ranks=lc.storing_ranks,
        storing_rank_ids=list(lc.storing_rank_ids), pool_bytes_per_storing_rank=lc.pool_bytes_per_storing_rank,
        first_rank=lc.first_rank, pool_bytes_per_engine=lc.pool_bytes_per_engine,
        pool_bytes_all_replicas=lc.pool_bytes_per_engine * dp, resident_bytes_per_engine=lc.resident_bytes_per_engine,
        resident_bytes_per_node=lc.resident_bytes_per_node, tokens_per_engine=lc.tokens_per_engine,
        disk_bytes_per_rank=lc.disk_bytes_per_rank, disk_chunks_per_rank=lc.disk_chunks_per_rank,
        vllm_flag=lc.vllm_flag, config_from=dict(lmcache_of(plan.layout).provenance),
    )


def _without_counts(plan: Plan, backends: list[BackendEntry] | None, *, block_size: int, factor: int,
                    startup_error: str | None, errors: dict, lmcache: LMCacheSection | None) -> OffloadSection:
    """An offload section with no CPU counts: no budget given (the per-block bytes are the GPU side's,
    gpu.workers[].bytes_per_block), or a pool of another kind (offload.lmcache)."""
    return OffloadSection(
        backend=plan.layout.offload.backend, cpu_bytes_to_use=None,
        cpu_bytes_source=plan.layout.offload.cpu_bytes_source, block_size=block_size, block_size_factor=factor,
        startup_error=startup_error, selected=None, errors=errors, old=None, fixed=None, out_of_bounds=None,
        pinned_bytes_per_engine=None, unused_bytes=None, data_parallel_size=plan.layout.parallel.data_parallel_size,
        cpu_bytes_all_replicas=None, host=None, families=None, lmcache=lmcache, backends=backends)


def representative_entry(plan: Plan, name: str) -> tuple[FamilyEntry | None, str | None]:
    """The `name` family's column planned whole on its representative release (vocab FAMILIES[name].representative,
    as `kvcalc size` does): that release's own hybrid manager, groups, tensors and GPU blocks, not the selected
    release's. (entry, None), or (None, why that release refuses the layout or its connector)."""
    version = known(FAMILIES[name].representative, "the family's representative")  # old and fixed name one
    alt = plan.representative(version)  # planned by the pipeline (engines/vllm/plan.py), read here
    if isinstance(alt, KvcalcError):
        return None, f"vLLM {version} refuses this layout at startup: {alt.one_line()}"
    if alt.offload.startup_error:
        return None, f"vLLM {version} would not start the offloading connector: {alt.offload.startup_error}"
    same = [(g.layer_names, g.spec) for g in alt.grouping.groups] == \
        [(g.layer_names, g.spec) for g in plan.grouping.groups] and alt.gpu.num_blocks == plan.gpu.num_blocks
    note = None if same else (
        f"vLLM {version} lays this model out as its own: hybrid manager {'on' if alt.hma_enabled else 'off'}, "
        f"{len(alt.grouping.groups)} KV cache group(s)" + ("" if alt.gpu.num_blocks is None else
                                                           f", {alt.gpu.num_blocks:,} GPU blocks")
        + f" (vLLM {plan.behaviour.version}: {len(plan.grouping.groups)} group(s)"
        + ("" if plan.gpu.num_blocks is None else f", {plan.gpu.num_blocks:,} GPU blocks") + ")")
    entry = family_entry(alt, name, {name: note} if note else {})
    return (None, None) if entry is None else (_with_version(entry, version), None)


def native_section(plan: Plan, families: dict[str, FamilyEntry] | None,
                   backends: list[BackendEntry] | None) -> OffloadSection:
    """The native connector's pool: the selected release's family, and the old and fixed columns beside it, each
    on its own release (the selected one for its own family, else the family's representative)."""
    off, par = plan.offload, plan.layout.parallel
    budget = plan.layout.offload.cpu_bytes_to_use
    if budget is None:
        return _without_counts(plan, backends, block_size=off.block_size, factor=off.block_size_factor,
                               startup_error=off.startup_error, errors=dict(off.errors), lmcache=None)
    # A release that would not start has no pool: its counts, verdict and host bytes are null, not numbers a
    # pipeline could read as a plan (the old / fixed columns stay: what each release gives on this layout).
    own = family_entry(plan, plan.selected, {})
    own = None if own is None else _with_version(own, plan.behaviour.version)
    selected = None if off.startup_error else own
    # The selected family's own init failure only: reading off.errors would count the other families on this
    # release's GPU stage, which no column shows any more.
    errors = {plan.selected: off.selected} if isinstance(off.selected, str) else {}
    entries = {}
    for name in ("old", "fixed"):
        if name == plan.selected:
            entries[name] = own
            continue
        entries[name], why = representative_entry(plan, name)
        if why:
            errors[name] = why
    return OffloadSection(
        backend="native", lmcache=None, backends=backends,
        cpu_bytes_to_use=off.cpu_bytes_to_use, cpu_bytes_source=plan.layout.offload.cpu_bytes_source,
        block_size=off.block_size, block_size_factor=off.block_size_factor, startup_error=off.startup_error,
        selected=selected, errors=errors, old=entries["old"], fixed=entries["fixed"],
        out_of_bounds=None if selected is None else selected.out_of_bounds,
        pinned_bytes_per_engine=None if selected is None else selected.pinned_bytes_per_engine,
        unused_bytes=None if selected is None else selected.unused_bytes,
        data_parallel_size=par.data_parallel_size, cpu_bytes_all_replicas=budget * par.data_parallel_size,
        host=None if selected is None else selected.host, families=families,
    )


def lmcache_offload_section(plan: Plan, families: dict[str, FamilyEntry] | None,
                            backends: list[BackendEntry] | None) -> OffloadSection:
    """LMCache's pool: no native counts (the connector is not configured), LMCache's own section."""
    return _without_counts(plan, backends, block_size=plan.gpu.hash_block_size, factor=1, startup_error=None,
                           errors={}, lmcache=lmcache_section(plan))


def pool_section(plan: Plan, families: dict[str, FamilyEntry] | None,
                 backends: list[BackendEntry] | None) -> OffloadSection:
    """A backend without a section of its own: the figures every pool has are in the checks, the sweep and
    --compare-backends; the section says which backend it is and whether it starts."""
    return _without_counts(plan, backends, block_size=plan.gpu.hash_block_size, factor=1,
                           startup_error=plan.pool.startup_error, errors={}, lmcache=None)


def lmcache_mp_offload_section(plan: Plan, families, backends) -> OffloadSection:
    """The LMCache MP server's pool: no native counts, the server's own section (offload.lmcache_mp)."""
    from ..backends.lmcache_mp import LMCacheMPPool  # that backend's reports only

    return replace(_without_counts(plan, backends, block_size=plan.gpu.hash_block_size, factor=1,
                                   startup_error=plan.pool.startup_error, errors={}, lmcache=None),
                   backend=plan.pool.backend, lmcache_mp=LMCacheMPPool.of(plan.pool))


def simple_offload_section(plan: Plan, families, backends) -> OffloadSection:
    from .simple_section import simple_section  # that backend's reports only (start-up time is a target)

    return simple_section(plan, backends)


def no_offload_section(plan: Plan, families, backends) -> None:
    """No KV connector: no offload section (the report's offload_reason says why)."""
    return None


# The offload section of each backend's pool (a detail renderer: the pools differ in what they show); a backend
# without an entry gets pool_section.
OFFLOAD_SECTIONS = {"native": native_section, "lmcache": lmcache_offload_section, "simple": simple_offload_section,
                    "lmcache_mp": lmcache_mp_offload_section, "none": no_offload_section}


def backend_entries(results: list[tuple[str, EnginePlan | KvcalcError]]) -> list[BackendEntry]:
    """--compare-backends: one entry per backend (pipeline.compare_backends), from each plan's Pool."""
    from .optional import BackendEntry


    def without_figures(name: str, error: str | None, tokens_per_unit: int | None = None) -> BackendEntry:
        return BackendEntry(backend=name, pool_bytes_per_engine=None, resident_bytes_per_engine=None,
                            resident_bytes_per_node=None, tokens=None, unit_bytes=None,
                            tokens_per_unit=tokens_per_unit, startup_error=error)

    out = []
    for name, p in results:
        if isinstance(p, KvcalcError):
            out.append(without_figures(name, p.one_line()))
            continue
        pool = p.pool
        if pool.not_modelled is not None:
            out.append(without_figures(name, f"not modelled ({pool.not_modelled.connector})", pool.tokens_per_unit))
        elif pool.startup_error or pool.units_scheduler is None:
            out.append(without_figures(name, pool.startup_error))
        else:
            out.append(BackendEntry(
                backend=name, pool_bytes_per_engine=pool.pool_bytes_per_engine,
                resident_bytes_per_engine=pool.resident_bytes_per_engine,
                resident_bytes_per_node=pool.resident_bytes_per_node, tokens=pool.tokens, unit_bytes=pool.unit_bytes,
                tokens_per_unit=pool.tokens_per_unit, startup_error=None))
    return out


def release_entry(version: str, result) -> PlannedRelease | RefusedRelease:
    """One column of --compare-versions."""
    from .optional import PlannedRelease, RefusedRelease

    if not isinstance(result, Plan):
        return RefusedRelease(vllm_version=version, family=None, startup_error=result.one_line(), offload=None)
    return PlannedRelease(
        vllm_version=version, family=result.behaviour.family.id, warning=result.behaviour.warning,
        hybrid_kv_cache_manager=result.hma_enabled, grouping=result.grouping.rule,
        num_groups=len(result.grouping.groups), gpu_num_blocks=result.gpu.num_blocks,
        kv_cache_size_tokens=None if result.logs is None else result.logs.kv_cache_size_tokens,
        max_concurrency=None if result.logs is None else result.logs.max_concurrency,
        startup_error=result.pool.startup_error,
        offload=None if result.pool.startup_error or result.layout.offload.cpu_bytes_to_use is None
        or not result.pool.families else family_entry(result, result.selected, {}),
        simple=result.pool.simple,
    )


def build_report(plan: Plan, *, releases: list[tuple[str, Plan | KvcalcError]] | None = None,
                 checks: list[Check] | None = None, verify: VerifySection | None = None,
                 backends: list[BackendEntry] | None = None, limits: dict | None = None,
                 engines: list | None = None) -> Report:
    """vLLM's report, built once (report.build_report asks the plan's engine for it). `releases` (from
    pipeline.compare) adds the comparison; `checks` (tools.gates) the gates; `backends` (backend_entries)
    --compare-backends; `limits` the gates' limits (tools.gates.Gates fields: host_memory, shm, overhead; from
    --k8s's manifest or the flags), which the verdict says are enough or not; `engines` (report/engines.
    engine_entries) --compare-engines."""
    lay, par, cache = plan.layout, plan.layout.parallel, plan.layout.cache
    kinds = Counter(lay.model.layer_types)
    rel = None
    families = None
    if releases is not None:
        from .optional import PlannedRelease

        rel = [release_entry(v, r) for v, r in releases]
        families = {}
        for e in rel:
            if isinstance(e, PlannedRelease) and e.offload is not None:
                families[e.family] = _with_version(e.offload, e.vllm_version)
    gpu = gpu_section(plan)
    offload = OFFLOAD_SECTIONS.get(plan.pool.backend, pool_section)(plan, families, backends)
    parallel = ParallelSection(tensor_parallel_size=par.tensor_parallel_size,
                               pipeline_parallel_size=par.pipeline_parallel_size,
                               data_parallel_size=par.data_parallel_size, world_size=par.world_size)
    return Report(
        schema_version=SCHEMA_VERSION, kvcalc_version=__version__, source=lay.source,
        vllm_version=plan.behaviour.version, vllm_version_from=lay.vllm_version_from, family=plan.behaviour.family.id,
        model=ModelSection(
            name=lay.model.name, num_layers=lay.model.num_layers, dtype=lay.model.dtype,
            layer_kinds={k.value: n for k, n in sorted(kinds.items())},
            layer_kinds_from=_layer_kinds_from(lay),
            fields=model_fields(plan),
            draft=None if lay.model.draft is None else DraftSummary(method=lay.model.draft.method,
                                                                    num_layers=lay.model.draft.num_layers),
        ),
        parallel=parallel,
        cache=CacheSection(
            kv_cache_dtype=cache.kv_cache_dtype,
            kv_cache_memory=None if cache.kv_cache_memory is None else list(cache.kv_cache_memory),
            num_gpu_blocks_override=cache.num_gpu_blocks_override, max_model_len=cache.max_model_len,
            max_num_batched_tokens=cache.max_num_batched_tokens,
            enable_prefix_caching=plan.layers.enable_prefix_caching,
            mamba_cache_mode=plan.layers.mamba_cache_mode if lay.model.has_mamba else None,
            mamba_block_size=plan.layers.mamba_block_size, hybrid_kv_cache_manager=plan.hma_enabled,
            hybrid_kv_cache_manager_reason=plan.hma_reason,
        ),
        gpu=gpu, offload=offload, offload_reason=None if offload is not None else plan.pool.notes[0],
        notes=list(plan.notes), warnings=list(plan.warnings),
        checks=checks, releases=rel, verify=verify, verdict=verdict(plan, offload, limits), engines=engines,
        error=None if not plan.pool.startup_error else
        f"vLLM {plan.behaviour.version} refuses to start {plan.pool.connector}: {plan.pool.startup_error}",
    )


def _with_version(entry: FamilyEntry, version: str) -> FamilyEntry:
    return replace(entry, vllm_version=version)


# ---------------------------------------------------------------------------------------------------------
# Layer-name ranges for people

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
