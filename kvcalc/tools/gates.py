"""--check gates over the report's sections: each is named, passes or fails, and says why. Pure; the CLI sets
the exit code."""

from __future__ import annotations

from ..report.report import Check, GpuSection, OffloadSection, ParallelSection
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


def evaluate(gpu: GpuSection, off: OffloadSection, parallel: ParallelSection, version: str, *,
             host_memory: int | None = None, min_cpu_tokens: int | None = None, shm_size: int | None = None,
             engines_per_node: int = 1, shm_checked: bool = False, shm_message_named: bool = False) -> list[Check]:
    """The gates. `shm_checked`: the release refuses to start when /dev/shm is short (0.28+);
    `shm_message_named`: its message names the allocation (0.31+)."""
    if off.startup_error:
        return refused(version, off.startup_error)
    if off.lmcache is not None:
        return _lmcache(gpu, off.lmcache, version, host_memory=host_memory, min_cpu_tokens=min_cpu_tokens,
                        shm_size=shm_size, engines_per_node=engines_per_node)
    sel = off.selected
    host = sel.host
    if shm_size is not None and shm_checked and host.shm_bytes_per_engine:
        why = shm_refusal(host.shm_bytes_per_engine, engines_per_node, shm_size, version, shm_message_named)
        if why:
            return refused(version, why) + [_shm_gate(host, shm_size, checked=True)]
    
    unit = "chunks" if sel.unit == "chunks" else "blocks"
    checks = [Check(name="startup", passed=True, reason=f"vLLM {version} starts the offloading connector with this layout")]
    ids = sel.out_of_bounds_ids
    if ids:
        checks.append(Check(name="out_of_bounds", passed=False,
                            reason=f"the scheduler can hand out CPU {unit} {ids.first:,}..{ids.last:,} that PP stage "
                                   f"{ids.pp_rank}'s workers never allocated"))
    else:
        checks.append(Check(name="out_of_bounds", passed=True,
                            reason="every worker allocated at least the scheduler's CPU count"))
    zero = sel.num_blocks_scheduler == 0 or min(sel.num_blocks_workers) == 0
    checks.append(Check(name="zero_cpu_blocks", passed=not zero,
                        reason="0 CPU " + unit + ": offloading is configured but stores nothing" if zero else
                        f"{sel.num_blocks_scheduler:,} CPU {unit}"))
    # Like with like: both are vLLM's group-aware token counts (the logged GPU KV cache size, and the CPU tier's
    # tokens of max_model_len requests every worker holds).
    checks.append(_cpu_vs_gpu(gpu, sel.cpu_tokens_safe))
    if host_memory is not None:
        checks.append(_host_memory_check(
            host.resident_bytes_per_node, host_memory, engines_per_node,
            f"resident ({host.pinned_rounding} rounding; {host.requested_bytes_per_engine:,} B asked per engine)"))
    if shm_size is not None:
        checks.append(_shm_gate(host, shm_size, checked=shm_checked))
    if min_cpu_tokens is not None:
        cpu = sel.cpu_tokens_safe
        checks.append(Check(name="min_cpu_tokens", passed=cpu >= min_cpu_tokens,
                            reason=f"{cpu:,} CPU tokens every worker can hold; at least {min_cpu_tokens:,} wanted"))
    return checks


def _host_memory_check(need: int, host_memory: int, engines_per_node: int, kept: str) -> Check:
    """The host_memory gate: what one node keeps resident (`kept` says how, per backend) against --host-memory."""
    return Check(name="host_memory", passed=need <= host_memory,
                 reason=f"{engines_per_node} engine(s) on the node keep {need:,} B ({format_bytes(need)}) {kept}; "
                        f"the node has {host_memory:,} B ({format_bytes(host_memory)})")


def _cpu_vs_gpu(gpu: GpuSection, cpu: int) -> Check:
    """cpu_smaller_than_gpu: the CPU tier's tokens against the logged GPU KV cache size."""
    g = gpu.kv_cache_size_tokens
    if g is None:
        return Check(name="cpu_smaller_than_gpu", passed=True,
                     reason="GPU KV cache size unknown (no KV memory given): not checked")
    return Check(name="cpu_smaller_than_gpu", passed=cpu >= g, reason=f"CPU tier holds {cpu:,} tokens, GPU tier {g:,}"
                 + ("" if cpu >= g else ": the CPU tier cannot hold what the GPU evicts"))


def _shm_gate(host, shm_size: int, *, checked: bool) -> Check:
    need = host.shm_bytes_per_node
    if not need:
        return Check(name="shm", passed=True, reason="no /dev/shm region: the workers pin private tensors")
    ok = need <= shm_size
    reason = (f"the node's /dev/shm regions take {need:,} B ({format_bytes(need)}); /dev/shm has {shm_size:,} B "
              f"({format_bytes(shm_size)})")
    if not ok and not checked:
        reason += ": this release does not check at start-up, workers die with SIGBUS when /dev/shm fills"
    return Check(name="shm", passed=ok, reason=reason)


def _lmcache(gpu: GpuSection, lc, version: str, *, host_memory: int | None, min_cpu_tokens: int | None,
             shm_size: int | None, engines_per_node: int) -> list[Check]:
    """The gates on LMCache's pool: the same names, LMCache's figures (no scheduler/worker split, so no
    out_of_bounds gate; the in-process pool is cudaHostAlloc memory, not /dev/shm)."""
    if not lc.modelled:
        return [Check(name="startup", passed=False,
                      reason=f"vLLM {version} hands offloading to {lc.connector}, whose pool lives in the LMCache server: "
                             "kvcalc cannot gate it")]
    checks = [Check(name="startup", passed=True, reason=f"vLLM {version} starts {lc.connector} (LMCache "
                                                         f"{lc.lmcache_version}) with this layout")]
    tokens = lc.tokens_per_engine
    zero = tokens == 0
    checks.append(Check(name="zero_cpu_blocks", passed=not zero,
                        reason="LMCache's CPU tier holds 0 tokens: offloading is configured but stores nothing" if zero
                        else f"{min(st.chunks_per_rank for st in lc.stages if st.storing_ranks):,} chunks per storing "
                             "rank"))
    checks.append(_cpu_vs_gpu(gpu, tokens))
    if host_memory is not None:
        checks.append(_host_memory_check(
            lc.resident_bytes_per_node, host_memory, engines_per_node,
            f"pinned by LMCache ({lc.storing_ranks} rank(s) x {lc.max_local_cpu_size:g} GiB)"))
    if shm_size is not None:
        checks.append(Check(name="shm", passed=True, reason="no /dev/shm region: LMCache pins its pool with "
                                                            "cudaHostAlloc"))
    if min_cpu_tokens is not None:
        checks.append(Check(name="min_cpu_tokens", passed=tokens >= min_cpu_tokens,
                            reason=f"{tokens:,} CPU tokens LMCache holds; at least {min_cpu_tokens:,} wanted"))
    return checks
