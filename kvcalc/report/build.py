"""A plan -> its report, whatever the engine: the plan's engine builds it (engines/<name>/report.py
build_report). Pure."""

from __future__ import annotations

from ..engines.base import hook


def build_report(plan, **parts):
    """The report of `plan` (pipeline.EnginePlan), with the optional parts the command asked for (checks,
    releases, backends, verify, limits, engines: see report/report.build_report)."""
    return hook(plan.layout.engine, "report").build_report(plan, **parts)
