"""Which architectures each vLLM release's registry lists, read from every release's wheel from 0.14.0 to 0.33.0
(vllm/model_executor/models/registry.py: the `_TEXT_GENERATION_MODELS` (t), `_MULTIMODAL_MODELS` (m),
`_SPECULATIVE_DECODING_MODELS` (s), `_TRANSFORMERS_SUPPORTED_MODELS` (T) dicts and the pooling ones (p:
_EMBEDDING_, _CROSS_ENCODER_, _LATE_INTERACTION_, _REWARD_, _TOKEN_/_SEQUENCE_CLASSIFICATION_MODELS), their keys read
from the source's AST). One entry per architecture: `Name:` then, per registry dict, its letter and the releases
listing it (`*` every release read, `A-B` a range, `A-` from A, `-B` up to B, commas between ranges). Parsed on first
use only (`kvcalc models`, or a config.json naming an architecture kvcalc does not map).
"""

from __future__ import annotations

from functools import cache

from .vllm import RELEASE_TUPLES, RELEASES

CATEGORIES = {"t": "text generation", "m": "multimodal", "s": "speculative decoding",
              "T": "Transformers backend", "p": "pooling"}

_LISTED = """
    AfmoeForCausalLM:t* AliceAIForCausalLM:t0.33.0- Alpamayo2Super:m0.33.0- ApertusForCausalLM:t*
    AquilaForCausalLM:t-0.24.0 AquilaModel:t-0.24.0 ArceeForCausalLM:t-0.31.0T0.32.0- ArcticForCausalLM:t-0.28.0
    AriaForConditionalGeneration:m* AudioFlamingo3ForConditionalGeneration:m* AXK1ForCausalLM:t0.17.0-
    AyaVisionForConditionalGeneration:m-0.24.0 BagelForConditionalGeneration:m* BaiChuanForCausalLM:t-0.24.0
    BaichuanForCausalLM:t-0.24.0 BailingMoeForCausalLM:t* BailingMoeV25MTPModel:s0.25.0-
    BailingMoeV2_5ForCausalLM:t0.17.0- BailingMoeV2ForCausalLM:t* BailingMoeV3ForCausalLM:t0.28.0-
    BailingMoeV3MTPModel:s0.28.0- BailingMoeV3VLForConditionalGeneration:m0.30.0- BambaForCausalLM:t-0.23.0
    BeamForCausalLM:t0.33.0- BeeForConditionalGeneration:m* BertForMaskedLM:p0.26.0-
    BertForSequenceClassification:p* BertForTokenClassification:p* BertModel:p* BertSpladeSparseEmbeddingModel:p*
    BgeM3EmbeddingModel:p0.15.0- Blip2ForConditionalGeneration:m* BloomForCausalLM:t*
    ChameleonForConditionalGeneration:m-0.28.0 ChatGLMForConditionalGeneration:t* ChatGLMModel:t*
    Cheers:m0.20.0-0.28.0 CheersForConditionalGeneration:m0.20.0-0.28.0 ClefFlashForJointSchema:p0.33.0-
    ClefOmniForJointSchema:p0.32.0- CLIPModel:p* Cohere2ForCausalLM:t* Cohere2MoeForCausalLM:t0.21.0-
    Cohere2VisionForConditionalGeneration:m* CohereAsrForConditionalGeneration:m0.19.0-
    CohereCompassForConditionalGeneration:m0.30.0- CohereForCausalLM:t* ColBERTJinaRobertaModel:p0.17.0-
    ColBERTLfm2Model:p0.19.0- ColBERTModernBertModel:p0.17.0- ColModernVBertForRetrieval:p0.17.0-
    ColPaliForRetrieval:p0.18.0- ColQwen3:p0.17.0- ColQwen3_5:p0.19.0- ColUltraVBertForRetrieval:p0.33.0-
    Cosmos3EdgeForConditionalGeneration:m0.26.0- Cosmos3ForConditionalGeneration:m0.23.0-
    CwmForCausalLM:t-0.31.0T0.32.0- D3ForSequenceClassification:p0.33.0- DbrxForCausalLM:t* DeciLMForCausalLM:t*p*
    DeepseekForCausalLM:t* DeepSeekMTPModel:s* DeepseekOCR2ForCausalLM:m0.16.0- DeepseekOCRForCausalLM:m*
    DeepseekV2ForCausalLM:t* DeepseekV32ForCausalLM:t* DeepseekV32MTPModel:s0.29.0-
    DeepseekV3BidirectionalModel:p0.29.0- DeepseekV3ForCausalLM:t* DeepseekV41ForCausalLM:m0.30.0-
    DeepseekV4ForCausalLM:t0.20.0- DeepseekV4ForConditionalGeneration:m0.30.0- DeepSeekV4MTPModel:s0.20.0-
    DeepseekVLV2ForCausalLM:m* DFlash2BeamDraftModel:s0.33.0- DFlash2DraftModel:s0.28.0- DFlashDraftModel:s0.20.0-
    DFlashLagunaForCausalLM:s0.25.0- DFlashMuseGlimmerAssistantModel:s0.28.0- DFlashQwen3XPressModel:s0.33.0-
    DiffusionGemmaForBlockDiffusion:m0.24.0- DomynEdgeForCausalLM:t0.33.0- DoryForCausalLM:t0.33.0-
    Dots1ForCausalLM:t-0.23.0 Dots3NoteForCausalLM:m0.28.0- Dots3NoteMTPModel:s0.28.0- DotsOCRForCausalLM:m*
    DSparkDraftModel:s0.25.0- DSparkV41DraftModel:s0.30.0- Eagle2_5_VLForConditionalGeneration:m0.15.0-
    Eagle3DeepseekV2ForCausalLM:s0.18.0- Eagle3DeepseekV3ForCausalLM:s0.18.0- Eagle3LlamaForCausalLM:s*
    Eagle3MiniMaxM2ForCausalLM:s0.20.0- Eagle3Qwen2_5vlForCausalLM:s* Eagle3Qwen3ForCausalLM:s0.24.0-
    Eagle3Qwen3vlForCausalLM:s* EagleCohereForCausalLM:s0.21.0- EagleDeepSeekMTPModel:s* EagleLlama4ForCausalLM:s*
    EagleLlamaForCausalLM:s* EagleMiniCPMForCausalLM:s* EagleMistralForCausalLM:s0.21.0-
    EagleMistralLarge3ForCausalLM:s* EmbeddingGemma2Model:p0.32.0- Emu3ForConditionalGeneration:T*
    Ernie4_5_MoeForCausalLM:t* Ernie4_5_VLMoeForConditionalGeneration:m* Ernie4_5ForCausalLM:t*
    ErnieForSequenceClassification:p0.18.0-0.23.0 ErnieForTokenClassification:p0.18.0-0.23.0
    ErnieModel:p0.18.0-0.23.0 ErnieMTPModel:s* Exaone4_5_ForConditionalGeneration:m0.20.0- Exaone4_5_MTP:s0.20.0-
    Exaone4ForCausalLM:t* ExaoneForCausalLM:t* ExaoneMoEForCausalLM:t-0.26.0,0.32.0- ExaoneMoeForCausalLM:t0.27.0-
    ExaoneMoeMTP:s* ExtractHiddenStatesModel:s0.17.0- Fairseq2LlamaForCausalLM:t-0.28.0 FalconForCausalLM:t*
    FalconH1ForCausalLM:t* FalconMambaForCausalLM:t* FireRedASR2ForConditionalGeneration:m0.17.0-
    FireRedLIDForConditionalGeneration:m0.20.0-0.28.0 FlexOlmoForCausalLM:t-0.28.0T0.29.0-
    FlintForCausalLM:t0.33.0- FunASRForConditionalGeneration:m0.17.0- FunAudioChatForConditionalGeneration:m0.16.0-
    FuyuForCausalLM:m-0.25.1 Gemma2ForCausalLM:t* Gemma2Model:p* Gemma3ForCausalLM:t*
    Gemma3ForConditionalGeneration:m* Gemma3nForCausalLM:t* Gemma3nForConditionalGeneration:m* Gemma3TextModel:p*
    Gemma4DSparkModel:s0.26.0- Gemma4ForCausalLM:t0.19.0- Gemma4ForConditionalGeneration:m0.19.0-
    Gemma4MTPModel:s0.21.0- Gemma4UnifiedForConditionalGeneration:m0.23.0- GemmaForCausalLM:t* Glm4ForCausalLM:t*
    Glm4MoeForCausalLM:t* Glm4MoeLiteForCausalLM:t0.15.0- Glm4MoeLiteMTPModel:s0.15.0- Glm4MoeMTPModel:s*
    GLM4VForCausalLM:m* Glm4vForConditionalGeneration:m* Glm4vMoeForConditionalGeneration:m*
    Glm5NextForCausalLM:t0.30.0- Glm5NextForConditionalGeneration:m0.30.0- Glm5NextMTPModel:s0.30.0-
    GlmAsrForConditionalGeneration:m* GlmForCausalLM:t-0.31.0T0.32.0-p-0.31.0 GlmMoeDsaForCausalLM:t0.16.0-
    GlmOcrForConditionalGeneration:m0.16.0- GlmOcrMTPModel:s0.16.0- GPT2ForSequenceClassification:p*
    GPT2LMHeadModel:t* GPTBigCodeForCausalLM:t-0.24.0T0.25.0- GPTJForCausalLM:t*
    GPTNeoXForCausalLM:t-0.31.0T0.32.0- GptOssForCausalLM:t* Granite4VisionForConditionalGeneration:m0.20.0-
    GraniteForCausalLM:t* GraniteMoeForCausalLM:t* GraniteMoeHybridForCausalLM:t* GraniteMoeSharedForCausalLM:t*
    GraniteMoeSWAForCausalLM:t0.29.0- GraniteSpeechForConditionalGeneration:m*
    GraniteSpeechPlusForConditionalGeneration:m0.23.0- GraniteSWAForCausalLM:t0.29.0- GritLM:t-0.28.0p-0.28.0
    Grok1ForCausalLM:t-0.24.0 Grok1ModelForCausalLM:t-0.24.0 GteModel:p* GteNewForSequenceClassification:p*
    GteNewModel:p* H2OVLChatModel:m* HCXVisionForCausalLM:t-0.28.0 HCXVisionV2ForCausalLM:t0.18.0-
    HF_ColBERT:p0.16.0- HfMoondream:m0.21.0- HrmTextForCausalLM:t0.24.0- HunYuanDenseV1ForCausalLM:t-0.28.0T0.29.0-
    HunYuanMoEV1ForCausalLM:t-0.28.0T0.29.0- HunYuanVLForConditionalGeneration:m-0.28.0T0.29.0-
    HyperCLOVAXForCausalLM:t0.18.0- HYV3ForCausalLM:t0.20.0- HYV3MTPModel:s0.20.0- HYV4ForCausalLM:t0.29.0-
    HYV4MTPModel:s0.29.0- Idefics3ForConditionalGeneration:m* InklingForCausalLM:t0.26.0-
    InklingForConditionalGeneration:t0.26.0- InklingMTPModel:s0.26.0- InternLM2ForCausalLM:t*
    InternLM2ForRewardModel:p* InternLM2VEForCausalLM:t-0.23.0 InternLM3ForCausalLM:t* InternLMForCausalLM:t-0.23.0
    InternS1ForConditionalGeneration:m* InternS1ProForConditionalGeneration:m0.16.0-
    InternS2MobiusForConditionalGeneration:m0.28.0- InternS2MobiusMTP:s0.28.0-
    InternS2PreviewForConditionalGeneration:m0.22.0- InternVLChatModel:m* InternVLForConditionalGeneration:m*
    IQuestCoderForCausalLM:t* IQuestLoopCoderForCausalLM:t* IsaacForConditionalGeneration:m*
    Jais2ForCausalLM:t-0.31.0T0.32.0- JAISLMHeadModel:t-0.22.1 JambaForCausalLM:t*
    JambaForSequenceClassification:p* JinaEmbeddingsV5Model:p0.20.0- JinaForRanking:p0.20.0- JinaVLForRanking:p*
    K2HorizonForCausalLM:t0.30.0- K3DSparkModel:s0.27.0- KananaVForConditionalGeneration:m*
    KeyeForConditionalGeneration:m* KeyeVL1_5ForConditionalGeneration:m* KimiK25ForConditionalGeneration:m0.15.0-
    KimiK3ForConditionalGeneration:m0.27.0- KimiK3MTPModel:s0.27.0- KimiLinearForCausalLM:t*
    KimiVLForConditionalGeneration:m* Kolibri1ForCausalLM:T0.33.0- LagunaForCausalLM:t0.21.0-
    Lfm2BidirectionalModel:p0.33.0- Lfm2ForCausalLM:t* Lfm2MoeForCausalLM:t* Lfm2VlForConditionalGeneration:m*
    LightOnOCRForConditionalGeneration:m* LiLiCorrDraftModel:s0.31.0- Llama4ForCausalLM:t*
    Llama4ForConditionalGeneration:m* Llama_Nemotron_Nano_VL:m* LlamaBidirectionalForSequenceClassification:p*
    LlamaBidirectionalModel:p* LlamaForCausalLM:t* LLaMAForCausalLM:t* LlamaForCausalLMEagle3:s* LlamaModel:p*
    LlamaNemotronVLForSequenceClassification:p0.17.0- LlamaNemotronVLModel:p0.17.0-
    LlavaForConditionalGeneration:m* LlavaNextForConditionalGeneration:m*p*
    LlavaNextVideoForConditionalGeneration:m* LlavaOnevision2ForConditionalGeneration:m0.25.0-
    LlavaOnevisionForConditionalGeneration:m* LongcatFlashForCausalLM:t* LongCatFlashMTPModel:s*
    LongcatFlashNgramForCausalLM:t0.26.0- Mamba2ForCausalLM:t* MambaForCausalLM:t*
    MantisForConditionalGeneration:m-0.24.0 MedusaModel:s-0.32.0 MellumForCausalLM:t0.22.1-0.31.0T0.32.0-
    MiDashengLMModel:m* MiMoForCausalLM:t* MiMoMTPModel:s* MiMoV2FlashForCausalLM:t* MiMoV2ForCausalLM:t0.21.0-
    MiMoV2MTPModel:s0.21.0- MiMoV2OmniForCausalLM:m0.21.0- MiMoV2OmniMTPModel:s0.21.0- MiniCPM3ForCausalLM:t*
    MiniCPMForCausalLM:t* MiniCPMO:m* MiniCPMOcrForConditionalGeneration:m0.33.0- MiniCPMV:m*
    MiniCPMV4_6ForConditionalGeneration:m0.22.0- MiniCPMV4_7ForConditionalGeneration:m0.32.0-
    MiniMaxForCausalLM:t-0.23.0 MiniMaxM1ForCausalLM:t-0.23.0 MiniMaxM2ForCausalLM:t* MiniMaxM3MTP:s0.24.0-
    MiniMaxM3SparseForCausalLM:t0.24.0- MiniMaxM3SparseForConditionalGeneration:m0.24.0-
    MiniMaxText01ForCausalLM:t-0.23.0 MiniMaxVL01ForConditionalGeneration:m-0.23.0 Ministral3ForCausalLM:t0.20.0-
    Mistral3ForConditionalGeneration:m* MistralForCausalLM:t* MistralLarge3ForCausalLM:t* MistralModel:p*
    MixtralForCausalLM:t* ModernBertForSequenceClassification:p* ModernBertForTokenClassification:p*
    ModernBertModel:p* ModernVBertModel:p0.33.0- Molmo2ForConditionalGeneration:m0.15.0- MolmoForCausalLM:m*
    Moondream3ForCausalLM:m0.21.0- MoonshotKimiaForCausalLM:m0.18.0- MossAudioModel:m0.24.0-
    MossTranscribeDiarizeForConditionalGeneration:m0.25.0- MptForCausalLM:t-0.28.0 MPTForCausalLM:t-0.28.0
    MuseGlimmerAssistantModel:s0.28.0- MuseGlimmerForCausalLM:t0.28.0- MuseGlimmerForConditionalGeneration:m0.28.0-
    MuseSparkDSparkModel:s0.33.0- MuseSparkForConditionalGeneration:m0.33.0-
    MusicFlamingoForConditionalGeneration:m0.16.0-0.24.0 NanbeigeForCausalLM:T0.30.0- NemotronForCausalLM:t*
    NemotronH_Nano_Omni_Reasoning_V3:m0.20.0- NemotronH_Nano_VL_V2:m* NemotronH_Omni_Reasoning_V3:m0.29.0-
    NemotronH_Super_Omni_Reasoning_V3:m0.20.0- NemotronHForCausalLM:t* NemotronHMTPModel:s0.17.0-
    NemotronHPuzzleForCausalLM:t0.16.0- NemotronParseForConditionalGeneration:m* NomicBertModel:p* NVLM_D:m*
    Olmo2ForCausalLM:t-0.25.1T0.26.0- Olmo3ForCausalLM:t-0.28.0T0.29.0- OlmoeForCausalLM:t*
    OlmoForCausalLM:t-0.25.1T0.26.0- OlmoHybridForCausalLM:t0.18.0-
    OpenAIPrivacyFilterForTokenClassification:p0.25.0- OpenCUAForConditionalGeneration:m* OpenPanguMTPModel:s*
    OpenPanguVLForConditionalGeneration:m0.16.0- OpenVLAForActionPrediction:m0.22.0- OpsColQwen3Model:p0.17.0-
    OPTForCausalLM:t* OrionForCausalLM:t* OuroForCausalLM:t-0.26.0 Ovis:m* Ovis2_5:m*
    Ovis2_6_MoeForCausalLM:m0.17.0- Ovis2_6ForCausalLM:m0.17.0- PaddleOCRVLForConditionalGeneration:m*
    PaliGemmaForConditionalGeneration:m* PanguEmbeddedForCausalLM:t* PanguProMoEV2ForCausalLM:t*
    PanguUltraMoEForCausalLM:t* Param2MoEForCausalLM:t0.20.0- ParseAuxMTPModel:s0.33.0- PEagleDraftModel:s0.22.0-
    PeagleLlamaForCausalLM:s0.22.0- PeagleQwen3ForCausalLM:s0.24.0- PersimmonForCausalLM:t-0.25.1
    Phi3ForCausalLM:t*p* Phi3VForCausalLM:m*p* Phi4ForCausalLMV:m0.20.0- Phi4MMForCausalLM:m*
    PhiForCausalLM:t-0.31.0T0.32.0- PhiMoEForCausalLM:t* PixtralForConditionalGeneration:m*
    Plamo2ForCausalLM:t-0.26.0 Plamo3ForCausalLM:t* PrithviGeoSpatialMAE:p-0.28.0
    QianfanOCRForConditionalGeneration:m0.21.0- Qwen2_5_VLForConditionalGeneration:m*
    Qwen2_5OmniForConditionalGeneration:m* Qwen2_5OmniModel:m* Qwen2AudioForConditionalGeneration:m*
    Qwen2ForCausalLM:t*p* Qwen2ForProcessRewardModel:p* Qwen2ForRewardModel:p* Qwen2Model:p* Qwen2MoeForCausalLM:t*
    Qwen2VLForConditionalGeneration:m*p* Qwen3_5ForCausalLM:t0.27.0- Qwen3_5ForConditionalGeneration:m0.17.0-
    Qwen3_5MoeForCausalLM:t0.27.0- Qwen3_5MoeForConditionalGeneration:m0.17.0- Qwen3_5MoeMTP:s0.17.0-
    Qwen3_5MTP:s0.17.0- Qwen3ASRForcedAlignerForTokenClassification:p0.19.0-
    Qwen3ASRForConditionalGeneration:m0.16.0- Qwen3ASRRealtimeGeneration:m0.17.0- Qwen3DSparkModel:s0.25.0-
    Qwen3ForCausalLM:t* Qwen3MoeForCausalLM:t* Qwen3NextForCausalLM:t* Qwen3NextMTP:s*
    Qwen3OmniDSparkModel:s0.29.0- Qwen3OmniMoeForConditionalGeneration:m* Qwen3VLForConditionalGeneration:m*
    Qwen3VLMoeForConditionalGeneration:m* Qwen3VLNemotronEmbedModel:p0.17.0- Qwen3XPressModel:s0.33.0-
    Qwen4ExpForCausalLM:t0.29.0- Qwen4ExpForConditionalGeneration:m0.29.0- Qwen4ExpMTP:s0.29.0-
    QWenLMHeadModel:t-0.23.0 QwenVLForConditionalGeneration:m-0.23.0 RadioMBartPrefixForCausalLM:m0.33.0-
    RForConditionalGeneration:m* Rnj1ForCausalLM:t0.20.0- RobertaForMaskedLM:p* RobertaForSequenceClassification:p*
    RobertaForTokenClassification:p0.26.0- RobertaModel:p* RWForCausalLM:t-0.28.0 SarvamMLAForCausalLM:t0.18.0-
    SarvamMoEForCausalLM:t0.18.0- SeedOssForCausalLM:t-0.31.0T0.32.0- SiglipModel:p* SkyworkR1VChatModel:m*
    SmolLM3ForCausalLM:T* SmolVLMForConditionalGeneration:m* SolarForCausalLM:t* StableLMEpochForCausalLM:t-0.28.0
    StableLmForCausalLM:t* Starcoder2ForCausalLM:t-0.24.0T0.25.0- Step1ForCausalLM:t0.15.0-
    Step3p5ForCausalLM:t0.15.1- Step3p5MTP:s0.15.1- Step3p7ForConditionalGeneration:m0.23.0-
    Step3TextForCausalLM:t* Step3VLForConditionalGeneration:m* Step5ForCausalLM:t0.33.0-
    Step5ForConditionalGeneration:m0.33.0- Step5MTP:s0.33.0- StepVLForConditionalGeneration:m0.15.0-
    Tarsier2ForConditionalGeneration:m-0.24.0 TarsierForConditionalGeneration:m-0.24.0 TeleChat2ForCausalLM:t*p*
    TeleChat3ForCausalLM:t0.20.0- TeleChatForCausalLM:t-0.25.1p-0.25.1 TeleFLMForCausalLM:t* Terratorch:p*
    UltravoxModel:m* UnlimitedOCRForCausalLM:m0.25.0- VaultGemmaForCausalLM:T0.27.0-
    VibeVoiceAsrForConditionalGeneration:T0.27.0- VoxtralForConditionalGeneration:m*
    VoxtralRealtimeGeneration:m0.16.0- VoxtralStreamingGeneration:m-0.15.1
    VoyageQwen3BidirectionalEmbedModel:p0.16.0- WhisperForConditionalGeneration:m*
    XLMRobertaForSequenceClassification:p* XLMRobertaForTokenClassification:p0.26.0- XLMRobertaModel:p*
    XverseForCausalLM:t-0.23.0 Zamba2ForCausalLM:t*
"""

