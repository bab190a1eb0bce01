"""The JSON Schema of the JSON output (`kvcalc schema output`), generated from the report records."""

from __future__ import annotations

from ..vocab.records import json_schema
from .sections import RefusedReport, Report


def output_schema() -> dict:
    """The JSON Schema of `kvcalc plan --format json`, generated from the report records (kvcalc.report)."""
    from ..backends.lmcache_plan import FirstRank, LMCacheStage, VllmFlag

    types = {"FirstRank": FirstRank, "LMCacheStage": LMCacheStage, "VllmFlag": VllmFlag}
    defs: dict = {}
    full = json_schema(Report, defs=defs, extra_types=types)
    refused = json_schema(RefusedReport, defs=defs, extra_types=types)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "kvcalc-output-v1",
            "title": "kvcalc plan --format json, schema version 1", "anyOf": [full, refused], "$defs": defs}
