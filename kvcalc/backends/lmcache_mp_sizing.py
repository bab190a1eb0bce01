"""The LMCache MP server's pool, both ways: the `vllm serve` flags and the server command line that spell a plan's
pool, and `kvcalc size`'s answer (the smallest --l1-size-gb that holds a target, or the largest whose pinned memory
stays under a limit). Loaded only by those commands (start-up time is a target). Pure."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Callable

from ..vocab.errors import KvcalcError, known
from ..vocab.layout import Layout
from ..vocab.records import field, record, replace, to_json
from ..vocab.releases import lmcache_mp as mp
from ..vocab.releases.lmcache_mp_flags import FLAGS
from ..vocab.units import cdiv
from .base import SizeTarget, largest, pod_resources
from .lmcache_mp_plan import below_watermark, l1_pool

if TYPE_CHECKING:
    from .lmcache_mp import LMCacheMPPool

MAX_GIB_THOUSANDTHS = 1 << 50  # 2^40 GiB in thousandths: the most the layout reader accepts


@record
class MPSize:
    """The LMCache MP server's answer: the --l1-size-gb to start it with, and what it buys."""

    lmcache_version: str = field("the LMCache release of the server")
    l1_size_gb: float | None = field("the smallest --l1-size-gb (3 decimals) that holds the target (or the largest "
                                     "under the resident limit); null: no answer (note)")
    l1_size_gb_below_watermark: float | None = field("the smallest that holds the target before eviction starts")
    size_bytes: int | None = field("int(l1_size_gb x 2^30)")
    mode: str = field("lazy | eager | hugepages | shm: how the server allocates it (its other settings)")
    chunk_size: int = field("tokens per chunk")
    bytes_per_chunk: int = field("one chunk of one engine in the L1 (every rank's aligned object)")
    engines_per_node: int = field("engines sharing the node's server (the target is per engine)")
    chunks_held: int | None = field("chunks the node's L1 holds at that size")
    tokens_held: int | None = field("their tokens (the node's)")
    resident_bytes_per_node: int | None = field("host bytes the server pins at that size, once grown")
    note: str | None = field("why there is no answer, or null")

    backend = "lmcache_mp"
    refusal = None

    def document(self, source: str, target: SizeTarget) -> dict:
        return {"schema_version": 1, "source": source, "backend": "lmcache_mp", "target_tokens": target.tokens,
                "target_chunks": target.units, "target_resident_bytes": target.resident, "lmcache_mp": to_json(self)}


def _at(s: mp.MPServer, thousandths: int):
    return l1_pool(replace(s, l1_size_gb=thousandths / 1000))


