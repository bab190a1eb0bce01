"""`kvcalc size --gpu-tokens N` / `--concurrency C`: the GPU side's answer (tools/gpu_sizing.py), loaded only by
that command."""

from __future__ import annotations


from ..vocab.errors import KvcalcError
from .console import naming, print_json


def size_gpu_command(loaded, gpu_tokens: str | None, concurrency: float | None, fmt: str) -> None:
    """`size --gpu-tokens N` / `--concurrency C`: the GPU side's answer (tools/gpu_sizing.py)."""
    from ..engines.base import hook
    from ..inputs.values import Reader

    tokens = None if gpu_tokens is None else Reader("--gpu-tokens", {}).human_int(gpu_tokens, "", minimum=1)
    if concurrency is not None and not 0 < concurrency < 1e9:
        raise KvcalcError(f"--concurrency: expected a positive number of requests, got {concurrency}")
    with naming(loaded.source):
        doc = hook(loaded.engine, "tools").size_gpu(loaded, tokens, concurrency)
    if doc.get("refusal"):
        # No size answers the target: a refusal (exit 2), its document still written with --format json.
        e = KvcalcError(f"{loaded.source}: {doc['refusal']}")
        if fmt == "json":
            print_json(doc)
            e.document_printed = True
        raise e
    if fmt == "json":
        print_json(doc)
        return
    from rich.text import Text

    from .console import console

    # Words wrap at the console's width (issue 35: no line longer than the width, no number cut).
    for line in hook(loaded.engine, "table").gpu_size_text(doc).splitlines():
        console(100).print(Text(line))
