"""The GPU KV budget as each vLLM release computes it (v1/worker/gpu_worker.py determine_available_memory), predicted
offline from the device and the model: `available = requested - weights - peak activation - non-torch growth -
CUDA-graph estimate`, per PP stage (every TP rank of a stage alike); the engine takes the smallest stage's blocks.

Per release family (vocab/releases/steps.py memory_budget):
  A 0.14 - 0.17  requested - (weights + torch peak increase + non-torch increase)           (gpu_worker.py:341 @0.14.0)
  B 0.18 - 0.19  the same; CUDA graphs profiled and logged, not subtracted by default       (gpu_worker.py:417 @0.19.0)
  C 0.20 - 0.26  minus the CUDA-graph estimate (Model Runner V1; V2 estimates 0)            (gpu_worker.py:421 @0.20.0)
  D 0.27 - 0.33  requested - (total consumed + transient peak) - the estimate (V2's: 0.29+) (gpu_worker.py:544 @0.27.0)
with requested = ceil(total x utilization) (v1/worker/utils.py request_memory: a float product, then math.ceil).

Terms and their basis: the total (table: a logged device total, or the flag), weights (exact: the parameter
breakdown at the stored dtype, engines/vllm/weights.py), the peak activation (estimate: the profile run's forward
at max_num_batched_tokens and, on the last stage, the sampler over min(max_num_seqs, max_num_batched_tokens) full
vocabulary rows: 15.25 B a logit, fitted on vLLM 0.19.0 H100 DEBUG logs), non-torch growth (table: by TP / PP,
the same logs) and the CUDA-graph estimate (estimate: vLLM's own extrapolation, first capture + per graph).
"""

from __future__ import annotations

import math

from ...vocab.errors import StartupRefusal, UnsupportedError, known
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.attn_rules import cap_in
from ...vocab.releases.vllm import Behaviour
from ...vocab.units import cdiv
from ...vocab.weights import WeightsSpec
from .weights import DTYPE_BYTES, VOCAB_PADDING, stage_weights, weights_basis

GIB, MIB = 1 << 30, 1 << 20
# Sampler bytes per logit (logits, probabilities and the top-k/top-p work of _dummy_sampler_run, v1/worker/
# gpu_model_runner.py), in quarters: 61 / 4 = 15.25 B. Fitted on the vLLM 0.19.0 H100 DEBUG logs of
# llm-d-incubation/llm-d-planner (torch peak increase at 1,024 rows: Llama-3.1-8B 1.89 GiB over 128,256 logits a
# row, Qwen2.5-7B 2.21 GiB over 152,064, Gemma-3-12B 3.94 GiB over 262,208, Phi-4 1.52 GiB over 100,352, less the
# hidden states): 14.8 - 15.6 B. Before 0.17 (steps.py sampler_quarters) the full sort adds 12 B: 27.25 B.
SAMPLER_QUARTERS = 61
# The forward pass's peak per token in elements (x dtype bytes): 3.6 x the MLP width on the rank + 4 x hidden. Fitted
# on the same logs' PP-stage-0 peak (Llama-3.1-8B, no sampler: 1.10 GiB at 8,192 tokens) and CodeLlama-7B (0.77 GiB,
# its 32,016-row vocabulary too small for the sampler to dominate).
FORWARD_MLP_TENTHS, FORWARD_HIDDEN = 36, 4
# Non-torch growth during profiling, in hundredths of a GiB (the same logs: 0.24 - 0.27 GiB at TP 1, 2.07 at TP 2,
# 2.13 at TP 4: custom all-reduce and NCCL buffers; 0.07 on PP stages without TP).
NON_TORCH_TP1, NON_TORCH_PP, NON_TORCH_TP_BASE, NON_TORCH_TP_STEP = 25, 7, 201, 3
# vLLM's CUDA-graph estimate (v1/worker/gpu_model_runner.py profile_cudagraph_memory: the first capture of a mode
# plus (n - 1) x the second's cost): the same logs print 138 - 260 MiB first captures, 6 - 12 MiB a piecewise graph
# (growing with the layers: 6 at 32, 10 at 48, 12 at 62) and 6 - 8 MiB a full graph.
CG_FIRST_MIB, CG_PIECEWISE_BASE_MIB, CG_PIECEWISE_PER_LAYER_MIB100, CG_FULL_MIB = 200, 2, 16, 6
MRV2_LISTED = ("Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
               "LlamaForCausalLM", "MistralForCausalLM")
