"""LMCache's multi-process server as the offload backend (offload.backend lmcache_mp; vLLM 0.23+'s
`--kv-offloading-backend lmcache`, handed over by backends/lmcache.py; a serve line's LMCacheMPConnector): its pool
as every consumer reads it (`LMCacheMPPool`), how vLLM runs the hybrid manager with the connector, how a budget is
spelled for it and the --l1-size-gb that holds a target. The pool is computed in lmcache_mp_plan.py.

One pool per node: the figures "per engine" are an engine's equal share of its node's L1 (the engines of a node,
its DP replicas, register with the same server); "per node" is the server's whole L1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..engines.vllm import GpuStage
from ..vocab.errors import InternalError, known
from ..vocab.layout import Layout, OffloadLayout
from ..vocab.records import record, replace
from ..vocab.releases import lmcache_mp as mp
from ..vocab.releases.vllm import Behaviour
from ..vocab.units import exact_bytes
from .base import NotModelled, Pool, SizeTarget
from .hma import supports_hma
from .lmcache_mp_plan import MPPlan, plan_mp

if TYPE_CHECKING:
    from .lmcache_mp_sizing import MPSize


@record
class LMCacheMPPool(Pool):
    """The LMCache server's L1 as this engine sees it."""

    mp: MPPlan
    behaviour: Behaviour

    backend = "lmcache_mp"
    connector = "LMCacheMPConnector (LMCache's multi-process server)"

    @staticmethod
    def of(pool: Pool) -> MPPlan:
        """The server's own plan of a pool, for its report slice: an LMCache MP layout's pool is an LMCacheMPPool."""
        if not isinstance(pool, LMCacheMPPool):
            raise InternalError(f"the LMCache MP server's report was given the pool of backend {pool.backend}")
        return pool.mp
    family = "lmcache_mp"
    unit = "lmcache chunks"
    tokens_holder = "this engine's share of the LMCache server's L1 holds"
    splits_scheduler = False  # the server hands out no ids: nothing can go out of bounds
    out_of_bounds = None
    unused_bytes = 0
    shm_bytes_per_engine = 0  # the server's segment is not vLLM's region (no vLLM /dev/shm preflight)
    capacity = None
    shm_none = "the LMCache server pins its L1 in its own memory; a /dev/shm segment only with --shm-name, eager"

    def _share(self, node: int | None) -> int | None:
        """This engine's equal share of a node figure (the node's engines register with one server)."""
        return None if node is None else node // self.mp.engines_per_node

    @property
    def startup_error(self) -> str | None:
        return self.mp.startup_error

    @property
    def not_modelled(self) -> NotModelled | None:
        return None if self.mp.server_given else NotModelled(
            connector=mp.CONNECTOR, home="the LMCache server, whose command line was not given (--lmcache-server)")

    @property
    def budget_bytes(self) -> int | None:
        """This engine's share of the L1 (the same host budget --compare-backends gives the other backends)."""
        return None if self.mp.pool is None else self._share(self.mp.pool.size_bytes)

    @property
    def units_scheduler(self) -> int | None:
        return self._share(self.mp.chunks_held)

    units_worst = units_scheduler

    @property
    def unit_bytes(self) -> int:
        return self.mp.bytes_per_chunk

    @property
    def tokens_per_unit(self) -> int:
        return self.mp.chunk_size

    @property
    def tokens(self) -> int | None:
        return self.mp.tokens_per_engine

    @property
    def empty(self) -> bool:
        return self.mp.pool is not None and not self.mp.tokens_per_engine

    @property
    def stored(self) -> str:
        return f"{self.units_scheduler or 0:,} chunks of {self.mp.bytes_per_chunk:,} B for this engine in the L1"

    @property
    def nothing(self) -> str:
        return "the LMCache server's L1 holds no whole chunk of this engine"

    @property
    def pool_bytes_per_engine(self) -> int | None:
        return self.budget_bytes

    @property
    def resident_bytes_per_engine(self) -> int | None:
        return self._share(self.resident_bytes_per_node)

    @property
    def resident_bytes_per_node(self) -> int | None:
        return None if self.mp.pool is None else self.mp.pool.resident_bytes

    @property
    def server_resident_bytes(self) -> int | None:
        return self.resident_bytes_per_node

    @property
    def shm_bytes_per_node(self) -> int:
        return 0 if self.mp.pool is None else self.mp.pool.shm_bytes

    @property
    def kept(self) -> str:
        p = known(self.mp.pool, "the L1")  # read by the host_memory gate, of a pool that has its figures
        how = {"lazy": f"lazily: {p.resident_bytes_initial:,} B at start, the rest pinned in the background",
               "eager": "eagerly, one cudaHostAlloc", "hugepages": f"on {p.hugepages:,} 2 MiB hugepages",
               "shm": "in a /dev/shm segment"}[p.mode]
        return f"pinned by the node's one LMCache server ({how}; the server process's own memory not counted)"

    @property
    def notes(self) -> tuple[str, ...]:
        return self.mp.notes

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.mp.warnings

    @property
    def verdict(self) -> str:
        m, p = self.mp, self.mp.pool
        if m.startup_error:
            return "Verdict: the LMCache server does not start with this command line, and vLLM stops waiting for it."
        if p is None:
            return (f"Verdict: vLLM {self.behaviour.version} hands offloading to {mp.CONNECTOR}; the pool is the "
                    "LMCache server's, whose command line was not given (--lmcache-server): no figures.")
        share = (f", {m.tokens_per_engine:,} for each of the node's {m.engines_per_node} engines"
                 if m.engines_per_node > 1 else "")
        return (f"Verdict: the node's LMCache server pins {exact_bytes(p.resident_bytes)} and holds "
                f"{m.tokens_held:,} tokens{share} ({m.bytes_per_chunk:,} B a {m.chunk_size}-token chunk of an engine, "
                f"{m.objects_per_chunk} object(s)); eviction starts after {m.tokens_before_eviction:,}.")

    def vllm_args(self, layout: Layout, common: list[str], notes: list[str]) -> dict:
        from .lmcache_mp_sizing import mp_args  # only vllm-args spells a config

        return mp_args(self, layout, common, notes)


