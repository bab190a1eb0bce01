"""What every offload backend gives the rest of kvcalc: a `Pool` (the host-side pool of one engine, in figures that
mean the same whatever the backend), and the `OffloadBackend` protocol that builds it from the GPU stage.

Gates, sweep rows, the sizing commands, --compare-backends and the verdict read a `Pool` and nothing else of a
backend; `NativePool` (backends/native.py) and `LMCachePool` (backends/lmcache.py) add their own detail for the
detail renderers. A new backend is one module here (with its release table under vocab/releases/) whose `BACKEND`
implements the protocol, and its name in `vocab.layout.OFFLOAD_BACKENDS`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable

from ..vocab.records import field, output, record
from ..vocab.units import cdiv, format_bytes, gi_quantity

if TYPE_CHECKING:
    from ..engines.vllm import GpuStage
    from ..vocab.layout import Layout
    from ..vocab.releases.vllm import Behaviour


@record
class OutOfBounds:
    """CPU ids the scheduler may hand out that a worker never allocated."""

    pp_rank: int = field("the worst stage")
    first: int = field("first bad id")
    last: int = field("last bad id")


@record
class NotModelled:
    """A connector whose pool lives outside the engine and whose settings were not given (LMCache's multi-process
    server without its command line): the pool has no figures, and no gate can pass."""

    connector: str
    home: str  # where the pool lives, and what was not given


@record
class ChunksPerRequest:
    """The CPU chunks one max_model_len request occupies: one per key (block hash, KV cache group)."""

    per_group: tuple[int, ...] = field("per KV cache group: cdiv(max_model_len, tokens per chunk), capped by its "
                                       "window")

    @output("their sum")
    def total(self) -> int:
        return sum(self.per_group)


@record
class Capacity:
    """What the CPU tier holds, by vLLM 0.33.0's CPUOffloadingInfo (v1/kv_offload/cpu/common.py); for earlier
    releases the same quantities by that release's rules."""

    cpu_num_chunks: int = field("CPU chunks (blocks before 0.26) the scheduler hands out")
    cpu_blocks_per_chunk: int = field("GPU blocks per chunk (the block-size factor before 0.26)")
    cpu_kv_cache_size_bytes: int = field("chunks x aligned chunk bytes")
    cpu_kv_cache_size_tokens: int | None = field("tokens of max_model_len requests the tier holds: chunks x "
                                                 "max_model_len // chunks per request; null without max_model_len")
    chunks_per_group: tuple[int, ...] | None = field(json=False)  # per KV cache group; None without max_model_len

    @output("chunks one max_model_len request occupies")
    def chunks_per_request(self) -> ChunksPerRequest | None:
        return None if self.chunks_per_group is None else ChunksPerRequest(per_group=self.chunks_per_group)


@record
class Allocation:
    """Pinned host allocations of one size on one worker."""

    count: int = field("how many")
    size: int = field("bytes each, as requested")
    resident: int = field("bytes each, as resident (PyTorch's pinned allocator rounds up)")


