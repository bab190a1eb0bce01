"""vLLM as the serving engine. Layout -> the GPU stage: per-rank layer specs -> KV cache groups -> tensors and GPU
blocks, everything a plan computes before a connector's host pool enters (a sweep over budgets reuses it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...vocab.errors import StartupRefusal
from ...vocab.kinds import LayerKind
from ...vocab.layout import Layout, ModelLayout
from ...vocab.records import record, replace
from ...vocab.releases.vllm import Behaviour
from .grouping import Grouping, group_layers
from .layers import LayerPlan, build_layers
from .tensors import GpuPlan, build_gpu_plan

if TYPE_CHECKING:
    from .memory import GpuMemory


@record
class GpuStage:
    """The GPU side of one engine on one release, with the hybrid manager as the connector settles it."""

    behaviour: Behaviour
    hma_enabled: bool
    hma_reason: str
    layers: LayerPlan
    grouping: Grouping
    gpu: GpuPlan
    memory: GpuMemory | None = None  # the KV budget: given, or predicted from the layout's gpu section


def hma_model_veto(model: ModelLayout) -> str | None:
    """A model rule that turns the hybrid manager off, whatever the connector (vLLM config/vllm.py: chunked-local
    attention with an EAGLE drafter), or None."""
    if model.attention_chunk_size and LayerKind.CHUNKED in model.kinds and model.draft \
            and model.draft.method in ("eagle", "eagle3"):
        return "vLLM disables the hybrid manager for chunked-local attention with an EAGLE drafter"
    return None


def build_stage(layout: Layout, behaviour: Behaviour, hma: tuple[bool, str]) -> GpuStage:
    """Layout -> layers -> groups -> tensors and GPU blocks, the hybrid manager on or off as `hma` says (the
    connector's decision: backends/*.hma)."""
    from .rules import verify

    verify(layout, behaviour.version)  # vLLM's config validation, before any KV number
    if layout.model.is_dsv4:
        from .dsv4_plan import check_release

        check_release(layout, behaviour)
    layer_plan = build_layers(layout, behaviour)
    cache, memory = layout.cache, None
    if layout.gpu.predicts and cache.kv_cache_memory is None and cache.num_gpu_blocks_override is None:
        from .memory import predict  # only a predicted budget (start-up time is a target)

        memory = predict(layout, behaviour, [s.decoder_layers for s in layer_plan.stages])
        tp = layout.parallel.tensor_parallel_size
        cache = replace(cache, kv_cache_memory=tuple(w.kv_cache_bytes for w in memory.workers for _ in range(tp)))
    try:
        if layout.model.is_dsv4:
            from . import dsv4_plan

            grouping, gpu = dsv4_plan.build(layout, behaviour, layer_plan, hma, cache.least_memory)
        else:
            grouping = group_layers(layer_plan.runs, hma_enabled=hma[0], threshold=behaviour.group_threshold)
            gpu = build_gpu_plan(
                grouping, layer_plan, tp=layout.parallel.tensor_parallel_size,
                memory=cache.least_memory,
                num_gpu_blocks_override=cache.num_gpu_blocks_override, refusal_text=behaviour.refusal_text,
            )
    except StartupRefusal as e:
        if memory is not None:  # a predicted budget: the refusal says what the weights took (tools/loading.py)
            e.weights_bytes, e.requested_bytes = memory.weights_bytes, memory.requested_bytes
            e.requested_what = f"vLLM requests (ceil(total x {memory.utilization}))"
        raise
    return GpuStage(behaviour=behaviour, hma_enabled=hma[0], hma_reason=hma[1], layers=layer_plan,
                    grouping=grouping, gpu=gpu, memory=memory)


def _releases(layout: Layout) -> tuple[str, str]:
    return layout.vllm_version, layout.vllm_version_from


from ..base import OPERATIONS, Engine  # noqa: E402 - the engine door, after the stage it describes

ENGINE = Engine(name="vllm", title="vLLM", operations=frozenset(OPERATIONS), release_key="vllm.version",
                release_flag="--vllm-version", releases=_releases,
                budget_refusal="--check gates a CPU budget: give --cpu-bytes or --kv-offloading-size (or "
                               "offload.cpu_bytes_to_use; for LMCache's MP server its command line, --lmcache-server)",
                init_hint=("offload", "# offload:\n#   cpu_bytes_to_use: 64GiB  # the CPU budget of one engine "
                                      "(without it `kvcalc plan` shows the GPU side only)\n"))
