"""A model that does not load (issue 35): the smallest TP x PP at which the engine starts it on the same GPU and
utilization, as advice beside the engine's own refusal ("try increasing gpu_memory_utilization" cannot help weights
larger than the GPU). Every candidate is planned by the engine's own rules, fewest GPUs first, then fewest PP
stages. Pure."""

from __future__ import annotations

from typing import Any, Callable

from ..pipeline import plan
from ..vocab.errors import KvcalcError, StartupRefusal
from ..vocab.layout import Layout
from ..vocab.records import replace

TP_CHOICES = (1, 2, 4, 8, 16)
PP_CHOICES = (1, 2, 4, 8)
GIB = 1 << 30


def parallel_candidates():
    """(TP, PP) by GPUs, then PP stages (tensor parallelism first): 1x1, 2x1, 1x2, 4x1, 2x2, 1x4, ..."""
    for world in sorted({t * p for t in TP_CHOICES for p in PP_CHOICES}):
        for pp in PP_CHOICES:
            if world % pp == 0 and world // pp in TP_CHOICES:
                yield world // pp, pp


def at_parallel(layout: Layout, tp: int, pp: int) -> Layout:
    return replace(layout, parallel=replace(layout.parallel, tensor_parallel_size=tp, pipeline_parallel_size=pp))


def smallest_where(layout: Layout, ok: Callable[[Any], bool]) -> tuple[int, int, Any] | None:
    """(TP, PP, its plan) of the first candidate (parallel_candidates) the engine starts and whose plan is `ok`."""
    for tp, pp in parallel_candidates():
        try:
            p = plan(at_parallel(layout, tp, pp))
        except KvcalcError:  # refused at this parallelism (StartupRefusal, UnsupportedError): the next one
            continue
        if ok(p):
            return tp, pp, p
    return None


def smallest_loading(layout: Layout) -> tuple[int, int, Any] | None:
    """(TP, PP, its plan) of the fewest GPUs that start the layout, or None."""
    return smallest_where(layout, lambda p: True)


def loading_advice(layout: Layout, refusal: StartupRefusal) -> str | None:
    """kvcalc's sentence after a memory refusal of a predicted budget: what the weights take of the GPU and the
    smallest TP x PP that starts (or that none up to 16 x 8 does); None for another refusal."""
    if not refusal.memory_short or refusal.weights_bytes is None:
        return None  # another rule, or a budget a flag gave (no weights known): more GPUs are no answer to it
    par = layout.parallel
    what = ""
    if refusal.requested_bytes:
        what = (f"the weights take {refusal.weights_bytes / GIB:.2f} GiB a GPU at TP {par.tensor_parallel_size} × PP "
                f"{par.pipeline_parallel_size}, of the {refusal.requested_bytes / GIB:.2f} GiB "
                f"{refusal.requested_what}; ")
    found = smallest_loading(layout)
    if found is None:
        return (f"kvcalc: {what}no TP × PP up to {TP_CHOICES[-1]} × {PP_CHOICES[-1]} starts it on this GPU with these "
                "settings")
    tp, pp, p = found
    tokens = p.gpu_tokens
    return (f"kvcalc: {what}the smallest TP × PP that starts it on this GPU with these settings is TP {tp} × PP {pp} "
            f"({tp * pp} GPUs" + (f", {tokens:,} GPU KV tokens" if tokens is not None else "") +
            f"): --tensor-parallel-size {tp}" + (f" --pipeline-parallel-size {pp}" if pp > 1 else ""))