MRV2_MOE_ALLOWED = ("DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM")


@record
class MemoryTerm:
    """One term of the budget on the binding worker."""

    name: str = field("requested | weights | activation_peak | non_torch | cudagraph | kv_cache")
    bytes: int = field("its size on the binding worker")
    basis: str = field("exact | table | estimate | flag | log")
    source: str = field("where it comes from")


@record
class StageMemory:
    """One PP stage's budget (every TP rank of it alike)."""

    pp_rank: int = field("the stage")
    weights_bytes: int = field("its weights on one rank")
    activation_peak_bytes: int = field("the profile run's torch peak increase (estimate)")
    non_torch_bytes: int = field("non-torch growth (table)")
    cudagraph_bytes: int = field("the CUDA-graph estimate vLLM subtracts (0 where it does not)")
    kv_cache_bytes: int = field("requested minus the above: the KV budget of each of its workers")


@record
class GpuMemory:
    """The KV budget of one engine's workers: given, read from a log, or predicted."""

    source: str = field("flag (--kv-cache-memory) | log (--kv-cache-memory-from-log) | predicted")
    total_bytes: int | None = field("the device total as torch reports it")
    utilization: float | None = field("--gpu-memory-utilization (the release's default when not given)")
    requested_bytes: int | None = field("ceil(total x utilization)")
    weights_bytes: int | None = field("the binding worker's weights")
    activation_peak_bytes: int | None = field("the binding worker's peak activation (estimate)")
    non_torch_bytes: int | None = field("the binding worker's non-torch growth (table)")
    cudagraph_bytes: int | None = field("the CUDA-graph estimate subtracted on the binding worker")
    cudagraph_estimate_bytes: int | None = field("what vLLM logs as 'Estimated CUDA graph memory' (0.18+, Model "
                                                 "Runner V1; V2 from 0.29), subtracted or not; null: not profiled")
    kv_cache_bytes: int | None = field("the budget the block count uses: the binding worker's")
    workers: tuple[StageMemory, ...] = field("per PP stage")
    terms: tuple[MemoryTerm, ...] = field("each term with its basis and source")
    family: str = field("the release's budget formula: A (0.14-0.17), B (0.18-0.19), C (0.20-0.26), D (0.27+)")
    runner: str | None = field("the model runner that profiles: v1 | v2 (its CUDA-graph estimate is 0 before 0.29)")
    max_num_seqs: int | None = field("the scheduler's sequences per step (the sampler's profile rows)")
    max_num_batched_tokens: int | None = field("the profile run's tokens")
    cudagraph_sizes: int = field("CUDA-graph capture sizes (0: eager)")
    warnings: tuple[str, ...] = field(json=False, default=())  # vLLM's own memory bugs that touch this plan
    max_model_len_that_fits: int | None = field("the longest max_model_len one request of which fits this budget on "
                                                "every worker (vLLM's start-up check; searched up to 16,777,216)",
                                                default=None)


def model_runner(behaviour: Behaviour, spec: WeightsSpec, hybrid: bool) -> str:
    """Which runner vLLM picks by default (config/vllm.py, steps.py mrv2_rule)."""
    rule, arch = behaviour.mrv2_rule, spec.architecture
    moe, quantized = spec.num_experts > 0, spec.quantization is not None
    if rule == "all":
        return "v2"
    if rule in ("qwen3", "llama"):
        archs = ("Qwen3ForCausalLM",) + (("LlamaForCausalLM", "MistralForCausalLM") if rule == "llama" else ())
        return "v2" if arch in archs and not moe and not quantized else "v1"
    if rule == "listed":
        return "v2" if arch in MRV2_LISTED else "v1"
    if rule == "dense":
        return "v2" if not hybrid and (arch in MRV2_MOE_ALLOWED or not moe) else "v1"
    return "v1"


