"""--check gates over the report's sections: each is named, passes or fails, and says why. Pure; the CLI sets
the exit code."""

from __future__ import annotations

from .report import Check, GpuSection, OffloadSection, ParallelSection
from .units import format_bytes


def refused(version: str, reason: str) -> list[Check]:
    """The checks when the selected release refuses the layout before any number exists."""
    return [Check(name="startup", passed=False, reason=f"vLLM {version} refuses to start: {reason}")]


def evaluate(gpu: GpuSection, off: OffloadSection, parallel: ParallelSection, version: str, *,
             host_memory: int | None = None, min_cpu_tokens: int | None = None,
             dp_local: int | None = None) -> list[Check]:
    if off.startup_error:
        return refused(version, off.startup_error)
    sel = off.selected
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
    if gpu.num_blocks is None:
        checks.append(Check(name="cpu_smaller_than_gpu", passed=True,
                            reason="GPU block count unknown (no KV memory given): not checked"))
    else:
        gpu_tokens = gpu.num_blocks * gpu.block_size
        cpu = sel.cpu_tokens_safe
        checks.append(Check(name="cpu_smaller_than_gpu", passed=cpu >= gpu_tokens,
                            reason=f"CPU tier holds {cpu:,} tokens, GPU tier {gpu_tokens:,}"
                                   + ("" if cpu >= gpu_tokens else ": the CPU tier cannot hold what the GPU evicts")))
    if host_memory is not None:
        replicas = dp_local if dp_local is not None else parallel.data_parallel_size
        need = sel.pinned_bytes_per_engine * replicas
        checks.append(Check(name="host_memory", passed=need <= host_memory,
                            reason=f"{replicas} engine(s) on the node pin {need:,} B ({format_bytes(need)}); the node "
                                   f"has {host_memory:,} B ({format_bytes(host_memory)})"))
    if min_cpu_tokens is not None:
        cpu = sel.cpu_tokens_safe
        checks.append(Check(name="min_cpu_tokens", passed=cpu >= min_cpu_tokens,
                            reason=f"{cpu:,} CPU tokens every worker can hold; at least {min_cpu_tokens:,} wanted"))
    return checks
