"""SimpleCPUOffloadConnector's offload section of the report (report.py OFFLOAD_SECTIONS), built from its pool.
Imported only for that backend's reports (start-up time is a target). Pure."""

from __future__ import annotations

from .sections import OffloadSection


def simple_section(plan, backends) -> OffloadSection:
    """SimpleCPUOffloadConnector's pool: the engine's budget, the verdict's figures, offload.host as for the native
    connector, and the connector's own section (offload.simple); no family columns (they are OffloadingConnector's)."""
    pool, par = plan.pool, plan.layout.parallel
    budget = plan.layout.offload.cpu_bytes_to_use
    starts = pool.startup_error is None
    return OffloadSection(
        backend="simple", cpu_bytes_to_use=budget, cpu_bytes_source=plan.layout.offload.cpu_bytes_source,
        block_size=plan.gpu.hash_block_size, block_size_factor=1, startup_error=pool.startup_error, selected=None,
        errors={}, old=None, fixed=None, out_of_bounds=(pool.out_of_bounds is not None) if starts else None,
        pinned_bytes_per_engine=pool.pool_bytes_per_engine if starts else None,
        unused_bytes=pool.unused_bytes if starts else None, data_parallel_size=par.data_parallel_size,
        cpu_bytes_all_replicas=budget * par.data_parallel_size, host=pool.host if starts else None, families=None,
        lmcache=None, backends=backends, simple=pool.simple)
