"""The architecture table: one row per `architectures` entry a config.json can name, as vLLM 0.33.0's
model_executor/models/registry.py serves it (`_TEXT_GENERATION_MODELS`, `_TRANSFORMERS_SUPPORTED_MODELS`; the
multimodal wrappers and drafters are in arch_wrappers.py). A row says which vLLM class serves the architecture,
which reader turns its config into per-layer KV kinds (hf_attention.Rule: where the KV heads, head size and window
come from, read in the model file cited), or why it is not mapped. Built only when a config.json is read or
`kvcalc models` runs.
"""

from __future__ import annotations

from ...vocab.errors import InternalError
from ...vocab.records import record
from ..hf.attention import Rule


@record
class Arch:
    name: str  # the config's architectures entry
    vllm: str  # vLLM 0.33.0's module.Class for it ("" when 0.33.0's registry no longer lists it)
    reader: str = ""  # hf_config READERS key; "" when not mapped
    kv: str = ""  # the KV layers it owns, in words
    cite: str = ""  # where in vLLM 0.33.0 the heads, head size, window and layer pattern come from
    rule: Rule | None = None  # the attention rule (reader "attention")
    reason: str = ""  # not mapped: why
    mlp: str = "gated"  # parameter count: "gated" (gate, up, down) or "plain" (up, down) feed-forward
    text: str = ""  # wrappers: the sub-config holding the language model (dotted path), "" = the config itself
    inner: str = ""  # wrappers: the language model's architecture when the sub-config names none

    @property
    def mapped(self) -> bool:
        return bool(self.reader)

    @property
    def attention_rule(self) -> Rule:
        """`rule`, for a reader that reads the attention (every row _a builds has one)."""
        if self.rule is None:
            raise InternalError(f"{self.name}: reader {self.reader} needs an attention rule")
        return self.rule


R = Rule
LT = Rule()  # head_dim (else hidden // heads), num_key_value_heads, per-layer window from layer_types
GLOBAL = Rule(layer_types=False)  # no per-layer window: only vLLM's model-level window
HIDDEN = Rule(head="hidden", layer_types=False)  # head size hidden // heads whatever head_dim says
TRANSFORMERS = Rule(heads="aliases", head="generic")
_HF = "transformers/base.py:608-700 (the Transformers backend's Attention per layer)"
FULL_KV = "full attention (sliding on every layer when the config sets one window and no interleaving)"
SWA_KV = "full / sliding attention per layer_types"
NOT_READ = "not modelled: "


def _a(name: str, vllm: str, cite: str, rule: Rule = LT, kv: str = "", reader: str = "attention",
       mlp: str = "gated") -> Arch:
    if not kv:
        kv = SWA_KV if rule.layer_types else FULL_KV
    return Arch(name=name, vllm=vllm, reader=reader, kv=kv, cite=cite, rule=rule, mlp=mlp)


def _r(name: str, vllm: str, reader: str, kv: str, cite: str, mlp: str = "gated") -> Arch:
    return Arch(name=name, vllm=vllm, reader=reader, kv=kv, cite=cite, mlp=mlp)


def _x(name: str, vllm: str, reason: str) -> Arch:
    return Arch(name=name, vllm=vllm, reason=reason)


_LLAMA = "llama.py:147-219 (head_dim or hidden // heads; window for layer_types' sliding layers)"
_MLA = "deepseek_v2.py:1276-1319 (MLA iff qk_nope/qk_rope_head_dim; one latent head of kv_lora_rank + " \
       "qk_rope_head_dim), transformers_utils/model_arch_config_convertor.py:294-327"

