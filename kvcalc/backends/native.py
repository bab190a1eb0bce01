"""vLLM's native offloading connector (OffloadingConnector: --kv-offloading-size,
kv_connector_extra_config.cpu_bytes_to_use) as an offload backend: the CPU counts of every family asked for on one
GPU plan (`OffloadPlan`), the pool they make (`NativePool`), its verdict, the `vllm serve` flags that spell it, and
the backend object (the budget that holds a target is in native_sizing.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..engines.vllm import GpuStage, hma_model_veto
from ..engines.vllm.specs import ChunkedLocalAttentionSpec
from ..engines.vllm.tensors import GpuPlan
from ..vocab.layout import Layout, OffloadLayout
from ..vocab.errors import InternalError, KvcalcError, known
from ..vocab.keys import KEY
from ..vocab.records import cached, record, replace
from ..vocab.releases.vllm import FAMILIES, Behaviour, decide_hma
from ..vocab.units import format_bytes
from .base import SIZING_BUDGET, Capacity, OutOfBounds, Pool, SizeTarget, pod_resources

if TYPE_CHECKING:
    from .native_sizing import NativeSizes
from .formulas import FormulaResult, OffloadSettings, evaluate, family_behaviour, startup_check


@record
class OffloadPlan:
    """The CPU counts of every family asked for. The selected release's family is evaluated when the plan is made;
    the other columns (and the warnings, which name every column) on first read: most plans show one family."""

    cpu_bytes_to_use: int
    block_size: int  # offloaded block size in tokens (selected family)
    block_size_factor: int
    world_size: int
    startup_error: str | None  # the selected release's
    gpu: GpuPlan
    settings: OffloadSettings
    behaviour: Behaviour
    families: tuple[str, ...]  # in column order, de-duplicated
    budget_given: bool
    selected: FormulaResult | str | None  # the selected family's result, or why its connector fails at init
    # The selected family's start-up check, keyed by its chunk rule: a family with the same rule shares it.
    selected_check: tuple[bool, tuple[str | None, int]] | None

    @cached
    def _columns(self) -> tuple[dict[str, FormulaResult], dict[str, str]]:
        results: dict[str, FormulaResult] = {}
        errors: dict[str, str] = {}
        own = self.behaviour.formula
        checks = dict((self.selected_check,) if self.selected_check else ())  # local: the plan stays as it was
        for fam in self.families:
            out: FormulaResult | str | None
            if fam == own:
                out = self.selected
                if out is None:  # plan_offload evaluates the selected family when it is one of the columns
                    raise InternalError(f"family {own}: a column without its result")
            else:
                rule = FAMILIES[fam].formula_rule
                if rule.chunks not in checks:
                    checks[rule.chunks] = startup_check(rule, self.gpu, self.settings)
                out = evaluate(fam, self.gpu, self.settings, family_behaviour(fam, self.behaviour),
                               checks[rule.chunks])
            if isinstance(out, str):
                errors[fam] = out
            else:
                results[fam] = out
        return results, errors

    @property
    def selected_result(self) -> FormulaResult | None:
        """The selected release's family result (None when its connector fails at init, or none was asked for)."""
        return self.selected if isinstance(self.selected, FormulaResult) else None

    @property
    def results(self) -> dict[str, FormulaResult]:  # keyed by family id
        return self._columns[0]

    @property
    def errors(self) -> dict[str, str]:  # family id -> why that family's connector fails at init
        return self._columns[1]

    @cached
    def warnings(self) -> tuple[str, ...]:
        s, behaviour = self.settings, self.behaviour
        warnings: list[str] = []
        if s.blocks_per_chunk is not None and not FAMILIES[behaviour.formula].formula_rule.chunks:
            # 0.25.1 v1/kv_offload/base.py reads extra_config.get("block_size") only: an unknown key is ignored.
            warnings.append(f"vLLM {behaviour.version} ignores kv_connector_extra_config.blocks_per_chunk (read "
                            "from 0.26.0): one GPU block per CPU block; use offload.block_size on this release")
        if self.startup_error is None and self.budget_given:
            for name, r in self.results.items():
                if s.cpu_bytes and r.scheduler.num_blocks == 0 and r.scheduler.kv_bytes_per_block == 0:
                    warnings.append(f"{name} formula: 0 CPU blocks because the GPU has 0 blocks")
                elif s.cpu_bytes and r.scheduler.num_blocks == 0:
                    warnings.append(f"{name} formula: the budget is smaller than one CPU block "
                                    f"({r.scheduler.aligned_bytes:,} B): 0 CPU blocks, offloading is inert")
        return tuple(warnings)



