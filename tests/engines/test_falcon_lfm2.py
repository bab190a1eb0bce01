"""Issue 32's refusals that need not be: Falcon (its attention keeps the model dtype whatever --kv-cache-dtype
says) and LFM2 configs that give full_attn_idxs instead of layer_types. Expected numbers are vLLM's formulas by
hand (spec section 2: full attention page = B x H x (D + Dv) x s)."""

import json
import os

import pytest

from conftest import GIB, ROOT_DIR
from kvcalc.inputs.hf.config import map_config
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import UnsupportedError

# tiiuae/falcon-40b-instruct's config.json (model_type falcon, transformers 4.28.1), as a public GitHub file
# (search index id 3510365701, a Tenstorrent Falcon-40B demo) holds it as a Python dict; transcribed to JSON.
FALCON_40B = os.path.join(ROOT_DIR, "tests", "fixtures", "hf", "falcon-40b-instruct.json")


def _plan(config: str, version: str, **cache):
    data = {"model": {"hf_config": config}, "vllm": {"version": version},
            "cache": {"kv_cache_memory": 40 * GIB, "max_model_len": 2048, "block_size": 16, **cache}}
    return plan(layout_from_dict(data, source="t.yaml"))


@pytest.mark.parametrize("version", ["0.14.0", "0.19.1", "0.26.0", "0.33.0"])
@pytest.mark.parametrize("dtype", ["auto", "fp8"])
def test_falcon_40b_keeps_the_model_dtype(version, dtype):
    # falcon.py:115-130: new_decoder_architecture -> num_kv_heads 8; head 8192 // 128 = 64; rotary (not alibi)
    # Attention without cache_config (falcon.py:173-187): bf16 whatever --kv-cache-dtype says.
    p = _plan(FALCON_40B, version, kv_cache_dtype=dtype)
    page = 16 * 8 * (64 + 64) * 2
    assert p.grouping.groups[0].spec.page_size_bytes == page == 32_768
    assert p.gpu.workers[0].bytes_per_block == 60 * page
    assert p.gpu.num_blocks == 40 * GIB // (60 * page) == 21_845
    if dtype == "fp8":
        assert any("does not reach this model's attention" in n for n in p.notes)


def test_falcon_multi_query_and_class_defaults():
    # Class defaults (transformers 5.24 configuration_falcon.py:64-95): 71 heads, hidden 4544, multi_query -> one
    # KV head of 4544 // 71 = 64.
    m = map_config({"architectures": ["FalconForCausalLM"], "model_type": "falcon"}, source="c.json")
    assert (m.model["num_kv_heads"], m.model["head_size"], m.model["num_layers"]) == (1, 64, 32)
    assert m.model["kv_cache_dtype_auto"] is True


def _lfm2(**extra):
    # Only the class defaults exist here (no real LFM2 config.json fixture): transformers 5.24
    # configuration_lfm2.py:59-87 (2560 hidden, 32 layers, 32 heads, 8 KV heads, conv_L_cache 3) plus conv_dim,
    # which vLLM reads (lfm2.py:575).
    return {"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "hidden_size": 2560, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3, "conv_dim": 2560, **extra}


def test_lfm2_full_attn_idxs(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_lfm2(full_attn_idxs=[2, 5, 8, 10, 12, 14])))
    m = map_config(json.loads(path.read_text()), source="c.json")
    kinds = m.model["layer_types"]
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == [2, 5, 8, 10, 12, 14]
    assert kinds.count("mamba") == 26
    p = _plan(str(path), "0.33.0")
    attention = [g for g in p.grouping.groups if g.spec.kind == "full_attention"]
    # 8 KV heads of 2560 // 32 = 80, bf16: 16 x 8 x 160 x 2 bytes a block before the hybrid bump
    assert attention
    assert attention[0].spec.num_kv_heads == 8
    assert attention[0].spec.head_size == 80


def test_lfm2_without_layer_kinds_is_every_layer_attention_and_refused():
    # transformers' default: full_attn_idxs absent -> every layer full attention; vLLM still aligns the block to a
    # short-conv state (lfm2.py:570-577), which kvcalc does not model.
    with pytest.raises(UnsupportedError, match="every LFM2 layer is full attention"):
        map_config(_lfm2(), source="c.json")


def test_falcon_40b_parameters_by_hand():
    from kvcalc.inputs.hf.params import parameter_breakdown

    with open(FALCON_40B) as f:
        parts = parameter_breakdown(json.load(f))
    layer = 8192 * (128 + 2 * 8) * 64 + 8192 * 8192 + 2 * 8192 * 4 * 8192  # fused QKV, dense, h->4h, 4h->h
    norms = 60 * 2 * 2 * 8192 + 2 * 8192  # ln_attn + ln_mlp (weight + bias) a layer, ln_f; bias false: no others
    assert parts["total"] == 65024 * 8192 + 60 * layer + norms == 41_303_293_952


def test_longcat_flash_class_defaults_two_mla_per_layer(tmp_path):
    # Only the class defaults (transformers 5.24 configuration_longcat_flash.py:84-105: num_layers 28, kv_lora_rank
    # 512, qk_rope_head_dim 64); longcat_flash.py:267-287 builds two DeepseekV2MLAAttention per decoder layer and
    # make_layers(config.num_layers) splits the decoder layers over PP (:395-396).
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["LongcatFlashForCausalLM"], "model_type": "longcat_flash",
                                "num_layers": 28, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                                "torch_dtype": "bfloat16"}))
    data = {"model": {"hf_config": str(path)}, "vllm": {"version": "0.33.0"}, "parallel": {"pipeline_parallel_size": 2},
            "cache": {"kv_cache_memory": 40 * GIB, "max_model_len": 8192, "block_size": 64}}
    p = plan(layout_from_dict(data, source="t.yaml"))
    page = 64 * (512 + 64) * 2  # one latent head, bf16, 64-token block
    assert p.grouping.rule == "uniform"
    assert p.grouping.groups[0].num_layers == 56
    assert p.grouping.groups[0].spec.page_size_bytes == page
    # 28 decoder layers over PP 2: 14 each, two caches a layer
    assert [w.bytes_per_block for w in p.gpu.workers] == [28 * page, 28 * page]
    names = [n for n, _ in p.layers.stages[0].layers]
    assert names[:2] == ["model.layers.0.self_attn.0.attn", "model.layers.0.self_attn.1.attn"]
