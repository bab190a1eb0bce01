"""Multimodal wrappers and drafters of vLLM 0.33.0's registry (`_MULTIMODAL_MODELS`, `_SPECULATIVE_DECODING_MODELS`):
a wrapper's row names the sub-config its language model is built from (`init_vllm_registered_model(...,
hf_config=config.text_config)` in the cited file) and the language model's architecture when that sub-config names
none; the language model's own row (arch_table) then maps it."""

from __future__ import annotations

from .arch_table import Arch


def _w(name: str, vllm: str, text: str, inner: str, cite: str) -> Arch:
    return Arch(name=name, vllm=vllm, reader="wrapper", kv=f"the language model's ({text})", cite=cite, text=text,
                inner=inner)


def _x(name: str, vllm: str, reason: str) -> Arch:
    return Arch(name=name, vllm=vllm, reason=reason)


ROWS: tuple[Arch, ...] = (
    _w("Gemma3ForConditionalGeneration", "gemma3_mm.Gemma3ForConditionalGeneration", "text_config",
       "Gemma3ForCausalLM", "gemma3_mm.py:565"),
    _w("Llama4ForConditionalGeneration", "mllama4.Llama4ForConditionalGeneration", "text_config",
       "Llama4ForCausalLM", "mllama4.py:780"),
    _w("KimiK25ForConditionalGeneration", "kimi_k25.KimiK25ForConditionalGeneration", "text_config",
       "DeepseekV2ForCausalLM", "kimi_k25.py:376"),
    _w("Mistral3ForConditionalGeneration", "mistral3.Mistral3ForConditionalGeneration", "text_config",
       "MistralForCausalLM", "mistral3.py:498"),
)
