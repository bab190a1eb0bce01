"""The layout keys of the host the CPU tier lives on (host.*), as rows the key table (vocab/keys.py) builds in
its place: (path, kind, the row's fields), in the table's order."""

from __future__ import annotations

from .units import SIZE_HELP


def _row(path: str, kind: str, doc: str, **kw) -> tuple[str, str, dict]:
    """One row: the key's path, kind and fields (its doc among them)."""
    return path, kind, {"doc": doc, **kw}


HOST_ROWS: tuple[tuple[str, str, dict], ...] = (
    _row("host", "section", "the host the CPU tier lives on"),
    _row("host.page_size", "int", "the host's mmap.PAGESIZE, a power of two (4096; 65536 on some arm64)", default=4096,
       minimum=4096, maximum=1 << 30, flag=("--host-page-size",), name="host_page_size", panel="offload",
       help="the host's mmap.PAGESIZE: 4096 (x86-64, default) or 65536 (some arm64 kernels); 0.27+ aligns chunks "
            "to it"),
    _row("host.available_memory", "size", "host memory available on one node when the engine starts (psutil's "
       "available): SGLang's HiCache guard and auto-size", nullable=True, flag=("--host-available",),
       name="host_available", panel="offload",
       help=f"SGLang: host memory available on a node at start-up (the HiCache guard). SIZE: {SIZE_HELP}"),
    _row("host.cgroup_limit", "size", "the container's cgroup memory.max (--k8s: the pod's memory limit): SGLang's "
       "HiCache reads min(available, the cgroup's headroom)", nullable=True, flag=("--host-cgroup-limit",),
       name="host_cgroup_limit", panel="offload",
       help=f"SGLang: the container's cgroup memory.max (a pod's memory limit). SIZE: {SIZE_HELP}"),
    _row("host.cgroup_high", "size", "the cgroup's memory.high", nullable=True, flag=("--host-cgroup-high",),
       name="host_cgroup_high", panel="offload", help=f"SGLang: the cgroup's memory.high. SIZE: {SIZE_HELP}"),
    _row("host.cgroup_usage", "size", "the cgroup's memory.current when SGLang starts (default 0)", nullable=True,
       flag=("--host-cgroup-usage",), name="host_cgroup_usage", panel="offload",
       help=f"SGLang: the cgroup's memory.current at start-up (default 0). SIZE: {SIZE_HELP}"),
    _row("host.cgroup_file_cache", "size", "the cgroup's reclaimable page cache (memory.stat active_file + "
       "inactive_file)", nullable=True, flag=("--host-cgroup-file-cache",), name="host_cgroup_file_cache",
       panel="offload", help=f"SGLang: the cgroup's active_file + inactive_file (reclaimable). SIZE: {SIZE_HELP}"),
    _row("host.cpu_offload_gb", "gib", "vLLM's --cpu-offload-gb: GiB of weights each GPU rank keeps in pinned host "
       "memory (off a predicted budget's GPU weights; the host_memory gate counts them)", minimum=0, cap=1 << 30,
       default=0, flag=("--cpu-offload-gb",), name="cpu_offload_gb", panel="offload",
       help="vLLM's weights offload: GiB per GPU rank in pinned host memory (the host_memory gate counts it)",
       vllm=("--cpu-offload-gb",), vllm_parse="float", vllm_args="changed"),
    _row("host.pinned_round_threshold_mb", "int", "PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb (torch 2.13+, "
       "vLLM 0.27+)", minimum=0, cap=1 << 40, nullable=True, flag=("--pinned-round-threshold-mb",),
       name="pinned_round_threshold_mb", panel="offload",
       help="PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb: pinned allocations above it are not rounded to a power "
            "of two (torch 2.13+, vLLM 0.27+; torch 2.9.1 - 2.11.0 always round)"),
    _row("host.free_hugepages", "int", "2 MiB hugepages free on a node (LMCache's MP server checks them at start)",
       minimum=0, nullable=True, flag=("--free-hugepages",), name="free_hugepages", panel="offload",
       help="the node's free 2 MiB hugepages: LMCache's MP server refuses --l1-use-hugepages with fewer"),
)
