"""Inverse sizing (`kvcalc size`): the budget that holds a target of CPU tokens or units, or the largest whose
resident host memory stays under a limit. Each backend answers in its own knob (the native connector's
cpu_bytes_to_use per family: backends/native_sizing.py; LMCache's max_local_cpu_size per rank: backends/lmcache.py).
Pure."""

from __future__ import annotations

from typing import Any

from ..backends.base import SizeTarget
from ..engines.base import hook
from ..vocab.layout import Layout


def size(layout: Layout, target: SizeTarget) -> Any:
    """The engine's answer (engines/<name>/tools.size_host: vLLM's backend, SGLang's --hicache-size): a record with
    `backend`, `refusal` and `document(source, target)`."""
    return hook(layout.engine, "tools").size_host(layout, target)