def plan_offload(gpu: GpuPlan, s: OffloadSettings, behaviour: Behaviour, *, hma_enabled: bool,
                 families: tuple[str, ...], budget_given: bool = True, sizing: bool = False) -> OffloadPlan:
    selected_error = None
    if behaviour.offload_refuses_chunked_local and hma_enabled and any(
            isinstance(g.spec, ChunkedLocalAttentionSpec) for g in gpu.scheduler_groups):
        selected_error = ("the offloading scheduler accepts only full-attention and sliding-window groups with the "
                          "hybrid manager on; it asserts on this chunked-local group at startup")
    if budget_given and s.cpu_bytes == 0 and not sizing:
        # CPUOffloadingSpec refuses a falsy budget at start-up (v1/kv_offload/cpu/spec.py:100-104 @0.33.0,
        # spec.py:25-29 @0.22.0; the same test in every release read).
        selected_error = "cpu_bytes_to_use must be specified in kv_connector_extra_config (vLLM refuses a budget of 0)"
    families = tuple(dict.fromkeys(families))
    own = behaviour.formula
    sel = check = None
    if own in families:
        rule = FAMILIES[own].formula_rule
        check = (rule.chunks, startup_check(rule, gpu, s))  # the start-up check depends only on the chunk rule
        sel = evaluate(own, gpu, s, behaviour, check[1])
        if isinstance(sel, str):
            selected_error = selected_error or sel
    factor = sel.factor if isinstance(sel, FormulaResult) else 1
    return OffloadPlan(cpu_bytes_to_use=s.cpu_bytes, block_size=factor * gpu.hash_block_size, block_size_factor=factor,
                       world_size=s.world_size, startup_error=selected_error, gpu=gpu, settings=s, behaviour=behaviour,
                       families=families, budget_given=budget_given, selected=sel, selected_check=check)


def settings_for(layout: Layout, budget: int, attention_backend: str) -> OffloadSettings:
    """What the connector's counts depend on, from the layout (and `budget`, bytes for one engine)."""
    model, par, draft = layout.model, layout.parallel, layout.model.draft
    # 0.31+ sliding windows keep max(0, num_prefill_lookahead_tokens - 1) more tokens (config/vllm.py: EAGLE
    # reads one token ahead; multi-module MTP, min(MTP layers, speculative tokens) > 1, reads that many).
    retained = 0
    if draft is not None and draft.method == "mtp" and min(draft.num_layers, draft.num_speculative_tokens) > 1:
        retained = draft.num_speculative_tokens - 1
    return OffloadSettings(
        cpu_bytes=budget, block_size=layout.offload.block_size,
        blocks_per_chunk=layout.offload.blocks_per_chunk, tp=par.tensor_parallel_size,
        pp=par.pipeline_parallel_size, dp=par.data_parallel_size, world_size=par.world_size,
        backend=par.distributed_executor_backend, nnodes=par.nodes_per_engine, engines_per_node=par.engines_per_node,
        platform=layout.platform, is_mla_model=model.is_mla, max_model_len=layout.cache.max_model_len,
        attention_backend=attention_backend, host_page_size=layout.host.page_size,
        pinned_round_threshold_mb=layout.host.pinned_round_threshold_mb, extra_retained_tokens=retained,
        prefix_caching=bool(layout.cache.enable_prefix_caching),
    )


NO_BUDGET_NOTE = ("no CPU budget given (--cpu-bytes, --kv-offloading-size or offload.cpu_bytes_to_use): the GPU side "
                  "is planned with the offloading connector configured; CPU counts are null")


