"""The JSON Schema of the JSON output (`kvcalc schema output`), generated from the report records."""

from __future__ import annotations

from ..vocab.records import is_record, json_schema
from . import optional, sections
from .optional import RefusedReport


def output_schema() -> dict:
    """The JSON Schema of `kvcalc plan --format json`, generated from the report records (kvcalc.report). The
    sections name records their modules import for type checkers only (shown on request, LMCache's): all are
    given to the generator."""
    from ..backends import lmcache_plan, simple_plan
    from ..engines.vllm import memory
    from . import sglang_section

    types = {name: value for module in (sections, optional, lmcache_plan, simple_plan, memory, sglang_section)
             for name, value in vars(module).items() if is_record(value)}
    defs: dict = {}
    full = json_schema(Report, defs=defs, extra_types=types)
    refused = json_schema(RefusedReport, defs=defs, extra_types=types)
    sglang = json_schema(sglang_section.SglangReport, defs=defs, extra_types=types)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "kvcalc-output-v1",
            "title": "kvcalc plan --format json, schema version 1", "anyOf": [full, refused, sglang], "$defs": defs}
