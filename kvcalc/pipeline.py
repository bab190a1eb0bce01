"""The pipeline in one call: Layout -> the engine's plan (engines/<name>/plan.py: its GPU stage, then its host pool
from backends/), and the comparisons across releases, backends and engines. Pure; no I/O.

It asks the engine (engines/base.engine / hook), never compares an engine's name: `plan()` returns the engine's own
plan type, a variant of `EnginePlan`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from .engines.base import engine, hook
from .engines.vllm.plan import VllmPlan, plan_gpu  # noqa: F401 - vLLM's plan, named here for the API
from .vocab.errors import KvcalcError
from .vocab.layout import ENGINES, Layout

if TYPE_CHECKING:
    from .engines.sglang.plan import SglangPlan

# What pipeline.plan returns: one engine's plan (a tagged union: `engine` names the variant).
EnginePlan = Union[VllmPlan, "SglangPlan"]
Plan = VllmPlan  # the name the Python API has always exported (kvcalc.Plan)


def plan(layout: Layout, stage=None, *, selected_only: bool = False) -> EnginePlan:
    """Plan `layout` by its engine's rules (engines/<name>/plan.py). `stage`: a GPU stage shared by layouts that
    differ only in their offload section (a sweep over budgets); `selected_only`: only the selected release's
    figures (a sweep row shows no other column)."""
    return hook(layout.engine, "plan").plan(layout, stage, selected_only=selected_only)


def plan_vllm(layout: Layout) -> VllmPlan:
    """`plan`, for vLLM's own operations (check --log / --metrics, vllm-args, size --gpu-tokens: the engine record
    refuses them for another engine, so the layout's engine is vLLM)."""
    return VllmPlan.of(plan(layout))


def shared_stage(layout: Layout):
    """The GPU stage layouts differing only in their offload section can share (a sweep over budgets), or None for
    an engine that has none to share."""
    return hook(layout.engine, "plan").shared_stage(layout)


def require(layout: Layout, operation: str, what: str) -> None:
    """Refuse an operation the layout's engine does not offer (engines/base.OPERATIONS), naming what to use."""
    engine(layout.engine).require(layout, operation, what)


def compare(layout: Layout, versions: list[str]) -> list[tuple[str, EnginePlan | KvcalcError]]:
    """--compare-versions: the same layout on each release (a plan, or that release's refusal)."""
    require(layout, "compare-versions", "--compare-versions")
    return hook(layout.engine, "plan").compare(layout, versions)


def compare_backends(layout: Layout) -> list[tuple[str, EnginePlan | KvcalcError]]:
    """--compare-backends: the layout on every backend with the same host budget."""
    require(layout, "compare-backends", "--compare-backends")
    return hook(layout.engine, "plan").compare_backends(layout)


def decimal_budget_note(p: EnginePlan) -> str | None:
    """A budget written in a decimal unit, with the binary reading's count when it differs (the engine's rule)."""
    note = getattr(hook(p.layout.engine, "plan"), "decimal_budget_note", None)
    return None if note is None else note(p)


def compare_engines(layout: Layout) -> list[tuple[str, EnginePlan | KvcalcError]]:
    """The layout on every engine (vocab.layout.ENGINES order), each other engine told the same model, GPUs and
    host budget (inputs/layout/convert.py): a plan, or the refusal."""
    from .inputs.layout.convert import told

    out: dict[str, EnginePlan | KvcalcError] = {}
    try:
        out[layout.engine] = plan(layout)
    except KvcalcError as e:
        out[layout.engine] = e
    own = out[layout.engine]
    for other in ENGINES:
        if other in out:
            continue
        try:
            out[other] = plan(told(layout, other, None if isinstance(own, KvcalcError) else own.pool))
        except KvcalcError as e:
            out[other] = e
    return [(name, out[name]) for name in ENGINES]