ROWS: tuple[Arch, ...] = (
    # --- Llama-style attention (llama.py and the classes built on it)
    _a("LlamaForCausalLM", "llama.LlamaForCausalLM", _LLAMA),
    _a("LLaMAForCausalLM", "llama.LlamaForCausalLM", _LLAMA),
    _a("InternLM3ForCausalLM", "llama.LlamaForCausalLM", _LLAMA),
    _a("IQuestCoderForCausalLM", "llama.LlamaForCausalLM", _LLAMA),
    _a("TeleChat3ForCausalLM", "llama.LlamaForCausalLM", _LLAMA),
    _a("Ernie4_5ForCausalLM", "ernie45.Ernie4_5ForCausalLM", "ernie45.py:42 (LlamaForCausalLM); " + _LLAMA),
    _a("Phi3ForCausalLM", "phi3.Phi3ForCausalLM", "phi3.py:10 (LlamaForCausalLM); " + _LLAMA),
    _a("TeleFLMForCausalLM", "teleflm.TeleFLMForCausalLM", "teleflm.py:34 (LlamaForCausalLM); " + _LLAMA),
    _a("TeleChat2ForCausalLM", "telechat2.TeleChat2ForCausalLM", "telechat2.py:35,107 (LlamaModel); " + _LLAMA),
    _a("MistralForCausalLM", "mistral.MistralForCausalLM", "mistral.py:77-96 (LlamaAttention); " + _LLAMA),
    _a("Ministral3ForCausalLM", "mistral.MistralForCausalLM", "mistral.py:77-96 (LlamaAttention); " + _LLAMA),
    _a("ApertusForCausalLM", "apertus.ApertusForCausalLM", "apertus.py:140-199,264-270"),
    _a("AfmoeForCausalLM", "afmoe.AfmoeForCausalLM", "afmoe.py:177-246,295-302"),
    _a("GraniteForCausalLM", "granite.GraniteForCausalLM", "granite.py:95-110,170-234"),
    _a("GraniteSWAForCausalLM", "granite.GraniteForCausalLM", "granite.py:95-110,170-234"),
    _a("GraniteMoeForCausalLM", "granitemoe.GraniteMoeForCausalLM", "granitemoe.py:160-223 (hidden // heads)",
       R(head="hidden")),
    _a("GraniteMoeSharedForCausalLM", "granitemoeshared.GraniteMoeSharedForCausalLM",
       "granitemoeshared.py:91-96 (GraniteMoeAttention: granitemoe.py:160-223, hidden // heads)", R(head="hidden")),
    _a("GraniteMoeSWAForCausalLM", "granitemoeshared.GraniteMoeSharedForCausalLM",
       "granitemoeshared.py:91-96 (GraniteMoeAttention: granitemoe.py:160-223, hidden // heads)", R(head="hidden")),
    _a("Exaone4ForCausalLM", "exaone4.Exaone4ForCausalLM", "exaone4.py:129-192"),
    _a("Cohere2ForCausalLM", "commandr.CohereForCausalLM", "commandr.py:186-253 (sliding layers get window + 1)",
       R(plus_one=True)),
    _a("Cohere2MoeForCausalLM", "cohere2_moe.Cohere2MoeForCausalLM",
       "cohere2_moe.py:210-276 (sliding layers get window + 1)", R(plus_one=True)),
    _a("LagunaForCausalLM", "laguna.LagunaForCausalLM",
       "laguna.py:284-305,410-419, 590-598 (clears the model-level window)", R(cache_window=False)),
    _a("Step3p5ForCausalLM", "step3p5.Step3p5ForCausalLM",
       "step3p5.py:209-269,432-452 (num_attention_groups KV heads; clears the model-level window)",
       R(heads="num_attention_groups", cache_window=False)),
    _a("MuseGlimmerForCausalLM", "muse_glimmer.MuseGlimmerForCausalLM", "muse_glimmer.py:904-974",
       R(head="head_dim!")),
    _a("CohereForCausalLM", "commandr.CohereForCausalLM", "commandr.py:186-253 (v1: no per-layer window)", GLOBAL),
    _a("SolarForCausalLM", "solar.SolarForCausalLM", "solar.py:121-166,204-206", GLOBAL),
    _a("ExaoneForCausalLM", "exaone.ExaoneForCausalLM", "exaone.py:123-172,247-249", GLOBAL),
    _a("NemotronForCausalLM", "nemotron.NemotronForCausalLM", "nemotron.py:191-236,274-276", GLOBAL),
    _a("HyperCLOVAXForCausalLM", "hyperclovax.HyperCLOVAXForCausalLM", "hyperclovax.py:130-175 (head_dim)",
       R(head="head_dim!", layer_types=False)),
    _a("Glm4ForCausalLM", "glm4.Glm4ForCausalLM", "glm4.py:72-121,161-163", GLOBAL),
    _a("Glm4MoeForCausalLM", "glm4_moe.Glm4MoeForCausalLM", "glm4_moe.py:245-290,342-344", GLOBAL),
    _a("MiniMaxM2ForCausalLM", "minimax_m2.MiniMaxM2ForCausalLM", "minimax_m2.py:160-209,273-279", GLOBAL),
    _a("MixtralForCausalLM", "mixtral.MixtralForCausalLM", "mixtral.py:162-206,241", GLOBAL),
    _a("Ernie4_5_MoeForCausalLM", "ernie45_moe.Ernie4_5_MoeForCausalLM", "ernie45_moe.py:237-282,321-322", GLOBAL),
    _a("Qwen3ForCausalLM", "qwen3.Qwen3ForCausalLM", "qwen3.py:90-148,202-216 (no per-layer window passed)",
       GLOBAL),
    _a("Qwen3MoeForCausalLM", "qwen3_moe.Qwen3MoeForCausalLM", "qwen3_moe.py:267-319,369-377", GLOBAL),
    _a("HYV3ForCausalLM", "hy_v3.HYV3ForCausalLM", "hy_v3.py:242-296 (head_dim when set, else hidden // heads)",
       GLOBAL),
    _a("K2HorizonForCausalLM", "k2_horizon.K2HorizonForCausalLM", "k2_horizon.py:588-660,759-861,1004-1038",
       GLOBAL),
    _a("BailingMoeForCausalLM", "bailing_moe.BailingMoeForCausalLM", "bailing_moe.py:86-151", GLOBAL),
    _a("BailingMoeV2ForCausalLM", "bailing_moe.BailingMoeV2ForCausalLM", "bailing_moe.py:86-151,568", GLOBAL),
    _a("SarvamMoEForCausalLM", "sarvam.SarvamMoEForCausalLM", "sarvam.py:751 (BailingMoeForCausalLM: "
       "bailing_moe.py:86-151)", GLOBAL),
    _a("PhiMoEForCausalLM", "phimoe.PhiMoEForCausalLM", "phimoe.py:105-115,317-360,394-396", GLOBAL),
    _a("Param2MoEForCausalLM", "param2moe.Param2MoEForCausalLM",
       "param2moe.py:112-126,177-181 (KV heads divisible by TP: no replication)", R(layer_types=False,
                                                                                     replicate=False)),
    _a("GemmaForCausalLM", "gemma.GemmaForCausalLM", "gemma.py:145-187,219-220 (head_dim)",
       R(head="head_dim!", layer_types=False)),
    _a("Gemma2ForCausalLM", "gemma2.Gemma2ForCausalLM", "gemma2.py:116-166,197-198 (head_dim)", R(head="head_dim!")),
    _a("Gemma3ForCausalLM", "gemma3.Gemma3ForCausalLM", "gemma3.py:117-185,225-226 (head_dim)", R(head="head_dim!")),
    _a("GptOssForCausalLM", "gpt_oss.GptOssForCausalLM",
       "gpt_oss.py:106-186 (even layers slide; heads // TP with no replication)", R(head="head_dim!",
                                                                                    replicate=False),
       kv="sliding (even layers) / full attention", reader="gpt_oss"),
    # --- head size hidden // heads whatever the config's head_dim says
    _a("Qwen2ForCausalLM", "qwen2.Qwen2ForCausalLM", "qwen2.py:140-200,351-361 (interleaved windows refused)",
       HIDDEN, reader="qwen2"),
    _a("MiMoForCausalLM", "mimo.MiMoForCausalLM", "mimo.py:57,91 (Qwen2: qwen2.py:140-200)", HIDDEN,
       reader="qwen2"),
    _a("Qwen2MoeForCausalLM", "qwen2_moe.Qwen2MoeForCausalLM", "qwen2_moe.py:215-266", HIDDEN),
    _a("OlmoeForCausalLM", "olmoe.OlmoeForCausalLM", "olmoe.py:131-184", HIDDEN),
    _a("OrionForCausalLM", "orion.OrionForCausalLM", "orion.py:102-144", HIDDEN),
    _a("InternLM2ForCausalLM", "internlm2.InternLM2ForCausalLM", "internlm2.py:109-152", HIDDEN),
    _a("MiniCPMForCausalLM", "minicpm.MiniCPMForCausalLM", "minicpm.py:254-297", HIDDEN),
    _a("StableLmForCausalLM", "stablelm.StablelmForCausalLM", "stablelm.py:110-158", HIDDEN),
    _a("DeepseekForCausalLM", "deepseek_v2.DeepseekForCausalLM", "deepseek_v2.py:170-225 (DeepSeek-V1: no MLA)",
       HIDDEN),
    _a("Step1ForCausalLM", "step1.Step1ForCausalLM", "step1.py:95-140 (num_attention_groups, else "
       "num_key_value_heads, else 1)", R(heads="step1", head="hidden", layer_types=False)),
    _a("ChatGLMModel", "chatglm.ChatGLMForCausalLM", "chatglm.py:58-118 (multi_query_group_num iff "
       "multi_query_attention)", R(heads="chatglm", head="hidden", layer_types=False), reader="chatglm"),
    _a("ChatGLMForConditionalGeneration", "chatglm.ChatGLMForCausalLM", "chatglm.py:58-118 (multi_query_group_num "
       "iff multi_query_attention)", R(heads="chatglm", head="hidden", layer_types=False), reader="chatglm"),
    _a("DbrxForCausalLM", "dbrx.DbrxForCausalLM", "dbrx.py:199-252 (attn_config.kv_n_heads)",
       R(heads="attn_config.kv_n_heads", head="hidden", layer_types=False)),
    _a("BloomForCausalLM", "bloom.BloomForCausalLM", "bloom.py:96-131 (multi-head)",
       R(heads="mha", head="hidden", layer_types=False), mlp="plain"),
    _a("GPT2LMHeadModel", "gpt2.GPT2LMHeadModel", "gpt2.py:74-99 (multi-head)",
       R(heads="mha", head="hidden", layer_types=False), mlp="plain"),
    _a("GPTJForCausalLM", "gpt_j.GPTJForCausalLM", "gpt_j.py:67-110 (multi-head)",
       R(heads="mha", head="hidden", layer_types=False), mlp="plain"),
    _a("OPTForCausalLM", "opt.OPTForCausalLM", "opt.py:83-110 (multi-head)",
       R(heads="mha", head="hidden", layer_types=False), mlp="plain"),
    _a("Step3TextForCausalLM", "step3_text.Step3TextForCausalLM", "step3_text.py:162-205,234-242 (one KV head)",
       R(heads="1", head="head_dim!", layer_types=False)),
    # --- existing special readers
    _r("Llama4ForCausalLM", "llama4.Llama4ForCausalLM", "llama4_text",
       "chunked local (RoPE layers) / full (NoPE layers)", "llama4.py:191-262"),
    _r("DeciLMForCausalLM", "nemotron_nas.DeciLMForCausalLM", "deci", "full attention, per-layer KV heads; none "
       "(no_op / replace_with_linear)", "nemotron_nas.py:123-160"),
    _r("DeepseekV2ForCausalLM", "deepseek_v2.DeepseekV2ForCausalLM", "mla", "MLA", _MLA),
    _r("DeepseekV3ForCausalLM", "deepseek_v2.DeepseekV3ForCausalLM", "mla", "MLA", _MLA),
    _r("MistralLarge3ForCausalLM", "mistral_large_3.MistralLarge3ForCausalLM", "mla", "MLA",
       "mistral_large_3.py:12 (DeepseekV3ForCausalLM); " + _MLA),
    _r("Glm4MoeLiteForCausalLM", "glm4_moe_lite.Glm4MoeLiteForCausalLM", "mla", "MLA",
       "glm4_moe_lite.py:108-160 (DeepseekV2MLAAttention)"),
    _r("DeepseekV32ForCausalLM", "deepseek_v32.DeepseekV32ForCausalLM", "mla_indexer", "MLA + indexer cache",
       "models/deepseek_v32 (deepseek_v2.py:638-663 DeepseekV32IndexerCache: index_head_dim + scale bytes)"),
    _r("GlmMoeDsaForCausalLM", "deepseek_v32.GlmMoeDsaForCausalLM", "mla_indexer", "MLA + indexer cache",
       "models/deepseek_v32/__init__.py (DeepseekV32ForCausalLM)"),
    _r("DeepseekV4ForCausalLM", "deepseek_v4.DeepseekV4ForCausalLM", "deepseek_v4", "sliding-window MLA in every "
       "layer; compressed MLA + compressor state (ratio 4: + indexer key cache and state)",
       "models/deepseek_v4/attention.py:238-242,286-380,860-925; compressor.py:139-192,282-283; "
       "v1/attention/backends/mla/sparse_swa.py:85,120-166 (registry.py:99; from 0.20.0)"),
    _r("LongcatFlashForCausalLM", "longcat_flash.LongcatFlashForCausalLM", "longcat", "MLA, two attentions per "
       "decoder layer", "longcat_flash.py:267-287,395-396; model_arch_config_convertor.py:758-761"),
    _r("FalconForCausalLM", "falcon.FalconForCausalLM", "falcon", "full attention, KV at the model dtype whatever "
       "--kv-cache-dtype says", "falcon.py:107-130,173-197 (Attention without cache_config: "
       "layers/attention/attention.py:276-279)", mlp="plain"),
    _r("SarvamMLAForCausalLM", "sarvam.SarvamMLAForCausalLM", "mla", "MLA", "sarvam.py:108-231"),
    _r("PanguUltraMoEForCausalLM", "openpangu.PanguUltraMoEForCausalLM", "mla", "MLA",
       "openpangu.py:240-374,791-810"),
    _r("JambaForCausalLM", "jamba.JambaForCausalLM", "jamba", "full attention / Mamba-1", "jamba.py:127,199-235"),
    _r("Mamba2ForCausalLM", "mamba2.Mamba2ForCausalLM", "mamba2", "Mamba-2", "mamba2.py:57-68"),
    _r("NemotronHForCausalLM", "nemotron_h.NemotronHForCausalLM", "nemotron_h", "Mamba-2 / full attention / none",
       "nemotron_h.py:390-488"),
    _r("NemotronHPuzzleForCausalLM", "nemotron_h.NemotronHForCausalLM", "nemotron_h",
       "Mamba-2 / full attention / none", "nemotron_h.py:390-488"),
    _r("FalconH1ForCausalLM", "falcon_h1.FalconH1ForCausalLM", "falcon_h1", "full attention + Mamba-2 per layer",
       "falcon_h1.py:118-127,225-277"),
    _r("Qwen3NextForCausalLM", "qwen3_next.Qwen3NextForCausalLM", "qwen3_next", "full attention / gated delta net",
       "qwen3_next.py:298-357,501-509"),
    _a("Rnj1ForCausalLM", "rnj1.Rnj1ForCausalLM", "rnj1.py:109-169 (chunked_attention layers: a sliding window "
       "with a one-chunk lookback kernel, SlidingWindowSpec)", R(head="head_dim!", slides="chunked_attention")),
    _a("MiniCPM3ForCausalLM", "minicpm3.MiniCPM3ForCausalLM", "minicpm3.py:52-135 (MLA projections, plain attention: "
       "one KV head per query head of qk_nope_head_dim + qk_rope_head_dim)", R(heads="mha", head="qk",
                                                                             layer_types=False)),
    _a("Plamo3ForCausalLM", "plamo3.Plamo3ForCausalLM", "plamo3.py:131-205 (interleaved_sliding_window[layer])",
       R(head="head_dim!"), kv="full / sliding attention per interleaved_sliding_window", reader="window_list"),
    _a("ExaoneMoeForCausalLM", "exaone_moe.ExaoneMoeForCausalLM", "exaone_moe.py:184-270 (sliding_windows[layer] "
       "on the sliding layers, else sliding_window)", reader="exaone_moe"),
    _a("ExaoneMoEForCausalLM", "exaone_moe.ExaoneMoeForCausalLM", "exaone_moe.py:184-270 (sliding_windows[layer] "
       "on the sliding layers, else sliding_window)", reader="exaone_moe"),
    _a("Gemma3nForCausalLM", "gemma3n.Gemma3nForCausalLM", "gemma3n.py:296-399 (KV shared by the last "
       "num_kv_shared_layers)", R(head="head_dim!"), kv="full / sliding attention per layer_types; none (KV shared)",
       reader="gemma3n"),
    _a("Gemma4ForCausalLM", "gemma4.Gemma4ForCausalLM", "gemma4.py:388-510,560-590 (per_layer_config head size and "
       "KV heads; KV shared by the last num_kv_shared_layers)", R(head="head_dim!"),
       kv="sliding / full attention (full layers: global_head_dim); none (KV shared)", reader="gemma4"),
    _r("AXK1ForCausalLM", "AXK1.AXK1ForCausalLM", "mla", "MLA", "AXK1.py:572-627 (AXK1MLAAttention)"),
    _a("Qwen3_5ForCausalLM", "qwen3_5.Qwen3_5ForCausalLM", "qwen3_5.py:125-160,298-415 (Qwen3NextAttention: "
       "qwen3_next.py:298-357; QwenGatedDeltaNetAttention)", GLOBAL, kv="full attention / gated delta net",
       reader="gdn_hybrid"),
    _a("Qwen3_5MoeForCausalLM", "qwen3_5.Qwen3_5MoeForCausalLM", "qwen3_5.py:125-160,298-415 (Qwen3NextAttention: "
       "qwen3_next.py:298-357; QwenGatedDeltaNetAttention)", GLOBAL, kv="full attention / gated delta net",
       reader="gdn_hybrid"),
    _a("OlmoHybridForCausalLM", "olmo_hybrid.OlmoHybridForCausalLM", "olmo_hybrid.py:81-135,226-250,455-470 "
       "(hidden // heads)", HIDDEN, kv="full attention / gated delta net", reader="gdn_hybrid"),
    _a("GraniteMoeHybridForCausalLM", "granitemoehybrid.GraniteMoeHybridForCausalLM", "granitemoehybrid.py:72-90,"
       "240-290,321-324,630-645 (hidden // heads)", HIDDEN, kv="Mamba-2 / full attention", reader="granite_hybrid"),
    _a("Lfm2ForCausalLM", "lfm2.Lfm2ForCausalLM", "lfm2.py:120-170,435,570-577 (hidden // heads; conv_dim)", HIDDEN,
       kv="short convolution / full attention", reader="lfm2"),
    _a("Lfm2MoeForCausalLM", "lfm2_moe.Lfm2MoeForCausalLM", "lfm2_moe.py:190-240,433 (hidden // heads; conv_dim)",
       HIDDEN, kv="short convolution / full attention", reader="lfm2"),
    _r("MambaForCausalLM", "mamba.MambaForCausalLM", "mamba1", "Mamba-1", "mamba.py:63-79,234-246"),
    _r("FalconMambaForCausalLM", "mamba.MambaForCausalLM", "mamba1", "Mamba-1", "mamba.py:63-79,234-246"),
    # --- vLLM 0.33.0's Transformers backend (_TRANSFORMERS_SUPPORTED_MODELS): transformers/base.py:608-700 builds
    # one Attention per layer with vLLM's generic heads (config.py:56-63) and head size
    # (model_arch_config_convertor.py:104-118), the window on layer_types' sliding layers.
    _a("ArceeForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("CwmForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("FlexOlmoForCausalLM", "transformers.TransformersMoEForCausalLM", _HF, TRANSFORMERS),
    _a("GlmForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("GPTBigCodeForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("GPTNeoXForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("HunYuanDenseV1ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("HunYuanMoEV1ForCausalLM", "transformers.TransformersMoEForCausalLM", _HF, TRANSFORMERS),
    _a("Jais2ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("Kolibri1ForCausalLM", "transformers.TransformersMoEForCausalLM", _HF, TRANSFORMERS),
    _a("MellumForCausalLM", "transformers.TransformersMoEForCausalLM", _HF, TRANSFORMERS),
    _a("NanbeigeForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("OlmoForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("Olmo2ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("Olmo3ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("PhiForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("SeedOssForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("SmolLM3ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    _a("Starcoder2ForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS, mlp="plain"),
    _a("VaultGemmaForCausalLM", "transformers.TransformersForCausalLM", _HF, TRANSFORMERS),
    # --- not modelled by kvcalc (each for the reason given)
    _x("HrmTextForCausalLM", "hrm_text.HrmTextForCausalLM", NOT_READ + "one KV cache per recurrence step of each "
       "layer (hrm_text.py:196-225)"),
    _x("IQuestLoopCoderForCausalLM", "iquest_loopcoder.IQuestLoopCoderForCausalLM", NOT_READ + "one KV cache per "
       "loop of each layer, the later loops sliding (iquest_loopcoder.py:130-165)"),
    _x("DoryForCausalLM", "dory.DoryForCausalLM", NOT_READ + "one KV cache per loop of each layer "
       "(dory.py:109-133)"),
    _x("DomynEdgeForCausalLM", "domyn_edge.DomynEdgeForCausalLM", NOT_READ + "per-layer head sizes and windows "
       "from per_layer_config / window_sizes (domyn_edge.py:97-170)"),
    _x("HCXVisionV2ForCausalLM", "hyperclovax_vision_v2.HCXVisionV2ForCausalLM", NOT_READ + "a multimodal model "
       "whose language model kvcalc does not resolve"),
    _x("AliceAIForCausalLM", "alice_ai.AliceAIForCausalLM", NOT_READ + "Kimi Delta Attention state "
       "(alice_ai.py:689-700, mamba_utils.py:296-319) with KDA prefill checkpoint blocks"),
    _x("KimiLinearForCausalLM", "kimi_k3.KimiLinearForCausalLM", NOT_READ + "Kimi Delta Attention layers "
       "(models/kimi_k3/nvidia/kda.py:901-909: a KDA state with prefill checkpoint blocks and alignment) beside MLA "
       "layers"),
    _x("BailingMoeV3ForCausalLM", "bailing_moe_v3.BailingMoeV3ForCausalLM", NOT_READ + "Kimi Delta Attention layers "
       "(bailing_moe_v3.py:635-900,1480-1493) beside MLA layers"),
    _x("BailingMoeV2_5ForCausalLM", "bailing_moe_linear.BailingMoeV25ForCausalLM", NOT_READ + "per-layer lightning "
       "linear attention or MLA chosen by config.attention_type per layer (bailing_moe_linear.py:347-377)"),
    _x("Glm5NextForCausalLM", "glm5next.Glm5NextForCausalLM", NOT_READ + "KDA linear attention beside indexed MLA "
       "with a CircularBufferSpec indexer cache (models/glm5next)"),
    _x("Qwen4ExpForCausalLM", "qwen4_exp.Qwen4ExpForCausalLM", NOT_READ + "gated delta net, full and compressed "
       "indexed attention (CircularBufferSpec, MLAAttentionSpec) in models/qwen4_exp"),
    _x("Step5ForCausalLM", "step5.Step5ForCausalLM", NOT_READ + "CircularBufferSpec attention layers (models/step5)"),
    _x("HYV4ForCausalLM", "hy_v4.HYV4ForCausalLM", NOT_READ + "MLA with a lightning indexer shared between layers "
       "(indexer_types full / shared, models/hy_v4)"),
    _x("MiniMaxM3SparseForCausalLM", "minimax_m3.MiniMaxM3SparseForCausalLM", NOT_READ + "sparse attention layers "
       "with an MLA-spec key cache (models/minimax_m3)"),
    _x("InklingForCausalLM", "inkling.InklingForCausalLM", NOT_READ + "hybrid / hybrid_sliding layers, each with a "
       "full and a sliding KV cache (models/inkling)"),
    _x("InklingForConditionalGeneration", "inkling.InklingForConditionalGeneration", NOT_READ + "hybrid / "
       "hybrid_sliding layers, each with a full and a sliding KV cache (models/inkling)"),
    _x("BeamForCausalLM", "beam.BeamForCausalLM", NOT_READ + "its attention is built by platform code under "
       "models/beam/nvidia that kvcalc has not mapped"),
    _x("FlintForCausalLM", "flint.FlintForCausalLM", NOT_READ + "its attention is built by models/flint (GGUF NVFP4 "
       "kernels) that kvcalc has not mapped"),
    _x("LongcatFlashNgramForCausalLM", "longcat_flash_ngram.LongcatFlashNgramForCausalLM", NOT_READ + "two MLA "
       "attentions per decoder layer (longcat_flash.py:249-290) and n-gram embeddings"),
    _x("MiMoV2FlashForCausalLM", "mimo_v2.MiMoV2FlashForCausalLM", NOT_READ + "K and V head sizes that differ by "
       "layer kind (swa_v_head_dim, v_head_dim) on the DIFFKV attention backends (mimo_v2.py:318-358,406-440)"),
    _x("MiMoV2ForCausalLM", "mimo_v2.MiMoV2ForCausalLM", NOT_READ + "K and V head sizes that differ by layer kind "
       "(swa_v_head_dim, v_head_dim) on the DIFFKV attention backends (mimo_v2.py:318-358,406-440)"),
    _x("PanguEmbeddedForCausalLM", "openpangu.PanguEmbeddedForCausalLM", NOT_READ + "a per-layer choice between "
       "MLA, static-sink and windowed attention (openpangu.py:769-880)"),
    _x("PanguProMoEV2ForCausalLM", "openpangu.PanguProMoEV2ForCausalLM", NOT_READ + "static-sink attention "
       "(SinkFullAttentionSpec with sink_len, openpangu.py:522-640)"),
    _x("Zamba2ForCausalLM", "zamba2.Zamba2ForCausalLM", NOT_READ + "attention blocks shared between hybrid layers, "
       "each use with its own KV cache named out of layer order (zamba2.py:190-200,735-760)"),
)
