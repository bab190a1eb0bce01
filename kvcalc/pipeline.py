"""The pipeline in one call: Layout -> layers -> groups -> tensors -> offload. Pure; no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .vocab.errors import KvcalcError
from .engines.vllm.grouping import Grouping, group_layers
from .engines.vllm.layers import LayerPlan, build_layers
from .vocab.kinds import LayerKind
from .vocab.layout import Layout
from .vocab.records import cached, record, replace
from .backends.native import FormulaResult, OffloadPlan, OffloadSettings, plan_offload
from .engines.vllm.tensors import GpuPlan, LogNumbers, build_gpu_plan, log_numbers
from .vocab.releases.vllm import REPRESENTATIVE, Behaviour, behaviour_for, decide_hma

if TYPE_CHECKING:  # kvcalc.lmcache is imported only for LMCache layouts
    from .backends.lmcache import LMCachePlan


@record
class Plan:
    layout: Layout
    behaviour: Behaviour
    hma_enabled: bool
    hma_reason: str
    layers: LayerPlan
    grouping: Grouping
    gpu: GpuPlan
    offload: OffloadPlan
    lmcache: LMCachePlan | None  # offload.backend lmcache: LMCache's pool (kvcalc.lmcache, imported on use)
    notes: tuple[str, ...]  # informational, for stderr
    base_warnings: tuple[str, ...]  # the release's and the GPU side's

    @cached
    def logs(self) -> LogNumbers | None:
        """What vLLM logs for rank 0 (the KV cache size in tokens, the maximum concurrency), computed on first read:
        the table, `check --log` and `--compare-versions` show it; a sweep row or an API call that reads only the
        counts does not pay for it."""
        b = self.behaviour
        device = ("XPU" if self.layout.platform == "xpu" else "GPU") if b.log_device_prefix else "GPU"
        return log_numbers(self.gpu.workers[0], self.layers.usage, b.log_family, device)

    @cached
    def warnings(self) -> tuple[str, ...]:
        """Things the user should act on, for stderr: the release's, the GPU side's, the offload columns' (read on
        first use: they name every family column), the out-of-bounds verdict."""
        off = self.offload.warnings if self.lmcache is None else self.lmcache.warnings
        return self.base_warnings + off + ((self.oob_warning,) if self.oob_warning else ())

    @property
    def oob_warning(self) -> str | None:
        """The selected release goes out of bounds: the stage with the fewest CPU blocks, its bad ids (a warning is
        text for stderr, so it is written when read, not by every plan of a sweep or an API loop)."""
        sel = self.offload.selected
        if not isinstance(sel, FormulaResult) or not sel.out_of_bounds:
            return None
        worst = min((s for s in sel.stages if s.out_of_bounds), key=lambda s: s.count.num_blocks)
        return (f"vLLM {self.behaviour.version}: the scheduler can hand out CPU block ids {worst.bad_ids[0]:,}.."
                f"{worst.bad_ids[1]:,} that PP stage {worst.pp_rank}'s workers never allocated: out-of-bounds stores")

    @cached
    def formula_notes(self) -> dict[str, str]:
        """Per formula id: how that formula's own releases would lay this model out, when it differs from the
        selected release's layout (the old column is computed on the selected release's tensors). Computed on
        first use (it plans the model a second time), so plain API calls do not pay for it."""
        return _other_family_note(self.layout, self)

    @property
    def selected(self) -> str:
        """The formula the selected release uses."""
        return self.behaviour.formula


def _other_family_note(layout: Layout, selected: Plan) -> dict[str, str]:
    other = "fixed" if selected.selected == "old" else "old"
    version = REPRESENTATIVE[other]
    try:
        alt = plan(replace(layout, vllm_version=version))
    except KvcalcError as e:
        return {other: f"vLLM {version} would refuse this layout at startup: {e.one_line()}"}
    same = [(g.layer_names, g.spec) for g in alt.grouping.groups] == \
        [(g.layer_names, g.spec) for g in selected.grouping.groups] and alt.gpu.num_blocks == selected.gpu.num_blocks
    if same:
        return {}
    r = alt.offload.results.get(other)
    if r is None:
        return {other: f"vLLM {version} lays this model out differently and fails to start the offloader: "
                       f"{alt.offload.startup_error}"}
    hma = "on" if alt.hma_enabled else "off"
    blocks = "" if alt.gpu.num_blocks is None else f", {alt.gpu.num_blocks:,} GPU blocks"
    return {other: f"vLLM {version} lays this model out differently (hybrid manager {hma}, "
                   f"{len(alt.grouping.groups)} group(s){blocks}): there the {other} "
                   f"formula gives {r.scheduler.num_blocks:,} scheduler / "
                   f"{', '.join(f'{s.count.num_blocks:,}' for s in r.stages)} worker CPU blocks"
                   + (", out of bounds" if r.out_of_bounds else "")}


class GpuStage(NamedTuple):
    """Everything a plan computes before the CPU budget enters: a sweep over budgets reuses it."""

    behaviour: Behaviour
    hma_enabled: bool
    hma_reason: str
    layers: LayerPlan
    grouping: Grouping
    gpu: GpuPlan


def plan_gpu(layout: Layout) -> GpuStage:
    """Layout -> layers -> groups -> tensors and GPU blocks (no CPU budget involved; the logged numbers are derived
    from them when read: Plan.logs)."""
    behaviour = behaviour_for(layout.vllm_version)
    model = layout.model
    wants_off = None
    if model.attention_chunk_size and LayerKind.CHUNKED in model.kinds and model.draft \
            and model.draft.method in ("eagle", "eagle3"):
        wants_off = "vLLM disables the hybrid manager for chunked-local attention with an EAGLE drafter"
    if layout.offload.backend == "lmcache":
        from .backends.lmcache import check_hma  # imported only for LMCache layouts: start-up time is a target

        check_hma(layout.cache.hybrid_kv_cache_manager, behaviour.version)
        hma, why = False, ("disabled by the user (--disable-hybrid-kv-cache-manager)"
                           if layout.cache.hybrid_kv_cache_manager == "off" else
                           "off: vLLM turns the hybrid manager off for LMCache's connector (it does not implement "
                           "SupportsHMA)")
    else:
        hma, why = decide_hma(behaviour, layout.cache.hybrid_kv_cache_manager, wants_off_reason=wants_off)
    layer_plan = build_layers(layout, behaviour)
    grouping = group_layers(layer_plan.runs, hma_enabled=hma, threshold=behaviour.group_threshold)
    gpu = build_gpu_plan(
        grouping, layer_plan, tp=layout.parallel.tensor_parallel_size,
        memory=layout.cache.least_memory,
        num_gpu_blocks_override=layout.cache.num_gpu_blocks_override,
    )
    return GpuStage(behaviour=behaviour, hma_enabled=hma, hma_reason=why, layers=layer_plan, grouping=grouping,
                    gpu=gpu)


def plan(layout: Layout, stage: GpuStage | None = None, *, selected_only: bool = False) -> Plan:
    """Rebuild vLLM's KV cache layout for `layout` and size its CPU offload pool by both formulas. `stage`: the
    GPU stage of a layout that differs from this one only in its offload section (a sweep over budgets).
    `selected_only`: size only the selected release's family (a sweep row shows no other column)."""
    behaviour, hma, why, layer_plan, grouping, gpu = stage or plan_gpu(layout)
    model = layout.model
    par = layout.parallel
    draft = model.draft
    # 0.31+ sliding windows keep max(0, num_prefill_lookahead_tokens - 1) more tokens (config/vllm.py: EAGLE
    # reads one token ahead; multi-module MTP, min(MTP layers, speculative tokens) > 1, reads that many).
    retained = 0
    if draft is not None and draft.method == "mtp" and min(draft.num_layers, draft.num_speculative_tokens) > 1:
        retained = draft.num_speculative_tokens - 1
    settings = OffloadSettings(
        cpu_bytes=layout.offload.cpu_bytes_to_use or 0, block_size=layout.offload.block_size,
        blocks_per_chunk=layout.offload.blocks_per_chunk, tp=par.tensor_parallel_size,
        pp=par.pipeline_parallel_size, dp=par.data_parallel_size, world_size=par.world_size,
        backend=par.distributed_executor_backend, nnodes=par.nnodes, engines_per_node=par.engines_per_node,
        platform=layout.platform, is_mla_model=model.is_mla, max_model_len=layout.cache.max_model_len,
        attention_backend=layout.backend, host_page_size=layout.host.page_size,
        pinned_round_threshold_mb=layout.host.pinned_round_threshold_mb, extra_retained_tokens=retained,
    )
    families = (behaviour.formula,) if selected_only else ("old", "fixed", behaviour.formula)
    if layout.offload.backend == "lmcache":
        families = ()  # the native connector is not configured: LMCache's pool is planned instead
    off = plan_offload(gpu, settings, behaviour, hma_enabled=hma, families=families,
                       budget_given=layout.offload.cpu_bytes_to_use is not None)
    notes = list(layer_plan.notes)
    lmc = None
    if layout.offload.backend == "lmcache":
        from .backends.lmcache import plan_lmcache

        lmc = plan_lmcache(layout, behaviour)
    if lmc is not None:
        notes += lmc.notes
    elif layout.offload.cpu_bytes_to_use is None:
        notes.append("no CPU budget given (--cpu-bytes, --kv-offloading-size or offload.cpu_bytes_to_use): the GPU "
                     "side is planned with the offloading connector configured; CPU counts are null")
    if layer_plan.block_size_note:
        notes.append(layer_plan.block_size_note)
    if grouping.folded:
        notes.append("hybrid manager off: sliding-window/chunked layers are allocated as full attention")
    if grouping.padding_layers:
        notes.append(f"{grouping.padding_layers} padding layer slot(s) in the hybrid groups")
    base = ((behaviour.warning,) if behaviour.warning else ()) + tuple(gpu.warnings)
    # A start-up failure is not a warning: it is the report's `error` (and exit 2 in the CLI).
    return Plan(layout=layout, behaviour=behaviour, hma_enabled=hma, hma_reason=why, layers=layer_plan,
                grouping=grouping, gpu=gpu, offload=off, lmcache=lmc, notes=tuple(notes),
                base_warnings=base)


