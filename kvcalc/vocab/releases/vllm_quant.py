"""The --quantization values each vLLM release accepts: model_executor/layers/quantization/__init__.py
QuantizationMethods (the Literal every --quantization value is checked against: config/model.py _verify_quantization,
"Unknown quantization method: X. Must be one of [...]", :999 @0.19.0). One row per release where the list changes,
generated from each release's file (the line range cited); a release takes the last row at or below it.
"""

from __future__ import annotations

QUANTIZATION_METHODS: tuple[tuple[tuple[int, int, int], str, tuple[str, ...]], ...] = (
    ((0, 14, 0), "0.14.0 quantization/__init__.py:12-42",
        ("awq", "deepspeedfp", "fp8", "ptpc_fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "bitblas",
         "gguf", "gptq_marlin_24", "gptq_marlin", "gptq_bitblas", "awq_marlin", "gptq", "compressed-tensors",
         "bitsandbytes", "hqq", "experts_int8", "ipex", "quark", "moe_wna16", "torchao", "auto-round", "rtn", "inc",
         "mxfp4", "petit_nvfp4", "cpu_awq")),
    ((0, 15, 0), "0.15.0 quantization/__init__.py:12-38",
        ("awq", "fp8", "ptpc_fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "bitblas", "gguf",
         "gptq_marlin_24", "gptq_marlin", "gptq_bitblas", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes",
         "experts_int8", "ipex", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "petit_nvfp4", "cpu_awq")),
    ((0, 16, 0), "0.16.0 quantization/__init__.py:12-35",
        ("awq", "fp8", "ptpc_fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "gguf",
         "gptq_marlin", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "experts_int8", "quark",
         "moe_wna16", "torchao", "inc", "mxfp4", "petit_nvfp4", "cpu_awq")),
    ((0, 17, 0), "0.17.0 quantization/__init__.py:12-36",
        ("awq", "fp8", "ptpc_fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
         "modelopt_mixed", "gguf", "gptq_marlin", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes",
         "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "petit_nvfp4", "cpu_awq")),
    ((0, 19, 0), "0.19.0 quantization/__init__.py:12-36",
        ("awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed",
         "gguf", "gptq_marlin", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "experts_int8", "quark",
         "moe_wna16", "torchao", "inc", "mxfp4", "mxfp8", "petit_nvfp4", "cpu_awq")),
    ((0, 20, 0), "0.20.0 quantization/__init__.py:12-46",
        ("awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed",
         "gguf", "gptq_marlin", "awq_marlin", "gptq", "humming", "compressed-tensors", "bitsandbytes",
         "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8",
         "cpu_awq", "online", "fp8_per_tensor", "fp8_per_block", "int8_per_channel_weight_only", "mxfp8")),
    ((0, 22, 0), "0.22.0 quantization/__init__.py:12-46",
        ("awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed",
         "gguf", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin", "humming", "compressed-tensors", "bitsandbytes",
         "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8",
         "cpu_awq", "online", "fp8_per_tensor", "fp8_per_block", "int8_per_channel_weight_only", "mxfp8")),
    ((0, 23, 0), "0.23.0 quantization/__init__.py:12-45",
        ("awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed",
         "gguf", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin", "humming", "compressed-tensors", "bitsandbytes",
         "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8",
         "online", "fp8_per_tensor", "fp8_per_block", "int8_per_channel_weight_only", "mxfp8")),
    ((0, 24, 0), "0.24.0 quantization/__init__.py:12-46",
        ("awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
         "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin", "humming", "compressed-tensors",
         "bitsandbytes", "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4",
         "deepseek_v4_fp8", "online", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel",
         "int8_per_channel_weight_only", "mxfp8")),
    ((0, 26, 0), "0.26.0 quantization/__init__.py:12-47",
        ("awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
         "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin", "humming", "compressed-tensors",
         "bitsandbytes", "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4",
         "deepseek_v4_fp8", "online", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel",
         "int8_per_channel_weight_only", "nvfp4_per_token", "mxfp8")),
    ((0, 28, 0), "0.28.0 quantization/__init__.py:12-46",
        ("awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
         "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin", "humming", "compressed-tensors",
         "experts_int8", "quark", "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8",
         "online", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "int8_per_channel_weight_only",
         "nvfp4_per_token", "mxfp8")),
)


def accepted(release: tuple[int, int, int]) -> tuple[str, tuple[str, ...]]:
    """(the cited row, the --quantization values) of a release."""
    row = [r for r in QUANTIZATION_METHODS if r[0] <= release][-1] if release >= QUANTIZATION_METHODS[0][0] \
        else QUANTIZATION_METHODS[0]
    return row[1], row[2]


# Every value some release accepts (the layout key's choices; a release's own list refuses the rest by name).
ALL_METHODS: tuple[str, ...] = tuple(sorted({n for _, _, names in QUANTIZATION_METHODS for n in names}))
# A checkpoint's quant_method -> the --quantization values vLLM takes for it (config/model.py _verify_quantization
# :924-993 @0.19.0: the override methods gptq_marlin, awq_marlin, moe_wna16, modelopt_fp4, ... replace the
# checkpoint's name when their override_quantization_method claims it; any other value is "does not match").
OVERRIDES = {"gptq": ("gptq_marlin", "moe_wna16", "auto_gptq", "inc"), "awq": ("awq_marlin", "moe_wna16", "auto_awq",
                                                                            "inc"),
             "modelopt": ("modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed"), "mxfp4": ("gpt_oss_mxfp4",),
             "auto-round": ("inc",), "auto_round": ("inc",)}
