"""The GPU KV budget as each vLLM release computes it (v1/worker/gpu_worker.py determine_available_memory), predicted
offline from the device and the model: `available = requested - weights - peak activation - non-torch growth -
CUDA-graph estimate`, per PP stage (every TP rank of a stage alike); the engine takes the smallest stage's blocks.

Per release family (vocab/releases/steps.py memory_budget):
  A 0.14 - 0.17  requested - (weights + torch peak increase + non-torch increase)           (gpu_worker.py:341 @0.14.0)
  B 0.18 - 0.19  the same; CUDA graphs profiled and logged, not subtracted by default       (gpu_worker.py:417 @0.19.0)
  C 0.20 - 0.26  minus the CUDA-graph estimate (Model Runner V1; V2 estimates 0)            (gpu_worker.py:421 @0.20.0)
  D 0.27 - 0.33  requested - (total consumed + transient peak) - the estimate (V2's: 0.29+) (gpu_worker.py:544 @0.27.0)
with requested = ceil(total x utilization) (v1/worker/utils.py request_memory: a float product, then math.ceil).
VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (gpu.estimate_cudagraphs, from a serve line's or manifest's environment)
overrides B's and C/D's default; the estimate is profiled only on the release's platforms (steps.py
cudagraph_estimate_platforms: CUDA; ROCm from 0.26; XPU from 0.31). A KV connector is created after the budget in
every release (gpu_worker.py initialize_from_config: 0.14.0:406 ... 0.33.0:887): its buffers are not a term here.
--cpu-offload-gb takes whole decoder-layer parameters off the GPU weights (_offloaded).

Terms and their basis: the total (table: a logged device total, or the flag), weights (exact: the parameter
breakdown at the stored dtype, engines/vllm/weights.py), the peak activation (estimate: the profile run's forward
at max_num_batched_tokens and, on the last stage, the sampler over min(max_num_seqs, max_num_batched_tokens) full
vocabulary rows: 15.25 B a logit, fitted on vLLM 0.19.0 H100 DEBUG logs), non-torch growth (table: by TP / PP,
the same logs) and the CUDA-graph estimate (estimate: a floor + a per-graph cost by the largest capture size).
Held out (weights from each log's "Model loading took"): A100 0.15.1 / 0.17.1 / 0.19.1 / 0.26
and the llm-d campaign's Qwen1.5-MoE: KV budget within 0.09 - 0.50 %.
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
from .weights import DTYPE_BYTES, VOCAB_PADDING, StageWeights, stage_weights, weights_basis

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
# vLLM's CUDA-graph estimate (v1/worker/gpu_model_runner.py profile_cudagraph_memory, 0.19.1:5862-5955: the largest
# first capture over the modes + per mode (n - 1) x its second capture's cost, each measured by mem_get_info; logged
# "Estimated CUDA graph memory: X GiB total"; llm-d's Llama: max(138, 260) + 50 x 6 + 50 x 6 MiB = 0.84 GiB), as a
# labelled estimate of its result: a floor plus a per-graph cost growing with the square of the largest capture
# size, 8.2 MiB a graph at 512. Fitted on H100 logs only (llm-d-planner 0.19.0 Llama / Gemma-3-12B: 0.84 / 1.02 GiB
# for 51 + 51 graphs at 512, predicted 0.93; a 0.22.1 run: 0.14 GiB for 19 + 11 at 128, 0.14). Held out: the same
# campaign's Gemma-3-27B / Qwen1.5-MoE (1.05 / 0.82 at 512: 0.93), A100 0.26 (7 + 5 at 32: 0.15 logged, 0.13), GB10
# 0.25.1 (11 + 7 at 64: 0.13 / 0.14, 0.13; a hybrid's 35 at 256: 0.22, 0.19). Misses: an A100-40GB 0.19.1 Qwen3-8B
# (51 + 35 at 512: 2.35 logged, 0.80; not explained) and Gated-DeltaNet hybrids (0.74 logged: vllm#50780, a warning).
CG_FLOOR_MIB, CG_PER_GRAPH_TENTHS_MIB_AT_512 = 129, 82
# The activation and non-torch terms' measured error (tests/engines/test_memory_profile.py, each log's own weights):
HELD_OUT = ("fit: vLLM 0.19.0 H100 logs; held out at TP 1: A100 0.15.1 / 0.17.1 / 0.19.1 / 0.26 and the campaign's "
            "Qwen1.5-MoE, KV budget within 0.5 %; MoE forward passes under-counted up to 0.4 GiB")
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
    offloaded_bytes: int = field(json=False, default=0)  # --cpu-offload-gb: weights moved to pinned host memory


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
    offloaded_params: tuple[int, ...] = field(json=False, default=())  # --cpu-offload-gb: the largest worker's
    # offloaded parameters' bytes, each a pinned host allocation (the host gate rounds them as torch does)
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
    sizes = _sizes(max_num_seqs, mnbt, decode_len, ceiling)
    return len(sizes), sum(s <= max_num_seqs * decode_len for s in sizes)


def _sizes(max_num_seqs: int, mnbt: int, decode_len: int, ceiling: int) -> list[int]:
    top = min(max_num_seqs * decode_len * 2, ceiling, mnbt)
    return [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))


def _profiles_graphs(layout: Layout, behaviour: Behaviour, runner: str) -> bool:
    """vLLM profiles the CUDA-graph estimate: 0.18+, Model Runner V1 (V2 from 0.29), on the release's platforms
    (steps.py cudagraph_estimate_platforms: CUDA; ROCm from 0.26; XPU from 0.31)."""
    return behaviour.memory_budget != "A" and (runner == "v1" or behaviour.mrv2_rule == "all") \
        and layout.platform in behaviour.cudagraph_estimate_platforms


def _applies_estimate(layout: Layout, behaviour: Behaviour) -> bool:
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS as the engine has it (gpu.estimate_cudagraphs), else the release's
    default: '0' up to 0.19.1, '1' from 0.20.0 (steps.py memory_budget B / C)."""
    if layout.gpu.estimate_cudagraphs is not None:
        return layout.gpu.estimate_cudagraphs
    return behaviour.memory_budget in ("C", "D")


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


