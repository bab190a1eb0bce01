"""--compare-engines: one entry per engine on the same model, GPUs and host, whatever the engine (a plan's Pool and
its GPU tokens, or the refusal). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..vocab.errors import KvcalcError
from ..vocab.records import field, record

if TYPE_CHECKING:
    from ..pipeline import EnginePlan


@record
class EngineEntry:
    """One engine on the same model, GPUs and host (--compare-engines)."""

    engine: str = field("vllm | sglang")
    version: str = field("the release planned")
    gpu_tokens: int | None = field("tokens the GPU pool holds (vLLM: the logged KV cache size; SGLang: "
                                   "max_total_num_tokens)")
    host_tokens: int | None = field("tokens the host tier holds (vLLM's CPU offload; SGLang's HiCache per rank)")
    host_bytes_per_node: int | None = field("host bytes resident on the busiest node")
    shm_bytes_per_node: int | None = field("/dev/shm the node must have free (SGLang: 0, no shared region)")
    refusal: str | None = field("why that engine would not start (or cannot be planned) on this layout, or null")


def engine_entries(results: list[tuple[str, EnginePlan | KvcalcError]]) -> list[EngineEntry]:
    """--compare-engines: one entry per engine (pipeline.compare_engines: a plan, or the refusal)."""
    out = []
    for engine, p in results:
        if isinstance(p, KvcalcError):
            out.append(EngineEntry(engine=engine, version="", gpu_tokens=None, host_tokens=None,
                                   host_bytes_per_node=None, shm_bytes_per_node=None, refusal=p.one_line()))
            continue
        pool = p.pool
        gpu = p.gpu_tokens
        starts = pool.startup_error is None
        out.append(EngineEntry(
            engine=engine, version=p.version, gpu_tokens=gpu,
            host_tokens=pool.tokens if starts else None,
            host_bytes_per_node=pool.resident_bytes_per_node if starts else None,
            shm_bytes_per_node=pool.shm_bytes_per_node if starts else None,
            refusal=None if starts else pool.startup_error))
    return out
