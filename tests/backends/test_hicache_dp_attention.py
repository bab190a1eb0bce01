"""HiCache with DP attention on SGLang 0.5.23, held out: each DP-attention worker's device pool mirrored by the base
HostKVCache, as SGLang 0.5.23's own code sizes it on CPU with the device queries mocked (the research harness's
sgrun.py hicache23:host_pools: pools23's KVCacheConfigurator for the worker's pool, auto_size_hicache,
HostKVCache.__init__, psutil's available memory given). Inputs: the free memory before the load, the weights per
rank and the host's available memory; every expected number is what SGLang's code gave."""

from __future__ import annotations

import os

import pytest

from kvcalc import load
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import UnsupportedError

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "sglang", "models")

# (id, model, gpu, free MiB, weights MiB, host GiB, extra) -> (device tokens, ratio, ranks per host, host tokens,
# host bytes per rank)
EXECUTED = [
    ("r1-dp8-auto", "deepseek-r1", "H200", 142600, 82250, 1900, [], (385588, 2.0, 8, 771177, 54192150144)),
    ("r1-dp8-size50", "deepseek-r1", "H200", 142600, 82250, 1900, ["--hicache-size", "50"],
     (385588, None, 8, 711521, 50000003712)),
    ("r1-dp8-auto-200g", "deepseek-r1", "H200", 142600, 82250, 200, [],
     (385588, 0.715270190976631, 8, 275800, 19381017600)),
    ("l70-dp8-auto", "llama-3.3-70b", "H100", 79900, 33640, 1000, [], (42180, 2.0, 8, 84361, 27643412480)),
]


@pytest.mark.parametrize("case", EXECUTED, ids=lambda c: c[0])
def test_dp_attention_host_pool_is_sglangs(case):
    _, model, gpu, free, weights, host, extra, want = case
    tokens, ratio, ranks, host_tokens, host_bytes = want
    line = (f"python -m sglang.launch_server --model-path {os.path.join(MODELS, model)} --tp-size 8 --dp-size 8 "
            "--enable-dp-attention --enable-hierarchical-cache " + " ".join(extra))
    p = plan(load(serve=line, flags={"sglang_version": "0.5.23", "gpu": gpu, "gpu_free_memory": f"{free}MiB",
                                     "weights_bytes": f"{weights}MiB", "host_available": f"{host}GiB"}))
    assert p.stage.gpu.max_total_num_tokens == tokens, "the worker's device pool"
    h = p.pool.section
    assert h.ratio == ratio, "the ratio (auto-size)"
    assert h.ranks_per_host == ranks, "ranks per host"
    assert h.size_tokens_per_rank == host_tokens, "host tokens per rank"
    assert h.bytes_per_rank == host_bytes, "host bytes per rank"


def test_dp_attention_hicache_before_0523_is_refused_by_name():
    line = (f"python -m sglang.launch_server --model-path {os.path.join(MODELS, 'deepseek-r1')} --tp-size 8 "
            "--dp-size 8 --enable-dp-attention --enable-hierarchical-cache")
    with pytest.raises(UnsupportedError, match="DP attention"):
        plan(load(serve=line, flags={"sglang_version": "0.5.22", "gpu": "H200", "gpu_free_memory": "142600MiB",
                                     "weights_bytes": "82250MiB", "host_available": "1900GiB"}))
