"""Inverse sizing: the smallest cpu_bytes_to_use that holds a target of CPU tokens (or blocks), per family. Pure."""

from __future__ import annotations

from .records import replace

from .errors import KvcalcError
from .layout import Layout
from .plan import Plan, plan
from .units import cdiv
from .versions import REPRESENTATIVE, family_of, parse_release



def smallest_gib(cpu_bytes: int) -> float:
    """The smallest --kv-offloading-size with at most 3 decimals whose int(X * 2**30) reaches cpu_bytes."""
    thousandths = cdiv(cpu_bytes * 1000, 1 << 30)
    while int(thousandths / 1000 * (1 << 30)) < cpu_bytes:  # float rounding may land one byte short
        thousandths += 1
    return thousandths / 1000


def _entry(p: Plan, tokens: int | None, blocks: int | None) -> dict:
    fam = p.behaviour.family.id
    base = {"family": fam, "vllm_version": p.behaviour.version}
    if p.offload.startup_error:
        return {**base, "startup_error": p.offload.startup_error}
    r = p.offload.results[fam]
    block_tokens = r.factor * min(g.spec.block_size for g in p.gpu.scheduler_groups)
    need = blocks if blocks is not None else cdiv(tokens, block_tokens)
    sides = [r.scheduler.aligned_bytes] + [s.count.aligned_bytes for s in r.stages]
    if min(sides) == 0:
        return {**base, "startup_error": "0 bytes per CPU block (the GPU has 0 blocks): no budget helps"}
    worst = max(sides)
    cpu = need * worst
    # The scheduler counts C // its own bytes per block; if a worker's are larger, the scheduler's count
    # exceeds the worker's at every budget that gives the worker a block: no budget fixes that.
    oob_always = r.scheduler.aligned_bytes < max(s.count.aligned_bytes for s in r.stages)
    note = None
    if oob_always:
        note = ("no budget fixes the scheduler/worker mismatch: the scheduler always counts more CPU blocks than "
                "the worst worker allocated (out-of-bounds stores); upgrade to a release of another family or "
                "change the layout (e.g. drop the UniformType trigger or even out the PP stages)")
    return {**base, "cpu_bytes_to_use": cpu, "kv_offloading_size_gib": smallest_gib(cpu), "num_blocks": need,
            "unit": "chunks" if r.chunks else "blocks", "tokens": need * block_tokens, "aligned_bytes": worst,
            "out_of_bounds_at_any_budget": oob_always, "note": note, "startup_error": None}


def size(layout: Layout, *, tokens: int | None = None, blocks: int | None = None) -> list[dict]:
    """One entry per family, the selected release standing for its own family."""
    selected = family_of(parse_release(layout.vllm_version)[0]).id
    out = []
    for fam, version in REPRESENTATIVE.items():
        v = layout.vllm_version if fam == selected else version
        try:
            p = plan(replace(layout, vllm_version=v))
        except KvcalcError as e:
            out.append({"family": fam, "vllm_version": v, "startup_error": e.one_line()})
            continue
        out.append(_entry(p, tokens, blocks))
    return out