@record
class NativePool(Pool):
    """The native connector's pool: the selected release's family result, and every family column asked for."""

    families = True  # --compare-versions shows its formula families' columns

    offload: OffloadPlan
    budget_bytes: int | None  # None: no budget given (the GPU side alone)
    hma_enabled: bool

    backend = "native"
    connector = "the offloading connector"
    not_modelled = None
    tokens_holder = "every worker can hold"
    splits_scheduler = True
    shm_none = "the workers pin private tensors"

    @property
    def family(self) -> str:
        return self.offload.behaviour.family.id

    @property
    def startup_error(self) -> str | None:
        return self.offload.startup_error

    @property
    def result(self) -> FormulaResult | None:
        """The selected release's counts (None without a budget, or when the connector fails at init)."""
        return None if self.budget_bytes is None else self.offload.selected_result

    @property
    def capacity(self) -> Capacity | None:
        """What vLLM 0.33+ publishes as vllm:kv_offload_config_info (CPUOffloadingInfo)."""
        return None if self.result is None or self.startup_error else self.result.capacity

    @property
    def unit(self) -> str:
        r = self.offload.selected_result
        return "chunks" if r is not None and r.chunks else "blocks"

    @property
    def units_scheduler(self) -> int | None:
        return None if self.result is None else self.result.scheduler.num_blocks

    @property
    def units_worst(self) -> int | None:
        return None if self.result is None else min(s.count.num_blocks for s in self.result.stages)

    @property
    def unit_bytes(self) -> int | None:
        r = self.result
        return None if r is None else max([r.scheduler.aligned_bytes] + [c.aligned_bytes for c in r.stage_counts])

    @property
    def tokens_per_unit(self) -> int:
        return self.offload.block_size

    @property
    def tokens(self) -> int | None:
        return None if self.result is None else self.result.tokens_safe

    @property
    def out_of_bounds(self) -> OutOfBounds | None:
        r = self.result
        worst = None if r is None else min((s for s in r.stages if s.out_of_bounds),
                                           key=lambda s: s.count.num_blocks, default=None)
        return None if worst is None else worst.ids

    @property
    def empty(self) -> bool:
        return self.units_scheduler == 0 or self.units_worst == 0

    @property
    def stored(self) -> str:
        return f"{self.units_scheduler:,} CPU {self.unit}"

    @property
    def nothing(self) -> str:
        return f"0 CPU {self.unit}"

    @property
    def pool_bytes_per_engine(self) -> int | None:
        return None if self.result is None else self.result.pinned_bytes_per_engine

    @property
    def resident_bytes_per_engine(self) -> int | None:
        return None if self.result is None else self.result.host.resident_bytes_per_engine

    @property
    def resident_bytes_per_node(self) -> int | None:
        return None if self.result is None else self.result.host.resident_bytes_per_node

    @property
    def shm_bytes_per_engine(self) -> int:
        return 0 if self.result is None else self.result.host.shm_bytes_per_engine

    @property
    def shm_bytes_per_node(self) -> int:
        return 0 if self.result is None else self.result.host.shm_bytes_per_node

    @property
    def unused_bytes(self) -> int | None:
        return None if self.result is None else self.result.unused_bytes

    @property
    def env_dependent(self) -> tuple[str, ...]:
        """PYTORCH_ALLOC_CONF, where private pinned tensors are rounded by a torch that reads its
        pinned_max_round_threshold_mb (formulas.pinned_resident); nothing for the shared region."""
        r = self.result
        if r is None or r.host.shared_region or not r.behaviour.torch_round_threshold:
            return ()
        return ("PYTORCH_ALLOC_CONF",)

    @property
    def kept(self) -> str:
        host = known(self.result, "the pool's figures").host  # read by the host_memory gate, of a pool that has them
        rounding = host.pinned_rounding
        if rounding == "none":
            how = "no allocator rounding" + (": one shared /dev/shm region" if host.shared_region else "")
        elif rounding == "power_of_two":
            how = "each pinned tensor rounded up to a power of two"
        else:  # threshold:N (PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb)
            how = f"pinned tensors up to {rounding.split(':')[1]} MiB rounded up to a power of two"
        return f"resident ({how}; {host.requested_bytes_per_engine:,} B asked per engine)"

    @property
    def notes(self) -> tuple[str, ...]:
        return (NO_BUDGET_NOTE,) if self.budget_bytes is None else ()

    @cached
    def warnings(self) -> tuple[str, ...]:
        """The offload columns' (read on first use: they name every family column), then the out-of-bounds
        verdict of the selected release: text for stderr, written when read, not by every plan of a sweep."""
        sel = self.offload.selected
        oob = None
        if isinstance(sel, FormulaResult) and sel.out_of_bounds:
            worst = min((s for s in sel.stages if s.out_of_bounds), key=lambda s: s.count.num_blocks)
            ids = known(worst.ids, "an out-of-bounds stage's ids")
            who = f"PP stage {worst.pp_rank}'s workers" if self.offload.settings.pp > 1 else "the workers"
            oob = (f"vLLM {self.offload.behaviour.version}: the scheduler can hand out CPU block ids "
                   f"{ids.first:,}..{ids.last:,} that {who} never allocated: out-of-bounds stores")
        return self.offload.warnings + ((oob,) if oob else ())

    @property
    def verdict(self) -> str:
        return native_verdict(self)

    def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict:
        """The connector's flags in both spellings of the budget (`common`: the engine's own flags)."""
        return native_args(self, layout, common, notes)

    def with_budget(self, budget_bytes: int) -> NativePool:
        """The same pool at another budget: only the offload stage runs again (the selected family)."""
        off = self.offload
        return NativePool(offload=plan_offload(off.gpu, replace(off.settings, cpu_bytes=budget_bytes), off.behaviour,
                                               hma_enabled=self.hma_enabled, families=(off.behaviour.formula,)),
                          budget_bytes=budget_bytes, hma_enabled=self.hma_enabled)


