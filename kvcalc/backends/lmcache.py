"""LMCache as the offload backend (offload.backend lmcache): its pool as every consumer reads it (`LMCachePool`),
how vLLM runs the hybrid manager with its connector, how its config spells a budget, and the per-rank size that
holds a target. The pool itself is computed in lmcache_plan.py."""

from __future__ import annotations

import json
from typing import Callable

from ..engines.vllm import GpuStage
from ..vocab.errors import InternalError, KvcalcError, known
from ..vocab.keys import KEY
from ..vocab.layout import Layout, OffloadLayout
from ..vocab.releases.lmcache import LMCacheLayout, lmcache_of
from ..vocab.releases.lmcache_mp import mp_of
from ..vocab.records import field, record, replace, to_json
from ..vocab.releases.vllm import Behaviour
from ..vocab.units import cdiv, exact_bytes, format_bytes, smallest_gib
from .base import Pool, SizeTarget, backend, largest, pod_resources
from .lmcache_plan import CONNECTOR, LMCachePlan, check_hma, plan_lmcache

@record
class LMCachePool(Pool):
    """LMCache's pool of one engine, as every consumer reads it."""

    lmcache: LMCachePlan
    behaviour: Behaviour  # the selected vLLM release

    backend = "lmcache"
    family = "lmcache"
    startup_error = None
    unit = "lmcache chunks"
    tokens_holder = "LMCache holds"
    splits_scheduler = False  # no scheduler count beside the ranks': nothing can go out of bounds
    out_of_bounds = None
    unused_bytes = 0
    shm_bytes_per_engine = 0
    shm_bytes_per_node = 0
    shm_none = "LMCache pins its pool with cudaHostAlloc"
    capacity = None  # vLLM's CPUOffloadingInfo is the native connector's
    nothing = "LMCache's CPU tier holds 0 tokens"
    not_modelled = None

    @property
    def connector(self) -> str:
        return f"{self.lmcache.connector} (LMCache {self.lmcache.version})"

    @staticmethod
    def of(pool: Pool) -> LMCachePlan:
        """LMCache's own plan of a pool, for LMCache's report slice: an LMCache layout's pool is an LMCachePool."""
        if not isinstance(pool, LMCachePool):
            raise InternalError(f"LMCache's report was given the pool of backend {pool.backend}")
        return pool.lmcache

    @property
    def budget_bytes(self) -> int:
        return self.lmcache.pool_bytes_per_engine

    @property
    def storing_chunks(self) -> int | None:
        """Chunks the worst storing rank holds."""
        chunks = [st.chunks_per_rank for st in self.lmcache.stages if st.storing_ranks]
        return min(chunks) if chunks else None

    @property
    def units_scheduler(self) -> int | None:
        first = self.lmcache.first_rank
        return (first.chunks if first else None) or self.storing_chunks

    units_worst = units_scheduler

    @property
    def unit_bytes(self) -> int | None:
        return max((st.chunk_bytes_aligned for st in self.lmcache.stages), default=0)

    @property
    def tokens_per_unit(self) -> int:
        return self.lmcache.chunk_size

    @property
    def tokens(self) -> int:
        return self.lmcache.tokens_per_engine

    @property
    def empty(self) -> bool:
        return self.lmcache.tokens_per_engine == 0

    @property
    def stored(self) -> str:
        return f"{self.storing_chunks:,} chunks per storing rank"

    @property
    def pool_bytes_per_engine(self) -> int:
        return self.lmcache.pool_bytes_per_engine

    @property
    def resident_bytes_per_engine(self) -> int:
        return self.lmcache.resident_bytes_per_engine

    @property
    def resident_bytes_per_node(self) -> int:
        return self.lmcache.resident_bytes_per_node

    @property
    def env_dependent(self) -> tuple[str, ...]:
        """LMCache reads its whole configuration from LMCACHE_* variables (and the file LMCACHE_CONFIG_FILE names)."""
        return ("LMCACHE_",)

    @property
    def kept(self) -> str:
        lc = self.lmcache
        hidden = (f" and {lc.hidden_state_pools} hidden-state pool(s) x {lc.hidden_state_bytes:,} B"
                  if lc.hidden_state_pools else "")
        if lc.degraded:
            return f"pinned by LMCache (no KV pool: its start-up fails{hidden})"
        return f"pinned by LMCache ({lc.storing_ranks} rank(s) x {lc.max_local_cpu_size:g} GiB{hidden})"

    @property
    def notes(self) -> tuple[str, ...]:
        return self.lmcache.notes

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.lmcache.warnings

    @property
    def verdict(self) -> str:
        lc = self.lmcache
        if lc.degraded:
            return (f"Verdict: LMCache {lc.version} fails to start ({lc.degraded}) and runs degraded: it stores "
                    "nothing, vLLM recomputes every prefix.")
        if lc.save_only_first_rank and lc.storing_ranks == 1:
            size = lc.first_rank_max_local_cpu_size if lc.first_rank else lc.max_local_cpu_size
            where = f"rank 0 alone ({size:g} GiB; MLA is stored once)"
        else:
            where = f"{lc.storing_ranks} rank(s) ({lc.max_local_cpu_size:g} GiB each)"
        hidden = (f", plus {exact_bytes(lc.hidden_state_pools * lc.hidden_state_bytes)} of hidden-state pools "
                  f"({lc.hidden_state_pools} x {lc.hidden_state_bytes:,} B)," if lc.hidden_state_pools else "")
        return (f"Verdict: LMCache {lc.version} pins {exact_bytes(lc.pool_bytes_per_engine)} per engine on {where}"
                f"{hidden} and holds {lc.tokens_per_engine:,} tokens.")


    def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict:
        """vLLM flags for LMCache's connector, and the LMCache config as YAML (for LMCACHE_CONFIG_FILE) and as
        LMCACHE_* variables (v1/config_base.py: LMCACHE_<KEY>; extra_config as JSON)."""
        lc, b = self.lmcache, self.behaviour
        par = layout.parallel
        if lc.degraded:
            raise KvcalcError(f"{layout.source}: LMCache {lc.version} fails to start with this config and stores "
                              f"nothing ({lc.degraded}): no flags to paste")
        cfg = config_of(lmcache_of(layout), lc)
        transfer = {"kv_connector": CONNECTOR, "kv_role": "kv_both"}
        with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
        with_flag = None
        ranks = par.tensor_parallel_size * par.pipeline_parallel_size
        if b.lmcache_offloading_flag == "per_rank":
            # 0.14.0 - 0.22.1 config/vllm.py: lmcache.max_local_cpu_size = kv_offloading_size / (TP x PP), local_cpu
            # on.
            size = lc.max_local_cpu_size * ranks
            if lc.local_cpu and int(size / ranks * 1024 ** 3) == int(lc.max_local_cpu_size * 1024 ** 3):
                with_flag = common + ["--kv-offloading-backend", "lmcache", KEY["offload.kv_offloading_size"].vllm_flag,
                                      f"{size:g}"]
                notes.append(f"--kv-offloading-size {size:g} is GiB for the engine: vLLM {b.version} gives LMCache "
                             f"{size:g} / {ranks} = {lc.max_local_cpu_size:g} GiB per rank (the config's other keys "
                             "still come from LMCACHE_CONFIG_FILE / LMCACHE_*)")
        notes.append(f"LMCache pins {lc.max_local_cpu_size:g} GiB on each of {lc.storing_ranks} rank(s): "
                     f"{format_bytes(lc.pool_bytes_per_engine)} per engine")
        pod = known(pod_resources(self), "a modelled pool's pod resources")
        notes.append(f"pod resources for one engine's CPU tier: memory limit >= {pod['memory_limit']} (LMCache's "
                     "pinned pool; no /dev/shm region); add the process's own memory (typically a few GiB)")
        return {"vllm_version": b.version, "backend": "lmcache", "args_kv_offloading_size": with_flag,
                "args_kv_transfer_config": with_json,
                "lmcache_yaml": "".join(f"{k}: {_yaml_value(v)}\n" for k, v in cfg.items()),
                "lmcache_env": [f"LMCACHE_{k.upper()}={_env_value(v)}" for k, v in cfg.items()], "notes": notes,
                "starts": True, "pod": pod, "out_of_bounds": False}