def _cudagraph(graphs: tuple[int, int], largest: int) -> int:
    piecewise, full = graphs
    if not piecewise:
        return 0
    per_graph = CG_PER_GRAPH_TENTHS_MIB_AT_512 * MIB * largest * largest // (10 * 512 * 512)
    return CG_FLOOR_MIB * MIB + (piecewise - 1 + max(full - 1, 0)) * per_graph


def _offloaded(spec: WeightsSpec, w: StageWeights, layers: int, limit: int) -> tuple[int, ...]:
    """The parameters vLLM's --cpu-offload-gb moves to pinned host memory on one rank (an estimate of their
    granularity): make_layers wraps each decoder layer in order (0.14.0 model_executor/models/utils.py:522-566,606
    maybe_offload_to_cpu; 0.17.0+ offloader/uva.py, 0.33.0 :74-116) and offloads its parameters one at a time while
    the running total is below cpu_offload_max_bytes = int(gb x 1024^3) (0.33.0 offloader/base.py:174): the last
    one passes it. Parameters here: the breakdown's per-layer blocks (one a fused group), in their order; the
    embedding, head and buffers (the rotary cache) stay on the GPU."""
    if not limit:
        return ()
    every = {b.name for b in spec.blocks if b.placement == "layers" and b.layers is None and b.dtype_bytes is None
             and b.name != "rotary cos/sin cache"}
    part = {name: b // layers for name, b in w.parts if name in every and layers}
    per_layer = _as_parameters(part)
    out: list[int] = []
    for _ in range(layers):
        for size in per_layer:
            if sum(out) >= limit:
                return tuple(out)
            out.append(size)
    return tuple(out)


def _as_parameters(part: dict[str, int]) -> list[int]:
    """One layer's blocks as vLLM's parameters, in named_parameters order (models/llama.py LlamaDecoderLayer):
    qkv_proj (q + k/v), o_proj (the other half of q/o), gate_up_proj | w13 (2/3 of an MLP or expert block), down_proj
    | w2 (1/3), then the rest (norms, router) whole."""
    out, qo = [], part.pop("attention q/o", 0)
    if qo:
        out += [qo // 2 + part.pop("attention k/v", 0), qo - qo // 2]
    for name in ("mlp", "shared experts", "experts"):
        if name in part:
            b = part.pop(name)
            out += [b * 2 // 3, b - b * 2 // 3]
    return out + list(part.values())


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
    largest = max(_sizes(seqs, mnbt, decode, ceiling), default=0)
    profiled = _profiles_graphs(layout, behaviour, runner)
    subtracts = profiled and _applies_estimate(layout, behaviour)
    out, estimate, offloaded = [], None, []
    for w, (start, end) in zip(weights, stages):
        last = w.pp_rank == len(stages) - 1
        act = _activation(spec, dtype_bytes, par.tensor_parallel_size, mnbt, min(seqs, mnbt), last,
                          behaviour.sampler_quarters)
        nt = _non_torch(par.tensor_parallel_size, par.pipeline_parallel_size)
        cg = _cudagraph(graphs, largest) if profiled else 0
        if w.pp_rank == 0 and profiled:
            estimate = cg  # rank 0 logs it
        cg = cg if subtracts else 0
        params = _offloaded(spec, w, end - start, layout.host.cpu_offload_bytes)
        offloaded.append(params)
        on_gpu = w.bytes_per_rank - sum(params)
        out.append(StageMemory(pp_rank=w.pp_rank, weights_bytes=on_gpu, activation_peak_bytes=act, non_torch_bytes=nt,
                               cudagraph_bytes=cg, kv_cache_bytes=requested - on_gpu - act - nt - cg,
                               offloaded_bytes=sum(params)))
    bind = min(out, key=lambda s: s.kv_cache_bytes)
    return GpuMemory(
        source="predicted", total_bytes=gpu.total_memory, utilization=util, requested_bytes=requested,
        weights_bytes=bind.weights_bytes, activation_peak_bytes=bind.activation_peak_bytes,
        non_torch_bytes=bind.non_torch_bytes, cudagraph_bytes=bind.cudagraph_bytes, cudagraph_estimate_bytes=estimate,
        kv_cache_bytes=bind.kv_cache_bytes,
        workers=tuple(out), terms=_terms(layout, behaviour, spec, bind, requested, util, runner, graphs),
        family=behaviour.memory_budget, runner=runner, max_num_seqs=seqs, max_num_batched_tokens=mnbt,
        cudagraph_sizes=graphs[0], warnings=_bugs(layout, behaviour, bind.cudagraph_bytes),
        offloaded_params=max(offloaded, key=sum))


def _terms(layout: Layout, behaviour: Behaviour, spec: WeightsSpec, bind: StageMemory, requested: int, util: float,
           runner: str, graphs: tuple[int, int]) -> tuple[MemoryTerm, ...]:
    gpu, par = layout.gpu, layout.parallel
    given = "--gpu-memory-utilization" if gpu.memory_utilization else f"vLLM {behaviour.version}'s default"
    quant = spec.quantization or gpu.quantization
    cg_why = ("--enforce-eager: no graphs" if not graphs[0] else
              f"{graphs[0]} piecewise + {graphs[1]} full graphs: {CG_FLOOR_MIB} MiB + "
              f"{CG_PER_GRAPH_TENTHS_MIB_AT_512 / 10} MiB x (largest size / 512)^2 a further graph (fit: H100 0.19.0 / "
              "0.22.1 logs, +-0.09 GiB; held out A100, GB10: <= 0.03 GiB)"
              + (f"; {gpu.estimate_cudagraphs_from}" if gpu.estimate_cudagraphs else "")
              if bind.cudagraph_bytes else
              f"not subtracted on vLLM {behaviour.version} ({_why_no_cg(layout, behaviour, runner)})")
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
                                                                      version=behaviour.version)) else "")
                          + (f"; minus {bind.offloaded_bytes:,} B --cpu-offload-gb moves to pinned host memory (whole "
                             "parameters in layer order until int(gb x 2^30) is reached: offloader/uva.py)"
                             if bind.offloaded_bytes else "")),
        MemoryTerm(name="activation_peak", bytes=bind.activation_peak_bytes, basis="estimate",
                   source=f"profile run ({runner}): forward at {layout.cache.max_num_batched_tokens:,} tokens"
                          + (f", sampler over min(max_num_seqs, tokens) x vocabulary logits at "
                             f"{behaviour.sampler_quarters / 4} B" if
                             bind.pp_rank == par.pipeline_parallel_size - 1 else "") + f" ({HELD_OUT})"),
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
    out += _device_wide(layout)
    kind = layout.model.mamba.kind if layout.model.mamba is not None else None
    if kind == "gated_delta_net" and cg:
        out.append(f"vLLM's CUDA-graph estimate over-counts hybrid gated-delta-net models (vllm#50780): vLLM "
                   f"{behaviour.version} may subtract more than kvcalc's {cg / GIB:.2f} GiB graph estimate")
    return tuple(out)


