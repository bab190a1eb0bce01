"""The KV budget of every worker of a logged start, PP > 1 included (check --log's memory). Pure: a StartupLog in.

vLLM sizes each worker from its own budget and the engine keeps the smallest block count: each worker's
determine_available_memory returns `requested - Total non KV cache memory - the applied CUDA-graph estimate`
(v1/worker/gpu_worker.py:417-421 @0.19.0, :461-465 @0.23.0, the same three terms 0.14 - 0.33), the executor collects
one per worker (v1/engine/core.py:247 @0.19.0 model_executor.determine_available_memory()) and get_kv_cache_configs
sets every worker's num_blocks to the smallest (v1/core/kv_cache_utils.py:1551-1553 @0.14.0, :1602-1604 @0.19.0,
:2213-2215 @0.27.0; v1/core/kv_cache_planning.py:1583-1585 @0.33.0: `min_num_blocks = min(kv_cache_config.num_blocks
...)`). Only the first local rank prints the INFO `Available KV cache memory` (logger.info_once, scope "local":
vllm/logger.py:96-105 @0.19.0); a DEBUG log prints every worker's terms, so a stage's budget is read from them within
their rounding (each printed to 0.01 GiB). A stage no line names (an INFO log with PP > 1) is estimated from rank 0's
by kvcalc's memory model (the difference of the stages' weights and activation peaks), labelled an estimate.
"""

from __future__ import annotations

from fractions import Fraction

from ..inputs.logs.vllm import StartupLog, WorkerLines
from ..vocab.layout import Layout
from ..vocab.records import record, replace

GIB = 1 << 30
HALF = Fraction(1, 200)  # format_gib rounds to 0.01 GiB: the true value is within 0.005 GiB of the printed one


@record
class WorkerBudget:
    """One worker's KV budget as the log bounds it."""

    pp_rank: int
    tp_rank: int
    lo: int  # bytes, the smallest the printed numbers allow
    hi: int  # bytes, the largest
    text: str  # how it was read, for the report
    basis: str  # "logged" (its Available line) | "derived" (its DEBUG terms) | "estimate" (kvcalc's memory model)


def _f(text: str) -> Fraction:
    return Fraction(text)


def _interval(value: Fraction, terms: int) -> tuple[int, int]:
    spread = HALF * terms
    return max(int((value - spread) * GIB) + 1, 1), int((value + spread) * GIB)


def cudagraph_applied(workers: tuple[WorkerLines, ...], release_rule: bool) -> bool:
    """Whether the logged CUDA-graph estimate was subtracted (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: 0 by default
    through 0.19, 1 from 0.20, envs.py): read from a worker that prints its Available line and its terms (the
    residual that fits), else the release's default (`release_rule`)."""
    for w in workers:
        if w.available_gib and w.requested_gib and w.non_kv_gib and w.cudagraph_estimate_gib:
            rest = _f(w.requested_gib) - _f(w.non_kv_gib) - _f(w.available_gib)
            return abs(rest - _f(w.cudagraph_estimate_gib)) < abs(rest)
    return release_rule


def _derived(w: WorkerLines, applied: bool) -> WorkerBudget | None:
    if w.available_gib is not None:
        lo, hi = _interval(_f(w.available_gib), 1)
        return WorkerBudget(pp_rank=w.pp_rank, tp_rank=w.tp_rank, lo=lo, hi=hi, basis="logged",
                            text=f"{w.available_gib} GiB (its Available KV cache memory line)")
    if w.requested_gib is None or w.non_kv_gib is None:
        return None
    cg = w.cudagraph_estimate_gib if applied and w.cudagraph_estimate_gib else None
    value = _f(w.requested_gib) - _f(w.non_kv_gib) - (_f(cg) if cg else 0)
    lo, hi = _interval(value, 3 if cg else 2)
    minus = f" - {cg} CUDA-graph estimate" if cg else ""
    return WorkerBudget(pp_rank=w.pp_rank, tp_rank=w.tp_rank, lo=lo, hi=hi, basis="derived",
                        text=f"{float(value):.2f} GiB = {w.requested_gib} requested - {w.non_kv_gib} non-KV{minus} "
                             f"(its DEBUG lines, +-{0.005 * (3 if cg else 2):.3f} GiB)")


