"""DeepSeek-V4's config.json (DeepseekV4ForCausalLM): per layer its compress ratio, from `compress_ratios` (vLLM's own
config class, 0.20.0-0.32.0 transformers_utils/configs/deepseek_v4.py) or from `layer_types` + `compress_rates`
(transformers' DeepseekV4Config, which vLLM 0.33.0 reads: transformers_utils/deepseek_v4_utils.py:1-18). A layer's
ratio is max(1, compress_ratios[i]) for i < num_hidden_layers (0.20.0 model_executor/models/deepseek_v4.py:900-903;
0.33.0 models/deepseek_v4/attention.py:238-242); the compressor asserts a ratio of 4 or 128 (0.33.0
models/deepseek_v4/compressor.py:158)."""

from __future__ import annotations

from ...vocab.errors import LayoutError, UnsupportedError
from .readers import Cfg, Mapped

KIND = {1: "dsv4_swa", 4: "dsv4_csa", 128: "dsv4_hca"}


def _ratios(cfg: Cfg, n: int) -> tuple[list[int], str]:
    ratios = cfg.get("compress_ratios")
    if ratios is not None:
        if not isinstance(ratios, list) or len(ratios) < n or not all(isinstance(r, int) for r in ratios):
            raise LayoutError(cfg.source, f"{cfg.prefix}compress_ratios", f"a list of at least {n} integers", ratios)
        return [max(1, r) for r in ratios[:n]], f"{cfg.prefix}compress_ratios[:{n}] (0 is 1: sliding only)"
    kinds, rates = cfg.get("layer_types"), cfg.get("compress_rates")
    if not isinstance(kinds, list) or len(kinds) < n or not isinstance(rates, dict):
        raise LayoutError(cfg.source, f"{cfg.prefix}compress_ratios", "compress_ratios, or layer_types with "
                          "compress_rates (transformers' DeepseekV4Config)")
    return ([max(1, int(rates.get(k, 0) or 0)) for k in kinds[:n]],
            f"{cfg.prefix}layer_types[:{n}] and {cfg.prefix}compress_rates")


def deepseek_v4(m: Mapped, cfg: Cfg) -> None:
    n = cfg.int_("num_hidden_layers", minimum=1, maximum=100_000)
    m.put("num_layers", n, cfg.origin("num_hidden_layers"))
    ratios, origin = _ratios(cfg, n)
    odd = sorted({r for r in ratios if r not in KIND})
    if odd:
        raise UnsupportedError(f"{cfg.source}: compress ratios {odd}: vLLM's DeepSeek-V4 compressor takes 4 or 128 "
                               "(models/deepseek_v4/compressor.py:158 @0.33.0)")
    m.put("layer_types", [KIND[r] for r in ratios], origin + ": 1 dsv4_swa, 4 dsv4_csa (indexer), 128 dsv4_hca")
    # head_dim is the latent (512: 448 NoPE + 64 RoPE), the sliding caches' and the compressed MLA's head size.
    m.put("head_size", cfg.int_("head_dim", minimum=1), cfg.origin("head_dim"))
    m.put("num_kv_heads", 1, "DeepSeek-V4: one latent head on every rank (max_tp_shards=1)")
    m.put("sliding_window", cfg.int_("sliding_window", minimum=1), cfg.origin("sliding_window"))
    if 4 in ratios:
        m.put("index_head_dim", cfg.int_("index_head_dim", minimum=1), cfg.origin("index_head_dim"))
    m.num_nextn_predict_layers = cfg.get("num_nextn_predict_layers") or 0
