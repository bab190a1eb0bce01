"""The layout keys of the LMCache MP server (offload.lmcache_mp, backend lmcache_mp), as rows the key table
(vocab/keys.py) builds in its place: the server's options under their argparse names (any option of its parser:
vocab/releases/lmcache_mp_flags.py); these have kvcalc flags, the server's own spellings."""

from __future__ import annotations


def _mp(flag: str, doc: str, own: str = "", **more) -> dict:
    """An LMCache MP server option's row: its doc and kvcalc flag (the server's own spelling, or `own`)."""
    spelled = own or flag
    first = spelled.split("/")[0]
    return {"doc": f"{doc}: the server's {flag.split('/')[0]}", "flag": (spelled,), "panel": "offload", "label": first,
            "name": first[2:].replace("-", "_"), "help": f"LMCache MP server: {doc} (its {flag})", **more}


# (path, kind, the row's fields), in the key table's order.
LMCACHE_MP_ROWS: tuple[tuple[str, str, dict], ...] = (
    ("offload.lmcache_mp", "server", {"doc": "the LMCache MP server behind LMCacheMPConnector (offload.backend "
                                             "lmcache_mp, or lmcache through vLLM 0.23+'s flag): its options under "
                                             "their argparse names (l1_size_gb, ...)"}),
    ("offload.lmcache_mp.l1_size_gb", "number", _mp("--l1-size-gb", "the node server's L1, GiB (required)")),
    ("offload.lmcache_mp.l1_init_size_gb", "int", _mp("--l1-init-size-gb", "lazy: GiB pinned at start (an int)",
                                                      default=20)),
    ("offload.lmcache_mp.l1_use_lazy", "bool", _mp("--l1-use-lazy/--no-l1-use-lazy", "pin the L1 lazily (the rest "
                                                   "in the background)", default=True)),
    ("offload.lmcache_mp.l1_align_bytes", "int", _mp("--l1-align-bytes", "each object's alignment", default=4096)),
    ("offload.lmcache_mp.l1_use_hugepages", "bool", _mp("--l1-use-hugepages/--no-l1-use-hugepages", "the L1 on 2 MiB "
                                                        "hugepages (eager)", default=False)),
    ("offload.lmcache_mp.eviction_policy", "choice", _mp("--eviction-policy", "LRU | ARC | IsolatedLRU | noop "
                                                         "(required)", choices=("LRU", "ARC", "IsolatedLRU", "noop"))),
    ("offload.lmcache_mp.eviction_trigger_watermark", "number", _mp("--eviction-trigger-watermark", "usage that "
                                                                    "starts eviction", default=0.8)),
    ("offload.lmcache_mp.chunk_size", "int", _mp("--chunk-size", "tokens per chunk", "--lmcache-chunk-size",
                                                 default=256)),
)
