"""DeepSeek-V4 (DeepseekV4ForCausalLM) on SGLang 0.5.23: DSV4PoolConfigurator (srt/model_executor/
pool_configurator.py:1067-1712), the path a CUDA engine takes with the release's defaults (no unified-kv ring, no
trtllm backend, no speculative draft, no encoder replay, no HiSparse). The layers are the layout's (the per-layer
compress ratios main reads for vLLM's DeepSeek-V4: dsv4_swa 0/1, dsv4_csa 4, dsv4_hca 128); the pool rule is SGLang's:

- Ratio mode. The model override sets --swa-full-tokens-ratio 0.1 for model_type deepseek_v4 when it is not given
  (arg_groups/model_overrides/deepseek_v4.py:43-49), so the operator's ratio is always set and the request-cap mode
  (_resolve_swa_cap_tokens :1344-1347) never runs for it.
- Bytes a token: the V4 FlashMLA page, 576 data + 8 scale bytes a slot, a page padded to 576 B
  (kernels/ops/attention/dsv4/kv_layout.py:50-105; SGLANG_DSV4_KV_LAYOUT v4, environ.py:1754), a compressed pool of
  ratio r paging page_size // r slots (:1370-1391). SWA slot = that x the stage's layers + the c4 compress state
  (2 x 2 x (head + indexer head) fp32, SGLANG_DSV4_COMPRESS_STATE_DTYPE float32, environ.py:1832) x ring 8 / page
  per c4 layer (:1393-1409). Full token = 0.1 x the SWA slot + per c4 layer (its page / 4 + the indexer's
  head + head // 128 x 4 bytes / 4) + per c128 layer its page / 128 (:1411-1425, :1437-1446).
- Fixed bytes first: the c128 state, (requests + 1) x ring 128 (+ ring + 1) rows of 2 x head fp32 per c128 layer,
  rows rounded up to 128 (:1537-1558); requests per worker are the resolved --max-running-requests (256 by default,
  arg_groups/deepseek_v4_hook.py:137-145). full = int((budget - fixed) / bytes a full token), floored to the page
  (:1641-1676); SWA = int(full x ratio) floored to the page; c4 = full // 4, c128 = full // 128, c4 state = SWA //
  page x 8, c128 state = (requests + 1) x 128 (:1493-1512, :1610-1625).
Layers of ratio 0 / 1 own no compressed storage without kv_source_layer_ids (deepseek_v4_memory_pool.py:94-118).
"""

from __future__ import annotations

from ...vocab.errors import UnsupportedError
from ...vocab.kinds import LayerKind
from ...vocab.layout import Layout
from ...vocab.records import field, record
from ...vocab.releases.sglang import SglangBehaviour, sglang_of

PAGE = 256  # model_overrides/deepseek_v4.py:51-62: page_size 256 on CUDA (asserted % 128, pool_configurator.py:1641)
SLOT_BYTES, PAGE_ALIGN = 576 + 8, 576  # KVLayout.V4: 448 fp8 NoPE + 64 bf16 RoPE, 7 + 1 scale bytes; TMA stride
RING = {4: 8, 128: 128}  # get_compress_state_ring_size without a draft (deepseek_v4_memory_pool.py:60-79)
STATE_ITEMSIZE = 4  # float32 compress state (pool_configurator.py:136-145)
DEFAULT_SWA_RATIO = 0.1  # model_overrides/deepseek_v4.py:43-49 (DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO, :1046)
DEFAULT_REQUESTS = 256  # arg_groups/deepseek_v4_hook.py:137-145
LATENT = 512  # the V4 layout's latent: qk_nope 448 + qk_rope 64
RATIOS = {LayerKind.DSV4_CSA: 4, LayerKind.DSV4_HCA: 128}


@record
class Dsv4Pools:
    """DSV4PoolConfigurator's sizes on one rank (its 'DSV4 pool sizes' log line)."""

    swa_ratio: float = field("--swa-full-tokens-ratio, 0.1 by the model override")
    bytes_per_swa_token: float = field("one SWA slot across the stage's layers, with the c4 compress state")
    bytes_per_full_token: float = field("the configurator's coefficient: ratio x SWA slot + the compressed pools")
    fixed_bytes: int = field("the c128 compress state, sized by the requests, taken before the tokens")
    c4_layers: int = field("layers of compress ratio 4 (CSA, with the indexer)")
    c128_layers: int = field("layers of compress ratio 128 (HCA)")
    c4_max_total_num_tokens: int = field("full // 4")
    c128_max_total_num_tokens: int = field("full // 128")
    c4_state_pool_size: int = field("SWA tokens // page x ring 8")
    c128_state_pool_size: int = field("(requests + 1) x ring 128")


