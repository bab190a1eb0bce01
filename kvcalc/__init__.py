"""kvcalc: vLLM's and SGLang's KV cache layout and host-memory pools, computed exactly, before you start a server.

Python API:
    from kvcalc import load, plan
    p = plan(load("examples/llama-3.1-8b.yaml"))          # a layout YAML, config.json, model dir or hub id
    p = plan(load(serve="vllm serve org/model -tp 2 --kv-offloading-size 64"))
    p = plan(load(k8s="deploy.yaml", say=print))         # a manifest's container, its notes printed
    p.pool.units_scheduler                                # the CPU pool's blocks, whichever backend
"""

__version__ = "0.1.0"

from .inputs import load  # noqa: E402
from .inputs.layout.read import layout_from_dict, load_layout  # noqa: E402
from .pipeline import Plan, plan  # noqa: E402

__all__ = ["__version__", "Plan", "layout_from_dict", "load", "load_layout", "plan"]
