"""The report: a view of the plan (each engine builds its own: engines/<name>/report.py), rendered as a table, JSON
or YAML. `build_report` asks the plan's engine for it. Pure."""

from __future__ import annotations


def build_report(plan, **parts):
    """The report of `plan` (pipeline.EnginePlan), with the optional parts the command asked for (checks,
    releases, backends, verify, limits, engines: see report/report.build_report)."""
    from ..engines.base import hook

    return hook(plan.layout.engine, "report").build_report(plan, **parts)