def worker_budgets(layout: Layout, logged: StartupLog, release_rule: bool) -> list[WorkerBudget] | None:
    """Every worker's budget (index pp_rank x TP + tp_rank), or None when the log names no worker's (one process:
    rank 0's Available line is the budget, as before)."""
    tp, pp = layout.parallel.tensor_parallel_size, layout.parallel.pipeline_parallel_size
    workers = tuple(w for w in logged.workers if w.dp_rank == 0 and w.pp_rank < pp and w.tp_rank < tp)
    applied = cudagraph_applied(workers, release_rule)
    known = {(w.pp_rank, w.tp_rank): b for w in workers if (b := _derived(w, applied)) is not None}
    if not known or pp == 1 and (logged.available_gib and all(b.basis == "derived" for b in known.values())
                                 or all(b.basis == "logged" for b in known.values())):
        return None  # one stage whose Available lines the log prints: their smallest, as before
    out: list[WorkerBudget] = []
    for stage in range(pp):
        mine = [b for (s, _), b in known.items() if s == stage]
        for rank in range(tp):
            b = known.get((stage, rank))
            if b is None and mine:  # a TP rank of a stage whose other ranks printed: theirs (the same specs)
                b = replace(min(mine, key=lambda x: x.lo), tp_rank=rank)
            out.append(b if b is not None else _placeholder(stage, rank))
    return out


def _placeholder(stage: int, rank: int) -> WorkerBudget:
    return WorkerBudget(pp_rank=stage, tp_rank=rank, lo=0, hi=0, basis="estimate", text="")


def estimate_missing(layout: Layout, budgets: list[WorkerBudget]) -> tuple[list[WorkerBudget], list[str]]:
    """Stages no line names (an INFO log, PP > 1): rank 0's budget moved by kvcalc's predicted difference between
    the stages (weights and activation peak: engines/vllm/memory.py), labelled an estimate; without the parameter
    breakdown to weigh the model, rank 0's budget, with a note."""
    missing = [i for i, b in enumerate(budgets) if b.basis == "estimate" and not b.text]
    if not missing:
        return budgets, []
    base = next(b for b in budgets if b.text)
    offsets = _stage_offsets(layout)
    out, stages = list(budgets), sorted({budgets[i].pp_rank for i in missing})
    for i in missing:
        b = budgets[i]
        delta = offsets[b.pp_rank] - offsets[base.pp_rank] if offsets else 0
        text = (f"rank 0's budget {'+' if delta >= 0 else '-'} {abs(delta) / GIB:.2f} GiB: kvcalc's estimate of the "
                "stages' difference in weights and activation peak (no DEBUG lines for this stage)" if offsets else
                "rank 0's budget, assumed (no line names this stage's; no parameter breakdown to weigh it)")
        out[i] = replace(b, lo=base.lo + delta, hi=base.hi + delta, text=text)
    note = (f"PP stage(s) {', '.join(map(str, stages))}: no memory line in the log (vLLM prints them at DEBUG: "
            "VLLM_LOGGING_LEVEL=DEBUG); " + ("their budgets are estimates" if offsets else "rank 0's budget assumed"))
    return out, [note]


def _stage_offsets(layout: Layout) -> list[int] | None:
    """Each stage's predicted KV budget less stage 0's, or None when the model cannot be weighed. The differences do
    not depend on the device total (requested is the same on every stage): a total is assumed when none is named."""
    from ..engines.vllm.memory import predict
    from ..engines.vllm.plan import plan_gpu
    from ..vocab.errors import KvcalcError
    from ..vocab.releases.vllm import behaviour_for
    from ..vocab.weights import WeightsSpec

    if not isinstance(layout.weights, WeightsSpec):
        return None
    probe = replace(layout, gpu=replace(layout.gpu, total_memory=layout.gpu.total_memory or 80 * GIB, used_memory=None))
    try:
        stage = plan_gpu(replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=1, kv_cache_memory=None)))
        memory = predict(probe, behaviour_for(layout.vllm_version), [s.decoder_layers for s in stage.layers.stages])
    except KvcalcError:
        return None
    return [w.kv_cache_bytes - memory.workers[0].kv_cache_bytes for w in memory.workers]


def attention_rows(attention, block_size: int, logged: StartupLog, pp: int) -> list[dict]:
    """The backend and block size vLLM logged against the attention plan (engines/vllm/attention_block.py):
    `attention` the plan's AttentionPlan, `block_size` its block size after the hybrid alignment."""
    rows = []
    if logged.backends:
        mine = tuple(dict.fromkeys(c.backend for c in attention.choices))
        # Only the first local rank logs its layers' backends (info_once): with PP > 1, a stage's kinds may be fewer.
        agree = set(logged.backends) <= set(mine) if pp > 1 else tuple(logged.backends) == mine
        rows.append({"quantity": "attention backend", "predicted": ", ".join(mine) + f" ({attention.device.basis})",
                     "logged": ", ".join(logged.backends), "match": agree})
    if logged.hybrid_block is not None:
        size, line = logged.hybrid_block
        rows.append({"quantity": "attention block size (hybrid alignment)", "predicted": f"{block_size}",
                     "logged": f"{size} (line {line})", "match": size == block_size})
    elif logged.block_lines:
        size, name, line = logged.block_lines[-1]
        rows.append({"quantity": "KV cache block size", "predicted": f"{attention.block_size} ({attention.deciding})",
                     "logged": f"{size} for {name} (line {line})", "match": size == attention.block_size})
    return rows