def native_verdict(pool: NativePool) -> str:
    """The selected release's pool in words (the report adds the other releases' columns: report/report.py)."""
    off, v = pool.offload, pool.offload.behaviour.version
    if off.startup_error:
        return f"Verdict: vLLM {v} would not start the offloading connector with this layout."
    if pool.budget_bytes is None:
        return (f"Verdict: vLLM {v}, the GPU side only: give a CPU budget (--cpu-bytes) for the CPU counts, or "
                "`kvcalc size --cpu-tokens N` for the budget a token target needs.")
    # A budget, and the connector starts: the selected family's counts.
    sel, ids = known(pool.result, "the selected family's counts"), pool.out_of_bounds
    unit = f"CPU {pool.unit}"
    if sel.scheduler.num_blocks == 0:
        first = f"Verdict: vLLM {v} gets 0 {unit}: offloading is configured but stores nothing."
    elif ids is not None:
        who = f"PP stage {ids.pp_rank}'s workers" if off.settings.pp > 1 else "the workers"
        first = (f"Verdict: UNSAFE on vLLM {v}. The scheduler counts {sel.scheduler.num_blocks:,} {unit} but {who} "
                 f"allocated {sel.stages[ids.pp_rank].count.num_blocks:,}: once more than that many are offloaded, "
                 "stores land out of bounds (crashes or corrupted KV).")
    else:
        first = (f"Verdict: safe on vLLM {v}: {sel.scheduler.num_blocks:,} {unit} ({sel.tokens_scheduler:,} tokens), "
                 f"{format_bytes(sel.unused_bytes)} of the budget unused.")
    return first


def gib_spelling(cpu_bytes: int) -> float | None:
    """The --kv-offloading-size value X with int(X * 2**30) == cpu_bytes, as vLLM converts it; None if no
    float does it (then only the kv_connector_extra_config spelling is exact)."""
    x = cpu_bytes / (1 << 30)
    for candidate in (float(repr(x)), x):
        if int(candidate * (1 << 30)) == cpu_bytes:
            return candidate
    return None


