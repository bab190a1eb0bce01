"""LMCache's multi-process (MP) server as data: the server's settings as its parser and config read them
(`MPServer`), the vLLM side that attaches to it (`MPLayout`: offload.lmcache_mp), and the rules the server applies
before it holds a byte, each citing LMCache 0.5.6 (the wheel's sources; the server's whole option table is
lmcache_mp_flags.py). The pool's arithmetic lives in backends/lmcache_mp_plan.py. Loaded only for layouts that use
the server (start-up time is a target). Pure.

What vLLM starts: LMCacheMPConnector from vLLM 0.23.0 for `--kv-offloading-backend lmcache --kv-offloading-size N`
(config/vllm.py 0.23.0:793-799, the size not passed on: vllm.py STEPS['lmcache_offloading_flag']), or when
--kv-transfer-config names it. From 0.22.0 vLLM's lmcache_mp_connector.py imports LMCache's own connector
(0.22.0:1194-1226 _resolve_lmcache_mp_connector, unless LMCACHE_USE_UPSTREAM_MP is set); before that it runs its
builtin copy, which kvcalc does not model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, known
from ..layout import ModelLayout
from ..records import record

if TYPE_CHECKING:
    from ..layout import Layout
from .vllm import Release

MP_VERSION = "0.5.6"  # the LMCache release whose server kvcalc read (and ran: tests/fixtures/lmcache_mp)
CONNECTOR = "LMCacheMPConnector"
OWN_CONNECTOR: Release = (0, 22, 0)  # vLLM 0.22.0 lmcache_mp_connector.py:1201-1226: LMCache's own connector
GIB = 1 << 30  # "GB" in every server flag is GiB: int(x * (1 << 30)) (v1/distributed/config.py:1095, 1097)
# v1/memory_allocators/lazy_memory_allocator.py:69-70: the lazy pool is pinned in 64 MiB cudaHostRegister calls and
# its heap grows (sbrk) every 1 GiB.
PIN_CHUNK_BYTES = 1 << 26
COMMIT_BYTES = 1 << 30
# v1/distributed/config.py:141 HUGEPAGE_SIZE_BYTES; the native alloc_hugepage_pinned_ptr rounds the size up to it
# (csrc/mem_alloc.cpp _align_hugepage: lea 0x1fffff / and ~0x1fffff in the 0.5.6 .so).
HUGEPAGE_BYTES = 2 << 20
# v1/platform/devices/cuda/cache_context.py:444-449: every registered worker gets a _TempGPUBuffer of
# max_batch_size=4 one-chunk objects (:116-121) and a block-id buffer of 2^20 int64 (:420-423) on its own GPU.
STAGING_OBJECTS = 4
BLOCK_IDS_BYTES = (1 << 20) * 8
EVICTION_POLICIES = ("LRU", "ARC", "IsolatedLRU", "noop")
# The server's settings kvcalc reads (an MPServer field each); the other options are accepted and noted.
MODELLED = ("chunk_size", "l1_size_gb", "l1_use_lazy", "l1_init_size_gb", "l1_align_bytes", "l1_use_hugepages",
            "eviction_policy", "eviction_trigger_watermark", "eviction_ratio", "shm_name", "supported_transfer_mode",
            "l1_manager", "l1_devdax_path", "gds_l1_path", "l2_store_policy",
            "worker_reap_timeout_seconds", "worker_registration_grace_seconds", "grpc_server_workers",
            "runtime_plugin_config", "host", "port")


@record
class MPServer:
    """The MP server's settings, as `lmcache server` (or `python -m lmcache.v1.multiprocess.http_server` /
    `.server`) reads its command line: every field is the option's argparse dest, with the parser's default."""

    chunk_size: int = 256  # --chunk-size (multiprocess/config.py:380-385)
    l1_size_gb: float | None = None  # --l1-size-gb (distributed/config.py:804-809): required
    l1_use_lazy: bool = True  # --l1-use-lazy / --no-l1-use-lazy (:810-815)
    l1_init_size_gb: int = 20  # --l1-init-size-gb, type=int (:816-821)
    l1_align_bytes: int = 4096  # --l1-align-bytes (:822-827)
    l1_use_hugepages: bool = False  # --l1-use-hugepages (:828-839)
    eviction_policy: str | None = None  # --eviction-policy (:904-913): required
    eviction_trigger_watermark: float = 0.8  # (:914-920)
    eviction_ratio: float = 0.2  # (:921-927)
    shm_name: str = ""  # --shm-name (multiprocess/config.py:475-484): "" is SHM off
    supported_transfer_mode: str = "lmcache_driven"  # (multiprocess/config.py:437-447)
    l1_manager: tuple[str, ...] = ()  # --l1-manager JSON, repeatable (distributed/config.py:790-799)
    l1_devdax_path: str | None = None
    gds_l1_path: str | None = None
    l2_store_policy: str = "default"
    worker_reap_timeout_seconds: float = 120.0
    worker_registration_grace_seconds: float = 3600.0
    grpc_server_workers: int = 32
    runtime_plugin_config: str = "{}"
    host: str = "localhost"
    port: int = 5555
    others: tuple[tuple[str, Any], ...] = ()  # options given that change no figure: (dest, value)
    given: tuple[tuple[str, str], ...] = ()  # (dest, where its value came from)

    @property
    def use_lazy(self) -> bool:
        """distributed/config.py:1078: hugepages turn lazy allocation off (an info log, not a refusal)."""
        return self.l1_use_lazy and not self.l1_use_hugepages


@record
class MPLayout:
    """offload.lmcache_mp: the LMCache server an engine's LMCacheMPConnector attaches to, and how vLLM chose it."""

    server: MPServer | None  # None: no server setting given (the pool has no figures)
    selected_by: str  # what made vLLM start the connector, in words
    kv_offloading_size: float | None = None  # vLLM's --kv-offloading-size: selects the connector, sizes nothing
    notes: tuple[str, ...] = ()


