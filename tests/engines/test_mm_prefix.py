"""Models that attend bidirectionally over their multimodal tokens (vLLM's is_mm_prefix_lm: Gemma-3, PaliGemma, ...)
get a backend that supports it: FLASH_ATTN and FLASHINFER refuse them ("partial multimodal token full attention not
supported", v1/attention/backend.py validate_configuration), TRITON_ATTN / FLEX_ATTENTION take them; from 0.24
FLASH_ATTN too where FlashAttention 4 runs. Expected backends are vLLM's own: the real Gemma-3-12B log, and the
release's lists read from its source (vocab/releases/attn_rules.py mm_prefix_models, vision_prefix_types)."""

import os

import pytest

from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.tools.logcheck import check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMMA3 = os.path.join(ROOT, "tests", "fixtures", "hf", "gemma-3-12b-it.json")
LOG = os.path.join(ROOT, "tests", "fixtures", "logs", "gemma-3-12b-it-h100-tp1-v0.19.0-debug-excerpt.log")


def _backend(model: dict, version: str, gpu: str = "H100") -> str:
    layout = layout_from_dict({"model": model, "cache": {"max_model_len": 4096, "kv_cache_memory": "8GiB"},
                               "vllm": {"version": version}, "gpu": {"name": gpu}}, source="mm.yaml")
    return plan(layout).layers.attention.backend


DENSE = {"name": "m", "num_layers": 4, "num_kv_heads": 8, "head_size": 128}


def test_the_real_gemma_3_log_names_the_backend_kvcalc_predicts():
    # vLLM 0.19.0 on an H100 logged "Using TRITON_ATTN attention backend out of potential backends: ['TRITON_ATTN',
    # 'FLEX_ATTENTION']" after refusing FLASH_ATTN and FLASHINFER (use_mm_prefix=True).
    with open(LOG, encoding="utf-8") as fh:
        text = fh.read()
    result = check(layout_from_dict({"model": {"hf_config": GEMMA3}}, source="gemma.yaml"), text, source="gemma.log")
    row = [r for r in result["rows"] if r["quantity"] == "attention backend"]
    assert [(r["logged"], r["match"]) for r in row] == [("TRITON_ATTN", True)], f"attention row: {row}"
    assert result["match"] is True, "the whole check"


@pytest.mark.parametrize("model_type, first", [("molmo2", "0.15.0"), ("bagel", "0.18.0"), ("moondream3", "0.21.0")])
def test_a_model_type_joins_the_list_in_its_release(model_type, first):
    model = {**DENSE, "hf_model_type": model_type}
    earlier = {"0.15.0": "0.14.1", "0.18.0": "0.17.1", "0.21.0": "0.20.2"}[first]
    assert (_backend(model, earlier), _backend(model, first)) == ("FLASH_ATTN", "TRITON_ATTN"), model_type


def test_umm_leaves_the_list_in_0_29():
    # On an A100 (no FlashAttention 4: FLASH_ATTN never takes a prefix model there).
    model = {**DENSE, "hf_model_type": "umm"}
    assert tuple(_backend(model, v, gpu="A100-80GB") for v in ("0.19.1", "0.20.0", "0.28.0", "0.29.0")) == (
        "FLASH_ATTN", "TRITON_ATTN", "TRITON_ATTN", "FLASH_ATTN"), "umm"


def test_flash_attention_takes_it_from_0_24_where_fa4_runs():
    # FlashAttentionBackend.supports_mm_prefix: is_fa_version_supported(4) (0.24.0 flash_attn.py:196-197): 9.x on an
    # H100; an A100 (8.0) has no FA4, so TRITON_ATTN still.
    model = {**DENSE, "hf_model_type": "gemma3"}
    assert (_backend(model, "0.23.0"), _backend(model, "0.24.0")) == ("TRITON_ATTN", "FLASH_ATTN"), "H100"
    assert _backend(model, "0.24.0", gpu="A100-80GB") == "TRITON_ATTN", "A100"


def test_the_config_and_gemma_4_answers():
    # A config's own is_mm_prefix_lm wins over the list; Gemma-4's convertor (0.20+) reads
    # text_config.use_bidirectional_attention == "vision" instead (0.19.1 reads the list, where gemma4 is not).
    assert _backend({**DENSE, "hf_model_type": "gemma3", "mm_prefix_lm": False}, "0.19.0") == "FLASH_ATTN"
    assert _backend({**DENSE, "hf_model_type": "llama", "mm_prefix_lm": True}, "0.19.0") == "TRITON_ATTN"
    vision = {**DENSE, "hf_model_type": "gemma4", "bidirectional_vision": True}
    assert (_backend(vision, "0.19.1"), _backend(vision, "0.20.0")) == ("FLASH_ATTN", "TRITON_ATTN"), "gemma4"
    assert _backend({**DENSE, "hf_model_type": "gemma4", "mm_prefix_lm": True}, "0.20.0") == "FLASH_ATTN"


def test_a_text_only_gemma_3_is_not_a_prefix_model():
    # Gemma3ForCausalLM (gemma-3-1b): model_type gemma3_text, not in the list.
    layout = layout_from_dict({"model": {"hf_config": os.path.join(ROOT, "tests", "fixtures", "hf", "gemma-3-1b.json")},
                               "vllm": {"version": "0.19.0"}, "gpu": {"name": "H100"},
                               "cache": {"max_model_len": 4096, "kv_cache_memory": "8GiB"}}, source="g1.yaml")
    assert layout.model.hf_model_type == "gemma3_text", "the 1B config's model_type"
    assert plan(layout).layers.attention.backend == "FLASH_ATTN", "text-only Gemma-3"