@record
class HostMemory:
    """Host memory the CPU tier really takes."""

    requested_bytes_per_engine: int = field("cpu_bytes_to_use: what was asked for")
    resident_bytes_per_worker: tuple[int, ...] = field("per PP stage: one worker's resident bytes")
    resident_bytes_per_engine: int = field("all workers of one engine")
    resident_bytes_per_node: int = field("the engines (DP replicas) on one node, or the node with the most")
    shm_bytes_per_engine: int = field("the /dev/shm region of one engine (0 without a shared region)")
    shm_bytes_per_node: int = field("/dev/shm one node must have free")
    host_page_size: int = field("mmap.PAGESIZE the region's chunks are aligned to")
    pinned_rounding: str = field("power_of_two | none | threshold:N (MiB, PYTORCH_ALLOC_CONF)")
    allocations_per_worker: tuple[tuple[Allocation, ...], ...] = field(
        "per PP stage: the worker's private pinned tensors (empty with a shared region)")
    shared_region: bool = field(json=False)
    # The worst-rounded tensor (most bytes lost to rounding) and the largest budget that keeps it at the power
    # of two below: None when nothing rounds up.
    worst_allocation: Allocation | None = field(default=None, json=False)
    smaller_budget: int | None = field(default=None, json=False)

    @output("why resident differs from requested, and what to do")
    def note(self) -> str | None:
        """The worst rounding, with the exact budget that avoids it: 61 tensors of 268.52 MiB each round up to
        512 MiB; 65,482,260,480 B keeps each at 256 MiB (pinned.py worst_rounding)."""
        a = self.worst_allocation
        if a is not None:
            lower = a.resident // 2
            # The tip only when rounding costs more than 1/8 of the tensor: 255.94 MiB -> 256 MiB needs no halving.
            tip = (f": a budget of {self.smaller_budget:,} B ({format_bytes(self.smaller_budget)}) keeps each at "
                   f"{format_bytes(lower)}" if self.smaller_budget and a.resident - a.size > a.size // 8 else "")
            return (f"{a.count} pinned tensor(s) of {format_bytes(a.size)} per worker each round up to "
                    f"{format_bytes(a.resident)} (PyTorch's pinned allocator rounds to a power of two){tip}")
        if self.shared_region and self.resident_bytes_per_engine != self.requested_bytes_per_engine:
            return (f"the /dev/shm region is whole chunks ({format_bytes(self.resident_bytes_per_engine)} of the "
                    f"{format_bytes(self.requested_bytes_per_engine)} asked for); no allocator rounding")
        return None


@record
class SizeTarget:
    """What `kvcalc size` asks: hold this many tokens, or this many units (CPU blocks/chunks, LMCache chunks), or
    keep one node's resident host memory under this many bytes (exactly one is set)."""

    tokens: int | None = None
    units: int | None = None
    resident: int | None = None


# The budget `kvcalc size` plans a pool with to learn the bytes of one unit (a source no input can spell: a budget of
# 0 given by a user is a start-up refusal).
SIZING_BUDGET = "(sizing: no budget)"


class Pool:
    """The host-side pool of one engine, as every consumer reads it whatever the backend. Subclasses are records
    that derive these figures from their own plan (lazily: a plain API plan reads none of them).

    Counts are in the backend's `unit` (CPU blocks, CPU chunks, LMCache chunks); `tokens` is what every worker
    (or storing rank) holds; bytes are one engine's, or one node's where the name says so."""

    if TYPE_CHECKING:  # read-only to every consumer: a subclass gives each as a field, a property or a constant
        # the backend's name (vocab.layout.OFFLOAD_BACKENDS)
        @property
        def backend(self) -> str: ...
        # what vLLM starts, in a sentence: "the offloading connector", "LMCacheConnectorV1 (LMCache …)"
        @property
        def connector(self) -> str: ...
        # the column a sweep or size row shows: the release family, or the backend's name
        @property
        def family(self) -> str: ...
        # why the selected release refuses to start the connector
        @property
        def startup_error(self) -> str | None: ...
        # the pool lives outside the engine: no figures
        @property
        def not_modelled(self) -> NotModelled | None: ...
        # the budget one engine was given (None: none given: the GPU side alone)
        @property
        def budget_bytes(self) -> int | None: ...
        # "blocks" | "chunks" | "lmcache chunks"
        @property
        def unit(self) -> str: ...
        # units the scheduler hands out (a backend without that split: the worst rank's)
        @property
        def units_scheduler(self) -> int | None: ...
        # units the worst worker (storing rank) holds
        @property
        def units_worst(self) -> int | None: ...
        # bytes one unit takes (the worst side)
        @property
        def unit_bytes(self) -> int | None: ...
        @property
        def tokens_per_unit(self) -> int | None: ...
        # tokens of max_model_len requests every worker holds
        @property
        def tokens(self) -> int | None: ...
        # who holds them, for a sentence: "every worker can hold", "LMCache holds"
        @property
        def tokens_holder(self) -> str: ...
        # a scheduler count beside the workers' (the out-of-bounds question applies)
        @property
        def splits_scheduler(self) -> bool: ...
        @property
        def out_of_bounds(self) -> OutOfBounds | None: ...
        # configured, but stores nothing
        @property
        def empty(self) -> bool: ...
        # what it holds, in words ("1,234 CPU blocks")
        @property
        def stored(self) -> str: ...
        # what "stores nothing" looks like, in words ("0 CPU blocks")
        @property
        def nothing(self) -> str: ...
        @property
        def pool_bytes_per_engine(self) -> int | None: ...
        @property
        def resident_bytes_per_engine(self) -> int | None: ...
        @property
        def resident_bytes_per_node(self) -> int | None: ...
        @property
        def shm_bytes_per_engine(self) -> int: ...
        @property
        def shm_bytes_per_node(self) -> int: ...
        # budget minus what the pool takes
        @property
        def unused_bytes(self) -> int | None: ...
        # how its resident bytes are kept, for the host_memory gate
        @property
        def kept(self) -> str: ...
        # why there is no /dev/shm region, when there is none
        @property
        def shm_none(self) -> str: ...
        # what vLLM publishes of it (0.33+ vllm:kv_offload_config_info), when it does
        @property
        def capacity(self) -> Capacity | None: ...
        @property
        def notes(self) -> tuple[str, ...]: ...
        @property
        def warnings(self) -> tuple[str, ...]: ...
        # the headline, one or two sentences
        @property
        def verdict(self) -> str: ...
        # Environment variables (names or prefixes) its figures depend on: a gate over them cannot pass when a
        # manifest gives the server such a variable kvcalc cannot read.
        @property
        def env_dependent(self) -> tuple[str, ...]: ...
        # Host bytes a standalone server process pins for the pool on each node (the LMCache MP server's L1),
        # outside vLLM's processes and containers: the host_memory gate checks them against the server's own
        # limit. None: the pool is the engine's own.
        @property
        def server_resident_bytes(self) -> int | None: ...
        # vLLM's pools: the connector's `vllm serve` flags (vllm-args; `common`: the engine's own flags)
        def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict: ...
    else:
        env_dependent = ()  # (the defaults: none)
        server_resident_bytes = None

    # What --compare-versions shows of the pool per release: the formula families' columns (the native
    # connector's), or the backend's own section (SimpleCPUOffloadConnector's: SimplePool.simple), else nothing.
    families: bool = False
    simple: Any = None


if TYPE_CHECKING:  # the interface, for readers and type checkers (a Protocol class costs start-up time)
    from typing import Protocol

    class OffloadBackend(Protocol):
        """How a backend plugs in: the hybrid manager it allows, its pool, how it spells an engine's budget."""

        name: str
        title: str  # how a sentence names it: "native", "LMCache"
        no_offload_info: str | None  # why vLLM's vllm:kv_offload_config_info does not describe its pool

        def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
            """Whether vLLM runs the hybrid KV cache manager with this connector, and why."""

        def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> Pool:
            """The pool of one engine on this GPU stage (`selected_only`: the selected release's figures alone)."""

        def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
            """`layout` with this backend holding `budget_bytes` per engine (--compare-backends); `source`: the backend
            whose budget it is (its title)."""

        def size(self, layout: Layout, target: SizeTarget, plan: Callable) -> Any:
            """The budget that holds `target` (`plan`: the pipeline's Layout -> Plan): an answer record with
            `backend`, `refusal` (exit 2 when set) and `document(source, target)` (its JSON form)."""


_LOADED: dict[str, OffloadBackend] = {}  # at most one entry per name of vocab.layout.OFFLOAD_BACKENDS


def backend(name: str) -> OffloadBackend:
    """The backend of that name (vocab.layout.OFFLOAD_BACKENDS), imported on first use: a plan of one backend
    never loads another's module (start-up time is a target)."""
    found = _LOADED.get(name)
    if found is None:
        found = _LOADED[name] = import_module(f"{__package__}.{name}").BACKEND
    return found


def node_peak(per_rank: list[int], nnodes: int, engines_per_node: int) -> int:
    """Host bytes of the node with the most: an engine's ranks (PP x TP order) fill its nnodes nodes in order,
    times the engines (DP replicas) one node holds."""
    if nnodes <= 1:
        return sum(per_rank) * engines_per_node
    k = cdiv(len(per_rank), nnodes)
    return max(sum(per_rank[i:i + k]) for i in range(0, len(per_rank), k)) * engines_per_node


# Host memory a node needs besides the CPU pool, per GPU worker process: Python, torch, the CUDA context, NCCL.
# An estimate from measurements: vLLM PR #48436 (TP 2, pinned tensors): "--kv-offloading-size 64 would cause
# per-worker RSS of ~35GB (32GB + 3), and --kv-offloading-size 80 ... ~67GB (64GB + 3)" -> 3 GiB a worker beyond
# its pool (the "32GB" is the 32 GiB share of 64 GiB). vLLM #53042 measured more on a GB200 node at idle (anon
# 35.0 GiB for 4 GPUs, API server and engine core included): --host-overhead sets a node's figure.
OVERHEAD_PER_WORKER = 3 << 30
OVERHEAD_BASIS = "estimate: 3 GiB per GPU worker process (vLLM PR #48436: per-worker RSS = pool share + ~3 GiB)"


def workers_on_node(parallel) -> int:
    """GPU worker processes on the busiest node: an engine's TP x PP ranks over its nodes, times the engines a node
    holds."""
    ranks = parallel.tensor_parallel_size * parallel.pipeline_parallel_size
    return -(-ranks // parallel.nodes_per_engine) * parallel.engines_per_node


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


def pod_resources(pool: Pool) -> dict | None:
    """What a pod running one engine must grant its CPU tier: the resident host bytes as a memory limit, and the
    /dev/shm region (0.27+ shared region) as the emptyDir sizeLimit, in whole Gi rounded up (68,719,476,737 B ->
    65Gi). None when the release would not start or there is no pool."""
    if pool.startup_error or pool.resident_bytes_per_engine is None:
        return None
    shm = pool.shm_bytes_per_engine
    return {"memory_limit": gi_quantity(pool.resident_bytes_per_engine),
            "memory_limit_bytes": pool.resident_bytes_per_engine,
            "shm_size_limit": gi_quantity(shm) if shm else None, "shm_size_limit_bytes": shm}


def largest(hi: int, fits: Callable[[int], Any]) -> int:
    """The largest n in 0..hi with fits(n), for a fits that holds up to some n and not after (a binary search)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
