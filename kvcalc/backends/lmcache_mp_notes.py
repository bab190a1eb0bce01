"""What a plan through LMCache's MP server says beside its figures: what users get wrong about that pool, said where
it applies (LMCache 0.5.6 and vLLM lines as in lmcache_mp_plan.py; the public threads that met each). Pure."""

from __future__ import annotations

from ..engines.vllm import GpuStage
from ..vocab.layout import Layout
from ..vocab.records import replace
from ..vocab.releases import lmcache_mp as mp
from ..vocab.units import exact_bytes, format_bytes


def advise(layout: Layout, stage: GpuStage, mpl: mp.MPLayout, plan):
    """`plan` (an MPPlan) with its notes and warnings."""
    notes: list[str] = list(mpl.notes)
    warnings: list[str] = []
    s = mpl.server
    _vllm_side(layout, stage, mpl, notes, warnings)
    _one_pool(layout, plan, notes)
    if s is not None and plan.pool is not None:
        _pool_words(s, plan, layout.host.free_hugepages is not None, notes, warnings)
        _eviction(s, notes, warnings)
    _gpu(layout, plan, notes, warnings)
    if s is not None and s.others:
        notes.append("LMCache server options that change no figure of the L1: "
                     + ", ".join(f"--{d.replace('_', '-')}" for d, _ in s.others))
    return replace(plan, notes=tuple(notes), warnings=tuple(warnings))


def _vllm_side(layout: Layout, stage: GpuStage, mpl: mp.MPLayout, notes: list[str], warnings: list[str]) -> None:
    b = stage.behaviour
    if mpl.kv_offloading_size is not None:
        # vLLM 0.23.0 config/vllm.py:793-799 (the same block through 0.33.0): the lmcache branch names
        # LMCacheMPConnector and passes no size; kv_offloading_size only switches offloading on (:775-776).
        notes.append(f"vLLM {b.version} maps --kv-offloading-backend lmcache to {mp.CONNECTOR} and passes no size "
                     f"(config/vllm.py, from 0.23.0): --kv-offloading-size {mp.number(mpl.kv_offloading_size)} "
                     "selects the connector and sizes nothing; the LMCache server's --l1-size-gb sizes the pool")
    if mpl.server is None:
        warnings.append(f"{mp.CONNECTOR}'s pool is the standalone LMCache server's, sized by its own command line: "
                        "give it (--lmcache-server 'lmcache server --l1-size-gb N --eviction-policy LRU', or "
                        "--l1-size-gb and --eviction-policy) for figures; with no server running vLLM stops after "
                        "lmcache.mp.mq_timeout (300 s) (integration/vllm/vllm_multi_process_adapter.py:305-333)")
    elif (mpl.server.host, mpl.server.port) != ("localhost", 5555):
        notes.append(f"the server listens on {mpl.server.host}:{mpl.server.port}; vLLM's connector dials "
                     "tcp://localhost:5555 unless kv_connector_extra_config sets lmcache.mp.host / lmcache.mp.port "
                     "(lmcache_mp_connector.py:626-650)")
    if layout.model.is_mla and layout.model.draft is not None and layout.model.draft.method in ("eagle", "eagle3") \
            and mp.mla_only(layout.model) and layout.parallel.tensor_parallel_size > 1:
        warnings.append("the model is MLA-only to LMCache (use_mla, not hybrid: integration/vllm/utils.py:348-356), "
                        "so only the first TP rank of each stage stores, and its object holds only its own share of "
                        f"the {layout.model.draft.method} drafter's TP-sharded KV heads")


def _one_pool(layout: Layout, plan, notes: list[str]) -> None:
    """One L1 per node, shared; per-rank objects (InferenceX#1709, #1654 sized the L1 per rank)."""
    par = layout.parallel
    st = plan.stages[0]
    per = (f"every rank stores its own object of each {plan.chunk_size}-token chunk ({st.object_bytes_aligned:,} B "
           f"at TP {par.tensor_parallel_size})" if st.writer_ranks > 1 else
           f"MLA is stored once per chunk by the first TP rank ({st.object_bytes_aligned:,} B a chunk)")
    notes.append(f"LMCache's L1 is one pool per node, shared by every rank and engine that registers with its "
                 f"server, not one per rank: {per}, {plan.objects_per_chunk} object(s), {plan.bytes_per_chunk:,} B a "
                 f"chunk of this engine" + (f"; the node's {plan.engines_per_node} engines share it" if
                                            plan.engines_per_node > 1 else "")
                 + "; engines of another TP / PP size never share its entries (the world size is in the key, "
                   "v1/distributed/api.py:183-233)")


