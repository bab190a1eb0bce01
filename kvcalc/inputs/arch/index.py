"""The architecture index: every row of arch_table and arch_wrappers by name, the model_type a config without an
`architectures` entry is taken by, and the readers the rows name. Built on first use (only when a config.json is
read or `kvcalc models` runs)."""

from __future__ import annotations

from functools import cache
from typing import Callable

from ...vocab.errors import LayoutError, UnsupportedError
from .table import Arch
from ..hf import deepseek_v4 as hf_deepseek_v4, hybrid as hf_hybrid, special as hf_special
from ..hf.attention import (attention, config_layer_types, layer_count, pattern_kinds, put_heads, put_windows,
                           sliding_layers, window_list)
from ..hf.readers import Cfg, Mapped
from ..hf import readers as legacy

# A config's model_type -> the architecture vLLM serves it with, for configs (and sub-configs) that name no
# architecture: the transformers class's own `*ForCausalLM`.
MODEL_TYPES = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
    "phi3": "Phi3ForCausalLM", "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM", "gpt_oss": "GptOssForCausalLM", "deepseek_v2": "DeepseekV2ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM", "kimi_k2": "DeepseekV3ForCausalLM",
    "deepseek_v32": "DeepseekV32ForCausalLM", "llama4_text": "Llama4ForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM", "jamba": "JambaForCausalLM", "mamba2": "Mamba2ForCausalLM",
    "nemotron_h": "NemotronHForCausalLM", "falcon_h1": "FalconH1ForCausalLM", "deci": "DeciLMForCausalLM",
    "nemotron-nas": "DeciLMForCausalLM", "mixtral": "MixtralForCausalLM", "glm4_moe": "Glm4MoeForCausalLM",
    "glm4": "Glm4ForCausalLM", "granite": "GraniteForCausalLM", "granitemoe": "GraniteMoeForCausalLM",
    "granitemoeshared": "GraniteMoeSharedForCausalLM", "cohere": "CohereForCausalLM",
    "cohere2": "Cohere2ForCausalLM", "minimax_m2": "MiniMaxM2ForCausalLM", "exaone4": "Exaone4ForCausalLM",
    "olmoe": "OlmoeForCausalLM", "stablelm": "StableLmForCausalLM", "gpt2": "GPT2LMHeadModel",
    "gptj": "GPTJForCausalLM", "opt": "OPTForCausalLM", "bloom": "BloomForCausalLM", "dbrx": "DbrxForCausalLM",
    "nemotron": "NemotronForCausalLM", "glm4_moe_lite": "Glm4MoeLiteForCausalLM", "apertus": "ApertusForCausalLM",
    "ernie4_5": "Ernie4_5ForCausalLM", "ernie4_5_moe": "Ernie4_5_MoeForCausalLM", "hy_v3": "HYV3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration", "llama4": "Llama4ForConditionalGeneration",
    "kimi_k25": "KimiK25ForConditionalGeneration", "mistral3": "Mistral3ForConditionalGeneration",
    "chatglm": "ChatGLMModel", "internlm2": "InternLM2ForCausalLM", "afmoe": "AfmoeForCausalLM",
    "laguna": "LagunaForCausalLM", "deepseek_v4": "DeepseekV4ForCausalLM",
    "falcon": "FalconForCausalLM", "longcat_flash": "LongcatFlashForCausalLM", "exaone": "ExaoneForCausalLM",
    "hyperclovax": "HyperCLOVAXForCausalLM",
}


@cache
def arch_index() -> dict[str, Arch]:
    from .table import ROWS
    from .wrappers import ROWS as WRAPPED

    return {row.name: row for row in ROWS + WRAPPED}


def _legacy(fn: Callable[[Mapped, Cfg], None]) -> Callable[[Mapped, Cfg, Arch], None]:
    return lambda m, cfg, row: fn(m, cfg)


def _attention(m: Mapped, cfg: Cfg, row: Arch) -> None:
    attention(m, cfg, row.attention_rule)


def _qwen2(m: Mapped, cfg: Cfg, row: Arch) -> None:
    attention(m, cfg, row.attention_rule)
    kinds = m.model.get("layer_types")
    n = m.model["num_layers"]
    if kinds and len(set(kinds)) > 1 and cfg.get("max_window_layers") != n:
        # qwen2.py:351-361: "Sliding window for some but all layers is not supported" (an assertion at start-up).
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}max_window_layers {cfg.get('max_window_layers')} < "
                               f"num_hidden_layers {n} with use_sliding_window: vLLM's Qwen2Model refuses a sliding "
                               "window on some but not all layers (qwen2.py:351-361)")


def _gpt_oss(m: Mapped, cfg: Cfg, row: Arch) -> None:
    n = layer_count(m, cfg)
    put_heads(m, cfg, row.attention_rule)
    # gpt_oss.py:175: the window for layer_idx % 2 == 0, whatever layer_types says.
    kinds = pattern_kinds(n, lambda i: i % 2 == 1)
    sliding_layers(m, cfg, row.attention_rule, n, kinds, "gpt_oss.py:175: even layers slide, odd layers are full")
    m.put("attention_sinks", True, "gpt_oss.py:106-186: every attention layer passes sinks")


def _chatglm(m: Mapped, cfg: Cfg, row: Arch) -> None:
    n = layer_count(m, cfg, "num_layers")  # ChatGLMConfig (transformers_utils/configs/chatglm.py): num_layers
    attention(m, cfg, row.attention_rule, n=n)


