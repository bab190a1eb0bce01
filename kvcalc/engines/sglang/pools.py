"""SGLang's device pools from the budget (cited @0.5.23, srt/mem_cache/kv_cache_configurator.py:2990-3190
_profile_available_bytes -> config_from_budget -> resolve_max_num_reqs -> the pool configurator's
finalize_with_max_running_requests): the multimodal reservation and the Mamba / GDN state pool come off the budget
first; then the configurator (srt/model_executor/pool_configurator.py:1715-1725: SWARequestCap when applicable, else
HybridSWA, else Default) turns it into tokens per PP stage, MIN over the stages; then the requests."""

from __future__ import annotations

from ...vocab.errors import StartupRefusal
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import sglang_of
from .deploy import draft_layers, resolved_requests
from .dsv4 import Dsv4Pools
from .mamba import MambaState, cap_requests, carve
from .memory import GIB, NO_KV_STAGE, none_left, requests, stage_tokens
from .model import SglangModel

EVICTION_INTERVAL = 128  # srt/environ.py:730 @0.5.23 SGLANG_SWA_EVICTION_INTERVAL


@record
class Pools:
    """What the configurator sized on one engine."""

    configurator: str = field("DefaultPoolConfigurator | HybridSWAPoolConfigurator | SWARequestCapPoolConfigurator")
    budget_bytes: int = field("int(rest x 2^30): after the multimodal reservation and the Mamba pool")
    draft_bytes: tuple[int, ...] = field("per stage: the speculative draft's bytes a token (0 without a draft)")
    full_tokens: int = field("max_total_num_tokens (the full pool's with hybrid SWA)")
    swa_tokens: int = field("the SWA pool's tokens (0 without one)")
    swa_cap: int | None = field("SWARequestCap: the SWA tokens the request cap needs, before page alignment")
    mamba: MambaState | None = field("the Mamba / GDN state pool")
    max_running_requests: int = field("per DP worker")
    dsv4: Dsv4Pools | None = field("DeepSeek-V4's compressed pools (DSV4PoolConfigurator)", default=None)


