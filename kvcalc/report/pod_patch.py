"""`kvcalc vllm-args --k8s FILE`: what the manifest's vLLM container must be granted for this plan, against what it
grants now, as a strategic-merge patch of its pod template (memory limit: the pool's resident bytes plus the
process overhead the host_memory gate counts, rounded up to whole Gi; /dev/shm: the offload region). Only a grant
that is short is patched; one that suffices is kept as it is."""

from __future__ import annotations

from ..vocab.units import format_bytes

GI = 1 << 30


def _gi(n: int) -> str:
    return f"{-(-n // GI)}Gi"


def manifest_patch(grant, pod: dict | None, overhead: int) -> dict | None:
    """{needs, grants, yaml} for the manifest's container; None when the plan needs nothing of a pod (no pool, or
    a release that would not start)."""
    if pod is None:
        return None
    memory = pod["memory_limit_bytes"] + overhead
    shm = pod["shm_size_limit_bytes"] or 0
    name = grant.source.rsplit("container ", 1)[-1].strip("'")
    now_mem = "no memory limit" if grant.memory_limit is None else f"memory limit {format_bytes(grant.memory_limit)}"
    now_shm = grant.shm.how if grant.shm.size is None else f"/dev/shm {format_bytes(grant.shm.size)}"
    mem_ok = grant.memory_limit is not None and grant.memory_limit >= memory
    shm_ok = not shm or (grant.shm.size is not None and grant.shm.size >= shm)
    lines = [f"# {grant.source}",
             f"# needs: memory limit >= {format_bytes(memory)} (the CPU pool's resident bytes + "
             f"{format_bytes(overhead)}"
             f" of process memory, an estimate)" + (f", /dev/shm >= {format_bytes(shm)}" if shm else ""),
             f"# grants: {now_mem} ({'enough: keep it' if mem_ok else 'NOT enough'}); {now_shm}"
             + ("" if not shm else f" ({'enough: keep it' if shm_ok else 'NOT enough'})")]
    # Only what is short is patched: a grant that suffices is never lowered (issue 35: a 400Gi limit called
    # enough was patched down to what the plan needs).
    if mem_ok and shm_ok:
        lines.append("# nothing to patch: the manifest grants what this plan needs")
    else:
        lines += ["# patch (strategic merge, under the workload's pod template spec):",
                  "containers:", f"  - name: {name}"]
        if not mem_ok:
            lines += ["    resources:", "      limits:", f"        memory: {_gi(memory)}"]
        if not shm_ok:
            lines += ["    volumeMounts:", "      - {name: dshm, mountPath: /dev/shm}",
                      "volumes:", f"  - {{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {_gi(shm)}}}}}"]
    return {"needs_memory_bytes": memory, "needs_shm_bytes": shm, "memory_enough": mem_ok, "shm_enough": shm_ok,
            "patch_needed": not (mem_ok and shm_ok), "yaml": "\n".join(lines) + "\n"}