def compare(layout: Layout, versions: list[str]) -> list[tuple[str, Plan | KvcalcError]]:
    """The same layout planned as each release would: a Plan, or the refusal that release gives. A string that
    is no release kvcalc models is refused up front (UnsupportedError), not shown as a start-up failure; the
    list is de-duplicated, so it is never longer than versions.RELEASES."""
    versions = list(dict.fromkeys(versions))
    for v in versions:
        behaviour_for(v)
    out: list[tuple[str, Plan | KvcalcError]] = []
    for v in versions:
        try:
            out.append((v, plan(replace(layout, vllm_version=v))))
        except KvcalcError as e:
            out.append((v, e))
    return out


def compare_backends(layout: Layout) -> list[tuple[str, Plan | KvcalcError]]:
    """The layout on both backends with the same host budget: the LMCache layout's pool per engine as the native
    connector's cpu_bytes_to_use, or the native budget split over the engine's TP x PP ranks as LMCache's
    max_local_cpu_size -- as vLLM 0.14.0-0.22.1's --kv-offloading-backend lmcache splits --kv-offloading-size
    (config/vllm.py); with MLA LMCache then pins it on rank 0 alone."""
    from .vocab.layout import LMCacheLayout, OffloadLayout

    par = layout.parallel
    ranks = par.tensor_parallel_size * par.pipeline_parallel_size
    out: list[tuple[str, Plan | KvcalcError]] = []
    if layout.offload.backend == "lmcache":
        try:
            lm_plan = plan(layout)
        except KvcalcError as e:
            return [("native", e), ("lmcache", e)]
        budget = lm_plan.lmcache.pool_bytes_per_engine
        native = replace(layout, offload=OffloadLayout(cpu_bytes_to_use=budget,
                                                       cpu_bytes_source="LMCache's pool per engine"))
        others = [("native", native)]
        mine = ("lmcache", lm_plan)
    else:
        budget = layout.offload.cpu_bytes_to_use or 0
        lm = LMCacheLayout(max_local_cpu_size=budget / ranks / 1024 ** 3)
        others = [("lmcache", replace(layout, offload=OffloadLayout(
            cpu_bytes_to_use=None, cpu_bytes_source="the native budget / (TP x PP)", backend="lmcache", lmcache=lm)))]
        try:
            mine = ("native", plan(layout))
        except KvcalcError as e:
            mine = ("native", e)
    for name, lay in others:
        try:
            out.append((name, plan(lay)))
        except KvcalcError as e:
            out.append((name, e))
    out.append(mine)
    return sorted(out, key=lambda t: t[0] != "native")