def mp_of(layout: Layout) -> MPLayout:
    """The layout's offload.lmcache_mp section, for the MP server's own modules: a layout of that pool has one."""
    mpl = layout.offload.lmcache_mp
    if mpl is None:
        raise InternalError(f"{layout.source}: an LMCache MP stage was given offload.backend {layout.offload.backend}")
    return mpl


def mp_refusal(s: MPServer) -> str | None:
    """The MP server config's own refusal (parse_args_to_mp_server_config -> MPServerConfig.__post_init__,
    v1/multiprocess/config.py:154-178; the runtime plugin config's JSON at :596-599), which `lmcache server`
    meets before the storage config (cli/commands/server.py:103-109 builds mp_config first)."""
    import json

    try:
        json.loads(s.runtime_plugin_config or "{}")
    except ValueError as e:
        return f"ValueError: --runtime-plugin-config is not valid JSON: {e} (v1/multiprocess/config.py:599)"
    reap, grace = s.worker_reap_timeout_seconds, s.worker_registration_grace_seconds
    if s.grpc_server_workers < 1:
        return f"ValueError: grpc server workers must be >= 1; got {s.grpc_server_workers} (config.py:164-167)"
    if not math.isfinite(reap) or reap < 0 or (reap != 0 and reap < 30.0):
        return ("ValueError: worker reap timeout must be 0 (disabled) or >= 30s; keep it >= 3 x your configured "
                f"lmcache.mp.heartbeat_interval (default 10s); got {reap} (v1/multiprocess/config.py:168-173)")
    if not math.isfinite(grace) or grace < reap:
        return (f"ValueError: worker registration grace must be >= the worker reap timeout ({reap}s); got {grace} "
                "(v1/multiprocess/config.py:174-178)")
    return None


