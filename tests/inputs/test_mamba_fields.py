"""A layout's Mamba section under a Mamba-2 config's own field names (issue 23): the config-file fields that give
no state shape are accepted and checked against the ones that do, and the config's SSM state dtype is what vLLM's
auto takes."""

import json
import os

import jsonschema
import pytest

from kvcalc.inputs.layout.schema import layout_schema
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import LayoutError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF = os.path.join(ROOT, "tests", "fixtures", "hf")

# NemotronH-8B's Mamba-2 mixer (examples/configs/nemotron-h-8b.json): 128 heads x 64 = 8,192 = expand 2 x hidden 4,096.
MAMBA2 = {"kind": "mamba2", "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128,
          "conv_kernel": 4, "chunk_size": 128}
CONFIG_NAMES = {"expand": 2, "hidden_size": 4096, "mamba_ssm_cache_dtype": "float32"}


def layout(mamba, cache=None):
    return layout_from_dict({"model": {"num_layers": 4, "layer_pattern": ["mamba", "full_attention"],
                                       "num_kv_heads": 8, "head_size": 128, "mamba": mamba},
                             "cache": {"kv_cache_memory": "40GiB", "max_model_len": 8192, **(cache or {})}},
                            source="test.yaml")


def test_the_config_file_names_are_accepted_by_the_loader_and_the_schema():
    data = {**MAMBA2, **CONFIG_NAMES}
    jsonschema.validate({"model": {"num_layers": 4, "mamba": data}}, layout_schema())
    lay = layout(data)
    assert dict(lay.model.mamba.params) == {k: v for k, v in MAMBA2.items() if k != "kind"}


def test_the_state_is_the_same_as_with_the_layout_names():
    # The SSM state: (128 heads, 64, 128 state) in float32 = 4,194,304 B; the conv state (3, 8,192 + 2 x 8 x 128)
    # in bf16 = 61,440 B: the same Mamba page whichever names carry the fields.
    named = plan(layout({**MAMBA2, **CONFIG_NAMES}))
    plain = plan(layout(MAMBA2, {"mamba_ssm_cache_dtype": "float32"}))
    mamba = [g.spec for g in named.grouping.groups if g.spec.kind == "mamba"][0]
    assert mamba.real_page_size_bytes == 4194304 + 61440
    assert [g.spec for g in named.grouping.groups] == [g.spec for g in plain.grouping.groups]
    assert named.gpu.num_blocks == plain.gpu.num_blocks


def test_a_width_that_contradicts_the_heads_is_refused_naming_both():
    with pytest.raises(LayoutError) as e:
        layout({**MAMBA2, "expand": 3, "hidden_size": 4096})
    msg = str(e.value)
    assert "model.mamba.expand" in msg
    assert "mamba_num_heads x mamba_head_dim (128 x 64 = 8,192)" in msg
    assert "3 x 4096 = 12,288" in msg


def test_the_config_dtype_is_what_auto_takes_and_an_explicit_value_wins():
    assert layout({**MAMBA2, "mamba_ssm_cache_dtype": "float32"}).cache.mamba_ssm_cache_dtype == "float32"
    explicit = layout({**MAMBA2, "mamba_ssm_cache_dtype": "float32"}, {"mamba_ssm_cache_dtype": "bfloat16"})
    assert explicit.cache.mamba_ssm_cache_dtype == "bfloat16"
    assert layout(MAMBA2).cache.mamba_ssm_cache_dtype == "auto"


def test_a_bad_config_dtype_is_refused():
    with pytest.raises(LayoutError, match="model.mamba.mamba_ssm_cache_dtype"):
        layout({**MAMBA2, "mamba_ssm_cache_dtype": "fp9"})


def test_qwen3_6_text_config_names_its_float32_ssm_state_and_vllm_takes_it(capsys):
    # Issue 30: Qwen3.5 / 3.6 configs give text_config.mamba_ssm_dtype float32, which vLLM's config hook
    # (model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig, 0.24.0:613-627) makes the SSM state's
    # dtype. A real start-up log (noonghunna/club-3090#612, vLLM 0.24.0, RTX 5090) logs 567,978 GPU tokens at 5.98 GiB.
    # By hand: a GDN layer's state per rank is conv (2 x 16 x 128 + 32 x 128) x 3 rows x 2 B (bf16) = 49,152 B plus
    # the temporal state 32 x 128 x 128 x 4 B (float32) = 2,097,152 B: 2,146,304 B (at bf16 it would be 1,097,728 B).
    from kvcalc.cli import main

    cfg = os.path.join(HF, "qwen3.6-35b-a3b-mtp.json")
    log = os.path.join(ROOT, "tests", "fixtures", "logs", "formats", "qwen3.6-35b-a3b-nvfp4-rtx5090-tp1-v0.24.0.log")
    assert main(["check", cfg, "--log", log, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["match"] is True  # 567,978 tokens and 4.33x as logged
    assert main(["plan", cfg, "--vllm-version", "0.24.0", "--kv-cache-memory", "6GiB", "--format", "json"]) == 0
    groups = json.loads(capsys.readouterr().out)["gpu"]["groups"]
    assert groups[0]["real_page_size_bytes"] == 2 * 16 * 128 * 3 * 2 + 32 * 128 * 3 * 2 + 32 * 128 * 128 * 4
