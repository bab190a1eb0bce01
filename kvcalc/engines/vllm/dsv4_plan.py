"""DeepSeek-V4's GPU stage: its five groups (dsv4.py), projected onto each PP stage, the bytes a block id costs
there, the GPU block count and the scheduler's view (every UniformType group flattened to its first layer:
generate_scheduler_kv_cache_config, 0.26.0 v1/core/kv_cache_utils.py:1797-1816). What vLLM refuses for it is
refused here, by release."""

from __future__ import annotations

from ...vocab.errors import StartupRefusal, UnsupportedError
from ...vocab.layout import Layout
from ...vocab.releases.vllm import Behaviour
from . import dsv4
from .grouping import Grouping, KVCacheGroup
from .layers import LayerPlan
from .runs import Run
from .specs import KVCacheSpec, UniformTypeKVCacheSpecs
from .tensors import GpuPlan, WorkerConfig


def check_release(layout: Layout, behaviour: Behaviour) -> None:
    """What the release refuses of a DeepSeek-V4 layout, in its words; what kvcalc does not model, by name."""
    from ...vocab.releases.archs import first_release, registry_of

    cache, model = layout.cache, layout.model
    if "DeepseekV4ForCausalLM" not in registry_of(behaviour.release):
        raise StartupRefusal(f"vLLM {behaviour.version} does not know DeepseekV4ForCausalLM: its registry lists it "
                             f"from {first_release('DeepseekV4ForCausalLM')} (model_executor/models/registry.py:99 "
                             "@0.20.0)")
    name = cache.kv_cache_dtype
    if name == "auto" and not behaviour.dsv4_auto_kv_dtype:
        # 0.20.0 deepseek_v4_attention.py:594-600 (0.22.x models/deepseek_v4/attention.py:668-674); 0.23.0-0.29.0
        # _resolve_dsv4_kv_cache_dtype asserts (0.23.0 attention.py:75-86); 0.30.0 :109-110 maps auto to fp8.
        raise StartupRefusal(f"vLLM {behaviour.version} refuses DeepSeek-V4 with --kv-cache-dtype auto: "
                             "\"DeepseekV4 only supports fp8 kv-cache format\" (auto is read as fp8 from 0.30.0); "
                             "give --kv-cache-dtype fp8")
    if name != "auto" and not name.startswith("fp8"):
        raise StartupRefusal(f"vLLM {behaviour.version} refuses DeepSeek-V4 with --kv-cache-dtype {name}: its "
                             "fp8_ds_mla layout only supports fp8 kv-cache (0.30.0 models/deepseek_v4/attention.py:"
                             "111-117); the bf16 rows of the FlashInfer sparse backends are not modelled")
    if name not in ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"):
        raise UnsupportedError(f"DeepSeek-V4 with --kv-cache-dtype {name} is not modelled (fp8 and auto are)")
    if cache.block_size not in (None, dsv4.BLOCK_SIZE):
        raise UnsupportedError(f"DeepSeek-V4 at --block-size {cache.block_size} is not modelled: kvcalc plans its "
                               f"compressed MLA at vLLM's block of {dsv4.BLOCK_SIZE} tokens (the default), as its "
                               "test vectors were executed")
    if cache.kv_cache_dtype_skip_layers:
        raise UnsupportedError("kv_cache_dtype_skip_layers with DeepSeek-V4 is not modelled")
    if layout.offload.backend == "simple":
        raise UnsupportedError("DeepSeek-V4 with the SimpleCPUOffloadConnector is not modelled (its sizing of the "
                               "packed five-group allocation was not read); the native connector is")
    if model.draft is not None and model.draft.method not in ("mtp", "dspark", "ngram", "suffix"):
        raise UnsupportedError(f"DeepSeek-V4 with a {model.draft.method} drafter is not modelled (MTP and DSpark "
                               "are)")
    if model.draft is not None and model.draft.method == "dspark" and "DSparkDraftModel" not in \
            registry_of(behaviour.release):
        # config/speculative.py:934-943 @0.26.0 names the drafter DSparkDraftModel (registry.py:609 @0.26.0).
        raise StartupRefusal(f"vLLM {behaviour.version} has no DSpark drafter for DeepSeek-V4: its registry lists "
                             f"DSparkDraftModel from {first_release('DSparkDraftModel')}")


