"""vLLM's report hooks (the report stage of the vLLM engine): its report is report/report.py's, the base report
whose sections (model, parallelism, the backends' pools, checks) the other engines' reports reuse."""

from __future__ import annotations

from ...report.report import build_report  # noqa: F401 - the hook
from ...report.sections import Report

REPORT = Report  # the record `kvcalc schema output` describes for this engine
