"""The cross product of list-valued settings, one plan per point; a point vLLM refuses is a row with its error."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from ..vocab.errors import KvcalcError
from ..vocab.keys import SWEEP_AXES
from ..inputs.layout.read import expand
from ..inputs.layout.validate import validate, validate_offload
from ..inputs.layout.model import validate_model
from ..pipeline import plan, shared_stage

# The sweep axes are the key table's (vocab/keys.SWEEP_AXES, in their column order); each row has them and these
# result columns.
AXES = {f.name: f for f in SWEEP_AXES}
RESULTS = ("family", "cpu_bytes_to_use", "gpu_kv_cache_bytes", "gpu_num_blocks", "gpu_tokens", "cpu_blocks_scheduler",
           "cpu_blocks_worst_worker", "unit", "out_of_bounds", "cpu_tokens_safe", "pinned_bytes_per_engine",
           "unused_bytes", "resident_bytes_per_node", "shm_bytes_per_node", "error")
COLUMNS = tuple(AXES) + RESULTS
# The result columns the table shows beside the axes that vary (CSV and JSON lines have every column).
SHOWN = ("family", "gpu_tokens", "cpu_blocks_scheduler", "cpu_blocks_worst_worker", "cpu_tokens_safe", "out_of_bounds",
         "unused_bytes", "error")
_SHARED_LIMIT = 1024  # GPU stages kept for reuse across budgets


def grid(axes: dict[str, list | None]) -> Iterator[dict]:
    """The points of the cross product, one at a time (a large grid is never held in memory)."""
    chosen = [(k, v) for k in AXES if (v := axes.get(k))]
    names = [k for k, _ in chosen]
    return (dict(zip(names, values)) for values in itertools.product(*(v for _, v in chosen)))


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
                stage = shared_stage(layout)
                if stage is None:  # an engine with no GPU stage to share between budgets (SGLang)
                    p = plan(layout)
                    fill(row, p)
                    yield row
                    continue
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
        fill(row, p)
        yield row


def fill(row: dict, p) -> None:
    """A row's result columns from the plan's pool (backends/base.Pool): the same columns whatever the backend."""
    pool = p.pool
    row["family"] = pool.family
    row["cpu_bytes_to_use"] = pool.budget_bytes
    gpu = p.gpu_columns()  # the engine's GPU figures: vLLM's blocks and predicted budget, SGLang's budget
    row.update(gpu)
    # The tokens the GPU tier holds as the engine logs them (vLLM's KV cache size, SGLang's max_total_num_tokens);
    # None where vLLM's block count is unknown (no KV memory and no GPU).
    row["gpu_tokens"] = None if gpu.get("gpu_num_blocks", 0) is None else p.gpu_tokens
    if pool.not_modelled is not None:
        nm = pool.not_modelled
        row["error"] = f"{p.title} {p.version}: {nm.connector}'s pool is {nm.home}'s (not modelled)"
    elif pool.budget_bytes is None:
        return  # no budget: the GPU columns only
    elif pool.startup_error:
        row["error"] = f"{p.title} {p.version} refuses: {pool.startup_error}"
    else:
        row.update(cpu_blocks_scheduler=pool.units_scheduler, cpu_blocks_worst_worker=pool.units_worst,
                   unit=pool.unit, out_of_bounds=pool.out_of_bounds is not None, cpu_tokens_safe=pool.tokens,
                   pinned_bytes_per_engine=pool.pool_bytes_per_engine, unused_bytes=pool.unused_bytes,
                   resident_bytes_per_node=pool.resident_bytes_per_node, shm_bytes_per_node=pool.shm_bytes_per_node)
