"""Weights of quantized checkpoints and every mapped architecture (issue 30): bytes derived by hand from the
shapes vLLM's create_weights allocates (engines/vllm/mxfp4.py, inputs/hf/quant.py cite the lines), checked against
real "Model loading took" lines (tests/fixtures/weights/SOURCES.md names each source)."""

import json
import os

import pytest

from conftest import run
from kvcalc.engines.vllm.weights import stage_weights
from kvcalc.inputs.hf.quant import read_quantization
from kvcalc.inputs.hf.weights import weights_spec
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.vocab.errors import UnsupportedError
from kvcalc.vocab.weights import WeightsSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
GPT_OSS = os.path.join(FIX, "weights", "gpt-oss-120b.json")
LLAMA = os.path.join(FIX, "models", "llama-3.1-8b.json")
GIB = 1 << 30


def _weights(config, version, gpu, tp=1, quant=None):
    g = {"name": gpu, "memory_utilization": 0.9, **({"quantization": quant} if quant else {})}
    lay = layout_from_dict({"model": {"hf_config": config}, "vllm": {"version": version},
                            "cache": {"max_model_len": 4096}, "gpu": g,
                            "parallel": {"tensor_parallel_size": tp}}, source="t.yaml")
    spec = lay.weights
    assert isinstance(spec, WeightsSpec), spec
    return stage_weights(spec, dtype=lay.model.dtype, tp=tp, stages=[(0, spec.num_layers)], runtime_quant=quant,
                         capability=lay.capability, version=version)[0].bytes_per_rank


def _gpt_oss_rest():
    """gpt-oss-120b outside the experts, bf16: per layer q/k/v/o with biases 2,880 x (4,096 + 1,024) + 5,120 +
    4,096 x 2,880 + 2,880 = 26,550,080, router 128 x 2,881 = 368,768, norms 5,760, sinks 64 = 26,924,672 x 36;
    embedding and LM head 201,088 (a multiple of 64) x 2,880 each, the final norm 2,880; all x 2 B; the YaRN
    cos/sin cache 131,072 x 64 in fp32 (gpt_oss.py:68-71 dtype=torch.float32)."""
    return (26_924_672 * 36 + 2 * 201_088 * 2880 + 2880) * 2 + 131_072 * 64 * 4


def test_gpt_oss_120b_h100_triton_is_its_real_load():
    # H100 (9.0) on 0.14.1: TRITON (mxfp4.py:147-166), I 2,880 stays (a multiple of 64), H 2,880. Per layer, 128
    # experts: values 128 x (5,760 x 1,440 + 2,880 x 1,440) = 1,592,524,800; scales 128 x (5,760 x 90 + 2,880 x 90)
    # = 99,532,800, held twice (loaded and swizzled); biases 128 x (5,760 + 2,880) x 4 B (fp32 after loading).
    experts = 1_592_524_800 + 2 * 99_532_800 + 128 * 8640 * 4
    want = experts * 36 + _gpt_oss_rest()
    got = _weights(GPT_OSS, "0.14.1", "H100")
    assert got == want
    logged = 6438 * GIB // 100  # vllm#33155: "Model loading took 64.38 GiB" (0.14.1, one H100, Triton MXFP4)
    assert abs(got - logged) / logged < 0.005


def test_gpt_oss_120b_marlin_pads_to_its_tiles():
    # An A100 (8.0): MARLIN (no triton_kernels below 9.0): H 2,880 -> 3,072 (256), I 2,880 -> 2,944 (128). Per
    # layer: values 128 x (5,888 x 1,536 + 3,072 x 1,472) = 1,736,441,856, scales 128 x (5,888 x 96 + 3,072 x 92) =
    # 108,527,616, bf16 biases 128 x (5,888 + 3,072) x 2 = 2,293,760.
    want = (1_736_441_856 + 108_527_616 + 2_293_760) * 36 + _gpt_oss_rest()
    got = _weights(GPT_OSS, "0.19.0", "a100-80gb")
    assert got == want
    logged = 6597 * GIB // 100  # vllm#23278: Marlin MXFP4 on an H100 (0.10.1), "Model loading took 65.97 GiB"
    assert abs(got - logged) / logged < 0.005