def _device_wide(layout: Layout) -> list[str]:
    """vLLM measures non-torch growth device-wide: used = total - free, minus torch's reserved bytes (utils/mem_utils.py
    MemorySnapshot, 0.14.0:124-131 ... 0.26.0:156-163); on a unified-memory GPU (GB10) free is the host's available
    memory (psutil.virtual_memory().available, 0.14.0:126, 0.26.0:147-154). Neither is modelled here."""
    out = []
    if layout.offload.backend in ("lmcache", "lmcache_mp"):
        # The connector itself starts after the budget (gpu_worker.py initialize_from_config, 0.14.0:406 ...
        # 0.33.0:887); what other processes take on the device while the worker profiles comes off it.
        out.append("with LMCache the predicted KV budget leaves out GPU memory other processes take on this device "
                   "while vLLM profiles (vLLM counts the device's used memory: utils/mem_utils.py MemorySnapshot); "
                   "real B200 runs log 1.6-3 GiB less KV with LMCache than without (issue 30)")
    if (layout.gpu.name or "").endswith("GB10"):
        out.append(f"{layout.gpu.name} shares host memory: vLLM takes its free memory from the host's available "
                   "memory (utils/mem_utils.py psutil.virtual_memory().available), so host processes' memory moves "
                   "the budget; kvcalc assumes none")
    return out


def _why_no_cg(layout: Layout, behaviour: Behaviour, runner: str) -> str:
    if behaviour.memory_budget == "A":
        return "no CUDA-graph memory profiling before 0.18.0"
    if layout.platform not in behaviour.cudagraph_estimate_platforms:
        return f"not profiled on {layout.platform} (v1/worker/gpu_worker.py: {behaviour.cudagraph_estimate_platforms})"
    if runner == "v2" and behaviour.mrv2_rule != "all":
        return f"Model Runner {runner} estimates 0 before 0.29.0"
    if layout.gpu.estimate_cudagraphs is False:
        return f"profiled and logged, not subtracted: {layout.gpu.estimate_cudagraphs_from}"
    return "profiled and logged, subtracted only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"


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