def config_of(lm: LMCacheLayout, lc: LMCachePlan) -> dict:
    """The LMCache config (LMCache's own key names) that reproduces the plan: what kvcalc read, defaults left out
    except the three every reader looks for."""
    cfg: dict = {"chunk_size": lm.chunk_size, "local_cpu": lc.local_cpu, "max_local_cpu_size": lc.max_local_cpu_size}
    if lm.local_disk:
        cfg["local_disk"] = lm.local_disk
        cfg["max_local_disk_size"] = lm.max_local_disk_size
    for key in ("use_layerwise", "local_cpu_use_hugepages", "enable_controller", "enable_scheduler_bypass_lookup",
                "enable_hidden_state_cache"):
        if getattr(lm, key):
            cfg[key] = True
    if lm.enable_hidden_state_cache:
        cfg["max_hidden_state_cpu_size"] = lm.max_hidden_state_cpu_size
    if lm.reserve_local_cpu_size:
        cfg["reserve_local_cpu_size"] = lm.reserve_local_cpu_size
    for key in ("lookup_server_worker_ids", "lmcache_worker_ids"):
        if getattr(lm, key):
            cfg[key] = list(getattr(lm, key))
    extra: dict = {}
    if lm.save_only_first_rank is not None:
        extra["save_only_first_rank"] = lm.save_only_first_rank
    if lm.first_rank_max_local_cpu_size is not None:
        extra["first_rank_max_local_cpu_size"] = lm.first_rank_max_local_cpu_size
    if lm.pinned_align_bytes is not None:
        extra["local_cpu.pinned_align_bytes"] = lm.pinned_align_bytes
    if extra:
        cfg["extra_config"] = extra
    return cfg