class LMCacheMPBackend:
    """LMCacheMPConnector and the standalone LMCache server it attaches to."""

    name = "lmcache_mp"
    title = "LMCache MP server"
    no_offload_info = "the LMCache server publishes its own metrics (lmcache_mp_l1_memory_usage_bytes, ...)"

    def hma(self, layout: Layout, behaviour: Behaviour) -> tuple[bool, str]:
        return supports_hma(layout, behaviour, "LMCache's LMCacheMPConnector")

    def estimate(self, layout: Layout, stage: GpuStage, *, selected_only: bool = False) -> LMCacheMPPool:
        return LMCacheMPPool(mp=plan_mp(layout, stage, mp.mp_of(layout)), behaviour=stage.behaviour)

    def with_budget(self, layout: Layout, budget_bytes: int, source: str) -> Layout:
        """A server whose L1 gives every engine of the node `budget_bytes` (--l1-size-gb = the node's total in GiB,
        through a float as LMCache reads it), LRU, the parser's other defaults."""
        gib = budget_bytes * layout.parallel.engines_per_node / mp.GIB
        server = mp.MPServer(l1_size_gb=gib, eviction_policy="LRU",
                             given=(("l1_size_gb", f"the {source} budget"), ("eviction_policy", "kvcalc: LRU")))
        sel = f"--compare-backends ({source}'s budget per engine)"
        return replace(layout, offload=OffloadLayout(cpu_bytes_to_use=None, cpu_bytes_source=sel, backend="lmcache_mp",
                                                     lmcache_mp=mp.MPLayout(server=server, selected_by=sel)))

    def size(self, layout: Layout, target: SizeTarget, plan: Callable) -> MPSize:
        from .lmcache_mp_sizing import size_mp  # only `kvcalc size` reads it (start-up time is a target)

        return size_mp(layout, target, plan)


BACKEND = LMCacheMPBackend()
