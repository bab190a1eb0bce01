"""config.json -> layout, per model_type: derived per-layer layouts against numbers worked out by hand."""

import json
import os
from collections import Counter

import pytest
import yaml

from kvcalc.cli import main
from kvcalc.inputs.layout.read import load_layout
from kvcalc.pipeline import plan

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
MODELS = os.path.join(HERE, "fixtures", "models")  # copied from ../shared/models (real fields)
HF = os.path.join(HERE, "fixtures", "hf")  # KV fields modelled on public configs
FLAGS = ["--cpu-bytes", "64G", "--kv-cache-memory", "40GiB"]


def fixture(name):
    for base in (MODELS, HF):
        path = os.path.join(base, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(name)


def within(name, want: int) -> str:
    """`want` tokens, or the config's derived maximum when that is shorter: vLLM refuses a longer --max-model-len
    (config/model.py _get_and_verify_max_len; engines/vllm/rules.py)."""
    from kvcalc.inputs.hf.limits import model_limits

    with open(fixture(name)) as fh:
        limits = model_limits(json.load(fh), name)
    derived = None if limits is None else limits.derived_max_model_len
    return str(want if derived is None else int(min(want, derived)))


def layout_of(name, *flags):
    from kvcalc.inputs.values import overrides as _overrides
    args = dict(zip(flags[::2], flags[1::2]))
    ov = _overrides(dict(tp=int(args.get("--tp", 1)), cpu_bytes="64G", kv_cache_memory="40GiB",
                    max_model_len=args.get("--max-model-len"), prefix=args.get("--prefix"),
                    vllm_version=args.get("--vllm-version"), draft_config=args.get("--draft-config"),
                    speculative=args.get("--speculative")))
    return load_layout(fixture(name), overrides=ov)


def stage_specs(p):
    return p.layers.stages[0].layers


# (fixture, tp, kind counts, KV heads per rank of the first attention layer, head size, window, chunk)
ATTENTION = [
    ("llama-3.1-8b.json", 2, {"full_attention": 32}, 4, 4096 // 32, None, None),
    ("llama-3.1-70b.json", 4, {"full_attention": 80}, 2, 8192 // 64, None, None),
    ("qwen3-32b.json", 8, {"full_attention": 64}, 1, 128, None, None),  # explicit head_dim, not 5120 // 64
    ("mistral-7b-v0.1.json", 1, {"sliding_attention": 32}, 8, 128, 4096, None),  # one window for every layer
    ("qwen2-7b.json", 2, {"full_attention": 28}, 2, 3584 // 28, None, None),  # use_sliding_window: false
    ("qwen3-30b-a3b.json", 4, {"full_attention": 48}, 1, 128, None, None),
    ("phi-3-mini-4k.json", 2, {"sliding_attention": 32}, 16, 3072 // 32, 2047, None),  # no KV key: 32 heads
    ("gemma-2-9b.json", 2, {"sliding_attention": 21, "full_attention": 21}, 4, 256, 4096, None),
    ("gemma-3-1b.json", 2, {"sliding_attention": 22, "full_attention": 4}, 1, 256, 512, None),  # 1 head replicated
    ("gemma-3-27b.json", 2, {"sliding_attention": 52, "full_attention": 10}, 8, 128, 1024, None),
    ("gpt-oss-120b.json", 8, {"sliding_attention": 18, "full_attention": 18}, 1, 64, 128, None),
    ("llama-4-scout.json", 4, {"chunked_attention": 36, "full_attention": 12}, 2, 128, None, 8192),
    ("mistral3-wrapper.json", 4, {"full_attention": 40}, 2, 128, None, None),
]


@pytest.mark.parametrize("name,tp,kinds,heads,head,window,chunk", ATTENTION, ids=[a[0] for a in ATTENTION])
def test_attention_models(name, tp, kinds, heads, head, window, chunk):
    lay = layout_of(name, "--tp", str(tp), "--max-model-len", within(name, 131072))
    assert dict(Counter(lay.model.layer_types)) == kinds
    p = plan(lay)
    first = stage_specs(p)[0][1]
    assert first.num_kv_heads == heads
    assert first.head_size == head
    assert lay.model.sliding_window == window or "sliding_attention" not in kinds
    assert lay.model.attention_chunk_size == chunk or "chunked_attention" not in kinds


def test_gemma3_pattern_and_gemma2_even_layers():
    g3 = layout_of("gemma-3-1b.json").model.layer_types
    assert [i for i, k in enumerate(g3) if k == "full_attention"] == [5, 11, 17, 23]  # (i+1) % 6 == 0
    g2 = layout_of("gemma-2-9b.json").model.layer_types
    assert g2[0] == 'sliding_attention'
    assert g2[1] == 'full_attention'
    assert layout_of("gemma-2-9b.json").model.dtype == "bfloat16"  # float32 checkpoint served in bf16


def test_llama4_nope_layers_are_full():
    kinds = layout_of("llama-4-scout.json").model.layer_types
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == list(range(3, 48, 4))


@pytest.mark.parametrize("name,per_token", [
    ("llama-3.1-8b.json", None), ("llama-3.1-70b.json", None), ("qwen3-32b.json", None),
    ("gpt-oss-120b.json", None), ("gemma-3-27b.json", None), ("deepseek-v3.json", None),
    ("nemotron-nas-mini-synthetic.json", None),
])
def test_bytes_per_token_match_shared_models(name, per_token):
    with open(fixture(name)) as fh:
        expected = json.load(fh)["_derived_bf16"]["kv_bytes_per_token_all_attention_layers"]
    p = plan(layout_of(name, "--tp", "1"))
    assert sum(s.page_size_bytes // s.block_size for _, s in stage_specs(p)) == expected


@pytest.mark.parametrize("name,layers,d", [
    ("deepseek-v2-lite.json", 27, 576), ("deepseek-v3.json", 61, 576), ("kimi-k2.json", 61, 576),
    ("kimi-k2.5.json", 61, 576),
])
def test_mla_models(name, layers, d):
    p = plan(layout_of(name, "--tp", "4"))
    specs = stage_specs(p)
    assert len(specs) == layers
    assert {s.kind for _, s in specs} == {'mla'}
    assert {(s.num_kv_heads, s.head_size) for _, s in specs} == {(1, d)}  # one unsharded head on every rank
    # 0.33.0 on kvcalc's default H100-class GPU selects FLASH_ATTN_MLA, whose preferred block size is 16.
    assert (p.layers.attention.backend, p.layers.block_size) == ("FLASH_ATTN_MLA", 16)


def test_deepseek_v32_indexer():
    p = plan(layout_of("deepseek-v3.2-exp.json", "--tp", "4"))
    specs = stage_specs(p)
    assert len(specs) == 122
    assert specs[0][0].endswith('indexer.k_cache')
    assert specs[0][1].head_size == 128 + 4
    assert specs[0][1].page_size_bytes == 64 * 132
    assert p.grouping.rule == "uniform_type"


def test_deepseek_mtp_from_num_nextn_predict_layers():
    p = plan(layout_of("deepseek-v3.json", "--tp", "4", "--speculative", "mtp"))
    names = [n for n, _ in stage_specs(p)]
    assert len(names) == 62
    assert names[-1] == 'model.layers.61.mtp_block.self_attn.attn'
    assert p.grouping.rule == "uniform"
    with open(fixture("deepseek-v3.json")) as fh:
        assert 62 * 1152 == json.load(fh)["_derived_bf16"]["with_mtp_layer_bytes_per_token"]


def test_mtp_without_nextn_layers_is_refused(capsys):
    assert main(["plan", fixture("kimi-k2.json"), *FLAGS, "--speculative", "mtp"]) == 2
    err = capsys.readouterr().err
    assert 'num_nextn_predict_layers' in err
    assert err.count('\n') == 1


def test_eagle3_draft_config_reproduces_vector_b2(capsys):
    args = ["plan", fixture("kimi-k2.5.json"), "--tp", "4", "--draft-config", fixture("kimi-k2.5-eagle3.json"),
            "--vllm-version", "0.19.1", "--max-model-len", "131072", "--block-size", "64", *FLAGS, "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["draft"] == {"method": "eagle3", "num_layers": 1}
    assert doc['offload']['old']['num_blocks_workers'] == [60]
    assert doc['offload']['old']['num_blocks_scheduler'] == 3758
    assert doc['offload']['fixed']['num_blocks_scheduler'] == 3765
    assert doc['gpu']['num_blocks'] == 9412


def test_eagle1_wrapper_draft_merges_with_llama():
    lay = layout_of("llama-3.1-8b.json", "--draft-config", fixture("eagle-llama3-8b.json"))
    assert lay.model.draft.method == 'eagle'
    assert lay.model.draft.head_size == 128
    p = plan(lay)
    assert p.grouping.rule == 'uniform'
    assert len(p.grouping.groups[0].layer_names) == 33


# ---------------------------------------------------------------- Mamba and linear attention


def mamba_specs(p):
    return [s for _, s in stage_specs(p) if s.kind == "mamba"]


def test_qwen3_next_gated_delta_net():
    p = plan(layout_of("qwen3-next-80b-a3b.json", "--tp", "4"))
    m = mamba_specs(p)
    assert len(m) == 36
    assert m[0].shapes == ((3, 2048), (8, 128, 128))
    with open(fixture("qwen3-next-80b-a3b.json")) as fh:
        derived = json.load(fh)["_derived_bf16"]
    p1 = plan(layout_of("qwen3-next-80b-a3b.json", "--tp", "1"))
    assert sum(s.real_page_size_bytes for s in mamba_specs(p1)) == derived["state_bytes_per_sequence"]
    assert ["mamba" if k == "linear_attention" else k for k in derived["layer_types_derived"]] == \
        list(layout_of("qwen3-next-80b-a3b.json").model.layer_types)


def test_jamba_mamba1():
    lay = layout_of("jamba-1.5-mini.json")
    with open(fixture("jamba-1.5-mini.json")) as fh:
        derived = json.load(fh)["_derived_bf16"]
    assert ["full_attention" if k == "attention" else k for k in derived["layers_block_type_derived"]] == \
        list(lay.model.layer_types)
    p = plan(lay)
    assert sum(s.real_page_size_bytes for s in mamba_specs(p)) == derived["state_bytes_per_sequence"]
    assert mamba_specs(p)[0].shapes == ((3, 8192), (8192, 16))  # (d_conv-1, expand*hidden), (I, d_state)


@pytest.mark.parametrize("name,total", [("mamba2-2.7b.json", None), ("mamba-codestral.json", 64 * 2158592)])
def test_pure_mamba2(name, total):
    p = plan(layout_of(name, "--max-model-len", "8192"))
    if total is None:
        with open(fixture(name)) as fh:
            total = json.load(fh)["_derived_bf16"]["state_bytes_per_sequence"]
    assert sum(s.real_page_size_bytes for s in mamba_specs(p)) == total


def test_nemotron_h_pattern_and_float32_ssm_state():
    with open(fixture("nemotron-h-8b.json")) as fh:
        pattern = json.load(fh)["hybrid_override_pattern"]
    lay = layout_of("nemotron-h-8b.json")
    kinds = lay.model.layer_types
    assert kinds.count('mamba') == pattern.count('M')
    assert kinds.count('full_attention') == pattern.count('*')
    assert kinds.count("none") == pattern.count("-")
    p = plan(lay)
    m = mamba_specs(p)[0]
    # conv: 3 x (8192 + 2*8*128) bf16; SSM: 128 x 64 x 128 float32 (NemotronH's class default).
    assert m.dtypes == ("bfloat16", "float32")
    assert m.real_page_size_bytes == 3 * 10240 * 2 + 128 * 64 * 128 * 4


def test_nemotron_h_block_1152_with_prefix_caching_on_0191():
    # vllm-kv-model.md section 1: Nemotron-H-8B at TP 1 aligns to block 1152 with prefix caching on 0.19.1.
    p = plan(layout_of("nemotron-h-8b.json", "--prefix", True, "--vllm-version", "0.22.1"))
    assert p.layers.mamba_cache_mode == 'all'
    assert p.layers.block_size == 1152


def test_falcon_h1_attention_then_mamba_in_every_layer():
    p = plan(layout_of("falcon-h1-7b.json", "--prefix", True))
    names = [n for n, _ in stage_specs(p)]
    assert len(names) == 88
    assert names[:2] == ['model.layers.0.self_attn.attn', 'model.layers.0.mamba']
    m = mamba_specs(p)[0]
    assert m.real_page_size_bytes == (3 * (3072 + 2 * 256) + 24 * 128 * 256) * 2
    assert [len(g.layer_names) for g in p.grouping.groups] == [44, 44]


def test_decilm_per_layer_heads():
    lay = layout_of("decilm-block-configs.json")
    assert lay.model.layer_types == ("full_attention", "none", "full_attention", "none")
    assert lay.model.num_kv_heads[0] == 64 // 8
    assert lay.model.num_kv_heads[2] == 64 // 16
    assert layout_of("decilm-7b.json").model.num_kv_heads == (4, 4, 2, 1)
    assert plan(layout_of("decilm-7b.json")).grouping.rule == "uniform_type"


# ---------------------------------------------------------------- init -> plan gives the same numbers

ALL = sorted(os.listdir(MODELS)) + sorted(f for f in os.listdir(HF) if "eagle" not in f)


@pytest.mark.parametrize("name", ALL)
def test_init_then_plan_equals_plan_on_config(name, tmp_path, capsys):
    flags = [*FLAGS, "--tp", "2" if "gpt-oss" not in name else "8", "--max-model-len", within(name, 32768)]
    if name in ("qwen3-next-80b-a3b.json", "jamba-1.5-mini.json", "nemotron-h-8b.json", "falcon-h1-7b.json",
                "qwen3.5-397b-a17b.json", "qwen3.6-35b-a3b.json", "qwen3.6-35b-a3b-mtp.json"):
        flags.append("--enable-prefix-caching")
    assert main(["init", fixture(name), *flags]) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert '# ' in text
    assert yaml.safe_load(text)['schema_version'] == 1
    path = tmp_path / "layout.yaml"
    path.write_text(text)
    assert main(["plan", str(path), "--format", "json"]) == 0
    from_yaml = json.loads(capsys.readouterr().out)
    assert main(["plan", fixture(name), *flags, "--format", "json"]) == 0
    from_config = json.loads(capsys.readouterr().out)
    # Where the budget was written differs (the YAML's key, or the --cpu-bytes flag); every number is equal.
    assert from_yaml["offload"].pop("cpu_bytes_source") + " (--cpu-bytes)" == \
        from_config["offload"].pop("cpu_bytes_source")
    for key in ("gpu", "offload", "cache", "parallel"):
        assert from_yaml[key] == from_config[key], key
    assert from_yaml["model"]["layer_kinds"] == from_config["model"]["layer_kinds"]


def test_hf_config_key_in_layout_yaml(tmp_path, capsys):
    path = tmp_path / "x.yaml"
    path.write_text(f"model: {{hf_config: {fixture('llama-3.1-8b.json')}, num_kv_heads: 4}}\n"
                    "cache: {block_size: 16, kv_cache_memory: 40GiB, max_model_len: 131072}\n"
                    "offload: {cpu_bytes_to_use: 64GiB}\n")
    assert main(["plan", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # num_kv_heads 4 overrides the config's 8: page halves, CPU blocks double (vector a1: 32,768).
    assert doc["offload"]["fixed"]["num_blocks_scheduler"] == 65536


def test_directory_holding_config_json(tmp_path, capsys):
    (tmp_path / "config.json").write_text(open(fixture("llama-3.1-8b.json")).read())
    assert main(["plan", str(tmp_path), *FLAGS, "--max-model-len", "131072", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["offload"]["fixed"]["num_blocks_scheduler"] == 32768


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("config,must", [
    ({"model_type": "bert", "num_hidden_layers": 12}, ["model_type 'bert'", "supported", "layout YAML"]),
    ({"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096}, ["num_hidden_layers"]),
    ({"num_hidden_layers": 2}, ["model_type"]),
    ({"model_type": "llama", "num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096},
     ["num_hidden_layers"]),
    ({"model_type": "gemma3", "torch_dtype": "bfloat16"}, ["text_config"]),
    ({"model_type": "nemotron_h", "hybrid_override_pattern": "MX*"}, ["hybrid_override_pattern"]),
    ([1, 2], ["JSON object"]),
])
def test_unmapped_or_incomplete_config_is_one_line(config, must, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["plan", str(path), *FLAGS]) == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert err.count('\n') == 1
    assert str(path) in err
    for m in must:
        assert m in err


def test_config_that_is_not_json(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    assert main(["plan", str(path), *FLAGS]) == 2
    assert "valid JSON" in capsys.readouterr().err
