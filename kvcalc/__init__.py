"""kvcalc: vLLM's KV cache layout and CPU-offload block counts, computed exactly, before you start a server.

Python API:
    from kvcalc import load_layout, plan
    p = plan(load_layout("examples/llama-3.1-8b.yaml"))
    p.offload.results["old"].scheduler.num_blocks
"""

__version__ = "0.1.0"

from .inputs.layout.read import layout_from_dict, load_layout  # noqa: E402
from .pipeline import Plan, plan  # noqa: E402

__all__ = ["__version__", "Plan", "layout_from_dict", "load_layout", "plan"]