def _yaml_value(v) -> str:
    return json.dumps(v, separators=(", ", ": ")) if not isinstance(v, str) else json.dumps(v)


def _env_value(v) -> str:
    import shlex

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        if isinstance(v, list):
            return ",".join(map(str, v))
        return shlex.quote(json.dumps(v, separators=(",", ":")))
    if isinstance(v, float):
        return f"{v:g}" if float(f"{v:g}") == v else repr(v)
    return shlex.quote(str(v))


@record
class LMCacheSizeRow:
    """LMCache's answer: the per-rank size to write, and what it buys."""

    lmcache_version: str = field("the LMCache release")
    key: str = field("the LMCache key to set: max_local_cpu_size, or extra_config.first_rank_max_local_cpu_size "
                     "when only rank 0 stores (save_only_first_rank)")
    gib: float | None = field("its value: GiB per rank, 3 decimals (LMCache pins int(x x 1024^3) bytes)")
    pool_bytes_per_rank: int | None = field("the bytes that value pins on each storing rank")
    chunks_per_rank: int | None = field("chunks of the worst stage it holds")
    tokens: int | None = field("tokens it holds (every stage)")
    storing_ranks: int | None = field("ranks of one engine that allocate it")
    pool_bytes_per_engine: int | None = field("all storing ranks")
    resident_bytes_per_node: int | None = field("host memory resident on one node")
    note: str | None = field("why there is no answer, or null")

    backend = "lmcache"

    @property
    def refusal(self) -> str | None:
        """No size answers the target (the size command's exit 2): the note says why."""
        return self.note if self.gib is None else None

    def document(self, source: str, target: SizeTarget) -> dict:
        return {"schema_version": 1, "source": source, "backend": "lmcache", "target_tokens": target.tokens,
                "target_chunks": target.units, "target_resident_bytes": target.resident, "lmcache": to_json(self)}


def _at(layout: Layout, behaviour: Behaviour, gib: float, first_rank: bool) -> LMCachePlan:
    """LMCache's pool with max_local_cpu_size (or rank 0's first_rank_max_local_cpu_size) set to `gib`."""
    lm = lmcache_of(layout)
    if lm.via_vllm_flag:
        # vLLM's flag would override max_local_cpu_size (and local_cpu) with its own per-rank share: size the
        # LMCache key itself; the answer names the flag's spelling (x TP x PP) next to it.
        lm = replace(lm, via_vllm_flag=False, kv_offloading_size=None, local_cpu=True)
    lm = replace(lm, first_rank_max_local_cpu_size=gib) if first_rank else replace(lm, max_local_cpu_size=gib)
    return plan_lmcache(replace(layout, offload=replace(layout.offload, lmcache=lm)), behaviour)


def size_lmcache(layout: Layout, target: SizeTarget, plan: Callable) -> LMCacheSizeRow:
    """The smallest max_local_cpu_size (3 decimals) whose pool holds the target tokens (or chunks) on every storing
    rank, or the largest whose resident memory on one node stays under the target. With save_only_first_rank (MLA,
    rank 0 alone) the answer is rank 0's first_rank_max_local_cpu_size."""
    p = plan(layout)
    lc, behaviour = p.pool.lmcache, p.behaviour
    first = lc.save_only_first_rank and lc.storing_ranks == 1
    key = "extra_config.first_rank_max_local_cpu_size" if first else "max_local_cpu_size"
    if lc.vllm_flag is not None:
        key = "--kv-offloading-size (x TP x PP) or " + key
    worst = max(st.chunk_bytes_aligned for st in lc.stages if st.storing_ranks)
    if target.resident is not None:
        # Resident grows with the size: the largest 1/1000 GiB step that keeps the node under the limit.
        limit = target.resident
        gib = largest((limit // 1024 ** 3 + 1) * 1000, lambda n: _at(
            layout, behaviour, n / 1000, first).resident_bytes_per_node <= limit) / 1000
        if gib == 0:
            # 0 is no answer: LMCache fails to start without a pool (lmcache_plan.py _startup_failure).
            least = _at(layout, behaviour, 0.001, first).resident_bytes_per_node
            return LMCacheSizeRow(lmcache_version=lc.version, key=key, gib=None, pool_bytes_per_rank=None,
                                  chunks_per_rank=None, tokens=None, storing_ranks=None, pool_bytes_per_engine=None,
                                  resident_bytes_per_node=None,
                                  note=f"no size fits: the smallest pool (0.001 GiB) already keeps {least:,} B "
                                       f"resident on one node, over the {limit:,} B limit")
    else:
        need = target.units if target.units is not None else cdiv(known(target.tokens, "a size target"), lc.chunk_size)
        gib = max(smallest_gib(need * worst), 0.001)  # LMCache fails to start with 0 (lmcache_plan.py)
    at = _at(layout, behaviour, gib, first)
    per_rank = at.first_rank.pool_bytes if first and at.first_rank else at.pool_bytes_per_storing_rank
    chunks = at.first_rank.chunks if first and at.first_rank else min(
        st.chunks_per_rank for st in at.stages if st.storing_ranks)
    note = None
    if not lc.local_cpu:
        note = "local_cpu is false: the pool is a staging buffer and holds no hits, whatever its size"
    return LMCacheSizeRow(lmcache_version=lc.version, key=key, gib=gib, pool_bytes_per_rank=per_rank,
                          chunks_per_rank=chunks, tokens=at.tokens_per_engine, storing_ranks=at.storing_ranks,
                          pool_bytes_per_engine=at.pool_bytes_per_engine,
                          resident_bytes_per_node=at.resident_bytes_per_node, note=note)


