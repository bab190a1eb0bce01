"""VLLM_ATTENTION_BACKEND: vLLM 0.14.x's AttentionConfig.__post_init__ sets the backend from it, over
--attention-backend (config/attention.py:73-93 @0.14.0; envs.py:687-695 env_with_choices, case-sensitive, its own
ValueError); 0.15.0 reads no such variable. Expected backends: the release's priority list and checks (FLASH_ATTN
first on an H100 for a 128-head model, vocab/releases/attn_priorities.py), the variable's and the flag's names."""

import pytest

from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.inputs.serve.engine_env import read_switches
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError

DENSE = {"name": "m", "num_layers": 4, "num_kv_heads": 8, "head_size": 128}


def _backend(version: str, env: str | None = None, flag: str | None = None) -> str:
    vllm = {"version": version, "attention_backend_env": env, "attention_backend": flag}
    layout = layout_from_dict({"model": DENSE, "cache": {"max_model_len": 4096, "kv_cache_memory": "8GiB"},
                               "vllm": {k: v for k, v in vllm.items() if v is not None}, "gpu": {"name": "H100"}},
                              source="env.yaml")
    return plan(layout).layers.attention.backend


def test_0_14_takes_the_variable_over_the_flag_and_0_15_ignores_it():
    assert _backend("0.14.1") == "FLASH_ATTN", "no variable: the priority list's first"
    assert _backend("0.14.1", env="TRITON_ATTN") == "TRITON_ATTN", "0.14.1 with the variable"
    assert _backend("0.14.1", env="TRITON_ATTN", flag="FLASHINFER") == "TRITON_ATTN", "the variable over the flag"
    assert _backend("0.15.0", env="TRITON_ATTN") == "FLASH_ATTN", "0.15.0 does not read it"
    assert _backend("0.15.0", env="TRITON_ATTN", flag="FLASHINFER") == "FLASHINFER", "0.15.0: the flag"


def test_a_name_the_release_lacks_is_vllms_valueerror():
    with pytest.raises(KvcalcError, match="Invalid value 'triton_attn' for VLLM_ATTENTION_BACKEND. Valid options: "
                                          r"\['FLASH_ATTN'"):
        _backend("0.14.1", env="triton_attn")  # case-sensitive, unlike the flag


def test_a_serve_line_or_manifest_environment_sets_the_key():
    got: dict = {}
    read = read_switches({"VLLM_ATTENTION_BACKEND": "FLASHINFER", "OTHER": "1"}, got, "the serve line's environment",
                         lambda var, value: ValueError(var))
    assert read == {"VLLM_ATTENTION_BACKEND"}, "names read"
    assert got == {"vllm.attention_backend_env": ("FLASHINFER", "VLLM_ATTENTION_BACKEND=FLASHINFER (the serve line's "
                                                                 "environment)")}, "override"
