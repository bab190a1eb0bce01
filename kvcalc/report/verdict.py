"""The Verdict, the first screen's last word: the selected release's pool in words (the backend's Pool.verdict),
the other formula's release (from the report's own old / fixed entries), and what one node's pod must grant: its
memory (the resident CPU tier plus the process overhead the host_memory gate counts) and /dev/shm (the shared
region), with whether the limits given (--k8s's manifest, --host-memory, --shm-size) grant them. A pod whose
/dev/shm is too small for a release that checks it at start-up is not "safe", whatever the pool's counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.base import OVERHEAD_PER_WORKER, shm_refusal, workers_on_node
from ..vocab.units import format_bytes

if TYPE_CHECKING:
    from ..pipeline import Plan
    from .sections import OffloadSection


def gib(n: int) -> str:
    """Bytes in GiB with two decimals, rounded half up as format_bytes does: 68,717,936,640 -> '64.00 GiB'."""
    hundredths = (n * 100 + (1 << 29)) >> 30
    return f"{hundredths // 100:,}.{hundredths % 100:02d} GiB"


def other_release(plan: Plan, off: OffloadSection | None) -> str:
    """The verdict's word on the other formula's column, read from the same entries the Summary shows: how to get
    out of bounds on an old release, or that the old formula's release would go out of bounds on this layout."""
    if off is None or off.selected is None:
        return ""
    sel = off.selected
    if plan.selected == "old":
        fixed = off.fixed
        if not sel.out_of_bounds:
            return ""
        if fixed is None:
            return f" {off.errors.get('fixed', '')}."
        if fixed.out_of_bounds:
            return (f" vLLM {fixed.vllm_version} (the fixed formula) goes out of bounds too: its pipeline stages "
                    "hold different bytes per block.")
        return (f" Upgrading to vLLM ≥ 0.20.0 fixes it: vLLM {fixed.vllm_version} gets {fixed.num_blocks_scheduler:,} "
                f"CPU {fixed.unit} on every worker.")
    old = off.old
    if old is None or not old.out_of_bounds:
        return ""
    return (f" On vLLM {old.vllm_version} (the old formula) this layout gets {old.num_blocks_scheduler:,} scheduler / "
            f"{min(old.num_blocks_workers):,} worker CPU {old.unit}: out of bounds.")


def needs(plan: Plan, limits: dict) -> tuple[int, int, str, int] | None:
    """(memory, resident, how the overhead was counted, /dev/shm) one node's pod needs, as the host_memory and shm
    gates count them; None when there is no pool (no connector, or a release that does not start it)."""
    pool = plan.pool
    if pool.startup_error or pool.resident_bytes_per_node is None:
        return None
    workers = workers_on_node(plan.layout.parallel)
    if limits.get("overhead") is not None:
        overhead, how = limits["overhead"], "--host-overhead"
    else:
        overhead = OVERHEAD_PER_WORKER * workers
        how = f"{workers} GPU worker process(es), 3 GiB each: an estimate, --host-overhead sets it"
    resident = pool.resident_bytes_per_node
    return resident + overhead, resident, f"{gib(overhead)} for {how}", pool.shm_bytes_per_node


def _granted(plan: Plan, limits: dict, memory: int, shm: int) -> tuple[list[str], str | None]:
    """What the limits say of each need, and the headline when one stops the deployment (None: none does)."""
    words: list[str] = []
    stop = None
    limit = limits.get("host_memory")
    if limit is not None:
        if limit.pod and plan.pool.server_resident_bytes is not None:
            memory -= plan.pool.server_resident_bytes  # a standalone server pins it in its own container
        if limit.value is None:
            words.append(f"memory unknown ({limit.source})")
        elif limit.value >= memory:
            words.append(f"memory {gib(limit.value)} from {limit.source}: enough")
        else:
            kill = "the pod is OOM-killed" if limit.pod else "the node runs out of memory"
            words.append(f"memory {gib(limit.value)} from {limit.source}: short by {gib(memory - limit.value)}, {kill}")
            stop = "UNSAFE in this pod"
    limit, pinned = limits.get("server_memory"), plan.pool.server_resident_bytes
    if limit is not None and pinned is not None:
        if limit.value is None:
            words.append(f"the server's memory unknown ({limit.source})")
        else:
            short = limit.value < pinned
            words.append(f"the server's memory {gib(limit.value)} from {limit.source}: "
                         + (f"short by {gib(pinned - limit.value)}, the server is OOM-killed" if short else "enough"))
            stop = stop or ("UNSAFE in this pod" if short else None)
    limit = limits.get("shm")
    if limit is not None and shm:
        b, v = plan.behaviour, plan.behaviour.version
        source = limit.source.removeprefix("/dev/shm: ")
        if limit.value is None:
            words.append(f"/dev/shm unknown ({source})")
        elif b.shm_free_space_check and (why := shm_refusal(plan.pool.shm_bytes_per_engine,
                                                            plan.layout.parallel.engines_per_node, limit.value, v,
                                                            b.shm_message_named)):
            words.append(f"/dev/shm {format_bytes(limit.value)} ({source}): too small, vLLM {v} refuses to start: "
                         f"\"{why}\"")
            stop = "WOULD NOT START in this pod"
        elif limit.value < shm:
            words.append(f"/dev/shm {format_bytes(limit.value)} ({source}): too small, the workers die with SIGBUS "
                         f"once the region fills it (vLLM {v} does not check at start-up)")
            stop = stop or "UNSAFE in this pod"
        else:
            words.append(f"/dev/shm {format_bytes(limit.value)} ({source}): enough")
    return words, stop


def verdict(plan: Plan, off: OffloadSection | None, limits: dict | None) -> str:
    """Lines: the headline with the other release's word; what one node's pod needs; what it is granted."""
    head = plan.pool.verdict + other_release(plan, off)
    need = needs(plan, limits or {})
    if need is None:
        return head
    memory, resident, overhead, shm = need
    region = f"/dev/shm {gib(shm)} for the offload's shared region" if shm else \
        f"no /dev/shm region ({plan.pool.shm_none})"
    lines = [head, f"Needs per node (the pod): memory {gib(memory)} = {gib(resident)} resident CPU tier + {overhead}; "
                   f"{region}."]
    words, stop = _granted(plan, limits or {}, memory, shm)
    if words:
        text = "; ".join(words)
        lines.append("Granted: " + text + ("" if text.endswith((".", '"')) else "."))
    safe = f"Verdict: safe on vLLM {plan.behaviour.version}: "
    if stop and head.startswith(safe):
        lines[0] = f"Verdict: {stop} on vLLM {plan.behaviour.version} (Granted, below). The pool: " + head[len(safe):]
    return "\n".join(lines)
