"""Inverse sizing: the smallest cpu_bytes_to_use that holds a target of CPU tokens (or chunks), or the largest
whose resident host memory stays under a limit, per family. Pure.

Tokens are vLLM's group-aware capacity (0.33.0 v1/kv_offload/cpu/common.py): chunks x max_model_len // the
chunks one request occupies, so `need = cdiv(tokens x chunks_per_request, max_model_len)`.
"""

from __future__ import annotations

from ..vocab.errors import KvcalcError
from ..vocab.layout import Layout
from ..pipeline import Plan, plan, plan_gpu
from ..vocab.records import field, record, replace
from ..vocab.units import cdiv
from ..vocab.releases.vllm import REPRESENTATIVE, family_of, parse_release


def smallest_gib(cpu_bytes: int) -> float:
    """The smallest --kv-offloading-size with at most 3 decimals whose int(X * 2**30) reaches cpu_bytes."""
    thousandths = cdiv(cpu_bytes * 1000, 1 << 30)
    while int(thousandths / 1000 * (1 << 30)) < cpu_bytes:  # float rounding may land one byte short
        thousandths += 1
    return thousandths / 1000


@record
class SizeRow:
    """One family's answer (the selected release stands for its own family)."""

    family: str = field("family id")
    vllm_version: str = field("the release answering for it")
    startup_error: str | None = field("why no budget works on it, or null")
    cpu_bytes_to_use: int | None = field("the budget (bytes, one engine)")
    kv_offloading_size_gib: float | None = field("the same as vLLM's --kv-offloading-size (GiB, 3 decimals)")
    num_blocks: int | None = field("CPU blocks/chunks it buys")
    unit: str | None = field("blocks | chunks")
    tokens: int | None = field("tokens of max_model_len requests they hold (group-aware)")
    aligned_bytes: int | None = field("bytes per CPU block/chunk (the worst side)")
    out_of_bounds_at_any_budget: bool | None = field("the scheduler outcounts a worker at every budget")
    resident_bytes_per_node: int | None = field("host memory resident on one node at that budget")
    shm_bytes_per_node: int | None = field("/dev/shm one node needs at that budget")
    note: str | None = field("what to do when no budget helps")


MAX_BUDGET = 1 << 62  # load.Reader.size's bound on cpu_bytes_to_use: plan refuses more


def _refused(fam: str, version: str, why: str) -> SizeRow:
    return SizeRow(family=fam, vllm_version=version, startup_error=why, cpu_bytes_to_use=None,
                   kv_offloading_size_gib=None, num_blocks=None, unit=None, tokens=None, aligned_bytes=None,
                   out_of_bounds_at_any_budget=None, resident_bytes_per_node=None, shm_bytes_per_node=None, note=None)


def _at(p: Plan, budget: int) -> Plan:
    """The same plan with another budget (only the offload stage re-runs)."""
    layout = replace(p.layout, offload=replace(p.layout.offload, cpu_bytes_to_use=budget,
                                               cpu_bytes_source=str(budget)))
    return plan(layout, plan_gpu(layout))


def _entry(p: Plan, tokens: int | None, blocks: int | None, resident: int | None) -> SizeRow:
    fam = p.behaviour.family.id
    if p.offload.startup_error:
        return _refused(fam, p.behaviour.version, p.offload.startup_error)
    r = p.offload.results[fam]
    sides = [r.scheduler.aligned_bytes] + [c.aligned_bytes for c in r.stage_counts]
    if min(sides) == 0:
        return _refused(fam, p.behaviour.version, "0 bytes per CPU block (the GPU has 0 blocks): no budget helps")
    worst = max(sides)
    if resident is not None:
        need = _largest_under(p, worst, resident)
    elif blocks is not None:
        need = blocks
    else:
        per = r.chunks_per_group
        mml = p.layout.cache.max_model_len
        need = cdiv(tokens * sum(per), mml) if per else 0
    cpu = need * worst
    unit = "chunks" if r.chunks else "blocks"
    # The scheduler counts C // its own bytes per block; if a worker's are larger, the scheduler's count
    # exceeds the worker's at every budget that gives the worker a block: no budget fixes that.
    if r.scheduler.aligned_bytes < max(c.aligned_bytes for c in r.stage_counts):
        note = ("no budget fixes the scheduler/worker mismatch: the scheduler always counts more CPU blocks than "
                "the worst worker allocated (out-of-bounds stores); upgrade to a release of another family or "
                "change the layout (e.g. drop the UniformType trigger or even out the PP stages)")
        return SizeRow(family=fam, vllm_version=p.behaviour.version, startup_error=None, cpu_bytes_to_use=None,
                       kv_offloading_size_gib=None, num_blocks=None, unit=unit, tokens=None, aligned_bytes=worst,
                       out_of_bounds_at_any_budget=True, resident_bytes_per_node=None, shm_bytes_per_node=None,
                       note=note)
    if cpu > MAX_BUDGET:
        return _refused(fam, p.behaviour.version, f"the target needs {cpu:,} B, more than a budget kvcalc accepts "
                                                   f"({MAX_BUDGET:,} B, 2^62)")
    at = _at(p, cpu).offload.results[fam]
    return SizeRow(family=fam, vllm_version=p.behaviour.version, startup_error=None, cpu_bytes_to_use=cpu,
                   kv_offloading_size_gib=smallest_gib(cpu), num_blocks=need,
                   unit=unit, tokens=at.tokens(need) or 0, aligned_bytes=worst,
                   out_of_bounds_at_any_budget=False, resident_bytes_per_node=at.host.resident_bytes_per_node,
                   shm_bytes_per_node=at.host.shm_bytes_per_node, note=None)