@pytest.mark.parametrize("version,inter", [("0.26.0", 3072), ("0.27.0", 2944)])
def test_gpt_oss_b200_trtllm_padding_per_release(version, inter):
    # B200 (10.0): FlashInfer TRT-LLM: H to 256 (3,072); I to 256 through 0.26 (3,072), to 128 from 0.27.0 (2,944;
    # oracle/mxfp4.py:656 @0.26.0, :657 @0.27.0). fp32 biases.
    per = 128 * (2 * inter * 3072 // 2 + 3072 * inter // 2 + 2 * inter * 3072 // 32 + 3072 * inter // 32
                 + (2 * inter + 3072) * 4)
    assert _weights(GPT_OSS, version, "B200") == per * 36 + _gpt_oss_rest()


def test_mxfp4_leaves_attention_and_router_in_bf16():
    # The checkpoint's modules_to_not_convert: self_attn, router, embed_tokens, lm_head.
    method, linear, expert, skip = read_quantization(json.load(open(GPT_OSS)))
    assert (method, linear) == ("mxfp4", None)
    assert "model.layers.*.self_attn" in skip


def test_modelopt_nvfp4_from_hf_quant_config():
    # nvidia/Qwen3-32B-NVFP4: no quantization_config in config.json, hf_quant_config.json beside it: NVFP4, group
    # 16: uint8 [out, in/2] + fp8 scale [out, in/16] = 0.5 + 1/16 = 9/16 B per element (modelopt.py:1079-1144).
    method, linear, _, skip = read_quantization({}, os.path.join(FIX, "weights", "qwen3-32b-nvfp4"))
    assert (method, linear) == ("modelopt", (9, 16))
    assert skip == ["lm_head"]


def test_fp8_block_scales_and_awq_groups():
    # fp8 weight_block_size [128, 128]: 1 B + one fp32 scale_inv per 16,384 values (fp8.py:369-379).
    assert read_quantization({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})[1] \
        == (16_384 + 4, 16_384)
    # AWQ 4-bit g128: 0.5 B + an fp16 scale and a 4-bit zero per 128 (awq.py:175-245): (512 + 16 + 4) / 1,024.
    assert read_quantization({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})[1] \
        == (532, 1024)


def test_runtime_quantization_per_release(capsys):
    # fp8_per_block joins QuantizationMethods in 0.20.0 (quantization/__init__.py); 0.19.0 refuses it by name.
    with pytest.raises(UnsupportedError, match="Unknown quantization method: fp8_per_block"):
        _weights(LLAMA, "0.19.0", "H100", quant="fp8_per_block")
    # Llama-3.1-8B's linears (6,979,321,856 elements: 32 x 218,103,808) at 1 + 4/16,384 B, the rest bf16.
    linears = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    rest = (8_030_261_248 - linears) * 2 + 131_072 * 128 * 2
    assert _weights(LLAMA, "0.22.0", "H100", quant="fp8_per_block") == linears * 16_388 // 16_384 + rest
    code, _, err = run(capsys, "plan", GPT_OSS, "--gpu", "H100", "--vllm-version", "0.22.0",
                       "--quantization", "fp8", "--max-model-len", "4096")
    assert code == 2
    assert "does not match the quantization method" in err


@pytest.mark.parametrize("name", ["qwen3.6-35b-a3b.json", "minimax-m2.json", "gemma-4-e2b.json",
                                  "qwen3.5-397b-a17b.json", "glm-4.7.json", "llama-4-scout.json"])
def test_the_known_missing_architectures_are_weighed(name):
    path = os.path.join(FIX, "hf", name)
    spec = weights_spec(json.load(open(path)), source=path)
    assert isinstance(spec, WeightsSpec), spec
    from kvcalc.inputs.hf.params import parameter_breakdown

    parts = parameter_breakdown(json.load(open(path)))
    counted = sum(b.params * ((spec.num_layers if b.layers is None else len(b.layers)) if b.placement == "layers"
                              else 1) for b in spec.blocks if b.name != "rotary cos/sin cache")
    assert counted == parts["total"] + (parts["vision_estimate"] or 0)  # every parameter, once


CONFIGS = sorted(os.path.join(d, f) for d in (os.path.join(FIX, "hf"), os.path.join(FIX, "models"))
                 for f in os.listdir(d) if f.endswith(".json"))


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_every_mapped_architecture_has_a_parameter_breakdown(path):
    # Every config kvcalc maps is weighed: a RULE for its model_type, else params.py's count by part
    # (weights_generic.py). The only answers without a breakdown: a trimmed config (no sizes), a drafter, and the
    # two architectures params.py refuses by name (LongCat-Flash, DeepSeek-V4).
    from kvcalc.inputs.hf.config import map_config
    from kvcalc.vocab.errors import KvcalcError

    data = json.load(open(path))
    try:
        map_config(data, source=path)
    except KvcalcError:
        return  # not mapped (kvcalc models says why): no weights asked
    spec = weights_spec(data, source=path)
    if isinstance(spec, str):
        assert any(w in spec for w in ("vocab_size", "intermediate_size", "states no", "drafter", "LongCat",
                                       "DeepSeek-V4", "expected an integer")), spec
    else:
        assert sum(b.params for b in spec.blocks) > 0