def _smallest(fits: Callable[[int], bool]) -> int | None:
    """The least n in 1..MAX_GIB_THOUSANDTHS with fits(n), for a fits that stays true once it holds (None: none)."""
    hi = 1
    while not fits(hi):
        if hi >= MAX_GIB_THOUSANDTHS:
            return None
        hi = min(hi * 2, MAX_GIB_THOUSANDTHS)
    lo = max(1, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def size_mp(layout: Layout, target: SizeTarget, plan: Callable) -> MPSize:
    """The smallest --l1-size-gb (thousandths of a GiB, as the server reads a float) whose L1 holds the target for each
    engine of the node (or the largest whose pinned bytes stay under target.resident), with the server's other
    settings as given (the parser's defaults and LRU when none are)."""
    p = plan(layout)
    m = p.pool.mp
    s = layout.offload.lmcache_mp.server if layout.offload.lmcache_mp else None
    s = s if s is not None else mp.MPServer(eviction_policy="LRU")
    per, chunk, engines = m.bytes_per_chunk, m.chunk_size, m.engines_per_node
    base = dict(lmcache_version=m.lmcache_version, mode=l1_pool(replace(s, l1_size_gb=1.0)).mode, chunk_size=chunk,
                bytes_per_chunk=per, engines_per_node=engines)
    n: int | None
    if target.resident is not None:
        limit = target.resident
        n = largest(min(MAX_GIB_THOUSANDTHS, (limit // mp.GIB + 1) * 1000), lambda k: _at(s, k).resident_bytes <= limit)
        if n == 0:
            return MPSize(**base, l1_size_gb=None, l1_size_gb_below_watermark=None, size_bytes=None, chunks_held=None,
                          tokens_held=None, resident_bytes_per_node=None,
                          note=f"no size fits: 0.001 GiB already pins {_at(s, 1).resident_bytes:,} B, over {limit:,} B")
        below = None
    else:
        units = target.units if target.units is not None else cdiv(known(target.tokens, "a size target"), chunk)
        need = engines * units
        n = _smallest(lambda k: _at(s, k).heap_bytes // per >= need)
        wm = s.eviction_trigger_watermark

        def under(k: int) -> bool:
            pool = _at(s, k)
            return below_watermark(pool.heap_bytes // per, per, pool.heap_bytes, wm) >= need

        below = _smallest(under) if 0 < wm <= 1 else None
        if n is None:
            return MPSize(**base, l1_size_gb=None, l1_size_gb_below_watermark=None, size_bytes=None, chunks_held=None,
                          tokens_held=None, resident_bytes_per_node=None,
                          note=f"no --l1-size-gb up to 2^40 GiB holds {need:,} chunks of {per:,} B")
    pool = _at(s, n)
    held = pool.heap_bytes // per
    return MPSize(**base, l1_size_gb=n / 1000, l1_size_gb_below_watermark=None if below is None else below / 1000,
                  size_bytes=pool.size_bytes, chunks_held=held, tokens_held=held * chunk,
                  resident_bytes_per_node=pool.resident_bytes,
                  note=None if engines == 1 else f"the target is each of the node's {engines} engines': the L1 holds "
                                                 f"{engines} x as much")


def server_command(s: mp.MPServer) -> str:
    """`lmcache server` with the options given, spelled as its parser reads them (lmcache_mp_flags.py)."""
    rows = {row[1]: row for row in FLAGS}
    others = dict(s.others)
    words = ["lmcache", "server"]
    for dest, _ in s.given:
        spellings, _, kind, _, _, _, _ = rows[dest]
        value = others[dest] if dest in others else getattr(s, dest)
        if kind in ("bool_optional", "store_true"):
            words += [spellings[0]] if value else ([spellings[1]] if len(spellings) > 1 else [])
        elif kind == "append":
            for v in value:
                words += [spellings[0], str(v)]
        elif kind == "star":
            words += [spellings[0], *map(str, value)]
        else:
            words += [spellings[0], mp.number(value) if isinstance(value, float) else str(value)]
    return shlex.join(words)


def mp_args(pool: LMCacheMPPool, layout: Layout, common: list[str], notes: list[str]) -> dict:
    """vLLM flags for LMCacheMPConnector (--kv-transfer-config; from 0.23.0 also --kv-offloading-backend lmcache,
    whose size vLLM ignores: config/vllm.py 0.23.0:793-799) and the server's command line."""
    m, b, mpl = pool.mp, pool.behaviour, mp.mp_of(layout)
    s = mpl.server
    if s is None:
        raise KvcalcError(f"{layout.source}: LMCacheMPConnector's pool is the LMCache server's: give its command line "
                          "(--lmcache-server 'lmcache server --l1-size-gb N --eviction-policy LRU') to spell it")
    transfer = {"kv_connector": mp.CONNECTOR, "kv_role": "kv_both"}
    with_json = common + ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    with_flag = None
    if b.lmcache_offloading_flag == "mp":
        size = known(mpl.kv_offloading_size or s.l1_size_gb, "the size to spell")  # (none: a crash, as before)
        with_flag = common + ["--kv-offloading-backend", "lmcache", "--kv-offloading-size", mp.number(size)]
        notes.append(f"vLLM {b.version} ignores --kv-offloading-size's value for lmcache (it only switches the "
                     "connector on): the server's --l1-size-gb sizes the pool")
    if m.pool is not None:
        notes.append(f"start one LMCache server per node before vLLM; its L1 pins {m.pool.resident_bytes:,} B there, "
                     "shared by the node's engines")
    return {"vllm_version": b.version, "backend": "lmcache_mp", "args_kv_offloading_size": with_flag,
            "args_kv_transfer_config": with_json, "lmcache_yaml": None, "lmcache_env": [],
            "server_command": server_command(s), "notes": notes, "starts": m.startup_error is None,
            "pod": pod_resources(pool), "out_of_bounds": False}