def capture_sizes(max_num_seqs: int, mnbt: int, decode_len: int, ceiling: int) -> tuple[int, int]:
    """(piecewise graphs, full graphs): config/vllm.py _set_cudagraph_sizes: max = min(max_num_seqs x decode x 2,
    512 (1024 on SM10x from 0.28)), at most max_num_batched_tokens; sizes 1, 2, 4, then every 8 below 256, every 16
    from 256; full graphs for the uniform-decode sizes up to max_num_seqs x decode (0.19.1 log: FULL=35 (largest=256)
    at 256 seqs)."""
    top = min(max_num_seqs * decode_len * 2, ceiling, mnbt)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    return len(sizes), sum(s <= max_num_seqs * decode_len for s in sizes)


def _activation(spec: WeightsSpec, dtype_bytes: int, tp: int, tokens: int, rows: int, last: bool,
                quarters: int = SAMPLER_QUARTERS) -> int:
    if spec.num_experts:
        width = cdiv(spec.experts_per_token * spec.moe_intermediate_size, tp)
    else:
        width = cdiv(spec.intermediate_size, tp)
    forward = tokens * dtype_bytes * (width * FORWARD_MLP_TENTHS // 10 + FORWARD_HIDDEN * spec.hidden_size)
    if not last:
        return forward
    vocab = cdiv(spec.vocab_size, VOCAB_PADDING) * VOCAB_PADDING
    sampler = rows * vocab * quarters // 4 + tokens * spec.hidden_size * dtype_bytes
    return max(forward, sampler)


def _non_torch(tp: int, pp: int) -> int:
    if tp > 1:
        return (NON_TORCH_TP_BASE + NON_TORCH_TP_STEP * tp) * GIB // 100
    return (NON_TORCH_PP if pp > 1 else NON_TORCH_TP1) * GIB // 100


def _cudagraph(layers: int, graphs: tuple[int, int]) -> int:
    piecewise, full = graphs
    if not piecewise:
        return 0
    per_piece = CG_PIECEWISE_BASE_MIB * MIB + layers * CG_PIECEWISE_PER_LAYER_MIB100 * MIB // 100
    return CG_FIRST_MIB * MIB + (piecewise - 1) * per_piece + max(full - 1, 0) * CG_FULL_MIB * MIB


def _gib(b: int) -> str:
    """vLLM's format_gib (utils/mem_utils.py 0.14.0:21-22, 0.33.0:30-31): f"{round(b / GiB, 2)}" (139.8, not 139.80)."""
    return f"{round(b / GIB, 2)}"


def _refuse_free(total: int, free: int, util: float, requested: int) -> None:
    """vLLM's start-up check (v1/worker/utils.py request_memory, 0.14.0:253-272 ... 0.33.0:763-771, the same words in
    every release): free memory on the device at start-up below ceil(total x utilization) is a ValueError."""
    if free < requested:
        raise StartupRefusal(f"vLLM refuses to start (rank 0): Free memory on device cuda:0 ({_gib(free)}/"
                             f"{_gib(total)} GiB) on startup is less than "
                             f"desired GPU memory utilization ({util}, {_gib(requested)} GiB). Decrease GPU memory "
                             "utilization or reduce GPU memory used by other processes.")


def predict(layout: Layout, behaviour: Behaviour, stages: list[tuple[int, int]]) -> GpuMemory:
    """The predicted budget of every PP stage (the layout's gpu section and weights)."""
    spec = layout.weights
    if not isinstance(spec, WeightsSpec):
        raise UnsupportedError(f"{layout.source}: the KV budget cannot be predicted: {spec}")
    gpu, cache, par = layout.gpu, layout.cache, layout.parallel
    util = gpu.memory_utilization or behaviour.default_gpu_memory_utilization
    total = known(gpu.total_memory, "the GPU's total (a predicted budget starts from it)")
    requested = math.ceil(total * util)  # v1/worker/utils.py request_memory: float product, ceil
    if gpu.used_memory is not None:
        _refuse_free(total, total - gpu.used_memory, util, requested)
    dtype_bytes = DTYPE_BYTES.get(layout.model.dtype, 2)
    weights = stage_weights(spec, dtype=layout.model.dtype, tp=par.tensor_parallel_size, stages=stages,
                            runtime_quant=gpu.quantization, capability=layout.capability, version=behaviour.version)
    runner = model_runner(behaviour, spec, layout.model.has_mamba)
    seqs, mnbt = cache.max_num_seqs or 1024, cache.max_num_batched_tokens
    draft = layout.model.draft
    decode = 1 + (draft.num_speculative_tokens if draft else 0)
    ceiling = behaviour.max_capture_sm100 if cap_in(layout.capability, "10.x") else 512
    graphs = (0, 0) if gpu.enforce_eager else capture_sizes(seqs, mnbt, decode, ceiling)
    profiled = behaviour.memory_budget != "A" and (runner == "v1" or behaviour.mrv2_rule == "all")
    subtracts = profiled and behaviour.memory_budget in ("C", "D")
    out, estimate = [], None
    for w, (start, end) in zip(weights, stages):
        last = w.pp_rank == len(stages) - 1
        act = _activation(spec, dtype_bytes, par.tensor_parallel_size, mnbt, min(seqs, mnbt), last,
                          behaviour.sampler_quarters)
        nt = _non_torch(par.tensor_parallel_size, par.pipeline_parallel_size)
        cg = _cudagraph(end - start, graphs) if profiled else 0
        if w.pp_rank == 0 and profiled:
            estimate = cg  # rank 0 logs it
        cg = cg if subtracts else 0
        out.append(StageMemory(pp_rank=w.pp_rank, weights_bytes=w.bytes_per_rank, activation_peak_bytes=act,
                               non_torch_bytes=nt, cudagraph_bytes=cg,
                               kv_cache_bytes=requested - w.bytes_per_rank - act - nt - cg))
    bind = min(out, key=lambda s: s.kv_cache_bytes)
    return GpuMemory(
        source="predicted", total_bytes=gpu.total_memory, utilization=util, requested_bytes=requested,
        weights_bytes=bind.weights_bytes, activation_peak_bytes=bind.activation_peak_bytes,
        non_torch_bytes=bind.non_torch_bytes, cudagraph_bytes=bind.cudagraph_bytes, cudagraph_estimate_bytes=estimate,
        kv_cache_bytes=bind.kv_cache_bytes,
        workers=tuple(out), terms=_terms(layout, behaviour, spec, bind, requested, util, runner, graphs),
        family=behaviour.memory_budget, runner=runner, max_num_seqs=seqs, max_num_batched_tokens=mnbt,
        cudagraph_sizes=graphs[0], warnings=_bugs(layout, behaviour, bind.cudagraph_bytes))


def _terms(layout: Layout, behaviour: Behaviour, spec: WeightsSpec, bind: StageMemory, requested: int, util: float,
           runner: str, graphs: tuple[int, int]) -> tuple[MemoryTerm, ...]:
    gpu, par = layout.gpu, layout.parallel
    given = "--gpu-memory-utilization" if gpu.memory_utilization else f"vLLM {behaviour.version}'s default"
    quant = spec.quantization or gpu.quantization
    cg_why = ("--enforce-eager: no graphs" if not graphs[0] else
              f"{graphs[0]} piecewise + {graphs[1]} full graphs, first capture + per graph (vLLM's extrapolation, "
              "H100 0.19.0 logs)" if bind.cudagraph_bytes else
              f"not subtracted on vLLM {behaviour.version} ({_why_no_cg(behaviour, runner)})")
    return (
        MemoryTerm(name="total", bytes=known(gpu.total_memory), basis="table" if gpu.name else "flag",
                   source=gpu.total_source),
        MemoryTerm(name="requested", bytes=requested, basis="exact",
                   source=f"ceil(total x {util}) ({given}; v1/worker/utils.py request_memory)"),
        MemoryTerm(name="weights", bytes=bind.weights_bytes, basis=spec.basis(gpu.quantization),
                   source=f"{spec.source}; TP {par.tensor_parallel_size}, PP stage {bind.pp_rank}, vocabulary padded "
                          f"to 64" + (f", {quant} weights" if quant else "")
                          + (f" ({extra})" if (extra := weights_basis(spec, tp=par.tensor_parallel_size,
                                                                      capability=layout.capability,
                                                                      version=behaviour.version)) else "")),
        MemoryTerm(name="activation_peak", bytes=bind.activation_peak_bytes, basis="estimate",
                   source=f"profile run ({runner}): forward at {layout.cache.max_num_batched_tokens:,} tokens"
                          + (f", sampler over min(max_num_seqs, tokens) x vocabulary logits at "
                             f"{behaviour.sampler_quarters / 4} B" if
                             bind.pp_rank == par.pipeline_parallel_size - 1 else "") + " (fit: vLLM 0.19.0 H100 logs)"),
        MemoryTerm(name="non_torch", bytes=bind.non_torch_bytes, basis="table",
                   source=f"TP {par.tensor_parallel_size} / PP {par.pipeline_parallel_size} (vLLM 0.19.0 H100 logs: "
                          "0.25 GiB at TP 1, ~2.1 GiB at TP >= 2, 0.07 GiB on PP stages)"),
        MemoryTerm(name="cudagraph", bytes=bind.cudagraph_bytes, basis="estimate", source=cg_why),
        MemoryTerm(name="kv_cache", bytes=bind.kv_cache_bytes, basis="estimate",
                   source=f"family {behaviour.memory_budget}: requested - the terms above (PP stage {bind.pp_rank})"
                          + ("; 0.27+ measures weights + non-torch as the total consumed since the init snapshot"
                             if behaviour.memory_budget == "D" else "")),
    )


def _bugs(layout: Layout, behaviour: Behaviour, cg: int) -> tuple[str, ...]:
    """vLLM's own memory bugs where they change what this plan's user gets, each with its size here."""
    out = []
    if layout.gpu.total_error_gib is not None:  # an estimated row of vocab/devices.py
        out.append(f"{layout.gpu.name}'s total is an estimate (+-{layout.gpu.total_error_gib} GiB: no log shows it): "
                   "the predicted KV budget moves by as much; give --gpu-total-memory (vLLM logs it as total_memory)")
    if behaviour.memory_budget == "D" and cg:
        # gpu_worker.py:527-529 @0.27.0 puts the applied estimate in peak_activation_memory, and :751-755 adds the
        # captured graphs again to the suggestion's non-KV memory (unchanged in the 0.33.0 wheel).
        out.append(f"vLLM {behaviour.version}'s start-up suggestion 'Replace gpu_memory_utilization config with "
                   f"--kv-cache-memory=N' counts CUDA-graph memory twice (vllm#57936): N is about "
                   f"{cg / GIB:.2f} GiB (this plan's graph estimate) below the budget it runs with")
    if layout.model.draft is not None:
        out.append(f"the predicted KV budget leaves out the {layout.model.draft.method} drafter's weights and "
                   "activation (not modelled): vLLM's budget on the last PP stage is smaller by that much")
    kind = layout.model.mamba.kind if layout.model.mamba is not None else None
    if kind == "gated_delta_net" and cg:
        out.append(f"vLLM's CUDA-graph estimate over-counts hybrid gated-delta-net models (vllm#50780): vLLM "
                   f"{behaviour.version} may subtract more than kvcalc's {cg / GIB:.2f} GiB graph estimate")
    return tuple(out)


def _why_no_cg(behaviour: Behaviour, runner: str) -> str:
    if behaviour.memory_budget == "A":
        return "no CUDA-graph memory profiling before 0.18.0"
    if behaviour.memory_budget == "B":
        return "profiled and logged, subtracted only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"
    return f"Model Runner {runner} estimates 0 before 0.29.0"


def given(layout: Layout, source: str) -> GpuMemory | None:
    """The budget the layout states (--kv-cache-memory), or the count a log pinned: no terms to predict."""
    memory = layout.cache.kv_cache_memory
    if memory is None and source != "log":
        return None
    kv = None if memory is None else min(memory)
    return GpuMemory(source=source, total_bytes=layout.gpu.total_memory, utilization=layout.gpu.memory_utilization,
                     requested_bytes=None, weights_bytes=None, activation_peak_bytes=None, non_torch_bytes=None,
                     cudagraph_bytes=None, cudagraph_estimate_bytes=None, kv_cache_bytes=kv, workers=(), terms=(),
                     family="", runner=None,
                     max_num_seqs=layout.cache.max_num_seqs, max_num_batched_tokens=None, cudagraph_sizes=0)
