"""The JSON Schema of the JSON output (`kvcalc schema output`), generated from the report records."""

from __future__ import annotations

from ..vocab.records import is_record, json_schema
from . import optional, sections
from .optional import RefusedReport


def output_schema() -> dict:
    """The JSON Schema of `kvcalc plan --format json`, generated from the report records (kvcalc.report). The
    sections name records their modules import for type checkers only (shown on request, LMCache's): all are
    given to the generator."""
    from ..backends import lmcache_mp_plan, lmcache_plan, simple_plan
    from ..engines.base import hook
    from ..engines.vllm import memory
    from ..vocab.layout import ENGINES

    reports = [hook(name, "report") for name in ENGINES]  # each engine's report module: its REPORT record
    types = {name: value for module in (sections, optional, lmcache_plan, lmcache_mp_plan, simple_plan, memory,
                                                       *reports)
             for name, value in vars(module).items() if is_record(value)}
    defs: dict = {}
    first = json_schema(reports[0].REPORT, defs=defs, extra_types=types)
    refused = json_schema(RefusedReport, defs=defs, extra_types=types)
    others = [json_schema(r.REPORT, defs=defs, extra_types=types) for r in reports[1:]]
    # The first engine's report, the refusal, then the other engines' (the order the schema has always had).
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "kvcalc-output-v1",
            "title": "kvcalc plan --format json, schema version 1", "anyOf": [first, refused, *others],
            "$defs": defs}
