"""Architectures of vLLM 0.33.0's registry, from real published config.json files (tests/fixtures/hf, each citing its
source): layer kinds, KV heads and head size per rank, and bytes per token per rank, each derived by hand below from
the config and the vLLM model file the architecture table cites."""

import os
from collections import Counter

import pytest

from kvcalc.inputs.layout.read import load_layout
from kvcalc.inputs.values import overrides as make_overrides
from kvcalc.pipeline import plan

HF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "hf")


def layout(name, tp=1, **kw):
    ov = make_overrides(dict(tp=tp, cpu_bytes="64G", kv_cache_memory="40GiB", max_model_len=kw.get("max_model_len"),
                             prefix=None, vllm_version=kw.get("vllm_version"), draft_config=None, speculative=None))
    return load_layout(os.path.join(HF, name), overrides=ov)


def per_token_per_rank(p):
    """KV bytes one token takes on one rank: the sum of page / block over the first stage's layers."""
    return sum(s.page_size_bytes // s.block_size for _, s in p.layers.stages[0].layers)


# (fixture, TP, layer kinds, KV heads per rank, head size, window, bytes per token per rank). Derivations, bf16 = 2 B
# unless the config says float16 (also 2 B); K and V each heads x head size:
CASES = [
    # Mixtral-8x7B: mixtral.py:162-206 heads = num_key_value_heads 8 / TP 2 = 4; head_dim absent -> 4096 // 32 = 128;
    # sliding_window null -> no window. 32 layers x 2 x 4 x 128 x 2 B = 65,536.
    ("mixtral-8x7b-v0.1.json", 2, {"full_attention": 32}, 4, 128, None, 32 * 2 * 4 * 128 * 2),
    # Gemma-2B (Gemma 1): gemma.py:145-187 head_dim 256; 1 KV head, TP 2 replicates it (1 per rank); no window.
    # 18 x 2 x 1 x 256 x 2 = 18,432.
    ("gemma-2b.json", 2, {"full_attention": 18}, 1, 256, None, 18 * 2 * 1 * 256 * 2),
    # Granite-3.3-8B: granite.py:95-110 no layer_types -> no per-layer window and no sliding_window; 8 KV heads / 2;
    # head 4096 // 32 = 128. 40 x 2 x 4 x 128 x 2 = 81,920.
    ("granite-3.3-8b-instruct.json", 2, {"full_attention": 40}, 4, 128, None, 40 * 2 * 4 * 128 * 2),
    # GLM-4.7 (Glm4MoeForCausalLM, as GLM-4.6): glm4_moe.py:245-290 head_dim 128, 8 KV heads / TP 4 = 2.
    # 92 x 2 x 2 x 128 x 2 = 94,208.
    ("glm-4.7.json", 4, {"full_attention": 92}, 2, 128, None, 92 * 2 * 2 * 128 * 2),
    # ChatGLM2-6B: chatglm.py:58-75 multi_query_attention -> multi_query_group_num 2 KV heads (1 per rank at TP 2);
    # head hidden 4096 // 32 heads = 128; num_layers 28; float16. 28 x 2 x 1 x 128 x 2 = 14,336.
    ("chatglm2-6b.json", 2, {"full_attention": 28}, 1, 128, None, 28 * 2 * 1 * 128 * 2),
    # GPT-2: gpt2.py:74-99 multi-head: n_head 12 KV heads (6 per rank at TP 2), head n_embd 768 // 12 = 64;
    # n_layer 12. 12 x 2 x 6 x 64 x 2 = 18,432.
    ("gpt2.json", 2, {"full_attention": 12}, 6, 64, None, 12 * 2 * 6 * 64 * 2),
    # Qwen1.5-MoE-A2.7B: qwen2_moe.py:215-266 head hidden 2048 // 16 = 128; use_sliding_window false -> the class
    # sets sliding_window 0 -> none. 16 KV heads / 2 = 8. 24 x 2 x 8 x 128 x 2 = 98,304.
    ("qwen1.5-moe-a2.7b.json", 2, {"full_attention": 24}, 8, 128, None, 24 * 2 * 8 * 128 * 2),
    # DeepSeek-MoE-16B (DeepseekForCausalLM, no MLA): deepseek_v2.py:170-225 16 KV heads / 2 = 8, head 2048 // 16
    # = 128. 28 x 2 x 8 x 128 x 2 = 114,688.
    ("deepseek-moe-16b.json", 2, {"full_attention": 28}, 8, 128, None, 28 * 2 * 8 * 128 * 2),
    # Phi-2 (PhiForCausalLM, the Transformers backend in 0.33.0): transformers/base.py:608-700 with vLLM's generic
    # heads (num_key_value_heads 32 / 2 = 16) and head size (no head_dim: 2560 // 32 = 80); float16.
    # 32 x 2 x 16 x 80 x 2 = 163,840.
    ("phi-2.json", 2, {"full_attention": 32}, 16, 80, None, 32 * 2 * 16 * 80 * 2),
    # MiniMax-M2: minimax_m2.py:160-209 head_dim 128, 8 KV heads / TP 4 = 2, no window. 62 x 2 x 2 x 128 x 2 = 63,488.
    ("minimax-m2.json", 4, {"full_attention": 62}, 2, 128, None, 62 * 2 * 2 * 128 * 2),
    # llava-1.5-7b: llava.py:569 the language model under text_config, which names no sizes: LlamaConfig's defaults
    # (32 layers, hidden 4096, 32 heads, num_key_value_heads None -> 32); head 4096 // 32 = 128; float16.
    # 32 x 2 x 32 x 128 x 2 = 524,288.
    ("llava-1.5-7b.json", 1, {"full_attention": 32}, 32, 128, None, 32 * 2 * 32 * 128 * 2),
    # Ministral-3-3B (Mistral3ForConditionalGeneration, text_config model_type ministral3): MistralForCausalLM,
    # head_dim 128, 8 KV heads / 2 = 4, sliding_window null. 26 x 2 x 4 x 128 x 2 = 53,248.
    ("ministral3-3b.json", 2, {"full_attention": 26}, 4, 128, None, 26 * 2 * 4 * 128 * 2),
]


@pytest.mark.parametrize("name,tp,kinds,heads,head,window,per_token", CASES, ids=[c[0] for c in CASES])
def test_attention_architectures(name, tp, kinds, heads, head, window, per_token):
    lay = layout(name, tp, max_model_len="1024")  # within every model's derived maximum (gpt2: n_positions 1024)
    assert dict(Counter(lay.model.layer_types)) == kinds
    p = plan(lay)
    first = p.layers.stages[0].layers[0][1]
    assert first.num_kv_heads == heads
    assert first.head_size == head
    assert lay.model.sliding_window == window
    assert per_token_per_rank(p) == per_token


def test_gpt2_reads_its_own_key_names():
    # GPT2Config.attribute_map (transformers 5.24.0): num_hidden_layers -> n_layer, max_position_embeddings ->
    # n_positions; vLLM's max_model_len default comes from n_positions 1024.
    lay = layout("gpt2.json")
    assert lay.model.num_layers == 12
    assert lay.cache.max_model_len == 1024
    assert dict(lay.provenance)["model.num_layers"] == "n_layer"


def test_chatglm_length_comes_from_seq_length():
    # model_arch_config_convertor.py:370-403: ChatGLM has no max_position_embeddings; seq_length 8192 is the length.
    assert layout("chatglm2-6b.json").cache.max_model_len == 8192


def test_float32_checkpoint_without_dtype_is_served_in_bf16():
    # GPT-2's config names no torch_dtype: vLLM takes float32 and serves it in bf16.
    assert layout("gpt2.json").model.dtype == "bfloat16"
    assert layout("chatglm2-6b.json").model.dtype == "float16"


def test_gemma4_e2b_shares_kv_and_widens_full_layers():
    # Gemma4ForConditionalGeneration -> text_config -> Gemma4ForCausalLM (gemma4.py:388-510,560-590). 35 layers, full
    # at 4, 9, ..., 34; num_kv_shared_layers 20: layers 15-34 read layer 13's (sliding) or 14's (full) cache and own
    # none. Of layers 0-14: full 4, 9, 14 at global_head_dim 512, 12 sliding at head_dim 256 (window 512); one KV
    # head (attention_k_eq_v false). Bytes per token: 12 x 2 x 1 x 256 x 2 + 3 x 2 x 1 x 512 x 2 = 12,288 + 6,144.
    lay = layout("gemma-4-e2b.json")
    kinds = lay.model.layer_types
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == [4, 9, 14]
    assert kinds[15:] == ("none",) * 20
    assert lay.model.head_size[4] == 512
    assert lay.model.head_size[0] == 256
    assert lay.model.sliding_window == 512
    assert per_token_per_rank(plan(lay)) == 12 * 2 * 256 * 2 + 3 * 2 * 512 * 2


def test_qwen3_6_gated_delta_net_through_the_wrapper():
    # Qwen3_5MoeForConditionalGeneration -> text_config (qwen3_5_moe_text) -> Qwen3_5MoeForCausalLM (qwen3_5.py):
    # 40 layers, every 4th full attention (2 KV heads of 256), 30 gated-delta-net layers. At TP 1 the attention
    # takes 10 x 2 x 2 x 256 x 2 = 20,480 B a token; one GDN state (mamba_utils.py:272-293): conv (4 - 1) x
    # (128 x 16 x 2 + 128 x 32) = 3 x 8,192 bf16 = 49,152 B, ssm 32 x 128 x 128 bf16 = 1,048,576 B.
    lay = layout("qwen3.6-35b-a3b.json")
    assert dict(Counter(lay.model.layer_types)) == {"mamba": 30, "full_attention": 10}
    p = plan(lay)
    mamba = [s for _, s in p.layers.stages[0].layers if s.kind == "mamba"]
    assert mamba[0].shapes == ((3, 8192), (32, 128, 128))
    assert mamba[0].real_page_size_bytes == 49_152 + 1_048_576
    attention = [s for _, s in p.layers.stages[0].layers if s.kind != "mamba"]
    assert sum(s.page_size_bytes // s.block_size for s in attention) == 10 * 2 * 2 * 256 * 2


def test_qwen3_5_at_tp8_and_its_mtp_layer():
    # Qwen3.5-397B-A17B at TP 8: 2 KV heads replicated (1 per rank): 15 x 2 x 1 x 256 x 2 = 15,360 B a token; the
    # GDN conv dim (128 x 16 x 2 + 128 x 64) / 8 = 1,536 and 64 / 8 = 8 value heads: 3 x 1,536 x 2 + 8 x 128 x 128
    # x 2 = 9,216 + 262,144 B. mtp_num_hidden_layers 1 (model_arch_config_convertor.py:733-735): one MTP layer,
    # the main attention layer again.
    lay = layout("qwen3.5-397b-a17b.json", tp=8)
    p = plan(lay)
    mamba = [s for _, s in p.layers.stages[0].layers if s.kind == "mamba"]
    assert len(mamba) == 45
    assert mamba[0].real_page_size_bytes == 9_216 + 262_144
    attention = [s for _, s in p.layers.stages[0].layers if s.kind != "mamba"]
    assert sum(s.page_size_bytes // s.block_size for s in attention) == 15 * 2 * 1 * 256 * 2
    ov = make_overrides(dict(tp=8, cpu_bytes="64G", kv_cache_memory="40GiB", max_model_len=None, prefix=None,
                             vllm_version=None, draft_config=None, speculative="mtp"))
    with_mtp = load_layout(os.path.join(HF, "qwen3.5-397b-a17b.json"), overrides=ov)
    assert with_mtp.model.draft.num_layers == 1
