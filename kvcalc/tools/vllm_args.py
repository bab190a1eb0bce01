"""Plan -> the vLLM flags that reproduce it, in both spellings of the CPU budget. Pure."""

from __future__ import annotations

from ..vocab.records import replace

from ..vocab.errors import KvcalcError, known
from ..vocab.keys import KEYS, Key
from ..vocab.layout import Layout
from ..pipeline import Plan, plan_vllm as plan  # vLLM's operation: its plan


def startable_plan(layout: Layout) -> tuple[Plan, list[str]]:
    """Plan the layout; if the release refuses it, try the hybrid-manager and prefix-caching switches a user
    would add (HMA on where 0.21 allows it, prefix caching for Mamba hybrids). Returns the plan and what changed."""
    from ..pipeline import require

    require(layout, "vllm-args", "vllm-args")
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
    raise known(first_error, "the first refusal")  # every candidate refused (there is at least one)


# The value vllm-args spells for a key whose row says vllm_args "plan": worked out from the plan (None: not spelled).
def _block_size(plan: Plan, notes: list[str]) -> int:
    # The block size kvcalc assumed (before any hybrid bump vLLM applies itself): pinned so the backend's own default
    # cannot differ from kvcalc's.
    return plan.layers.attention.block_size


def _kv_cache_memory(plan: Plan, notes: list[str]) -> int | None:
    memory = plan.layout.cache.kv_cache_memory
    if memory is None:
        return None
    if len(set(memory)) == 1:
        return memory[0]
    notes.append("kv_cache_memory differs per worker: vLLM's --kv-cache-memory-bytes takes one value")
    return None


def _prefix_caching(plan: Plan, notes: list[str]) -> bool | None:
    lay = plan.layout
    if lay.cache.enable_prefix_caching is None and not lay.model.has_mamba:
        return None
    return plan.layers.enable_prefix_caching


def _mamba_cache_mode(plan: Plan, notes: list[str]) -> str | None:
    lay = plan.layout
    if lay.model.has_mamba and plan.layers.mamba_cache_mode != "none" and lay.cache.mamba_cache_mode != "auto":
        return plan.layers.mamba_cache_mode
    return None


def _hybrid_manager(plan: Plan, notes: list[str]) -> str | None:
    default_hma = plan.behaviour.hma_default_with_connector
    if plan.hma_enabled and not default_hma:
        return "on"
    if not plan.hma_enabled and default_hma and plan.layout.cache.hybrid_kv_cache_manager == "off":
        return "off"
    return None


PLAN_VALUES = {
    "cache.block_size": _block_size,
    "cache.kv_cache_memory": _kv_cache_memory,
    "cache.enable_prefix_caching": _prefix_caching,
    "cache.mamba_cache_mode": _mamba_cache_mode,
    "cache.hybrid_kv_cache_manager": _hybrid_manager,
    "offload.kv_offloading_size": lambda plan, notes: None,  # the budget: spelled in its own variant (build)
}


def layout_value(layout: Layout, key: Key):
    """A key's validated value in the layout (the vllm section's keys sit on the Layout itself)."""
    if not key.modelled:
        return dict(layout.unmodelled).get(key.path)
    section, _, rest = key.path.partition(".")
    if section == "vllm":
        return getattr(layout, "vllm_version" if rest == "version" else rest)
    node = layout
    for part in key.path.split("."):
        node = getattr(node, part)
    return node


def common_args(plan: Plan, notes: list[str]) -> list[str]:
    """The vLLM flags every spelling of the budget shares: each key whose row has a vllm-args rule, in the key
    table's order."""
    out: list[str] = []
    for key in KEYS:
        if not key.vllm_args:
            continue
        if key.vllm_args == "plan":
            value = PLAN_VALUES[key.path](plan, notes)
        else:
            value = layout_value(plan.layout, key)
            if key.vllm_args == "changed" and value == key.default:
                value = None
        if value is not None:
            out += key.vllm_spelled(value)
    return out


def build(plan: Plan, changed: list[str] | None = None) -> dict:
    lay, cache = plan.layout, plan.layout.cache
    notes: list[str] = []
    common = common_args(plan, notes)
    if cache.kv_cache_dtype_skip_layers:
        notes.append("set kv_cache_dtype_skip_layers = "
                     f"{list(cache.kv_cache_dtype_skip_layers)} in vLLM's cache config (no flag spelled here)")
    if lay.model.draft is not None:
        model = ", the drafter model" if lay.model.draft.num_layers else ""
        notes.append(f"add --speculative-config with method {lay.model.draft.method!r}{model} and "
                     f"num_speculative_tokens {lay.model.draft.num_speculative_tokens}")

    notes += [f"added {c}" for c in changed or []]
    return plan.pool.vllm_args(lay, common, notes)
