"""parameter_breakdown: parameters by part from real configs, each derived by hand from the config's shapes (and
checked against the published count where one exists)."""

import json
import os

import pytest

from kvcalc.inputs.hf.params import PARTS, parameter_breakdown
from kvcalc.vocab.errors import KvcalcError

HF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "hf")


def breakdown(name):
    path = os.path.join(HF, name)
    with open(path) as fh:
        return parameter_breakdown(json.load(fh), source=path)


def test_mixtral_8x7b_is_its_published_46_7b():
    # embed 32,000 x 4,096 and an untied lm_head: 2 x 131,072,000; per layer q, o 2 x 4,096^2 + k, v 2 x 1,024 x 4,096
    # = 41,943,040; 8 experts x 3 x 4,096 x 14,336 = 1,409,286,144; router 4,096 x 8; 2 norms x 4,096.
    # 32 layers + final norm: 46,702,792,704, Mixtral's published count.
    d = breakdown("mixtral-8x7b-v0.1.json")
    assert d["experts"] == 32 * 8 * 3 * 4096 * 14336
    assert d["attention"] == 32 * 41_943_040
    assert d["router"] == 32 * 4096 * 8
    assert d["total"] == 46_702_792_704


def test_gpt2_and_phi2_are_their_published_counts():
    # GPT-2: wte 50,257 x 768 + wpe 1,024 x 768 (tied lm_head); 12 layers of c_attn 768 x 2,304 + c_proj 768^2,
    # MLP 2 x 768 x 3,072, biases (2,304 + 768 + 3,072 + 768) and two LayerNorms (4 x 768); ln_f 2 x 768:
    # 124,439,808. Phi-2: 2 x 51,200 x 2,560 (untied); 32 layers of q, k, v, dense 4 x 2,560^2 with biases,
    # fc1 / fc2 2 x 2,560 x 10,240 with biases, one LayerNorm (2 x 2,560); final LayerNorm, lm_head bias 51,200:
    # 2,779,683,840.
    assert breakdown("gpt2.json")["total"] == 124_439_808
    assert breakdown("phi-2.json")["total"] == 2_779_683_840


def test_granite_ties_its_lm_head():
    # Granite-3.3-8B (its parameter shapes are listed beside the config in the fixture's source): embed 49,159 x
    # 4,096 = 201,355,264, tied; per layer 2 x 4,096^2 + 2 x 1,024 x 4,096 + 3 x 12,800 x 4,096 + 2 x 4,096 =
    # 199,237,632; x 40 + final norm 4,096: 8,170,864,640.
    d = breakdown("granite-3.3-8b-instruct.json")
    assert d["lm_head"] == 0
    assert d["total"] == 201_355_264 + 40 * 199_237_632 + 4096


def test_deepseek_moe_dense_first_layer_and_shared_experts():
    # first_k_dense_replace 1: layer 0 a dense MLP 3 x 2,048 x 10,944; layers 1-27 64 experts and 2 shared of
    # 3 x 2,048 x 1,408, a router 2,048 x 64. Attention 4 x 2,048^2 a layer; 2 x 102,400 x 2,048 embeddings.
    d = breakdown("deepseek-moe-16b.json")
    assert d["mlp"] == 3 * 2048 * 10944
    assert d["experts"] == 27 * 64 * 3 * 2048 * 1408
    assert d["shared_experts"] == 27 * 2 * 3 * 2048 * 1408
    assert d["total"] == 16_375_728_128  # DeepSeek-MoE-16B: 16.4 B


def test_qwen3_6_gated_delta_net_and_gated_attention():
    # GDN layer (hidden 2,048; 16 key heads, 32 value heads of 128; kernel 4): in_proj 2,048 x (8,192 + 4,096),
    # b / a 2,048 x 64, conv 8,192 x 4, A_log and dt_bias 2 x 32, norm 128, out_proj 4,096 x 2,048 = 33,718,464;
    # 30 of them. Gated attention (attn_output_gate): q 2,048 x 16 x 256 x 2, k and v 2 x 2,048 x 2 x 256, o 4,096 x
    # 2,048 = 27,262,976; 10 of them.
    d = breakdown("qwen3.6-35b-a3b.json")
    assert d["mamba"] == 30 * 33_718_464
    assert d["attention"] == 10 * 27_262_976
    assert d["experts"] == 40 * 256 * 3 * 2048 * 512
    assert d["vision_estimate"] is not None


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HF) if f.endswith(".json")))
def test_every_part_is_a_count(name):
    with open(os.path.join(HF, name)) as fh:
        data = json.load(fh)
    try:
        d = parameter_breakdown(data, source=name)
    except KvcalcError as e:  # a KV-fields-only fixture names the size it lacks; a drafter is not a model
        assert "vocab_size" in str(e) or "intermediate_size" in str(e) or "drafter" in str(e) or "not mapped" in str(e)
        return
    assert all(isinstance(d[p], int) and d[p] >= 0 for p in PARTS)
    assert d["total"] == sum(d[p] for p in PARTS)
