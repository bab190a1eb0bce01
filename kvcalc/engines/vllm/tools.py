"""vLLM's tools hooks (the tools stage of the vLLM engine): `size` on the GPU side (tools/gpu_sizing.py) and on the
host side (the layout's offload backend answers in its own knob)."""

from __future__ import annotations

from typing import Any

from ...backends.base import SizeTarget, backend
from ...pipeline import plan
from ...tools.gpu_sizing import size_gpu  # noqa: F401 - the hook
from ...vocab.layout import Layout


def size_host(layout: Layout, target: SizeTarget) -> Any:
    """The layout's backend's answer: a record with `backend`, `refusal` and `document(source, target)`."""
    return backend(layout.offload.backend).size(layout, target, plan)
