"""`kvcalc size` for an SGLang layout (engine sglang): the smallest --hicache-size (whole decimal GB per rank, as
SGLang takes it) and --hicache-ratio whose host pool holds --cpu-tokens N per rank, or the largest --hicache-size
whose pinned bytes on one node stay under --resident; and on the GPU side the smallest --mem-fraction-static (in
thousandths) whose token pool holds --gpu-tokens N (or --concurrency C requests of the context length). Each
answer is planned, not inverted by formula: the padding page, the MIN over PP stages and the page floor are
SGLang's own. Pure; imported only for SGLang layouts."""

from __future__ import annotations

import math

from ...backends.base import SizeTarget, largest
from ...backends.hicache import HiCacheSection
from ...vocab.errors import KvcalcError, known
from ...tools.loading import smallest_where
from ...vocab.layout import Layout
from ...vocab.records import field, record, replace
from ...vocab.releases.sglang import sglang_of
from .plan import plan  # SGLang's own (the pipeline's plan, for an SGLang layout)

MAX_GB = 1 << 20  # a petabyte per rank: past any host


@record
class HiCacheSize:
    """The host pool's answer (the `size` command's record: backend, refusal, document)."""

    sglang_version: str = field("the SGLang release")
    hicache_size_gb: int | None = field("the smallest --hicache-size (decimal GB per rank) for the target")
    hicache_ratio: float | None = field("the smallest --hicache-ratio (thousandths) for --cpu-tokens")
    tokens_per_rank: int | None = field("host tokens per rank at that size")
    bytes_per_rank: int | None = field("host bytes a rank pins at that size")
    bytes_per_node: int | None = field("host bytes the busiest node pins")
    refusal: str | None = field("why no size answers the target", default=None)
    backend = "hicache"

    def document(self, source: str, target: SizeTarget) -> dict:
        from ...vocab.records import to_json

        return {"source": source, "engine": "sglang", "target": to_json(target), **to_json(self)}


def _with(layout: Layout, **hicache) -> Layout:
    sg = sglang_of(layout)
    h = replace(sg.hicache, enabled=True, **hicache)
    return replace(layout, sglang=replace(sg, hicache=h))


def _section(layout: Layout) -> HiCacheSection:
    return plan(layout).pool.section


def size_host(layout: Layout, target: SizeTarget) -> HiCacheSize:
    version = sglang_of(layout).version
    ratio: float | None = None
    gb: int | None
    if target.resident is not None:
        limit = target.resident
        fits = lambda gb: gb == 0 or known(_section(_with(layout, size_gb=gb)).bytes_per_node) <= limit  # noqa
        gb = largest(MAX_GB, fits)
    else:
        want = known(target.tokens if target.tokens is not None else target.units, "a size target")
        # (HiCache on: the sections have their sizes.)
        gb = _smallest(lambda g: known(_section(_with(layout, size_gb=g)).size_tokens_per_rank) >= want, MAX_GB)
        thousandths = _smallest(lambda k: known(_section(_with(layout, ratio=k / 1000, size_gb=0)).size_tokens_per_rank)
                                >= want, 1 << 40)
        ratio = None if thousandths is None else thousandths / 1000
    if not gb:
        return HiCacheSize(sglang_version=version, hicache_size_gb=None, hicache_ratio=ratio, tokens_per_rank=None,
                           bytes_per_rank=None, bytes_per_node=None, refusal="no --hicache-size of a whole GB or more "
                           "answers the target" + (" (one GB already exceeds --resident)" if target.resident else ""))
    s = _section(_with(layout, size_gb=gb))
    return HiCacheSize(sglang_version=version, hicache_size_gb=gb, hicache_ratio=ratio,
                       tokens_per_rank=s.size_tokens_per_rank, bytes_per_rank=s.bytes_per_rank,
                       bytes_per_node=s.bytes_per_node)


def _smallest(ok, hi: int) -> int | None:
    """The smallest n in 1..hi with ok(n) (monotonic), or None."""
    if not ok(hi):
        return None
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def size_gpu(layout: Layout, tokens: int | None, concurrency: float | None) -> dict:
    """The smallest --mem-fraction-static (thousandths) whose pool holds the target, planned at each fraction."""
    context, sg = layout.cache.max_model_len, sglang_of(layout)
    want = tokens if tokens is not None else math.ceil(known(concurrency, "a GPU target") * context)

    def pool(k: int) -> int:
        try:
            p = plan(replace(layout, sglang=replace(sg, mem_fraction_static=k / 1000)))
        except KvcalcError:
            return 0
        return p.stage.gpu.max_total_num_tokens

    k = _smallest(lambda k: pool(k) >= want, 999)
    doc = {"engine": "sglang", "sglang_version": sg.version, "target_tokens": want,
           "context_length": context, "mem_fraction_static": None if k is None else k / 1000,
           "max_total_num_tokens": None if k is None else pool(k), "refusal": None, "smallest_parallel": None}
    if k is None:
        refusal = f"no mem_fraction_static up to 0.999 holds {want:,} tokens on this GPU at this TP x PP"
        found = smallest_where(layout, lambda p: p.stage.gpu.max_total_num_tokens >= want)
        if found is not None:  # at the layout's own fraction (SGLang's default for each TP when it gives none)
            tp, pp, p = found
            doc["smallest_parallel"] = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                                        "max_total_num_tokens": p.stage.gpu.max_total_num_tokens}
            refusal += f": TP {tp} x PP {pp} holds it ({p.stage.gpu.max_total_num_tokens:,} tokens)"
        else:
            refusal += ": no TP x PP up to 16 x 8 does either; lower the target"
        doc["refusal"] = refusal
    return doc
