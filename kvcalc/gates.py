"""--check gates over a report: each is named, passes or fails, and says why. Pure; the CLI sets the exit code."""

from __future__ import annotations

from .units import format_bytes

GATES = ("startup", "out_of_bounds", "zero_cpu_blocks", "cpu_smaller_than_gpu", "host_memory", "min_cpu_tokens")


def _gate(name: str, passed: bool, reason: str) -> dict:
    return {"name": name, "passed": passed, "reason": reason}


def refused(version: str, reason: str) -> list[dict]:
    """The checks when the selected release refuses the layout before any number exists."""
    return [_gate("startup", False, f"vLLM {version} refuses to start: {reason}")]


def evaluate(report: dict, *, host_memory: int | None = None, min_cpu_tokens: int | None = None,
             dp_local: int | None = None) -> list[dict]:
    off = report["offload"]
    v = report["vllm_version"]
    if off["startup_error"]:
        return refused(v, off["startup_error"])
    sel = off["selected"]
    unit = "chunks" if sel["unit"] == "chunks" else "blocks"
    checks = [_gate("startup", True, f"vLLM {v} starts the offloading connector with this layout")]
    ids = sel["out_of_bounds_ids"]
    if ids:
        checks.append(_gate("out_of_bounds", False,
                            f"the scheduler can hand out CPU {unit} {ids['first']:,}..{ids['last']:,} that PP stage "
                            f"{ids['pp_rank']}'s workers never allocated"))
    else:
        checks.append(_gate("out_of_bounds", True, "every worker allocated at least the scheduler's CPU count"))
    zero = sel["num_blocks_scheduler"] == 0 or min(sel["num_blocks_workers"]) == 0
    checks.append(_gate("zero_cpu_blocks", not zero,
                        "0 CPU " + unit + ": offloading is configured but stores nothing" if zero else
                        f"{sel['num_blocks_scheduler']:,} CPU {unit}"))
    gpu_tokens = None
    if report["gpu"]["num_blocks"] is not None:
        gpu_tokens = report["gpu"]["num_blocks"] * report["gpu"]["block_size"]
    if gpu_tokens is None:
        checks.append(_gate("cpu_smaller_than_gpu", True, "GPU block count unknown (no KV memory given): not checked"))
    else:
        cpu = sel["cpu_tokens_safe"]
        checks.append(_gate("cpu_smaller_than_gpu", cpu >= gpu_tokens,
                            f"CPU tier holds {cpu:,} tokens, GPU tier {gpu_tokens:,}"
                            + ("" if cpu >= gpu_tokens else ": the CPU tier cannot hold what the GPU evicts")))
    if host_memory is not None:
        replicas = dp_local if dp_local is not None else report["parallel"]["data_parallel_size"]
        need = sel["pinned_bytes_per_engine"] * replicas
        checks.append(_gate("host_memory", need <= host_memory,
                            f"{replicas} engine(s) on the node pin {need:,} B ({format_bytes(need)}); the node has "
                            f"{host_memory:,} B ({format_bytes(host_memory)})"))
    if min_cpu_tokens is not None:
        cpu = sel["cpu_tokens_safe"]
        checks.append(_gate("min_cpu_tokens", cpu >= min_cpu_tokens,
                            f"{cpu:,} CPU tokens every worker can hold; at least {min_cpu_tokens:,} wanted"))
    return checks