def _mla(m: Mapped, cfg: Cfg, row: Arch) -> None:
    legacy.mla(m, cfg, indexer=row.reader == "mla_indexer" or cfg.get("index_topk") is not None)


def _exaone_moe(m: Mapped, cfg: Cfg, row: Arch) -> None:
    """exaone_moe.py:233-270: full_attention layers full, the others sliding_windows[layer] when the config has the
    list, else sliding_window (the generic rule)."""
    windows = cfg.get("sliding_windows")
    if windows is None:
        attention(m, cfg, row.attention_rule)
        return
    n = layer_count(m, cfg)
    put_heads(m, cfg, row.attention_rule)
    kinds, _ = config_layer_types(m, cfg, n)
    if not isinstance(windows, list) or len(windows) < n or kinds is None:
        raise LayoutError(cfg.source, f"{cfg.prefix}sliding_windows", f"a list of {n} windows beside layer_types",
                          windows)
    put_windows(m, cfg, [None if k == "full_attention" else windows[i] for i, k in enumerate(kinds)],
                "sliding_windows")


def _longcat(m: Mapped, cfg: Cfg, row: Arch) -> None:
    """longcat_flash.py:267-287,395-396 (every release read): config.num_layers decoder layers, each with two
    DeepseekV2MLAAttention, one latent head of kv_lora_rank + qk_rope_head_dim each (model_arch_config_convertor.py
    :758-761 @0.33.0: num_layers, not transformers' num_hidden_layers = 2 x num_layers)."""
    n = layer_count(m, cfg, "num_layers")
    if cfg.get("index_topk") is not None:
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}index_topk: LongCat-Flash's two MLA attentions with an "
                               "indexer are not modelled")
    m.put("layer_types", ["mla"] * n, "longcat_flash.py: every layer two MLA attentions")
    m.put("mla_per_layer", 2, "longcat_flash.py:267-287: self_attn is two DeepseekV2MLAAttention")
    m.put("kv_lora_rank", cfg.int_("kv_lora_rank", minimum=1), cfg.origin("kv_lora_rank"))
    m.put("qk_rope_head_dim", cfg.int_("qk_rope_head_dim"), cfg.origin("qk_rope_head_dim"))


def _falcon(m: Mapped, cfg: Cfg, row: Arch) -> None:
    """falcon.py:107-130 (every release read): head size hidden // heads; KV heads num_kv_heads with
    new_decoder_architecture, else 1 with multi_query, else every head; rotary (= not alibi: transformers 5.24
    configuration_falcon.py:104-106) or ALiBi attention is built without the cache config (:173-197), so the KV
    cache keeps the model dtype."""
    n = layer_count(m, cfg)
    heads = cfg.int_("num_attention_heads", minimum=1)
    hidden = cfg.int_("hidden_size", minimum=1)
    if cfg.get("new_decoder_architecture"):
        kv, origin = cfg.int_("num_kv_heads", minimum=1) if cfg.get("num_kv_heads") is not None else heads, \
            f"{cfg.origin('num_kv_heads')} (new_decoder_architecture; absent: num_attention_heads)"
    elif cfg.get("multi_query"):
        kv, origin = 1, f"{cfg.origin('multi_query')}: one KV head"
    else:
        kv, origin = heads, "num_attention_heads (multi_query false)"
    m.put("layer_types", ["full_attention"] * n, "falcon.py: every layer full attention")
    m.put("num_kv_heads", kv, origin)
    m.put("head_size", hidden // heads, f"{cfg.prefix}hidden_size // {cfg.prefix}num_attention_heads")
    m.put("kv_cache_dtype_auto", True, "falcon.py:173-197: rotary / ALiBi Attention without cache_config")


READERS: dict[str, Callable[[Mapped, Cfg, Arch], None]] = {
    "attention": _attention, "qwen2": _qwen2, "gpt_oss": _gpt_oss, "chatglm": _chatglm,
    "mla": _mla, "mla_indexer": _mla, "exaone_moe": _exaone_moe,
    "window_list": lambda m, cfg, row: window_list(m, cfg, row.attention_rule, "interleaved_sliding_window"),
    "mamba1": lambda m, cfg, row: hf_hybrid.mamba1(m, cfg, row.rule),
    "granite_hybrid": lambda m, cfg, row: hf_hybrid.granite_hybrid(m, cfg, row.attention_rule),
    "lfm2": lambda m, cfg, row: hf_hybrid.lfm2(m, cfg, row.attention_rule),
    "gdn_hybrid": lambda m, cfg, row: hf_hybrid.gdn_hybrid(m, cfg, row.attention_rule),
    "gemma3n": lambda m, cfg, row: hf_special.gemma3n(m, cfg, row.attention_rule),
    "gemma4": lambda m, cfg, row: hf_special.gemma4(m, cfg, row.attention_rule),
    "llama4_text": _legacy(legacy.llama4), "deci": _legacy(legacy.deci), "jamba": _legacy(legacy.jamba),
    "mamba2": _legacy(legacy.mamba2), "nemotron_h": _legacy(legacy.nemotron_h),
    "falcon_h1": _legacy(legacy.falcon_h1), "qwen3_next": _legacy(legacy.qwen3_next),
    "deepseek_v4": _legacy(hf_deepseek_v4.deepseek_v4), "falcon": _falcon, "longcat": _longcat,
}
