"""`kvcalc size --gpu-tokens N` / `--concurrency C`: the GPU side's answer (tools/gpu_sizing.py), loaded only by
that command."""

from __future__ import annotations

import sys

from ..vocab.errors import KvcalcError
from .console import naming, print_json


def size_gpu_command(loaded, gpu_tokens: str | None, concurrency: float | None, fmt: str) -> None:
    """`size --gpu-tokens N` / `--concurrency C`: the GPU side's answer (tools/gpu_sizing.py)."""
    from ..inputs.values import Reader
    from ..tools.gpu_sizing import size_gpu

    tokens = None if gpu_tokens is None else Reader("--gpu-tokens", {}).human_int(gpu_tokens, "", minimum=1)
    if concurrency is not None and not 0 < concurrency < 1e9:
        raise KvcalcError(f"--concurrency: expected a positive number of requests, got {concurrency}")
    if loaded.engine == "sglang":  # SGLang's --mem-fraction-static (tools/sglang_sizing.py)
        from ..tools.sglang_sizing import size_gpu as size_gpu  # noqa: F811
    with naming(loaded.source):
        doc = size_gpu(loaded, tokens, concurrency)
    if loaded.engine == "sglang":
        if fmt != "json":
            from ..report.table_sglang import gpu_size_text as text

            sys.stdout.write(text(doc))
            return
    if fmt == "json" or doc.get("engine") == "sglang":
        print_json(doc)
        return
    from ..report.commands import gpu_size_text

    sys.stdout.write(gpu_size_text(doc))