def _page_bytes_per_token(ratio: int) -> float:
    """_get_paged_kv_bytes_per_token (pool_configurator.py:1370-1391): the V4 page of page // ratio slots, per slot."""
    slots = PAGE // ratio
    return -(-slots * SLOT_BYTES // PAGE_ALIGN) * PAGE_ALIGN / slots


def refusal(layout: Layout, behaviour: SglangBehaviour) -> str | None:
    """What of a DeepSeek-V4 deployment kvcalc did not execute, by name (None: the executed path; STEPS
    deployment_pools: 0.5.23's pool code executed)."""
    sg, m, par = sglang_of(layout), layout.model, layout.parallel
    checks = (
        (not behaviour.deployment_pools, f"SGLang {sg.version}'s DeepSeek-V4 pools (kvcalc executed 0.5.23's "
                                "DSV4PoolConfigurator; earlier releases' differs and was not run): plan it with "
                                "--sglang-version 0.5.23"),
        (sg.model_type not in (None, "deepseek_v4"), f"model_type {sg.model_type} (DeepSeek-V4.1's request-cap SWA "
                                                     "pool and V4.1 KV layouts)"),
        (sg.kv_source_layers, "kv_source_layer_ids (ratio-1 / 2 layers' compressed pools and their padding)"),
        (m.head_size[0] != LATENT if m.head_size else True, f"a latent other than {LATENT} (the V4 FlashMLA slot)"),
        (layout.cache.kv_cache_dtype not in ("auto", "fp8_e4m3"), "--kv-cache-dtype other than fp8_e4m3 (V4 "
                                                                 "resolves auto to it)"),
        (par.pipeline_parallel_size > 1, "PP (a stage's slice of the compressed layers)"),
        (sg.attn_dp_size > 1, "DP attention"), (sg.speculative_algorithm is not None, "a speculative draft (MTP "
                                                                                      "rings and the (T + D) / T "
                                                                                      "inflation)"),
        (sg.hicache.enabled, "HiCache (DeepSeek-V4's host pools)"),
        (sg.max_total_tokens is not None, "--max-total-tokens (calculate_pool_sizes_from_max_tokens)"),
        (sg.page_size not in (None, PAGE), f"--page-size {sg.page_size} (SGLang sets {PAGE} for DeepSeek-V4)"),
    )
    what = [w for on, w in checks if on]
    if not what:
        return None
    if not behaviour.deployment_pools:
        return what[0]
    return f"DeepSeek-V4 on SGLang with {' and '.join(what)} is not modelled (not executed)"


def dsv4_pools(layout: Layout, budget: int, requests: int) -> tuple[int, int, Dsv4Pools]:
    """(full tokens, SWA tokens, the rest) of DSV4PoolConfigurator.calculate_pool_sizes on one stage."""
    sg, m = sglang_of(layout), layout.model
    kinds = m.layer_types
    n4 = sum(1 for k in kinds if RATIOS.get(k) == 4)
    n128 = sum(1 for k in kinds if RATIOS.get(k) == 128)
    index_head = m.index_head_dim or 0
    if n4 and not index_head:
        raise UnsupportedError(f"{layout.source}: a DeepSeek-V4 layer of compress ratio 4 needs model.index_head_dim "
                               "(its indexer)")
    ratio = sg.swa_full_tokens_ratio if sg.swa_ratio_given else DEFAULT_SWA_RATIO
    c4_state = 2 * 2 * (LATENT + index_head) * STATE_ITEMSIZE
    swa_slot = _page_bytes_per_token(1) * len(kinds) + RING[4] / PAGE * c4_state * n4
    full_token = (ratio * swa_slot + n4 * (_page_bytes_per_token(4) / 4 + (index_head + index_head // 128 * 4) / 4)
                  + n128 * _page_bytes_per_token(128) / 128)
    slots = requests + 1
    rows = -(-(slots * RING[128] + RING[128] + 1) // 128) * 128
    fixed = rows * 2 * LATENT * STATE_ITEMSIZE * n128 if n128 else 0
    full = int(max(budget - fixed, 0) / full_token) // PAGE * PAGE
    swa = int(full * ratio) // PAGE * PAGE
    window = m.sliding_window
    if full > 0 and window is not None and window + PAGE >= swa:  # validate_swa_pool_size (:198-216)
        from ...vocab.errors import StartupRefusal

        raise StartupRefusal(f"ValueError: SWA pool ({swa} tokens) cannot hold even one request: the prefill "
                             f"admission floor is sliding_window_size ({window}) + page_size ({PAGE}). Increase "
                             "--swa-full-tokens-ratio or the total KV budget.")
    return full, swa, Dsv4Pools(
        swa_ratio=ratio, bytes_per_swa_token=swa_slot, bytes_per_full_token=full_token, fixed_bytes=fixed,
        c4_layers=n4, c128_layers=n128, c4_max_total_num_tokens=full // 4, c128_max_total_num_tokens=full // 128,
        c4_state_pool_size=swa // PAGE * RING[4] if n4 else 0, c128_state_pool_size=slots * RING[128] if n128 else 0)


def log_line(full: int, swa: int, p: Dsv4Pools) -> str:
    """pool_configurator.py:1598-1605 @0.5.23."""
    return (f"DSV4 pool sizes: full={full}, swa={swa}, c4={p.c4_max_total_num_tokens}, "
            f"c128={p.c128_max_total_num_tokens}, c4_state={p.c4_state_pool_size}, "
            f"c128_state={p.c128_state_pool_size}")
