"""Plan -> the vLLM flags that reproduce it, in both spellings of the CPU budget. Pure."""

from __future__ import annotations

from ..vocab.records import replace

from ..vocab.errors import KvcalcError
from ..vocab.keys import FLAGS
from ..vocab.layout import Layout, base_block_size
from ..pipeline import Plan, plan


def startable_plan(layout: Layout) -> tuple[Plan, list[str]]:
    """Plan the layout; if the release refuses it, try the hybrid-manager and prefix-caching switches a user
    would add (HMA on where 0.21 allows it, prefix caching for Mamba hybrids). Returns the plan and what changed."""
    cache = layout.cache
    tries: list[tuple[Layout, list[str]]] = [(layout, [])]
    if cache.enable_prefix_caching is None and layout.model.has_mamba:
        tries.append((replace(layout, cache=replace(cache, enable_prefix_caching=True)),
                      ["--enable-prefix-caching: Mamba groups need it for the offloader's block-size check"]))
    if cache.hybrid_kv_cache_manager == "auto":
        on = replace(cache, hybrid_kv_cache_manager="on")
        tries.append((replace(layout, cache=on), ["--no-disable-hybrid-kv-cache-manager: the hybrid manager is off "
                                                  "by default with a KV connector on this release"]))
        if layout.model.has_mamba and cache.enable_prefix_caching is None:
            tries.append((replace(layout, cache=replace(on, enable_prefix_caching=True)),
                          tries[-1][1] + ["--enable-prefix-caching: Mamba groups need it for the offloader"]))
    first_error: KvcalcError | None = None
    first_plan = None
    for candidate, why in tries:
        try:
            p = plan(candidate)
        except KvcalcError as e:
            first_error = first_error or e
            continue
        if p.pool.startup_error is None:
            return p, why
        first_plan = first_plan or p
    if first_plan is not None:
        return first_plan, []
    raise first_error


def _v(name: str) -> str:
    """vLLM's own spelling of a flag (the flag table's `vllm` column)."""
    return FLAGS[name].vllm


def build(plan: Plan, changed: list[str] | None = None) -> dict:
    lay, cache, par = plan.layout, plan.layout.cache, plan.layout.parallel
    b = plan.behaviour
    common: list[str] = [_v("tp"), str(par.tensor_parallel_size)]
    notes: list[str] = []
    if par.pipeline_parallel_size > 1:
        common += [_v("pp"), str(par.pipeline_parallel_size)]
    if par.data_parallel_size > 1:
        common += [_v("dp"), str(par.data_parallel_size)]
    if par.distributed_executor_backend != "mp":
        common += [_v("backend"), par.distributed_executor_backend]
    if lay.attention_backend is not None:
        common += [_v("attention_backend"), lay.attention_backend]
    # The block size kvcalc assumed (before any hybrid bump vLLM applies itself): pinned so the backend's
    # own default cannot differ from kvcalc's.
    base_block = base_block_size(cache.block_size, lay.model.is_mla, lay.backend)
    common += [_v("block_size"), str(base_block)]
    if cache.kv_cache_dtype != "auto":
        common += [_v("kv_cache_dtype"), cache.kv_cache_dtype]
    if cache.kv_cache_memory is not None:
        if len(set(cache.kv_cache_memory)) == 1:
            common += [_v("kv_cache_memory"), str(cache.kv_cache_memory[0])]
        else:
            notes.append("kv_cache_memory differs per worker: vLLM's --kv-cache-memory-bytes takes one value")
    if cache.num_gpu_blocks_override is not None:
        common += [_v("num_gpu_blocks_override"), str(cache.num_gpu_blocks_override)]
    common += [_v("max_model_len"), str(cache.max_model_len), _v("max_num_batched_tokens"),
               str(cache.max_num_batched_tokens)]
    if cache.enable_prefix_caching is not None or lay.model.has_mamba:
        common.append("--enable-prefix-caching" if plan.layers.enable_prefix_caching else "--no-enable-prefix-caching")
    if lay.model.has_mamba and plan.layers.mamba_cache_mode != "none" and cache.mamba_cache_mode != "auto":
        common += ["--mamba-cache-mode", plan.layers.mamba_cache_mode]
    default_hma = b.hma_default_with_connector
    if plan.hma_enabled and not default_hma:
        common.append("--no-disable-hybrid-kv-cache-manager")
    elif not plan.hma_enabled and default_hma and cache.hybrid_kv_cache_manager == "off":
        common.append("--disable-hybrid-kv-cache-manager")
    if cache.kv_cache_dtype_skip_layers:
        notes.append("set kv_cache_dtype_skip_layers = "
                     f"{list(cache.kv_cache_dtype_skip_layers)} in vLLM's cache config (no flag spelled here)")
    if lay.model.draft is not None:
        notes.append(f"add --speculative-config with method {lay.model.draft.method!r}, the drafter model and "
                     f"num_speculative_tokens {lay.model.draft.num_speculative_tokens}")

    notes += [f"added {c}" for c in changed or []]
    return plan.pool.vllm_args(lay, common, notes)