def test_a_single_safetensors_file_sets_the_total(tmp_path):
    # An unsharded checkpoint (no index): model.safetensors' header (8-byte little-endian length, then JSON with each
    # tensor's data_offsets) gives the tensor bytes; here 8,030,261,248 x 2 B + 1 GiB, in two tensors. As with an
    # index, every block but the rope cache scales to it: weights = that + 131,072 x 128 x 2 B.
    import shutil

    total = 8_030_261_248 * 2 + GIB
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "a.weight": {"dtype": "BF16", "shape": [total // 4], "data_offsets": [0, total // 2]},
                         "b.weight": {"dtype": "BF16", "shape": [total // 4], "data_offsets": [total // 2, total]}})
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header.encode())
    got = _weights(str(model / "config.json"), "0.19.0", "H100")
    assert abs(got - (total + 131_072 * 128 * 2)) <= 16  # integer division per block


def test_a_safetensors_header_that_is_no_header_is_bad_input(tmp_path, capsys):
    import shutil

    model = tmp_path / "m"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    (model / "model.safetensors").write_bytes((1 << 40).to_bytes(8, "little"))
    code, _, err = run(capsys, "plan", str(model / "config.json"), "--gpu", "H100", "--max-model-len", "4096")
    assert code == 2
    assert "model.safetensors: header length" in err


@pytest.mark.parametrize("config,log,version,gpu,tp,dtype,tolerance", [
    # Qwen/Qwen3-8B on an A100-40GB, 0.19.1: bf16, no quantization
    ("weights/qwen3-8b.json", "logs/formats/qwen3-8b-a100-40gb-tp1-v0.19.1.log", "0.19.1", "a100-40gb", 1, None,
     0.002),
    # Qwen/Qwen2.5-7B-Instruct (the base model's shapes) on a 48 GB-class card, 0.22.0
    ("weights/qwen2.5-7b.json", "logs/formats/qwen2.5-7b-48gbclass-tp1-v0.22.0.log", "0.22.0", "l40s", 1, None,
     0.006),
    ("models/llama-3.1-8b.json", "logs/formats/llama-3.1-8b-a100-40gb-tp1-eager-v0.15.1.log", "0.15.1",
     "a100-40gb", 1, None, 0.001),
])
def test_weights_against_real_model_loading_lines(config, log, version, gpu, tp, dtype, tolerance):
    import re

    with open(os.path.join(FIX, log), encoding="utf-8") as fh:
        logged = next(float(m.group(1)) for line in fh if (m := re.search(r"Model loading took ([\d.]+) GiB", line)))
    got = _weights(os.path.join(FIX, config), version, gpu, tp) / GIB
    assert abs(got - logged) / logged < tolerance, (got, logged)


# The ignore list of vllm-project/llm-compressor@6aab1271 examples/quantization_w8a8_fp8/qwen3_5_moe.py (a Qwen3.5
# MoE FP8_DYNAMIC recipe; llm-compressor writes it into the checkpoint's quantization_config.ignore).
QWEN35_IGNORE = ["re:.*lm_head", "re:visual.*", "re:model.visual.*", "re:.*mlp.gate$", "re:.*embed_tokens$",
                 "re:.*shared_expert_gate$", "re:.*mlp\\.shared_expert$", "re:.*linear_attn.*"]


def test_an_ignore_list_leaves_its_linear_kinds_unquantized():
    from kvcalc.inputs.hf.quant import excluded_kinds

    # lm_head, vision, embeddings and the routers / gates are not quantized linears in the breakdown anyway; the
    # shared experts and the GDN (linear attention) projections are, on every layer.
    assert excluded_kinds(QWEN35_IGNORE, 40) == (("mamba", None), ("shared", None))
    # Named layers only: two of the self-attention blocks.
    assert excluded_kinds(["model.layers.0.self_attn.q_proj", "model.layers.3.self_attn.o_proj"], 40) == (
        ("attention", (0, 3)),)


def test_compressed_tensors_fp8_keeps_the_ignored_blocks_in_bf16(tmp_path):
    # Qwen3.6-35B-A3B (tests/fixtures/hf) with the recipe's FP8 channel scheme and ignore list: experts and the
    # 10 gated-attention layers at 1 B, the 30 GDN mixers and the shared experts at 2 B. From test_params: GDN
    # 30 x 33,718,464, attention 10 x 27,262,976, experts 40 x 256 x 3 x 2,048 x 512, shared 40 x 3 x 2,048 x 512.
    data = json.load(open(os.path.join(FIX, "hf", "qwen3.6-35b-a3b.json")))
    plain = weights_spec(data, source="q.json")
    data["quantization_config"] = {"quant_method": "compressed-tensors", "format": "float-quantized",
                                   "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                       "num_bits": 8, "type": "float", "strategy": "channel"}}},
                                   "ignore": QWEN35_IGNORE}
    quant = weights_spec(data, source="q.json")
    assert isinstance(plain, WeightsSpec)
    assert isinstance(quant, WeightsSpec)
    bf16, fp8 = (stage_weights(s, dtype="bfloat16", tp=1, stages=[(0, 40)])[0].bytes_per_rank for s in (plain, quant))
    halved = 10 * 27_262_976 + 40 * 256 * 3 * 2048 * 512  # the quantized elements: 2 B -> 1 B
    assert bf16 - fp8 == halved


@pytest.mark.parametrize("qc,needle", [
    ({"quant_method": "gptq", "bits": 0}, "quantization_config: bits: expected an integer (2, 3, 4, 8), got 0"),
    ({"quant_method": ["awq"]}, "quantization_config.quant_method: expected a method name"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": "4"}}}},
     "config_groups.g.weights: num_bits"),
    ({"quant_method": "hqq"}, "quant_method 'hqq': kvcalc has no byte rule"),
])
def test_a_quantization_config_kvcalc_cannot_weigh_is_named(capsys, tmp_path, qc, needle):
    config = json.load(open(LLAMA))
    config["quantization_config"] = qc
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, _, err = run(capsys, "plan", str(path), "--gpu", "H100", "--max-model-len", "4096")
    assert code == 2
    assert needle in err
    assert "Traceback" not in err


def test_compressed_tensors_groups_by_target():
    # A group whose targets name only the experts sets the experts' bytes; the Linear group the others' (an
    # nvfp4 experts + fp8 attention recipe): NVFP4 9/16 for experts, 1 B for the other linears.
    q = {"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"targets": ["re:.*mlp.experts.*"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}},
        "group_1": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}}
    method, linear, expert, _ = read_quantization({"quantization_config": q})
    assert (linear, expert) == ((1, 1), (9, 16))


def test_an_index_scale_counts_the_ignored_blocks_at_the_checkpoint_dtype(tmp_path):
    # The same FP8 recipe with a model.safetensors.index.json whose total_size is the checkpoint's bytes by hand:
    # every parameter at 2 B less the quantized elements' 1 B (vision tower and rope cache aside, which the index
    # scale leaves out / the checkpoint does not hold). The scale is then 1: the weights equal the index-less ones.
    data = json.load(open(os.path.join(FIX, "hf", "qwen3.6-35b-a3b.json")))
    data["quantization_config"] = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}, "ignore": QWEN35_IGNORE}
    no_index = weights_spec(data, source="q.json")
    assert isinstance(no_index, WeightsSpec)
    from kvcalc.inputs.hf.params import parameter_breakdown

    parts = parameter_breakdown(data)
    halved = 10 * 27_262_976 + 40 * 256 * 3 * 2048 * 512
    total = (parts["total"] + parts["vision_estimate"]) * 2 - halved
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}}))
    indexed = weights_spec(data, source="q.json", directory=str(tmp_path))
    assert isinstance(indexed, WeightsSpec)
    assert indexed.checkpoint_bytes == total
    a, b = (stage_weights(s, dtype="bfloat16", tp=1, stages=[(0, 40)])[0].bytes_per_rank for s in (no_index, indexed))
    assert a == b


def test_norms_and_gates_in_modules_to_not_convert_leave_the_linears_quantized():
    # Qwen's FP8 MoE checkpoints list every layer's norms and router gate (xorbitsai/inference#4032 quotes
    # Qwen3-30B-A3B-Thinking-2507-FP8's: "model.layers.30.input_layernorm", "model.layers.30.mlp.gate",
    # "model.layers.30.post_attention_layernorm", ...): none of them is a quantized linear.
    from kvcalc.inputs.hf.quant import excluded_kinds

    names = [f"model.layers.{i}.{m}" for i in range(48) for m in ("input_layernorm", "mlp.gate",
                                                                 "post_attention_layernorm")]
    assert excluded_kinds(names + ["lm_head", "model.embed_tokens", "model.norm"], 48) == ()
