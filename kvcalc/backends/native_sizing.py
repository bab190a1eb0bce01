"""Inverse sizing on the native connector: the smallest cpu_bytes_to_use that holds a target of CPU tokens (or
blocks/chunks), or the largest whose resident host memory stays under a limit, per family. Pure.

Tokens are vLLM's group-aware capacity (0.33.0 v1/kv_offload/cpu/common.py): chunks x max_model_len // the
chunks one request occupies, so `need = cdiv(tokens x chunks_per_request, max_model_len)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..vocab.errors import KvcalcError, known
from ..vocab.layout import Layout
from ..vocab.records import field, record, replace, to_json
from ..vocab.releases.vllm import FAMILIES, family_of, parse_release
from ..vocab.units import cdiv, smallest_gib
from .base import SIZING_BUDGET, SizeTarget, largest

if TYPE_CHECKING:
    from .native import NativePool


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


MAX_BUDGET = 1 << 62  # inputs.values.Reader.size's bound on cpu_bytes_to_use: plan refuses more
NO_BUDGET_HELPS = ("no budget fixes the scheduler/worker mismatch: the scheduler always counts more CPU blocks than "
                   "the worst worker allocated (out-of-bounds stores); upgrade to a release of another family or "
                   "change the layout (e.g. drop the UniformType trigger or even out the PP stages)")


def refused_row(fam: str, version: str, why: str) -> SizeRow:
    return SizeRow(family=fam, vllm_version=version, startup_error=why, cpu_bytes_to_use=None,
                   kv_offloading_size_gib=None, num_blocks=None, unit=None, tokens=None, aligned_bytes=None,
                   out_of_bounds_at_any_budget=None, resident_bytes_per_node=None, shm_bytes_per_node=None, note=None)


def size_row(pool: NativePool, target: SizeTarget, max_model_len: int) -> SizeRow:
    """This pool's release's answer: the budget that holds the target, and what it buys."""
    fam, version = pool.family, pool.offload.behaviour.version
    if pool.startup_error:
        return refused_row(fam, version, pool.startup_error)
    r = known(pool.offload.selected_result, "the selected family's counts")  # it starts, and a budget was given
    sides = [r.scheduler.aligned_bytes] + [c.aligned_bytes for c in r.stage_counts]
    if min(sides) == 0:
        return refused_row(fam, version, "0 bytes per CPU block (the GPU has 0 blocks): no budget helps")
    worst = max(sides)
    unit = "chunks" if r.chunks else "blocks"
    # The scheduler counts C // its own bytes per block; if a worker's are larger, the scheduler's count
    # exceeds the worker's at every budget that gives the worker a block: no budget fixes that.
    if r.scheduler.aligned_bytes < max(c.aligned_bytes for c in r.stage_counts):
        return SizeRow(family=fam, vllm_version=version, startup_error=None, cpu_bytes_to_use=None,
                       kv_offloading_size_gib=None, num_blocks=None, unit=unit, tokens=None, aligned_bytes=worst,
                       out_of_bounds_at_any_budget=True, resident_bytes_per_node=None, shm_bytes_per_node=None,
                       note=NO_BUDGET_HELPS)
    if target.resident is not None:
        # Resident grows with the budget: a binary search over the block count, each step re-running only the
        # offload stage (NativePool.with_budget).
        limit = target.resident
        need = largest(limit // worst, lambda n: known(pool.with_budget(n * worst).resident_bytes_per_node) <= limit)
    elif target.units is not None:
        need = target.units
    else:
        per = r.chunks_per_group  # (a size target sets one of resident, units, tokens)
        need = cdiv(known(target.tokens, "a size target") * sum(per), max_model_len) if per else 0
    cpu = need * worst
    if cpu > MAX_BUDGET:
        return refused_row(fam, version, f"the target needs {cpu:,} B, more than a budget kvcalc accepts "
                                         f"({MAX_BUDGET:,} B, 2^62)")
    at = pool.with_budget(cpu)
    return SizeRow(family=fam, vllm_version=version, startup_error=None, cpu_bytes_to_use=cpu,
                   kv_offloading_size_gib=smallest_gib(cpu), num_blocks=need, unit=unit,
                   tokens=known(at.result).tokens(need) or 0, aligned_bytes=worst, out_of_bounds_at_any_budget=False,
                   resident_bytes_per_node=at.resident_bytes_per_node, shm_bytes_per_node=at.shm_bytes_per_node,
                   note=None)


@record
class NativeSizes:
    """`kvcalc size` on the native connector: the asked release's answer, and one per family."""

    backend = "native"

    asked: str  # the release asked for (it answers for its own family)
    rows: tuple[SizeRow, ...]

    @property
    def own(self) -> SizeRow:
        return next(r for r in self.rows if r.vllm_version == self.asked)

    @property
    def refusal(self) -> str | None:
        """The asked release cannot express the target at all (exit 2), or None."""
        own = self.own
        if own.startup_error and "more than a budget kvcalc accepts" in own.startup_error:
            return f"vLLM {own.vllm_version}: {own.startup_error}"
        return None

    def document(self, source: str, target: SizeTarget) -> dict:
        """The JSON answer: the asked release's at the top level, every family under `families`."""
        answer = {k: v for k, v in to_json(self.own).items() if k != "family"}
        return {"schema_version": 1, "source": source, "target_tokens": target.tokens, "target_blocks": target.units,
                "target_resident_bytes": target.resident, "family": self.own.family, **answer,
                "families": to_json(list(self.rows))}


def size_native(layout: Layout, target: SizeTarget, plan: Callable) -> NativeSizes:
    """One answer per family: the asked release for its own family, the family's representative release (its
    pinned row in vocab/releases/vllm.py) for the others. `plan`: the pipeline's (Layout -> Plan)."""
    if layout.offload.cpu_bytes_to_use is None:  # sizing needs no budget: the pool is planned at 0
        layout = replace(layout, offload=replace(layout.offload, cpu_bytes_to_use=0, cpu_bytes_source=SIZING_BUDGET))
    selected = family_of(parse_release(layout.vllm_version)[0]).id
    rows = []
    for fam in FAMILIES.values():
        if fam.representative is None:
            continue
        version = layout.vllm_version if fam.id == selected else fam.representative
        try:
            p = plan(replace(layout, vllm_version=version, vllm_version_from="representative"))
        except KvcalcError as e:
            rows.append(refused_row(fam.id, version, e.one_line()))
            continue
        rows.append(size_row(p.pool, target, layout.cache.max_model_len))
    return NativeSizes(asked=layout.vllm_version, rows=tuple(rows))
