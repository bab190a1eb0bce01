"""The architectures SGLang treats specially when it sizes mem_fraction_static, per release: multimodal models,
the ones it serves text-only unless --enable-multimodal, and the multimodal ones that keep the prefill CUDA graph.
Read from each release's srt/configs/model_config.py (multimodal_model_archs, 0.5.14:1645 ... 0.5.23:2391;
mm_disabled_models, 0.5.14:293, 0.5.23:692-697; multimodal_breakable_cuda_graph_supported_model_archs, 0.5.16:1785,
0.5.23:2501; multimodal_piecewise_cuda_graph_supported_model_archs, 0.5.14) by `ast`: archs are only ever added,
so each holds the first release that lists it. Imported only for SGLang plans."""

from __future__ import annotations

Release = tuple[int, int, int, int]

# ModelConfig.is_multimodal's list (srt/configs/model_config.py is_multimodal_model).
MULTIMODAL_ARCHS: dict[str, Release] = {
    # 0.5.14
    "CLIPModel": (0, 5, 14, 0), "Cohere2VisionForConditionalGeneration": (0, 5, 14, 0),
    "DeepseekOCRForCausalLM": (0, 5, 14, 0), "DeepseekVL2ForCausalLM": (0, 5, 14, 0),
    "DotsOCRForCausalLM": (0, 5, 14, 0), "DotsVLMForCausalLM": (0, 5, 14, 0),
    "Ernie4_5_VLMoeForConditionalGeneration": (0, 5, 14, 0), "Gemma3ForConditionalGeneration": (0, 5, 14, 0),
    "Gemma3nForConditionalGeneration": (0, 5, 14, 0), "Gemma4ForConditionalGeneration": (0, 5, 14, 0),
    "Gemma4UnifiedForConditionalGeneration": (0, 5, 14, 0), "Glm4vForConditionalGeneration": (0, 5, 14, 0),
    "Glm4vMoeForConditionalGeneration": (0, 5, 14, 0), "GlmAsrForConditionalGeneration": (0, 5, 14, 0),
    "GlmOcrForConditionalGeneration": (0, 5, 14, 0), "Grok1AForCausalLM": (0, 5, 14, 0),
    "Grok1VForCausalLM": (0, 5, 14, 0), "InternS1ForConditionalGeneration": (0, 5, 14, 0),
    "InternS1ProForConditionalGeneration": (0, 5, 14, 0), "InternS2PreviewForConditionalGeneration": (0, 5, 14, 0),
    "InternVLChatModel": (0, 5, 14, 0), "JetVLMForConditionalGeneration": (0, 5, 14, 0),
    "KimiK25ForConditionalGeneration": (0, 5, 14, 0), "KimiVLForConditionalGeneration": (0, 5, 14, 0),
    "Lfm2VlForConditionalGeneration": (0, 5, 14, 0), "LightOnOCRForConditionalGeneration": (0, 5, 14, 0),
    "Llama4ForConditionalGeneration": (0, 5, 14, 0), "LlavaForConditionalGeneration": (0, 5, 14, 0),
    "LlavaLlamaForCausalLM": (0, 5, 14, 0), "LlavaMistralForCausalLM": (0, 5, 14, 0),
    "LlavaQwenForCausalLM": (0, 5, 14, 0), "LlavaVidForCausalLM": (0, 5, 14, 0), "MiDashengLMModel": (0, 5, 14, 0),
    "MiMoV2ASRForCausalLM": (0, 5, 14, 0), "MiMoV2ForCausalLM": (0, 5, 14, 0), "MiniCPMO": (0, 5, 14, 0),
    "MiniCPMV": (0, 5, 14, 0), "MiniMaxM3SparseForConditionalGeneration": (0, 5, 14, 0),
    "Mistral3ForConditionalGeneration": (0, 5, 14, 0), "MllamaForConditionalGeneration": (0, 5, 14, 0),
    "MossVLForConditionalGeneration": (0, 5, 14, 0), "MultiModalityCausalLM": (0, 5, 14, 0),
    "NVILAForConditionalGeneration": (0, 5, 14, 0), "NVILALiteForConditionalGeneration": (0, 5, 14, 0),
    "NemotronH_Nano_Omni_Reasoning_V3": (0, 5, 14, 0), "NemotronH_Nano_VL_V2": (0, 5, 14, 0),
    "POINTSV15ChatModel": (0, 5, 14, 0), "PaddleOCRVLForConditionalGeneration": (0, 5, 14, 0),
    "Phi4MMForCausalLM": (0, 5, 14, 0), "PixtralForConditionalGeneration": (0, 5, 14, 0),
    "Qwen2AudioForConditionalGeneration": (0, 5, 14, 0), "Qwen2VLForConditionalGeneration": (0, 5, 14, 0),
    "Qwen2_5_VLForConditionalGeneration": (0, 5, 14, 0), "Qwen3ASRForConditionalGeneration": (0, 5, 14, 0),
    "Qwen3OmniMoeForConditionalGeneration": (0, 5, 14, 0), "Qwen3VLForConditionalGeneration": (0, 5, 14, 0),
    "Qwen3VLMoeForConditionalGeneration": (0, 5, 14, 0), "Qwen3_5ForConditionalGeneration": (0, 5, 14, 0),
    "Qwen3_5MoeForConditionalGeneration": (0, 5, 14, 0), "Sarashina2VisionForCausalLM": (0, 5, 14, 0),
    "Step3VLForConditionalGeneration": (0, 5, 14, 0), "Step3p7ForConditionalGeneration": (0, 5, 14, 0),
    "StepVLForConditionalGeneration": (0, 5, 14, 0), "VoxtralForConditionalGeneration": (0, 5, 14, 0),
    "WhisperForConditionalGeneration": (0, 5, 14, 0),
    # 0.5.15
    "LocateAnythingForConditionalGeneration": (0, 5, 15, 0), "UnlimitedOCRForCausalLM": (0, 5, 15, 0),
    # 0.5.16
    "GlmImageForConditionalGeneration": (0, 5, 16, 0),
    # 0.5.18
    "InternS2MobiusForConditionalGeneration": (0, 5, 18, 0), "MuseGlimmerForConditionalGeneration": (0, 5, 18, 0),
    # 0.5.19
    "Dots3NoteForCausalLM": (0, 5, 19, 0),
    # 0.5.20
    "Cosmos3EdgeForConditionalGeneration": (0, 5, 20, 0), "Glm5NextForConditionalGeneration": (0, 5, 20, 0),
    "NemotronH_Omni_Reasoning_V3": (0, 5, 20, 0), "Qwen4ExpForConditionalGeneration": (0, 5, 20, 0),
    # 0.5.21
    "BailingMM2NativeForConditionalGeneration": (0, 5, 21, 0),
    "BailingMMNativeForConditionalGeneration": (0, 5, 21, 0),
    "BailingMoeV3VLForConditionalGeneration": (0, 5, 21, 0), "DiffusionGemmaForBlockDiffusion": (0, 5, 21, 0),
    # 0.5.22
    "EmbeddingGemma2Model": (0, 5, 22, 0),
    # 0.5.23
    "MuseSparkForConditionalGeneration": (0, 5, 23, 0),
}
# Served text-only by default (is_multimodal false) unless --enable-multimodal: model_config.py:690-717 @0.5.23.
TEXT_ONLY_BY_DEFAULT: dict[str, Release] = {
    "Gemma3ForConditionalGeneration": (0, 5, 14, 0), "Llama4ForConditionalGeneration": (0, 5, 14, 0),
    "Step3VLForConditionalGeneration": (0, 5, 14, 0), "InklingForConditionalGeneration": (0, 5, 16, 0),
}
# Multimodal archs whose default prefill CUDA graph is kept: 0.5.14's tc_piecewise allowlist, then (0.5.16+) the
# breakable one; 0.5.15's breakable rule turns it off for every multimodal model (srt/server_args.py:3341 @0.5.15).
PREFILL_GRAPH_MULTIMODAL: dict[str, tuple[Release, Release | None]] = {
    "Cohere2VisionForConditionalGeneration": ((0, 5, 14, 0), (0, 5, 15, 0)),  # tc_piecewise allowlist, 0.5.14 only
    "Qwen3_5ForConditionalGeneration": ((0, 5, 16, 0), None),
    "Qwen3_5MoeForConditionalGeneration": ((0, 5, 16, 0), None),
    "InternS2MobiusForConditionalGeneration": ((0, 5, 18, 0), None),
    "MuseGlimmerForConditionalGeneration": ((0, 5, 18, 0), None),
    "KimiK3ForConditionalGeneration": ((0, 5, 18, 0), None),
    "KimiK25ForConditionalGeneration": ((0, 5, 18, 0), None),
    "PaddleOCRVLForConditionalGeneration": ((0, 5, 19, 0), None),
    "Glm5NextForConditionalGeneration": ((0, 5, 20, 0), None),
    "Qwen4ExpForConditionalGeneration": ((0, 5, 22, 0), None), "MiniMaxM3SparseForCausalLM": ((0, 5, 22, 0), None),
    "MiniMaxM3SparseForConditionalGeneration": ((0, 5, 22, 0), None),
    "MuseSparkForConditionalGeneration": ((0, 5, 23, 0), None),
}
# Non-multimodal architectures whose default prefill graph is turned off: 0.5.14's tc_piecewise blacklist
# (model_config.py:1713 piecewise_cuda_graph_disabled_model_archs), the breakable rules' DeepSeek-V4 (0.5.15+,
# server_args.py:3341 @0.5.15, cuda_graph_hook.py:184-222 @0.5.23) and NemotronH (0.5.17 only, server_args.py:4452).
PREFILL_GRAPH_OFF_ARCHS: dict[str, tuple[Release, Release | None]] = {
    "Qwen3NextForCausalLM": ((0, 5, 14, 0), (0, 5, 15, 0)), "BailingMoeV2_5ForCausalLM": ((0, 5, 14, 0), (0, 5, 15, 0)),
    "LLaDAModelLM": ((0, 5, 14, 0), (0, 5, 15, 0)), "DeepseekV4ForCausalLM": ((0, 5, 14, 0), None),
    "DeepseekV4ForCausalLMNextN": ((0, 5, 14, 0), None), "NemotronHForCausalLM": ((0, 5, 17, 0), (0, 5, 18, 0)),
}


def listed(table: dict, arch: str | None, release: Release) -> bool:
    """Whether `arch` is in one of the tables above at `release`."""
    span = table.get(arch or "")
    if span is None:
        return False
    if isinstance(span[0], int):
        return span <= release
    first, last = span
    return first <= release and (last is None or release < last)