def _swa_cap(layout: Layout, page: int, chunked: int, attn_dp: int, reqs: int) -> int:
    """compute_swa_request_cap (pool_configurator.py:924-968 @0.5.23): `(window + eviction interval x draft tokens
    + page + decode_alloc) x (requests // attn_dp) + chunks in flight x chunked + page`, no draft (refused):
    decode_alloc = page; 2 chunks in flight with the overlap schedule, 1 without (PP turns it off)."""
    sg = sglang_of(layout)
    window = layout.model.sliding_window or 0
    per_request = window + EVICTION_INTERVAL * 1 + page + page
    overlap = not sg.disable_overlap_schedule and layout.parallel.pipeline_parallel_size == 1
    return per_request * max(1, reqs // attn_dp) + (2 if overlap else 1) * chunked + page


def _cap_applies(layout: Layout, model: SglangModel, chunked: int, reqs: int | None) -> bool:
    """SWARequestCapPoolConfigurator.is_applicable (pool_configurator.py:986-1003 @0.5.23)."""
    sg = sglang_of(layout)
    return (reqs is not None and sg.disable_radix_cache and chunked > 0 and model.kind == "hybrid_swa"
            and layout.model.sliding_window is not None and any(s.full_layers for s in model.stages))


def _capped(model: SglangModel, budget: int, page: int, cap: int) -> tuple[int, int]:
    """SWARequestCapPoolConfigurator.calculate_pool_sizes (:1005-1033): the SWA pool at the cap, the rest full."""
    swa_tokens = -(-cap // page) * page
    per = [(int((budget - swa_tokens * s.swa_bytes) // s.full_bytes) // page) * page for s in model.stages]
    full = min(per)
    if full <= 0:
        s = model.stages[0]
        raise StartupRefusal(
            f"SWA pool cap ({swa_tokens} tokens, {swa_tokens * s.swa_bytes / GIB:.2f} GiB) leaves no room for the "
            f"full KV pool within the available {budget / GIB:.2f} GiB. Reduce --max-running-requests, lower "
            "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static.")
    return full, swa_tokens


def _draft(model: SglangModel, layers: int | None) -> tuple[int, ...]:
    """pool_configurator.py:259-316 @0.5.23: `int(cell x draft layers / layers)` per stage (EAGLE family)."""
    if not layers:
        return tuple(0 for _ in model.stages)
    return tuple(int(s.full_bytes * layers / s.full_layers) if s.full_layers else 0 for s in model.stages)


def size_pools(layout: Layout, model: SglangModel, rest: float, mfs: float, minimum: float, page: int,
               chunked: int, attn: tuple[int, int], mm_gib: float) -> Pools:
    """The pools from `rest` GiB (the budget before the multimodal reservation `mm_gib` and the Mamba pool);
    `attn`: (attention TP, attention DP); `chunked`: chunked_prefill_size as the scheduler runs it."""
    sg = sglang_of(layout)
    attn_tp, attn_dp = attn
    reqs = resolved_requests(layout)
    rest -= mm_gib
    state = None
    if model.mamba_layers:
        spec = sg.speculative_num_draft_tokens if sg.speculative_algorithm else None
        rest, state = carve(layout, rest, attn_tp, attn_dp, max(s.mamba_layers for s in model.stages), spec, reqs)
    if rest <= 0:
        raise none_left(mfs, minimum)
    budget = int(rest * GIB)
    if model.kind == "dsv4":
        return _dsv4(layout, budget, reqs)
    draft = _draft(model, draft_layers(layout))
    cap = None
    if _cap_applies(layout, model, chunked, reqs):
        cap = _swa_cap(layout, page, chunked, attn_dp, reqs or 1)
        full, swa = _capped(model, budget, page, cap)
        name = "SWARequestCapPoolConfigurator"
    else:
        per = [stage_tokens(model, s.pp_rank, budget, page, sg.swa_full_tokens_ratio, draft[s.pp_rank])
               for s in model.stages]
        full, swa = min(per)
        name = "HybridSWAPoolConfigurator" if model.kind == "hybrid_swa" else "DefaultPoolConfigurator"
    if sg.max_total_tokens is not None and sg.max_total_tokens < full:
        full = sg.max_total_tokens // page * page  # kv_cache_configurator.py:3090-3108, then re-aligned
        if model.kind == "hybrid_swa":
            swa = min(swa, full) if cap is not None else min(int(full * sg.swa_full_tokens_ratio) // page * page, swa)
    if full <= 0 or full == NO_KV_STAGE:  # pool_configurator.py:94-99 @0.5.23 (the config has no fraction yet)
        e = StartupRefusal("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
        e.memory_short = True  # more GPUs may start it (tools/loading.py)
        raise e
    n = requests(full, layout.cache.max_model_len, reqs, attn_dp)
    if state is not None:
        n = cap_requests(n, state)
    return Pools(configurator=name, budget_bytes=budget, draft_bytes=draft, full_tokens=full, swa_tokens=swa,
                 swa_cap=cap, mamba=state, max_running_requests=n)


__all__ = ["Pools", "size_pools"]


def _dsv4(layout: Layout, budget: int, reqs: int | None) -> Pools:
    """DSV4PoolConfigurator (engines/sglang/dsv4.py), then the requests as for every pool."""
    from .dsv4 import dsv4_pools

    full, swa, extra = dsv4_pools(layout, budget, reqs or 1)
    if full <= 0:  # pool_configurator.py:94-99 @0.5.23
        e = StartupRefusal("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
        e.memory_short = True
        raise e
    return Pools(configurator="DSV4PoolConfigurator", budget_bytes=budget, draft_bytes=(0,), full_tokens=full,
                 swa_tokens=swa, swa_cap=None, mamba=None, dsv4=extra,
                 max_running_requests=requests(full, layout.cache.max_model_len, reqs, 1))