def _pool_words(s: mp.MPServer, plan, pages_known: bool, notes: list[str], warnings: list[str]) -> None:
    p = plan.pool
    if p.mode == "lazy" and p.background_pin_calls:
        # lazy_memory_allocator.py:337-362: the expansion thread does not wait for demand (club-3090#421: a 100 GiB
        # L1 on a 94 GB host ran it out of memory).
        notes.append(f"--l1-use-lazy (the default) is not on demand: {exact_bytes(p.resident_bytes_initial)} is "
                     f"pinned at start, then a background thread pins the rest in {p.background_pin_calls:,} steps "
                     f"of 64 MiB, cached or not, up to {exact_bytes(p.resident_bytes)}: size the host for the whole "
                     "pool")
    if p.mode == "lazy" and p.size_bytes != p.resident_bytes:
        notes.append(f"the lazy L1 is rounded up to whole 64 MiB pin chunks: {p.size_bytes:,} B asked, "
                     f"{p.resident_bytes:,} B pinned (lazy_memory_allocator.py:99-101)")
    if p.mode == "hugepages":
        notes.append(f"--l1-use-hugepages: eager, {p.hugepages:,} free 2 MiB pages needed (vm.nr_hugepages); "
                     "LMCache reads /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages at start"
                     + ("" if pages_known else " (--free-hugepages N checks it here)"))
    if p.mode == "shm":
        notes.append(f"--shm-name {s.shm_name}: the L1 is a {format_bytes(p.shm_bytes)} /dev/shm segment "
                     "(memory_management.py alloc_shm_pinned_ptr)" + (
                         "; in engine_driven / auto mode the server disables SHM silently when /dev/shm has less "
                         "free (v1/multiprocess/server.py:435-460)" if s.supported_transfer_mode != "lmcache_driven"
                         else ""))
    if plan.chunks_held == 0:
        warnings.append(f"the L1's {p.heap_bytes:,} B hold no whole chunk of this engine ({plan.bytes_per_chunk:,} B): "
                        "the CPU tier stores nothing")


def _eviction(s: mp.MPServer, notes: list[str], warnings: list[str]) -> None:
    wm = s.eviction_trigger_watermark
    if s.eviction_policy == "IsolatedLRU":
        # eviction_policy/isolated_lru.py:150-155 raises without a cache_salt, which the loop never passes
        # (eviction_controller.py:184-187).
        warnings.append("--eviction-policy IsolatedLRU: LMCache's L1 eviction thread raises on its first "
                        "over-watermark tick (no cache_salt) and dies (LMCache#4817): the L1 then fills and refuses "
                        "new chunks")
    elif s.eviction_policy == "noop":
        notes.append("--eviction-policy noop: nothing is evicted; once the L1 is full new chunks are not stored")
    if not 0 < wm <= 1:
        warnings.append(f"--eviction-trigger-watermark {wm:g} is outside (0, 1]: the legacy flags are not "
                        "range-checked (only --l1-manager's are, v1/distributed/config.py); the eviction loop "
                        "compares usage with it once a second (eviction_controller.py:160-190)")
    notes.append(f"eviction is by key count, once a second from usage {wm:g} (evicting {s.eviction_ratio:g} of the "
                 "keys, eviction_policy/lru.py:160-173); between ticks stores fill up to the whole L1 and a chunk "
                 "that does not fit is not stored")


def _gpu(layout: Layout, plan, notes: list[str], warnings: list[str]) -> None:
    """The server's buffers on every GPU (local-inference-lab/rtx6kpro#42: 658 MiB per GPU measured, CUDA context
    included; LMCache#4019: ~616 MiB on cuda:0 with no worker, the context the first L1 pin creates)."""
    gpus = layout.parallel.tensor_parallel_size * layout.parallel.pipeline_parallel_size
    text = (f"the LMCache server allocates {exact_bytes(plan.staging_bytes_per_gpu)} on each of the engine's {gpus} "
            f"GPU(s) (4 chunk objects + an 8 MiB block-id buffer, cache_context.py:417-472), plus its own CUDA "
            "context there, outside vLLM's --gpu-memory-utilization")
    room = plan.gpu_room_bytes
    if room is not None and plan.staging_bytes_per_gpu > room:
        warnings.append(f"{text}: vLLM leaves only {exact_bytes(room)} of the GPU unrequested, so the server's "
                        "registration runs the GPU out of memory once vLLM's KV cache is allocated")
    else:
        notes.append(text + ("" if room is None else f" (vLLM leaves {exact_bytes(room)} unrequested)"))
