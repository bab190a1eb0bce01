"""SimpleCPUOffloadConnector's budget, both ways: the `vllm serve` flags that spell a plan's pool (both spellings of
the budget), and `kvcalc size`'s answer (the cpu_bytes_to_use, or per-rank bytes, that holds a target). Loaded only
by those commands (start-up time is a target). Pure."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

from ..vocab.errors import known
from ..vocab.layout import Layout
from ..vocab.records import field, record, replace, to_json
from ..vocab.releases.simple import CONNECTOR, DEFAULT_DISK_BYTES, ENV_VAR, simple_budget, simple_of
from ..vocab.units import format_bytes, smallest_gib
from .base import SizeTarget, largest, pod_resources
from .native import gib_spelling
from .simple_plan import tokens_held

if TYPE_CHECKING:
    from .simple import SimplePool

MAX_BUDGET = 1 << 62  # inputs.values.Reader.size's bound: plan refuses more


def extra_config(layout: Layout) -> dict:
    """kv_connector_extra_config that reproduces the plan: the budget, then the keys that differ from vLLM's
    defaults (simple_cpu_offload_connector.py)."""
    s = simple_of(layout)
    extra: dict = {"cpu_bytes_to_use": layout.offload.cpu_bytes_to_use}
    if s.cpu_bytes_to_use_per_rank is not None:
        extra["cpu_bytes_to_use_per_rank"] = s.cpu_bytes_to_use_per_rank
    if s.num_cpu_blocks is not None:
        extra["num_cpu_blocks"] = s.num_cpu_blocks
    if s.kv_offload_backend == "disk":
        extra.update(kv_offload_backend="disk", disk_path=s.disk_path)
        if s.disk_capacity_bytes != DEFAULT_DISK_BYTES:
            extra["disk_capacity_bytes"] = s.disk_capacity_bytes
        if s.disk_buffer_slots != 2:
            extra["disk_buffer_slots"] = s.disk_buffer_slots
        if s.use_page_cache:
            extra["use_page_cache"] = True
    if s.lazy_offload:
        extra["lazy_offload"] = True
    return extra


def simple_args(pool: SimplePool, layout: Layout, common: list[str], notes: list[str]) -> dict:
    """`vllm serve` flags for SimpleCPUOffloadConnector: --kv-transfer-config with its kv_connector_extra_config, and
    --kv-offloading-size with VLLM_USE_SIMPLE_KV_OFFLOAD=1 in the environment when a float of GiB says the budget
    exactly and no other key is needed (config/vllm.py _post_init_kv_transfer_config: cpu_bytes_to_use =
    kv_offloading_size * (1 << 30))."""
    sp, cpu = pool.simple, simple_budget(layout)
    extra = extra_config(layout)
    transfer = {"kv_connector": CONNECTOR, "kv_role": "kv_both", "kv_connector_extra_config": extra}
    with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    gib = gib_spelling(cpu)
    with_gib = None
    if gib is None:
        notes.append(f"--kv-offloading-size cannot express {cpu:,} B exactly (it is GiB through a float): use the "
                     "--kv-transfer-config spelling")
    elif len(extra) > 1:
        notes.append("--kv-offloading-size carries only the budget: use the --kv-transfer-config spelling for "
                     + ", ".join(k for k in extra if k != "cpu_bytes_to_use"))
    else:
        with_gib = common + ["--kv-offloading-size", repr(gib)]
        notes.append(f"--kv-offloading-size {gib!r} starts SimpleCPUOffloadConnector only with {ENV_VAR}=1 in the "
                     f"engine's environment (else OffloadingConnector): int({gib!r} * 2**30) = {cpu:,} B for the "
                     f"engine, {sp.capacity_bytes_per_rank:,} B per rank")
    if sp.startup_error:
        notes.append(f"vLLM {sp.vllm_version} would still refuse this layout: {sp.startup_error}")
    pod = pod_resources(pool)
    if pod is not None:
        notes.append(f"pod resources for one engine's CPU tier: memory limit >= {pod['memory_limit']} (tensors pinned "
                     "with cudaHostRegister; no /dev/shm region); add the process's own memory (typically a few GiB)")
    return {"vllm_version": sp.vllm_version, "backend": "simple", "args_kv_offloading_size": with_gib,
            "env_kv_offloading_size": {ENV_VAR: "1"} if with_gib else None,
            "args_kv_transfer_config": with_json, "lmcache_yaml": None, "lmcache_env": None, "notes": notes,
            "starts": sp.startup_error is None, "pod": pod, "out_of_bounds": sp.out_of_bounds is not None}


@record
class SimpleSize:
    """`kvcalc size` on SimpleCPUOffloadConnector: the budget that holds the target on every rank."""

    vllm_version: str = field("the release")
    mode: str = field("cpu | disk")
    key: str = field("what to set: cpu_bytes_to_use (the engine's; or cpu_bytes_to_use_per_rank), or disk: "
                     "disk_capacity_bytes (per rank)")
    cpu_bytes_to_use: int | None = field("the engine's budget (CPU mode)")
    kv_offloading_size_gib: float | None = field("the same as vLLM's --kv-offloading-size (GiB, 3 decimals), with "
                                                 "VLLM_USE_SIMPLE_KV_OFFLOAD=1")
    bytes_per_rank: int | None = field("cpu_bytes_to_use_per_rank, or disk_capacity_bytes in disk mode")
    num_cpu_blocks_per_rank: int | None = field("CPU blocks every rank holds at that budget")
    tokens: int | None = field("tokens of max_model_len requests they hold")
    bytes_per_block: int | None = field("the worst worker's bytes per CPU block")
    out_of_bounds_at_any_budget: bool | None = field("before 0.33.0: the scheduler outcounts a later PP stage at every "
                                                     "budget")
    resident_bytes_per_node: int | None = field("host memory resident on one node at that budget")
    startup_error: str | None = field("why the release would not start the connector, or null")
    note: str | None = field("why there is no answer, or null")

    backend = "simple"

    @property
    def refusal(self) -> str | None:
        return self.note if self.note and "more than a budget" in self.note else None

    def document(self, source: str, target: SizeTarget) -> dict:
        return {"schema_version": 1, "source": source, "backend": "simple", "target_tokens": target.tokens,
                "target_blocks": target.units, "target_resident_bytes": target.resident, "simple": to_json(self)}


def _none(version: str, mode: str, key: str, **kw) -> SimpleSize:
    base = dict(cpu_bytes_to_use=None, kv_offloading_size_gib=None, bytes_per_rank=None, num_cpu_blocks_per_rank=None,
                tokens=None, bytes_per_block=None, out_of_bounds_at_any_budget=None, resident_bytes_per_node=None,
                startup_error=None, note=None)
    base.update(kw)
    return SimpleSize(vllm_version=version, mode=mode, key=key, **base)


def _at(layout: Layout, per_rank: int) -> Layout:
    """The layout with `per_rank` bytes of capacity on every rank (the engine's budget, or the disk's)."""
    off, s = layout.offload, simple_of(layout)
    if s.kv_offload_backend == "disk":
        return replace(layout, offload=replace(off, simple=replace(s, disk_capacity_bytes=per_rank)))
    simple = replace(s, cpu_bytes_to_use_per_rank=None, budget_default=False)
    return replace(layout, offload=replace(off, cpu_bytes_to_use=per_rank * layout.parallel.world_size,
                                           simple=simple))


def size_simple(layout: Layout, target: SizeTarget, plan: Callable) -> SimpleSize:
    """The smallest per-rank capacity (bytes per rank x world size for the engine) whose pool holds the target on
    every rank, or the largest whose resident host memory on one node stays under the target."""
    p = plan(layout)
    sp = p.pool.simple
    key = "disk_capacity_bytes" if sp.mode == "disk" else "cpu_bytes_to_use"
    if sp.startup_error:
        return _none(sp.vllm_version, sp.mode, key, startup_error=sp.startup_error)
    if not sp.enabled:
        return _none(sp.vllm_version, sp.mode, key, note="prefix caching is off: the connector disables itself, no "
                                                         "budget helps (--enable-prefix-caching)")
    worst = sp.bytes_per_block
    if not sp.min_over_workers and sp.scheduler_bytes_per_block < worst:
        return _none(sp.vllm_version, sp.mode, key, bytes_per_block=worst, out_of_bounds_at_any_budget=True,
                     note="no budget fixes the scheduler/worker mismatch: a later PP stage's workers hold fewer CPU "
                          "blocks than the scheduler counts at every budget; upgrade to vLLM 0.33.0 (the MIN over "
                          "workers), set VLLM_PP_LAYER_PARTITION so stage 0 has the most KV bytes, or use one stage")
    if target.resident is not None:
        if sp.mode == "disk":
            return _none(sp.vllm_version, sp.mode, key, bytes_per_block=worst,
                         note="disk mode: host memory is the staging buffers, whatever the disk capacity")
        limit = target.resident
        n = largest(limit // worst + 1, lambda k: plan(_at(layout, k * worst)).pool.resident_bytes_per_node <= limit)
    elif target.units is not None:
        n = target.units
    else:
        n = _blocks_for(p, known(target.tokens, "a size target"), MAX_BUDGET // worst)  # resident, units or tokens
    per_rank = n * worst
    if per_rank * layout.parallel.world_size > MAX_BUDGET:
        return _none(sp.vllm_version, sp.mode, key, note=f"the target needs {per_rank:,} B per rank, more than a "
                                                         f"budget kvcalc accepts ({MAX_BUDGET:,} B for the engine)")
    at = plan(_at(layout, per_rank)).pool
    cpu = None if sp.mode == "disk" else per_rank * layout.parallel.world_size
    return _none(sp.vllm_version, sp.mode, key, cpu_bytes_to_use=cpu,
                 kv_offloading_size_gib=None if cpu is None else smallest_gib(cpu), bytes_per_rank=per_rank,
                 num_cpu_blocks_per_rank=at.simple.num_cpu_blocks_per_rank, tokens=at.simple.tokens,
                 bytes_per_block=worst, out_of_bounds_at_any_budget=False,
                 resident_bytes_per_node=at.resident_bytes_per_node,
                 note=None if n else f"0 blocks fit: one block is {format_bytes(worst)}")


def _blocks_for(p, tokens: int, most: int) -> int:
    """The fewest blocks per rank whose pool holds `tokens` (simple_plan.tokens_held grows with the blocks): doubling,
    then a binary search between the last two."""
    def held(n: int) -> int:
        return tokens_held(p, n) or 0

    hi = 1
    while held(hi) < tokens and hi < most:
        hi *= 2
    if hi == 1:
        return 1
    lo = hi // 2  # held(lo) < tokens
    return lo + 1 + largest(hi - lo - 1, lambda m: held(lo + m) < tokens)