def _largest_under(p: Plan, worst: int, limit: int) -> int:
    """The most chunks whose resident host memory (one node) stays <= limit: resident grows with the budget, so
    a binary search over the chunk count, each step re-running only the offload stage."""
    fam = p.behaviour.family.id
    return _largest(limit // worst, lambda n: _at(p, n * worst).offload.results[fam].host.resident_bytes_per_node
                    <= limit)


def _largest(hi: int, fits) -> int:
    """The largest n in 0..hi with fits(n), for a fits that holds up to some n and not after (a binary search)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def size(layout: Layout, *, tokens: int | None = None, blocks: int | None = None,
         resident: int | None = None) -> list[SizeRow]:
    """One entry per family, the selected release standing for its own family."""
    selected = family_of(parse_release(layout.vllm_version)[0]).id
    out = []
    for fam, version in REPRESENTATIVE.items():
        v = layout.vllm_version if fam == selected else version
        try:
            p = plan(replace(layout, vllm_version=v))
        except KvcalcError as e:
            out.append(_refused(fam, v, e.one_line()))
            continue
        out.append(_entry(p, tokens, blocks, resident))
    return out


# ---------------------------------------------------------------------------------------------------------
# LMCache: the max_local_cpu_size (GiB per rank) that holds a target.

@record
class LMCacheSizeRow:
    """LMCache's answer: the per-rank size to write, and what it buys."""

    lmcache_version: str = field("the LMCache release")
    key: str = field("the LMCache key to set: max_local_cpu_size, or extra_config.first_rank_max_local_cpu_size "
                     "when only rank 0 stores (save_only_first_rank)")
    gib: float | None = field("its value: GiB per rank, 3 decimals (LMCache pins int(x x 1024^3) bytes)")
    pool_bytes_per_rank: int | None = field("the bytes that value pins on each storing rank")
    chunks_per_rank: int | None = field("chunks of the worst stage it holds")
    tokens: int | None = field("tokens it holds (every stage)")
    storing_ranks: int | None = field("ranks of one engine that allocate it")
    pool_bytes_per_engine: int | None = field("all storing ranks")
    resident_bytes_per_node: int | None = field("host memory resident on one node")
    note: str | None = field("why there is no answer, or null")


def _lmcache_at(layout: Layout, gib: float, first_rank: bool) -> Plan:
    from ..vocab.records import replace as rep

    lm = layout.offload.lmcache
    if lm.via_vllm_flag:
        # vLLM's flag would override max_local_cpu_size (and local_cpu) with its own per-rank share: size the
        # LMCache key itself; the answer names the flag's spelling (x TP x PP) next to it.
        lm = rep(lm, via_vllm_flag=False, kv_offloading_size=None, local_cpu=True)
    lm = rep(lm, first_rank_max_local_cpu_size=gib) if first_rank else rep(lm, max_local_cpu_size=gib)
    return plan(rep(layout, offload=rep(layout.offload, lmcache=lm)))


def size_lmcache(layout: Layout, *, tokens: int | None = None, blocks: int | None = None,
                 resident: int | None = None) -> LMCacheSizeRow:
    """The smallest max_local_cpu_size (3 decimals) whose pool holds `tokens` (or `blocks` chunks) on every storing
    rank, or the largest whose resident memory on one node stays <= `resident`. With save_only_first_rank (MLA,
    rank 0 alone) the answer is rank 0's first_rank_max_local_cpu_size."""
    p = plan(layout)
    lc = p.lmcache
    if not lc.modelled:
        return LMCacheSizeRow(lmcache_version=lc.version, key="max_local_cpu_size", gib=None, pool_bytes_per_rank=None,
                              chunks_per_rank=None, tokens=None, storing_ranks=None, pool_bytes_per_engine=None,
                              resident_bytes_per_node=None, note="the multi-process connector's pool is the LMCache "
                                                                 "server's: not modelled")
    first = lc.save_only_first_rank and lc.storing_ranks == 1
    key = "extra_config.first_rank_max_local_cpu_size" if first else "max_local_cpu_size"
    if lc.vllm_flag is not None:
        key = "--kv-offloading-size (x TP x PP) or " + key
    worst = max(st.chunk_bytes_aligned for st in lc.stages if st.storing_ranks)
    if resident is not None:
        # Resident grows with the size: the largest 1/1000 GiB step that keeps the node under the limit.
        gib = _largest((resident // 1024 ** 3 + 1) * 1000, lambda n: _lmcache_at(
            layout, n / 1000, first).lmcache.resident_bytes_per_node <= resident) / 1000
    else:
        need = blocks if blocks is not None else cdiv(tokens, lc.chunk_size)
        gib = smallest_gib(need * worst)
    at = _lmcache_at(layout, gib, first).lmcache
    per_rank = at.first_rank.pool_bytes if first and at.first_rank else at.pool_bytes_per_storing_rank
    chunks = at.first_rank.chunks if first and at.first_rank else min(
        st.chunks_per_rank for st in at.stages if st.storing_ranks)
    note = None
    if not lc.local_cpu:
        note = "local_cpu is false: the pool is a staging buffer and holds no hits, whatever its size"
    return LMCacheSizeRow(lmcache_version=lc.version, key=key, gib=gib, pool_bytes_per_rank=per_rank,
                          chunks_per_rank=chunks, tokens=at.tokens_per_engine, storing_ranks=at.storing_ranks,
                          pool_bytes_per_engine=at.pool_bytes_per_engine,
                          resident_bytes_per_node=at.resident_bytes_per_node, note=note)
