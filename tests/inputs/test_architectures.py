"""Architectures of vLLM 0.33.0's registry, from real published config.json files (tests/fixtures/hf, each citing its
source): layer kinds, KV heads and head size per rank, and bytes per token per rank, each derived by hand below from
the config and the vLLM model file the architecture table cites."""

import os
from collections import Counter

import pytest

from kvcalc.inputs.yaml_layout import load_layout
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
]


@pytest.mark.parametrize("name,tp,kinds,heads,head,window,per_token", CASES, ids=[c[0] for c in CASES])
def test_attention_architectures(name, tp, kinds, heads, head, window, per_token):
    lay = layout(name, tp, max_model_len="8192")
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
