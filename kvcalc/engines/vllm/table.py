"""vLLM's renderer hooks: the table of report/table.py, then what the command added (--compare-versions, the
engines, --verify's summary)."""

from __future__ import annotations

from ...report.commands import gpu_size_text  # noqa: F401 - the hook (size --gpu-tokens in words)
from ...report.table import render as render_report
from ...report.table import render_comparison, render_summary  # noqa: F401 - the hook


def render(report, style) -> list:
    out = list(render_report(report, style))
    if report.releases is not None:
        out.append(render_comparison(report.releases, style))
    if report.engines is not None:
        from ...report.table_engines import engines_table

        out.append(engines_table(report.engines, style))
    if report.verify is not None:
        out.append(report.verify.summary)
    return out
