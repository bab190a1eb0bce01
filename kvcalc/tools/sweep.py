"""The cross product of list-valued settings, one plan per point; a point vLLM refuses is a row with its error."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from ..vocab.errors import KvcalcError
from ..vocab.keys import SWEEP_AXES
from ..inputs.yaml_layout import expand
from ..inputs.validate import validate, validate_model, validate_offload
from ..pipeline import plan, plan_gpu

# The sweep axes are the key table's (vocab/keys.SWEEP_AXES, in their column order); each row has them and these
# result columns.
AXES = {f.name: f for f in SWEEP_AXES}
RESULTS = ("family", "cpu_bytes_to_use", "gpu_num_blocks", "cpu_blocks_scheduler", "cpu_blocks_worst_worker", "unit",
           "out_of_bounds", "cpu_tokens_safe", "pinned_bytes_per_engine", "unused_bytes", "resident_bytes_per_node",
           "shm_bytes_per_node", "error")
COLUMNS = tuple(AXES) + RESULTS
_SHARED_LIMIT = 1024  # GPU stages kept for reuse across budgets


def grid(axes: dict[str, list]) -> Iterator[dict]:
    """The points of the cross product, one at a time (a large grid is never held in memory)."""
    names = [k for k in AXES if axes.get(k)]
    return (dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names)))


def run(top: dict, source: str, points: Iterable[dict], base_flags: dict | None = None) -> Iterator[dict]:
    """Yield one row per point, in order. `top` is the expanded layout dict (config already read).

    The sweep axes never touch the model section, so it is validated once (with the base flags) and shared
    by every point, unless a base flag sets a model key or the model itself is refused (then each row says why)."""
    model = None
    if not any(path.startswith("model.") for path in (base_flags or {})):
        try:
            data, _ = expand(top, source=source, overrides=dict(base_flags or {}))
            model = validate_model(data, source=source)
        except KvcalcError:
            model = None
    # Points that differ only in the CPU budget share everything before the offload stage: validate and plan
    # the rest once per combination of the other axes, then re-run only the offload stage per budget.
    # Such a point's expanded layout is the first one's with another budget: its offload section is copied with the
    # budget set, not expanded again (the budget flag's exclusive key was already dropped from that section).
    shared: dict[tuple, tuple] = {}
    budget_key = AXES["cpu_bytes"].path.split(".", 1)[1]
    for point in points:
        row = dict.fromkeys(COLUMNS)
        row.update({k: point.get(k) for k in AXES})
        key = tuple((k, v) for k, v in point.items() if k != "cpu_bytes") if "cpu_bytes" in point else None
        try:
            if key in shared:
                # The same flags set the same keys as at that point: only the budget's value differs.
                base, stage, offload, flags = shared[key]
                offload = {**offload, budget_key: point["cpu_bytes"]}
                p = plan(validate_offload({"offload": offload}, base, flags=flags), stage, selected_only=True)
            else:
                overrides = dict(base_flags or {})
                overrides.update({AXES[k].path: (v, AXES[k].named) for k, v in point.items()})
                data, origin = expand(top, source=source, overrides=overrides)
                layout = validate(data, source=source, overrides=overrides, origin=origin, model=model)
                stage = plan_gpu(layout)
                if key is not None:
                    if len(shared) >= _SHARED_LIMIT:
                        shared.clear()  # bounded memory, whatever the grid
                    shared[key] = (layout, stage, data["offload"],
                                   {path: flag for path, (_, flag) in overrides.items()})
                p = plan(layout, stage, selected_only=True)
        except KvcalcError as e:
            row["error"] = e.one_line()
            yield row
            continue
        row["family"] = p.behaviour.family.id
        row["cpu_bytes_to_use"] = p.layout.offload.cpu_bytes_to_use
        row["gpu_num_blocks"] = p.gpu.num_blocks
        # The same FormulaResult properties the report's entry reads (report.family_entry), without building the
        # whole entry: a sweep row needs ten of its fields.
        r = p.offload.selected_result  # (not .results: that evaluates every family column)
        lc = p.lmcache
        if lc is not None:
            # LMCache's pool in the same columns: its chunks per storing rank, its pool and tokens (family lmcache).
            row["family"] = "lmcache"
            if lc.modelled:
                chunks = [st.chunks_per_rank for st in lc.stages if st.storing_ranks]
                first = lc.first_rank.chunks if lc.first_rank else None
                row.update(cpu_bytes_to_use=lc.pool_bytes_per_engine, cpu_blocks_scheduler=first or min(chunks),
                           cpu_blocks_worst_worker=first or min(chunks), unit="lmcache chunks", out_of_bounds=False,
                           cpu_tokens_safe=lc.tokens_per_engine, pinned_bytes_per_engine=lc.pool_bytes_per_engine,
                           unused_bytes=0, resident_bytes_per_node=lc.resident_bytes_per_node, shm_bytes_per_node=0)
            else:
                row["error"] = f"vLLM {p.behaviour.version}: {lc.connector}'s pool is the LMCache server's (not modelled)"
        elif p.layout.offload.cpu_bytes_to_use is None:
            row["cpu_bytes_to_use"] = None  # no budget: the GPU columns only
        elif p.offload.startup_error or r is None:
            row["error"] = f"vLLM {p.behaviour.version} refuses: {p.offload.startup_error}"
        else:
            host = r.host
            row.update(cpu_blocks_scheduler=r.scheduler.num_blocks,
                       cpu_blocks_worst_worker=min(s.count.num_blocks for s in r.stages),
                       unit="chunks" if r.chunks else "blocks", out_of_bounds=r.out_of_bounds,
                       cpu_tokens_safe=r.tokens_safe, pinned_bytes_per_engine=r.pinned_bytes_per_engine,
                       unused_bytes=r.unused_bytes, resident_bytes_per_node=host.resident_bytes_per_node,
                       shm_bytes_per_node=host.shm_bytes_per_node)
        yield row