# vLLM 0.33.0 registry.py _PREVIOUSLY_SUPPORTED_MODELS: architecture -> the release that last served it.
_PREVIOUSLY = """
    MotifForCausalLM:0.10.2 Phi3SmallForCausalLM:0.9.2 Phi4FlashForCausalLM:0.10.2 Phi4MultimodalForCausalLM:0.12.0
    JAISLMHeadModel:0.22.0 ErnieModel:0.23.0 ErnieForSequenceClassification:0.23.0
    ErnieForTokenClassification:0.23.0 InternLM2VEForCausalLM:0.23.0 QWenLMHeadModel:0.23.0
    QwenVLForConditionalGeneration:0.23.0 InternLMForCausalLM:0.23.0 DonutForConditionalGeneration:0.10.2
    MllamaForConditionalGeneration:0.10.2 XverseForCausalLM:0.23.0 Dots1ForCausalLM:0.23.0 BambaForCausalLM:0.23.0
    MiniMaxForCausalLM:0.23.0 MiniMaxText01ForCausalLM:0.23.0 MiniMaxM1ForCausalLM:0.23.0
    MiniMaxVL01ForConditionalGeneration:0.23.0 BaiChuanForCausalLM:0.23.0 BaichuanForCausalLM:0.23.0
    AquilaModel:0.24.0 AquilaForCausalLM:0.24.0 Grok1ModelForCausalLM:0.24.0 Grok1ForCausalLM:0.24.0
    TarsierForConditionalGeneration:0.24.0 Tarsier2ForConditionalGeneration:0.23.0
    MantisForConditionalGeneration:0.24.0 MusicFlamingoForConditionalGeneration:0.24.0
    AyaVisionForConditionalGeneration:0.24.0 TeleChatForCausalLM:0.25.0 PersimmonForCausalLM:0.25.0
    FuyuForCausalLM:0.25.0 Plamo2ForCausalLM:0.26.0 OuroForCausalLM:0.26.0 ArcticForCausalLM:0.28.0
    ChameleonForConditionalGeneration:0.28.0 Cheers:0.28.0 CheersForConditionalGeneration:0.28.0
    Fairseq2LlamaForCausalLM:0.28.0 FireRedLIDForConditionalGeneration:0.28.0 GritLM:0.28.0
    HCXVisionForCausalLM:0.28.0 MPTForCausalLM:0.28.0 MptForCausalLM:0.28.0 RWForCausalLM:0.28.0
    StableLMEpochForCausalLM:0.28.0 PrithviGeoSpatialMAE:0.28.0
"""


