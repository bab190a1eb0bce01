"""--check gates over a plan's pool: each is named, passes or fails, and says why. They read the `Pool` a backend
gives (backends/base.py), never a backend's own detail. Pure; the CLI sets the exit code."""

from __future__ import annotations

from ..backends.base import Pool
from ..report.optional import Check
from ..vocab.units import format_bytes


def refused(version: str, reason: str) -> list[Check]:
    """The checks when the selected release refuses the layout before any number exists."""
    return [Check(name="startup", passed=False, reason=f"vLLM {version} refuses to start: {reason}")]


def shm_refusal(region: int, engines: int, shm_size: int, version: str, named: bool) -> str | None:
    """vLLM's own /dev/shm preflight (0.28.0+ v1/kv_offload/cpu/shared_offload_region.py -> shm_broadcast.py
    check_shm_free_space): each engine's creator needs its region free; the k-th engine on a node sees what the
    first k-1 took. The RuntimeError's text, or None when every engine fits."""
    mib = 1 << 20
    for k in range(engines):
        free = shm_size - k * region
        if region > free:
            what = " for CPU KV offload shared region in /dev/shm" if named else ""
            return (f"Insufficient space in /dev/shm{what}: {region / mib:.0f} MiB required, {max(free, 0) / mib:.0f} "
                    "MiB free. Increase /dev/shm (e.g. --shm-size or --ipc=host).")
    return None


def evaluate(pool: Pool, gpu_tokens: int | None, version: str, *, host_memory: int | None = None,
             min_cpu_tokens: int | None = None, shm_size: int | None = None, engines_per_node: int = 1,
             shm_checked: bool = False, shm_message_named: bool = False) -> list[Check]:
    """The gates. `gpu_tokens`: the logged GPU KV cache size (None without KV memory); `shm_checked`: the release
    refuses to start when /dev/shm is short (0.28+); `shm_message_named`: its message names the allocation (0.31+)."""
    if pool.startup_error:
        return refused(version, pool.startup_error)
    if pool.not_modelled is not None:
        nm = pool.not_modelled
        return [Check(name="startup", passed=False, reason=f"vLLM {version} hands offloading to {nm.connector}, whose "
                                                           f"pool lives in {nm.home}: kvcalc cannot gate it")]
    if shm_size is not None and shm_checked and pool.shm_bytes_per_engine:
        why = shm_refusal(pool.shm_bytes_per_engine, engines_per_node, shm_size, version, shm_message_named)
        if why:
            return refused(version, why) + [_shm_gate(pool, shm_size, checked=True)]
    checks = [Check(name="startup", passed=True, reason=f"vLLM {version} starts {pool.connector} with this layout")]
    if pool.splits_scheduler:
        checks.append(_out_of_bounds(pool))
    checks.append(Check(name="zero_cpu_blocks", passed=not pool.empty,
                        reason=f"{pool.nothing}: offloading is configured but stores nothing" if pool.empty else
                        pool.stored))
    # Like with like: both are vLLM's group-aware token counts (the logged GPU KV cache size, and the CPU tier's
    # tokens of max_model_len requests every worker holds).
    checks.append(_cpu_vs_gpu(gpu_tokens, pool.tokens))
    if host_memory is not None:
        checks.append(_host_memory_check(pool.resident_bytes_per_node, host_memory, engines_per_node, pool.kept))
    if shm_size is not None:
        checks.append(_shm_gate(pool, shm_size, checked=shm_checked))
    if min_cpu_tokens is not None:
        checks.append(Check(name="min_cpu_tokens", passed=pool.tokens >= min_cpu_tokens,
                            reason=f"{pool.tokens:,} CPU tokens {pool.tokens_holder}; at least {min_cpu_tokens:,} "
                                   "wanted"))
    return checks


def _out_of_bounds(pool: Pool) -> Check:
    ids = pool.out_of_bounds
    if ids is None:
        return Check(name="out_of_bounds", passed=True, reason="every worker allocated at least the scheduler's CPU count")
    return Check(name="out_of_bounds", passed=False,
                 reason=f"the scheduler can hand out CPU {pool.unit} {ids.first:,}..{ids.last:,} that PP stage "
                        f"{ids.pp_rank}'s workers never allocated")


def _host_memory_check(need: int, host_memory: int, engines_per_node: int, kept: str) -> Check:
    """The host_memory gate: what one node keeps resident (`kept` says how, per backend) against --host-memory."""
    return Check(name="host_memory", passed=need <= host_memory,
                 reason=f"{engines_per_node} engine(s) on the node keep {need:,} B ({format_bytes(need)}) {kept}; "
                        f"the node has {host_memory:,} B ({format_bytes(host_memory)})")


def _cpu_vs_gpu(gpu_tokens: int | None, cpu: int) -> Check:
    """cpu_smaller_than_gpu: the CPU tier's tokens against the logged GPU KV cache size."""
    if gpu_tokens is None:
        return Check(name="cpu_smaller_than_gpu", passed=True,
                     reason="GPU KV cache size unknown (no KV memory given): not checked")
    return Check(name="cpu_smaller_than_gpu", passed=cpu >= gpu_tokens,
                 reason=f"CPU tier holds {cpu:,} tokens, GPU tier {gpu_tokens:,}"
                 + ("" if cpu >= gpu_tokens else ": the CPU tier cannot hold what the GPU evicts"))


def _shm_gate(pool: Pool, shm_size: int, *, checked: bool) -> Check:
    need = pool.shm_bytes_per_node
    if not need:
        return Check(name="shm", passed=True, reason=f"no /dev/shm region: {pool.shm_none}")
    ok = need <= shm_size
    reason = (f"the node's /dev/shm regions take {need:,} B ({format_bytes(need)}); /dev/shm has {shm_size:,} B "
              f"({format_bytes(shm_size)})")
    if not ok and not checked:
        reason += ": this release does not check at start-up, workers die with SIGBUS when /dev/shm fills"
    return Check(name="shm", passed=ok, reason=reason)