def handed_over(layout: Layout, behaviour: Behaviour) -> bool:
    """vLLM's --kv-offloading-backend lmcache on a release that names LMCacheMPConnector for it (0.23.0+,
    config/vllm.py 0.23.0:793-799): the pool is the LMCache server's (backends/lmcache_mp.py)."""
    return lmcache_of(layout).via_vllm_flag and behaviour.lmcache_offloading_flag == "mp"


class LMCacheBackend:
    """LMCache's in-process connector (LMCacheConnectorV1), or vLLM's --kv-offloading-backend lmcache (from 0.23.0
    the multi-process connector: handed over to backends/lmcache_mp.py)."""

    name = "lmcache"
    title = "LMCache"
    no_offload_info = "LMCache publishes its own metrics"  # not vLLM's vllm:kv_offload_config_info

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        if handed_over(layout, behaviour):
            return backend("lmcache_mp").hma(layout, behaviour)
        check_hma(layout.cache.hybrid_kv_cache_manager, behaviour.version)
        if layout.cache.hybrid_kv_cache_manager == "off":
            return False, "disabled by the user (--disable-hybrid-kv-cache-manager)"
        return False, ("off: vLLM turns the hybrid manager off for LMCache's connector (it does not implement "
                       "SupportsHMA)")

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> Pool:
        if handed_over(layout, stage.behaviour):
            given = [k for k, _ in lmcache_of(layout).provenance]
            mpl = mp_of(layout)  # (validation sets it beside the flag's LMCache section)
            if given:
                mpl = replace(mpl, notes=mpl.notes + (
                    f"LMCache config keys for the in-process connector ({', '.join(given)}): LMCacheMPConnector does "
                    "not read them (the server's command line configures its pool)",))
            return backend("lmcache_mp").estimate(replace(layout, offload=replace(layout.offload, lmcache_mp=mpl)),
                                                  stage)
        lc = plan_lmcache(layout, stage.behaviour)
        if layout.offload.lmcache_mp is not None and layout.offload.lmcache_mp.server is not None:
            lc = replace(lc, notes=lc.notes + (
                f"vLLM {stage.behaviour.version} runs the in-process {CONNECTOR} for --kv-offloading-backend lmcache: "
                "the LMCache server's settings are not used (from vLLM 0.23.0 its LMCacheMPConnector attaches to "
                "the server)",))
        return LMCachePool(lmcache=lc, behaviour=stage.behaviour)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        """The engine's budget split over its TP x PP ranks as max_local_cpu_size, as vLLM 0.14.0-0.22.1's
        --kv-offloading-backend lmcache splits --kv-offloading-size (config/vllm.py); with MLA LMCache then pins
        it on rank 0 alone."""
        par = layout.parallel
        ranks = par.tensor_parallel_size * par.pipeline_parallel_size
        lm = LMCacheLayout(max_local_cpu_size=budget_bytes / ranks / 1024 ** 3)
        return replace(layout, offload=OffloadLayout(cpu_bytes_to_use=None, cpu_bytes_source=f"the {source} budget "
                                                     "/ (TP x PP)", backend="lmcache", lmcache=lm))

    def size(self, layout: Layout, target: SizeTarget, plan: Callable):
        from ..vocab.releases.vllm import behaviour_for

        if handed_over(layout, behaviour_for(layout.vllm_version)):
            return backend("lmcache_mp").size(layout, target, plan)
        return size_lmcache(layout, target, plan)


BACKEND = LMCacheBackend()
