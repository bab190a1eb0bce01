import copy
import os

import pytest
from hypothesis import HealthCheck, settings

# Fuzz and property tests: a quick run by default; CI (CI=true) or --hypothesis-profile ci runs the long profile
# (the fuzz suite alone generates more than 10,000 hostile inputs there).
settings.register_profile("default", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("ci", max_examples=2600, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "default")

from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)
from kvcalc.engines.vllm.runs import runs_from_names

GIB = 1 << 30
# test-vectors.md "Common inputs": 40 GiB KV memory per worker, 131,072 / 8,192, C = 64 GiB.
COMMON = {
    "cache": {"kv_cache_memory": 40 * GIB, "max_model_len": 131072, "max_num_batched_tokens": 8192},
    "offload": {"cpu_bytes_to_use": 64 * GIB},
}


def deep_merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def make_plan(layout: dict, version: str = "0.19.1", **sections):
    data = deep_merge(COMMON, layout)
    data = deep_merge(data, sections)
    data.setdefault("vllm", {})["version"] = version
    return plan(layout_from_dict(data, source="test.yaml"))


def lmcache_plan(layout: dict, version: str = "0.33.0", lmcache: dict | None = None, **sections):
    """A plan with offload.backend lmcache: the common cache inputs, offload.lmcache = `lmcache` (LMCache keys),
    `sections` merged over (an `offload` section adds e.g. kv_offloading_size)."""
    data = deep_merge({"cache": COMMON["cache"]}, layout)
    data["offload"] = {"backend": "lmcache", "lmcache": dict(lmcache or {})}
    data = deep_merge(data, sections)
    data.setdefault("vllm", {})["version"] = version
    return plan(layout_from_dict(data, source="test.yaml"))


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch):
    # Golden output is rendered without colour at a fixed width, whatever the developer's shell says.
    for var in ("FORCE_COLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "dumb")


ROOT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES_DIR = os.path.join(ROOT_DIR, "examples")


# Spec factories shared by the grouping, layer and property tests (bf16, block 16 unless told).
def full(h=8, d=128, b=16, dtype="bfloat16"):
    return FullAttentionSpec(block_size=b, num_kv_heads=h, head_size=d, head_size_v=d, dtype=dtype)


def sw(w=128, h=8, d=128, b=16):
    return SlidingWindowSpec(block_size=b, num_kv_heads=h, head_size=d, head_size_v=d, dtype="bfloat16",
                             sliding_window=w)


def chunked(c=8192, h=8, d=128, b=16):
    return ChunkedLocalAttentionSpec(block_size=b, num_kv_heads=h, head_size=d, head_size_v=d, dtype="bfloat16",
                                     attention_chunk_size=c)


def mla(b=64, d=576, cache_dtype_str="auto"):
    return MLAAttentionSpec(block_size=b, num_kv_heads=1, head_size=d, head_size_v=d, dtype="bfloat16",
                            cache_dtype_str=cache_dtype_str)


def indexer(b=64, d=132):
    return MLAAttentionSpec(block_size=b, num_kv_heads=1, head_size=d, head_size_v=d, dtype="uint8",
                            cache_dtype_str=None)


def layer_names(n, start=0, module="self_attn.attn"):
    return [f"model.layers.{i}.{module}" for i in range(start, start + n)]


def runs(specs: dict):
    """{vLLM layer name: spec} -> the runs the pipeline stages carry."""
    return runs_from_names(specs)


def run(capsys, *argv):
    """One CLI call in-process: (exit code, stdout, stderr)."""
    from kvcalc.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
