"""Inverse sizing (`kvcalc size`): the budget that holds a target of CPU tokens or units, or the largest whose
resident host memory stays under a limit. Each backend answers in its own knob (the native connector's
cpu_bytes_to_use per family: backends/native_sizing.py; LMCache's max_local_cpu_size per rank: backends/lmcache.py).
Pure."""

from __future__ import annotations

from typing import Any

from ..backends.base import SizeTarget, backend
from ..pipeline import plan
from ..vocab.layout import Layout


def size(layout: Layout, target: SizeTarget) -> Any:
    """The layout's backend's answer: a record with `backend`, `refusal` and `document(source, target)` (an SGLang
    layout: HiCache's --hicache-size, tools/sglang_sizing.py)."""
    if layout.engine == "sglang":
        from .sglang_sizing import size_host

        return size_host(layout, target)
    return backend(layout.offload.backend).size(layout, target, plan)
