"""A layout's Mamba section under a Mamba-2 config's own field names (issue 23): the config-file fields that give
no state shape are accepted and checked against the ones that do, and the config's SSM state dtype is what vLLM's
auto takes."""

import jsonschema
import pytest

from kvcalc.inputs.layout.schema import layout_schema
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import LayoutError

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