def storage_refusal(s: MPServer, free_hugepages: int | None) -> str | None:
    """The storage config's refusal on the legacy L1 flags (parse_args_to_config, v1/distributed/config.py:1000-1130,
    and L1MemoryManagerConfig.__post_init__, :314-344), in LMCache's order. `free_hugepages`: the 2 MiB pages free on
    the host (/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages), None when unknown: LMCache then skips the
    check with a warning (:199-210)."""
    if s.l1_manager and (s.l1_size_gb is not None or s.gds_l1_path is not None or s.l1_devdax_path is not None):
        return "ValueError: Use either --l1-manager or legacy L1 flags (v1/distributed/config.py:1024-1030)"
    if s.l1_manager:
        return None  # the tagged-L1 path: not modelled (inputs refuse it)
    if s.l1_size_gb is None or s.eviction_policy is None:
        return ("ValueError: Legacy L1 configuration requires --l1-size-gb and --eviction-policy "
                "(v1/distributed/config.py:1071-1074)")
    if not math.isfinite(s.l1_size_gb):
        # :1095 int(args.l1_size_gb * (1 << 30)) of nan / inf (argparse's float() takes both).
        what = "ValueError: cannot convert float NaN to integer" if math.isnan(s.l1_size_gb) else \
            "OverflowError: cannot convert float infinity to integer"
        return f"{what} (v1/distributed/config.py:1095, int(--l1-size-gb x 2^30))"
    size = int(s.l1_size_gb * GIB)
    if s.l1_use_hugepages and free_hugepages is not None:
        need = -(-size // HUGEPAGE_BYTES)  # :212
        if free_hugepages < need:
            return (f"RuntimeError: Insufficient hugepages: {free_hugepages} free, {need} required for a {size} byte "
                    "L1 buffer. Grow the 2 MiB hugepage pool (e.g. sysctl vm.nr_hugepages="
                    f"{need}). (v1/distributed/config.py:185-219)")
    if s.l1_devdax_path and s.use_lazy:
        return ("ValueError: l1-devdax-path requires lazy allocation to be disabled. Please set --no-l1-use-lazy. "
                "(v1/distributed/config.py:325-328)")
    if s.l1_devdax_path and s.shm_name:
        return ('ValueError: l1-devdax-path requires SHM to be disabled. Please set --shm-name "". '
                "(v1/distributed/config.py:329-333)")
    if s.l1_use_hugepages and s.shm_name:
        return ('ValueError: l1-use-hugepages is incompatible with shared memory. Please set --shm-name "" to disable '
                "SHM when enabling hugepages. (v1/distributed/config.py:334-338)")
    return None


def allocator_refusal(s: MPServer) -> str | None:
    """What the L1 allocator raises as the server builds it (L1MemoryManager -> create_memory_allocator,
    v1/distributed/memory_manager/l1_memory_manager.py:44-90), on settings the config accepted."""
    align = s.l1_align_bytes
    if align <= 0 or align & (align - 1):
        # lazy_memory_allocator.py:93-94; mixed_memory_allocator.py:46-47 (the same words)
        return ("ValueError: align_bytes must be a positive power of two (v1/memory_allocators/"
                "lazy_memory_allocator.py:93-94, mixed_memory_allocator.py:46-47)")
    size = int(known(s.l1_size_gb, "--l1-size-gb") * GIB)  # (mp_refusal refused a server without one)
    if size < 0 and s.use_lazy:
        # lazy_memory_allocator.py:101 final = align_to(size, 64 MiB); :124-129 torch.empty(final + align - 1).
        n = align_up(size, PIN_CHUNK_BYTES) + align - 1
        return (f"RuntimeError: Trying to create tensor with negative dimension {n}: [{n}] "
                "(v1/memory_allocators/lazy_memory_allocator.py:124-129)")
    return None


def mla_only(model: ModelLayout) -> bool:
    """Whether only the first TP rank of each stage stores: integration/vllm/utils.py:348-356 mla_only = use_mla and
    not the model's is_hybrid (Mamba / linear attention), read by ParallelStrategy (vllm_multi_process_adapter.py:
    395-399, 451-459)."""
    return model.is_mla and not model.has_mamba


def number(x: float) -> str:
    """A float option as a command line spells it, exactly: 100.0 -> '100', 1279.938 -> '1279.938' (repr's shortest
    round trip; float('1279.938') is the value the server reads)."""
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)


def align_up(size: int, align: int) -> int:
    """lazy_memory_allocator.py:44-55 align_to; AddressManager.compute_aligned_size (v1/memory_management.py:
    1361-1371) is the same rounding: (size + align - 1) & ~(align - 1), align a power of two."""
    return (size + align - 1) & ~(align - 1)