def _gib(b: int) -> str:
    return str(round(b / (1 << 30), 2))  # vLLM utils/mem_utils.py format_gib


def _project(groups: list[list[Run]], lo: int, hi: int) -> list[list[Run]]:
    return [[r for r in g if lo <= r.indices[0] < hi] for g in groups]


def _first(spec) -> KVCacheSpec:
    """The first layer's spec of a group (what the scheduler flattens a UniformTypeKVCacheSpecs to)."""
    assert isinstance(spec, UniformTypeKVCacheSpecs)  # every DeepSeek-V4 group is one (dsv4.group_spec)
    return spec.first


def _kv_group(layers: list[Run]) -> KVCacheGroup:
    return KVCacheGroup(runs=tuple(layers), spec=dsv4.group_spec(layers))


def build(layout: Layout, behaviour: Behaviour, layer_plan: LayerPlan, hma: tuple[bool, str], memory
          ) -> tuple[Grouping, GpuPlan]:
    """Groups, per-stage allocation and the GPU block count of a DeepSeek-V4 layout."""
    if not hma[0]:
        # 0.20.0 v1/core/kv_cache_utils.py:1345-1375 unify_hybrid_kv_cache_specs: every sliding-window MLA cache
        # becomes a full-length MLA spec at the MLA block size; kvcalc does not model that layout.
        raise UnsupportedError(f"DeepSeek-V4 with the hybrid KV cache manager off ({hma[1]}) is not modelled: vLLM "
                               "turns every sliding-window cache into a full-length MLA cache there "
                               "(kv_cache_utils.py unify_hybrid_kv_cache_specs @0.20.0)")
    runs = layer_plan.runs
    style = behaviour.dsv4_grouping
    groups = dsv4.group_packed(runs) if style == "packed" else dsv4.group_keyed(runs, pad_states=style == "padded")
    grouping = Grouping(groups=tuple(_kv_group(g) for g in groups), rule="hybrid", folded=False, padding_layers=0)
    usage, per_stage, n_min = layer_plan.usage, [], None
    tp = layout.parallel.tensor_parallel_size
    override = layout.cache.num_gpu_blocks_override
    for stage in layer_plan.stages:
        mine = _project(groups, *stage.owned)
        if not any(mine):
            raise StartupRefusal("a pipeline stage owns no KV cache layer (vLLM asserts)")
        alloc = dsv4.allocate(behaviour.dsv4_layout, [g for g in mine if g] if behaviour.dsv4_layout != "tuples"
                              else mine, packed=behaviour.release >= (0, 24, 0))
        least = memory(range(stage.pp_rank * tp, stage.pp_rank * tp + tp))
        blocks = override
        if least is not None:
            avail, worker = least
            needed = dsv4.needed_bytes(behaviour.dsv4_layout, mine, usage, alloc.bytes_per_block)
            if avail <= 0 or needed > avail:
                raise StartupRefusal(f"vLLM refuses to start (worker {worker}): {_gib(needed)} GiB of KV cache is "
                                     f"needed for one request of max_model_len {usage.max_model_len}, "
                                     f"{_gib(avail)} GiB is available")
            blocks = avail // alloc.bytes_per_block if override is None else override
        per_stage.append((stage.pp_rank, mine, alloc, blocks))
        if blocks is not None and (n_min is None or blocks < n_min):
            n_min = blocks
    workers = tuple(WorkerConfig(pp_rank=rank, num_blocks=n_min, num_blocks_before_min=blocks,
                                 groups=tuple(_kv_group(g) for g in mine if g), num_tensors=alloc.num_tensors,
                                 bytes_per_block=alloc.bytes_per_block, tensor_pages=alloc.tensor_pages)
                    for rank, mine, alloc, blocks in per_stage)
    sched = tuple(KVCacheGroup(runs=g.runs, spec=_first(g.spec)) for g in workers[0].groups)
    warnings = () if n_min is not None else (
        "no KV cache memory given (--kv-cache-memory): the GPU block count, tensor sizes and log lines are not "
        "computed; the CPU counts do not depend on them",)
    # After KV init the engine's block size is the smallest group block (0.26.0 v1/engine/core.py:312-314): 4.
    gpu = GpuPlan(workers=workers, scheduler_groups=sched, num_blocks=n_min,
                  hash_block_size=min(g.spec.block_size for g in grouping.groups), warnings=warnings)
    return grouping, gpu
