"""vLLM's SimpleCPUOffloadConnector per release, as data: the connector's own config (`SimpleLayout`, the
`offload.simple` keys under vLLM's kv_connector_extra_config names) and one row per behaviour that changed between
releases (`SIMPLE_STEPS`, each step citing file:line of the release where it first holds). Every release from 0.19.0
(the first that has the connector) to 0.33.0 was read from its wheel (`pip download vllm==X --no-deps`:
distributed/kv_transfer/kv_connector/v1/simple_cpu_offload_connector.py, v1/simple_kv_offload/{manager,worker,
sizing,disk_backend}.py, config/vllm.py _post_init_kv_transfer_config, envs.py); 0.18.1 has none of these files.
Loaded only for layouts that select the connector (start-up time is a target). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InternalError
from ..records import record
from .vllm import Release, Step

if TYPE_CHECKING:
    from ..layout import Layout

FIRST: Release = (0, 19, 0)
CONNECTOR = "SimpleCPUOffloadConnector"
ENV_VAR = "VLLM_USE_SIMPLE_KV_OFFLOAD"
# 0.19.0 simple_cpu_offload_connector.py:42 (0.33.0 :54): DEFAULT_CPU_CAPACITY_BYTES = 8 * (1024**3), what
# int(extra_config.get("cpu_bytes_to_use", ...)) takes when the key is absent.
DEFAULT_CPU_BYTES = 8 << 30
# 0.28.0 simple_cpu_offload_connector.py:103 (0.33.0 :142): disk_capacity_bytes default 100 * (1024**3), per rank.
DEFAULT_DISK_BYTES = 100 << 30
# 0.28.0 v1/simple_kv_offload/disk_backend.py:33 _ALIGNMENT = 4096: O_DIRECT needs a block's bytes to be a multiple.
DISK_ALIGNMENT = 4096
# 0.28.0 simple_cpu_offload_connector.py:46 (0.33.0 :58) _DISK_ONLY_KEYS, warned about and ignored in CPU mode.
DISK_ONLY_KEYS = ("disk_path", "disk_capacity_bytes", "disk_buffer_slots", "use_page_cache")
# vLLM's own messages, as the releases raise or log them.
PREFIX_OFF = ("Detected prefix caching disabled, disabling CPU offload since it requires prefix caching.")
NO_DISK_PATH = 'kv_offload_backend="disk" requires disk_path to be set.'
NO_DISK_CAPACITY = 'kv_offload_backend="disk" requires disk_capacity_bytes > 0.'


@record
class SimpleLayout:
    """The connector's kv_connector_extra_config as the selected release reads it (offload.simple), with how the
    connector was selected."""

    cpu_bytes_to_use_per_rank: int | None = None  # overrides cpu_bytes_to_use // world_size (a warning if they differ)
    num_cpu_blocks: int | None = None  # 0.33.0+: the pool size, checked against each rank's capacity
    kv_offload_backend: str = "cpu"  # cpu | disk (0.28.0+)
    disk_path: str | None = None
    disk_capacity_bytes: int = DEFAULT_DISK_BYTES  # per rank
    disk_buffer_slots: int = 2
    use_page_cache: bool = False
    lazy_offload: bool = False
    given: tuple[str, ...] = ()  # the extra_config keys written (the disk-only warning names them)
    selected_by: str = "offload.backend simple"  # what made vLLM start this connector, in words
    budget_default: bool = False  # cpu_bytes_to_use was not given: the connector's 8 GiB default


def simple_of(layout: Layout) -> SimpleLayout:
    """The layout's offload.simple section, for the connector's own modules: a layout of backend simple has one."""
    s = layout.offload.simple
    if s is None:
        raise InternalError(f"{layout.source}: a SimpleCPUOffloadConnector stage was given offload.backend "
                            f"{layout.offload.backend}")
    return s


def simple_budget(layout: Layout) -> int:
    """A simple layout's cpu_bytes_to_use: validation always sets one (the connector's 8 GiB default if none)."""
    cpu = layout.offload.cpu_bytes_to_use
    if cpu is None:
        raise InternalError(f"{layout.source}: a SimpleCPUOffloadConnector layout without its budget")
    return cpu


# One row per behaviour: steps in release order; a release takes the value of the last step at or below it. Each
# step cites the release where it first holds (and the one before, where the difference shows).
SIMPLE_STEPS: dict[str, tuple[Step, ...]] = {
    "available": (
        Step((0, 0, 0), False, "0.18.1 distributed/kv_transfer/kv_connector/factory.py:115: no "
                               "SimpleCPUOffloadConnector registered: 'Unsupported connector type'; envs.py has no "
                               "VLLM_USE_SIMPLE_KV_OFFLOAD"),
        Step(FIRST, True, "0.19.0 kv_connector/factory.py:219 registers SimpleCPUOffloadConnector; envs.py:1666 "
                          "VLLM_USE_SIMPLE_KV_OFFLOAD; config/vllm.py:660 selects it for --kv-offloading-size")),
    # How a worker finds its bytes per CPU block (the scheduler's count is max(1, N x capacity // the GPU KV bytes)
    # of rank 0 in every release: manager.py _derive_cpu_config).
    "worker_bytes": (
        Step((0, 0, 0), "storages", "0.19.0 v1/simple_kv_offload/worker.py:98-142: per unique storage "
                                    "storage.nbytes() // num_blocks (K/V split when a dim's stride exceeds it), "
                                    "summed; num_cpu_blocks = max(1, capacity // sum)"),
        Step((0, 29, 0), "first_view", "0.29.0 v1/simple_kv_offload/worker.py:103-127: one backing allocation, viewed "
                                       "as (-1, num_blocks, the first layer's block bytes): a RuntimeError when the "
                                       "bytes per block are not a multiple of it (0.28.0: per storage)"),
        Step((0, 30, 0), "regions", "0.30.0 v1/simple_kv_offload/worker.py:108-147: each KVCacheTensor's "
                                    "block-strided regions (one per layer when the layer stride is outermost), "
                                    "de-duplicated and summed")),
    # What the scheduler divides by: the sum of the GPU KV cache tensors, size[0] for packed ones, the backing
    # allocation; the same bytes for every layout kvcalc models (no packed tensors).
    "scheduler_total": (
        Step((0, 0, 0), "sum", "0.19.0 v1/simple_kv_offload/manager.py:168-170: sum(t.size for t in "
                               "kv_cache_tensors); max(1, num_gpu_blocks * capacity // that)"),
        Step((0, 24, 0), "packed", "0.24.0 v1/simple_kv_offload/manager.py:191-194: is_packed -> "
                                   "kv_cache_tensors[0].size (0.23.0: the sum)"),
        Step((0, 29, 0), "backing", "0.29.0 v1/simple_kv_offload/manager.py:199: kv_cache_tensors[0].size, the one "
                                    "backing allocation")),
    # 0.33.0: every worker's count goes through an all-reduce MIN and the engine hands the MIN to the scheduler.
    "min_over_workers": (
        Step((0, 0, 0), False, "0.32.0 v1/simple_kv_offload/worker.py: num_cpu_blocks = max(1, capacity // bytes per "
                               "block) per worker; the scheduler computes its own count"),
        Step((0, 33, 0), True, "0.33.0 v1/simple_kv_offload/sizing.py:20-32 all-reduce MIN over the world group; "
                               "v1/executor/abstract.py:166 min over workers; v1/engine/core.py:373-387 "
                               "simple_cpu_offload_num_blocks -> manager.py _derive_cpu_config")),
    "num_cpu_blocks_key": (
        Step((0, 0, 0), False, "0.32.0 simple_cpu_offload_connector.py: no num_cpu_blocks key"),
        Step((0, 33, 0), True, "0.33.0 simple_cpu_offload_connector.py:122-126 num_cpu_blocks (a positive int); "
                               "worker.py:182-192 between 1 and the local capacity")),
    "disk_tier": (
        Step((0, 0, 0), False, "0.27.1 simple_cpu_offload_connector.py: no kv_offload_backend (CPU only)"),
        Step((0, 28, 0), True, "0.28.0 simple_cpu_offload_connector.py:44-118 kv_offload_backend cpu|disk, disk_path "
                               "required; worker.py:177-188 max(1, disk_capacity_bytes // bytes per block) slots in "
                               "{disk_path}.rank_{device}")),
    "disk_capacity_checked": (
        Step((0, 0, 0), False, "0.29.0 simple_cpu_offload_connector.py: disk_capacity_bytes <= 0 accepted; the "
                               "scheduler then sizes from the CPU capacity (manager.py:83)"),
        Step((0, 30, 0), True, "0.30.0 simple_cpu_offload_connector.py:115: disk_capacity_bytes <= 0 raises")),
    "disk_alignment_page_cache": (
        Step((0, 0, 0), False, "0.29.0 v1/simple_kv_offload/disk_backend.py:102: bytes per block % 4096 asserted "
                               "whatever use_page_cache"),
        Step((0, 30, 0), True, "0.30.0 v1/simple_kv_offload/disk_backend.py:104: asserted only without "
                               "use_page_cache")),
}


class SimpleBehaviour:
    """What one release's SimpleCPUOffloadConnector does (fields: SIMPLE_STEPS)."""

    __slots__ = tuple(SIMPLE_STEPS)
    if TYPE_CHECKING:  # one attribute per SIMPLE_STEPS row, set by __init__
        available: bool
        worker_bytes: str
        scheduler_total: str
        min_over_workers: bool
        num_cpu_blocks_key: bool
        disk_tier: bool
        disk_capacity_checked: bool
        disk_alignment_page_cache: bool

    def __init__(self, release: Release):
        for name, steps in SIMPLE_STEPS.items():
            value = steps[0].value
            for step in steps:
                if release >= step.first:
                    value = step.value
            setattr(self, name, value)


def simple_behaviour(release: Release) -> SimpleBehaviour:
    return SimpleBehaviour(release)


def env_enabled(value: str) -> bool:
    """envs.py (0.19.0:1666, 0.33.0:2241): bool(int(os.getenv("VLLM_USE_SIMPLE_KV_OFFLOAD", "0"))); a value int()
    does not read raises ValueError in vLLM (ValueError here too, for the caller's one-line refusal)."""
    return bool(int(value))