def _releases(spec: str) -> frozenset[int]:
    """`0.20.0-0.22.1,0.25.0-` -> the indices into RELEASES."""
    out: set[int] = set()
    for part in spec.split(","):
        if part == "*":
            return frozenset(range(len(RELEASES)))
        if "-" not in part:
            out.add(RELEASES.index(part))
            continue
        first, last = part.split("-")
        out.update(range(RELEASES.index(first) if first else 0,
                         RELEASES.index(last) + 1 if last else len(RELEASES)))
    return frozenset(out)


@cache
def listings() -> dict[str, tuple[tuple[str, frozenset[int]], ...]]:
    """Architecture -> ((registry letter, release indices), ...)."""
    out = {}
    for entry in _LISTED.split():
        name, spec = entry.split(":")
        parts, i = [], 0
        while i < len(spec):
            letter, j = spec[i], i + 1
            while j < len(spec) and spec[j] not in CATEGORIES:
                j += 1
            parts.append((letter, _releases(spec[i + 1:j])))
            i = j
        out[name] = tuple(parts)
    return out


@cache
def previously_supported() -> dict[str, str]:
    return dict(e.split(":") for e in _PREVIOUSLY.split())


def registry_of(release: tuple[int, int, int]) -> dict[str, str]:
    """Architecture -> registry letter for one release (a generation letter wins over pooling)."""
    index = RELEASE_TUPLES.index(release)
    out = {}
    for name, parts in listings().items():
        letters = [letter for letter, rel in parts if index in rel]
        if letters:
            out[name] = min(letters, key="tmsTp".index)
    return out


# The classes whose vLLM config hook sets cache.mamba_ssm_cache_dtype from the HF text config's mamba_ssm_dtype when
# the user leaves it at auto (model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig.
# verify_and_update_config: 0.17.0:635-650, 0.24.0:613-627, 0.33.0:963-977), -> the first release that does it
# (MODELS_CONFIG_MAP: 0.17.0:685-686 the two ConditionalGeneration wrappers, the releases that first serve them;
# 0.27.0 adds the text-only Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM, 0.33.0:1259-1262).
CONFIG_SSM_DTYPE = {"Qwen3_5ForConditionalGeneration": "0.17.0", "Qwen3_5MoeForConditionalGeneration": "0.17.0",
                    "Qwen3_5ForCausalLM": "0.27.0", "Qwen3_5MoeForCausalLM": "0.27.0"}


def first_release(name: str) -> str | None:
    """The first release whose registry lists the architecture, or None when none does."""
    indices = [i for _, rel in listings().get(name, ()) for i in rel]
    return RELEASES[min(indices)] if indices else None