def native_args(pool: NativePool, layout: Layout, common: list[str], notes: list[str]) -> dict:
    """`vllm serve` flags for the OffloadingConnector: --kv-transfer-config with kv_connector_extra_config, and
    --kv-offloading-size when a float of GiB can say the budget exactly (vLLM: int(X * 2**30))."""
    cpu, version = layout.offload.cpu_bytes_to_use, pool.offload.behaviour.version
    if cpu is None:
        raise KvcalcError(f"{layout.source}: vllm-args spells the CPU budget: give --cpu-bytes or --kv-offloading-size "
                          "(or offload.cpu_bytes_to_use)")
    extra: dict = {"cpu_bytes_to_use": cpu}
    if layout.offload.block_size is not None:
        extra["block_size"] = layout.offload.block_size
    if layout.offload.blocks_per_chunk is not None:
        extra["blocks_per_chunk"] = layout.offload.blocks_per_chunk
    import json  # only vllm-args spells a config

    transfer = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}
    with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    gib = gib_spelling(cpu)
    with_gib = None
    if gib is None:
        notes.append(f"--kv-offloading-size cannot express {cpu:,} B exactly (it is GiB through a float): use the "
                     "--kv-transfer-config spelling")
    elif len(extra) > 1:
        notes.append("--kv-offloading-size cannot carry block_size / blocks_per_chunk: use the --kv-transfer-config "
                     "spelling")
    else:
        with_gib = common + [KEY["offload.kv_offloading_size"].vllm_flag, repr(gib)]
        notes.append(f"--kv-offloading-size {gib!r} is GiB: vLLM computes int({gib!r} * 2**30) = {cpu:,} B "
                     f"({format_bytes(cpu)}), the total for one engine")
    if pool.startup_error:
        notes.append(f"vLLM {version} would still refuse this layout: {pool.startup_error}")
    pod = pod_resources(pool)
    if pod is not None:
        shm = (f"/dev/shm (emptyDir medium: Memory) sizeLimit >= {pod['shm_size_limit']}"
               if pod["shm_size_limit"] else f"no /dev/shm region on {version} (private pinned tensors)")
        notes.append(f"pod resources for one engine's CPU tier: memory limit >= {pod['memory_limit']}, {shm}; add "
                     "the process's own memory (weights staging, CUDA context, Python: typically a few GiB)")
    return {"vllm_version": version, "backend": "native", "args_kv_offloading_size": with_gib,
            "args_kv_transfer_config": with_json, "lmcache_yaml": None, "lmcache_env": None,
            "notes": notes, "starts": pool.startup_error is None, "pod": pod,
            "out_of_bounds": pool.out_of_bounds is not None}


class NativeBackend:
    """vLLM's OffloadingConnector (--kv-offloading-size, kv_connector_extra_config.cpu_bytes_to_use)."""

    name = "native"
    title = "native"
    no_offload_info = None  # it publishes vllm:kv_offload_config_info (0.33+)

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        return decide_hma(behaviour, layout.cache.hybrid_kv_cache_manager,
                          wants_off_reason=hma_model_veto(layout.model))

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> NativePool:
        """The selected release's family, and (unless `selected_only`: a sweep row shows no other column) the old
        and fixed columns beside it."""
        behaviour = stage.behaviour
        budget = layout.offload.cpu_bytes_to_use
        families = (behaviour.formula,) if selected_only else ("old", "fixed", behaviour.formula)
        settings = settings_for(layout, budget or 0, stage.layers.attention.backend)
        off = plan_offload(stage.gpu, settings, behaviour, hma_enabled=stage.hma_enabled, families=families,
                           budget_given=budget is not None, sizing=layout.offload.cpu_bytes_source == SIZING_BUDGET)
        return NativePool(offload=off, budget_bytes=budget, hma_enabled=stage.hma_enabled)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        return replace(layout, offload=OffloadLayout(cpu_bytes_to_use=budget_bytes,
                                                     cpu_bytes_source=f"{source}'s pool per engine"))

    def size(self, layout: Layout, target: SizeTarget, plan: Callable) -> NativeSizes:
        from .native_sizing import size_native  # only `kvcalc size` reads it (start-up time is a target)

        return size_native(layout, target, plan)


BACKEND = NativeBackend()
