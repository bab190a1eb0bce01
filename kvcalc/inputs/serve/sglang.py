"""`python -m sglang.launch_server ...` / `sglang serve ...` -> the layout of an SGLang deployment (engine sglang),
read by the release's own parser (serve/sglang_args.py over vocab/releases/sglang_flags.py: every option of each
release, its switches and valued options, BooleanOptionalAction's --no- forms, choices, abbreviations and the
ambiguity of a prefix, per release). What the parser leaves is read by dest (the ServerArgs field, whatever the
spelling: --cuda-graph-max-bs was a deprecated alias of --cuda-graph-max-bs-decode until 0.5.19): the fields that
size the pools map to layout keys (KEYS); fields that change them in ways kvcalc does not model are refused, naming
the flag (NOT_MODELLED); every other field is accepted and listed in a note. Loaded only for SGLang lines (start-up
time is a target)."""

from __future__ import annotations

import os
from typing import Any

from ...vocab.errors import UnsupportedError
from .sglang_args import PROG, fail, read, serve_args
from .vllm import assignments, resolve_model

SOURCE = PROG
RELEASE_KEY = "sglang.version"  # the layout key naming the release that reads the line
# ServerArgs field -> the layout key it sets
KEYS: dict[str, str] = {
    "tp_size": "parallel.tensor_parallel_size", "pp_size": "parallel.pipeline_parallel_size",
    "dp_size": "parallel.data_parallel_size", "nnodes": "parallel.nnodes", "context_length": "cache.max_model_len",
    "kv_cache_dtype": "cache.kv_cache_dtype", "dtype": "model.dtype",
    "mem_fraction_static": "sglang.mem_fraction_static", "max_total_tokens": "sglang.max_total_tokens",
    "page_size": "sglang.page_size", "chunked_prefill_size": "sglang.chunked_prefill_size",
    "cuda_graph_max_bs_decode": "sglang.cuda_graph_max_bs", "disable_cuda_graph": "sglang.disable_cuda_graph",
    "cuda_graph_bs_decode": "sglang.cuda_graph_bs_decode",
    "cuda_graph_max_bs_prefill": "sglang.cuda_graph_max_bs_prefill",
    "cuda_graph_bs_prefill": "sglang.cuda_graph_bs_prefill",
    "cuda_graph_backend_decode": "sglang.cuda_graph_backend_decode",
    "cuda_graph_backend_prefill": "sglang.cuda_graph_backend_prefill",
    "disable_prefill_cuda_graph": "sglang.disable_prefill_cuda_graph",
    "disable_decode_cuda_graph": "sglang.disable_decode_cuda_graph", "max_prefill_tokens": "sglang.max_prefill_tokens",
    "max_running_requests": "sglang.max_running_requests", "swa_full_tokens_ratio": "sglang.swa_full_tokens_ratio",
    "enable_hierarchical_cache": "sglang.hicache.enabled", "hicache_ratio": "sglang.hicache.ratio",
    "hicache_size": "sglang.hicache.size", "hicache_mem_layout": "sglang.hicache.mem_layout",
    "hicache_host_memory_mode": "sglang.hicache.host_memory_mode", "hicache_io_backend": "sglang.hicache.io_backend",
    "hicache_write_policy": "sglang.hicache.write_policy", "hicache_storage_backend": "sglang.hicache.storage_backend",
    "hicache_host_memory_fraction": "sglang.hicache.host_memory_fraction",
    "attn_dp_size": "sglang.attn_dp_size", "disable_radix_cache": "sglang.disable_radix_cache",
    "disable_overlap_schedule": "sglang.disable_overlap_schedule",
    "mamba_ssm_dtype": "sglang.mamba_ssm_dtype", "max_mamba_cache_size": "sglang.max_mamba_cache_size",
    "mamba_full_memory_ratio": "sglang.mamba_full_memory_ratio",
    "mamba_radix_cache_strategy": "sglang.mamba_radix_cache_strategy",
    "speculative_algorithm": "sglang.speculative_algorithm",
    "speculative_num_draft_tokens": "sglang.speculative_num_draft_tokens",
    "speculative_num_steps": "sglang.speculative_num_steps", "speculative_eagle_topk": "sglang.speculative_eagle_topk",
    "enable_multimodal": "sglang.enable_multimodal", "language_only": "sglang.language_only",
    "language_model_only": "sglang.language_model_only", "mm_feature_transport": "sglang.mm_feature_transport",
}
# The line's environment SGLang reads for the pools (srt/environ.py @0.5.23) -> the layout key; the other SGLANG_*
# variables that change them are refused unless at their defaults (ENV_DEFAULTS).
ENV_KEYS = {"SGLANG_VLM_CACHE_SIZE_MB": ("sglang.vlm_cache_size_mb", int),
            "SGLANG_MM_FEATURE_CACHE_MB": ("sglang.mm_feature_cache_mb", int),
            "SGLANG_MAMBA_SSM_DTYPE": ("sglang.mamba_ssm_dtype", str)}
ENV_DEFAULTS = {"SGLANG_MAMBA_CONV_DTYPE": "bfloat16", "SGLANG_SWA_EVICTION_INTERVAL": "128",
                "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING": "0", "SGLANG_PP_LAYER_PARTITION": None,
                # DeepSeek-V4's pool layout and compress state (environ.py:1754-1832)
                "SGLANG_DSV4_KV_LAYOUT": "v4", "SGLANG_DSV4_COMPRESSED_KV_LAYOUT": "auto",
                "SGLANG_DSV4_COMPRESS_STATE_DTYPE": "float32", "SGLANG_OPT_USE_ONLINE_COMPRESS": "0"}
# srt/arg_groups/fields/model.py @0.5.23 --dtype choices -> the layout's dtype; 'auto' keeps the config's.
DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32"}
# --kv-cache-dtype choices (srt/mem_cache/kv_cache_dtype.py @0.5.23) -> kvcalc's names; the FP4 / MX formats are
# refused by the model stage (engines/sglang/model.py).
KV_DTYPES = {"auto": "auto", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16",
             "bfloat16": "bfloat16"}
_WEIGHTS_OFF = "weights offloaded to the CPU (the free memory after the load)"
# ServerArgs fields that change the pools in ways kvcalc does not model: refused, naming the flag.
NOT_MODELLED: dict[str, str] = {
    "enable_lmcache": "LMCache's SGLang connector", "enable_flexkv": "FlexKV's host tier",
    "cpu_offload_gb": _WEIGHTS_OFF, "offload_group_size": _WEIGHTS_OFF, "offload_num_in_group": _WEIGHTS_OFF,
    "quantization": "a runtime weight quantization", "modelopt_quant": "a runtime weight quantization",
    "torchao_config": "a runtime weight quantization", "enable_unified_memory": "the unified memory pool",
    "dcp_size": "decode context parallelism (the KV split over ranks)",
    "attn_cp_size": "attention context parallelism (the KV split over ranks)", "enable_hisparse": "HiSparse",
    "hisparse_config": "HiSparse", "disable_hybrid_swa_memory": "the hybrid SWA pool turned off",
    "config": "an SGLang --config YAML (its options are not read)",
    "cuda_graph_config": "a --cuda-graph-config JSON (the graphs' reserve in mem_fraction_static)",
    "json_model_override_args": "a model config override (--json-model-override-args)",
    "disaggregation_mode": "PD disaggregation (a prefill or decode worker's reserve and pools)",
    "enable_lora": "LoRA adapters' memory pool", "lora_paths": "LoRA adapters' memory pool",
    "max_loras_per_batch": "LoRA adapters' memory pool", "max_lora_rank": "LoRA adapters' memory pool",
    "moe_a2a_backend": "an MoE all-to-all backend's reserve (DeepEP's 2 GiB, memory_hook.py:391-414)",
    "kt_weight_path": "KTransformers' CPU experts (the weights on the GPU)",
    "enable_kv_cache_sharding": "a sharded KV cache", "prefill_only_disable_kv_cache": "a prefill-only engine",
    "prefill_attention_backend": "a prefill attention backend (its page size and reserve)",
    "decode_attention_backend": "a decode attention backend (its page size and reserve)",
    "enable_two_batch_overlap": "two-batch overlap (it turns the prefill CUDA graph off from 0.5.17)",
    "dsv4_attn_backend": "a DeepSeek-V4 attention backend (trtllm's uniform FP8 pools, flashmla_mega's V4.1 layout)",
    "enable_encoder_swa_bounded_replay": "DeepSeek-V4.1's encoder SWA replay (request-window pools)",
}
# Values of a refused field that change nothing (the field's default): accepted.
HARMLESS = {"disaggregation_mode": ("null",), "moe_a2a_backend": ("none",), "cpu_offload_gb": (0,),
            "offload_group_size": (-1, 0), "attn_cp_size": (1,), "dcp_size": (1,),
            "disable_hybrid_swa_memory": (False,),
            "enable_lora": (None, False), "enable_two_batch_overlap": (False,), "dsv4_attn_backend": ("auto",),
            "enable_encoder_swa_bounded_replay": (False,)}
# Speculative algorithms SGLang runs as its EAGLE family (srt/speculative/spec_info.py:32-66 @0.5.23: NEXTN and
# MTP are aliases of EAGLE); the others size their drafts by rules kvcalc has not executed.
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "MTP")
NOTE = {"node_rank": "one node of the engine (the plan is the engine's)",
        "attention_backend": "kvcalc takes SGLang's default page size for the GPU; give --page-size if it differs",
        "ep_size": "experts split over EP ranks: the weights figure shards them by TP"}
MODEL_FIELDS = ("model_path", "revision")


def is_sglang(argv: list[str]) -> bool:
    """A `python -m sglang.launch_server` or `sglang serve` line (after any environment assignments)."""
    _, words = assignments(list(argv))
    if words[:2] == ["sglang", "serve"]:
        return True
    return len(words) >= 3 and os.path.basename(words[0]).startswith("python") and words[1:3] == [
        "-m", "sglang.launch_server"]


def _arguments(words: list[str]) -> tuple[list[str], list[str]]:
    """(the arguments prepare_server_args reads, notes) of a line."""
    if words[:2] == ["sglang", "serve"]:
        args, backend = serve_args(words[2:])
        if backend not in (None, "auto", "llm"):
            raise UnsupportedError(f"{SOURCE}: --model-type {backend}: kvcalc plans SGLang's language-model server "
                                   "(--model-type llm / auto)")
        return args, []
    return words[3:], []


def _value(dest: str, value: Any) -> Any:
    if dest == "kv_cache_dtype":
        if value not in KV_DTYPES:
            raise UnsupportedError(f"{SOURCE}: --kv-cache-dtype {value}: SGLang's {value} KV pool is not modelled "
                                   f"(kvcalc models {', '.join(KV_DTYPES)})")
        return KV_DTYPES[value]
    if dest == "dtype":
        return DTYPES.get(value, value)
    if dest == "speculative_algorithm":
        if value is None:
            return None
        if value.upper() not in EAGLE_FAMILY:
            raise UnsupportedError(f"{SOURCE}: --speculative-algorithm {value}: its draft pool is not modelled for "
                                   f"SGLang (kvcalc models {', '.join(EAGLE_FAMILY)})")
        return value.upper()
    if dest == "chunked_prefill_size" and value < -1:
        return -1  # any value <= 0 turns chunked prefill off (memory_hook.py:304-307 @0.5.23: `> 0`)
    return value


HANDLED = ("enable_dp_attention", "speculative_draft_model_path")  # read by _dp_attention / parse itself


def _environment(line_env: dict[str, str]) -> dict[str, tuple[Any, str]]:
    """The line's SGLANG_* assignments that size the pools (ENV_KEYS), and those refused off their defaults."""
    out: dict[str, tuple[Any, str]] = {}
    for name, value in line_env.items():
        if name in ENV_KEYS:
            key, how = ENV_KEYS[name]
            try:
                out[key] = (how(value), name)
            except ValueError:
                raise fail(name, "an integer", value) from None
        elif name in ENV_DEFAULTS and value != ENV_DEFAULTS[name]:
            raise UnsupportedError(f"{SOURCE}: {name}={value}: not modelled for SGLang (kvcalc plans its default"
                                   + (f", {ENV_DEFAULTS[name]})" if ENV_DEFAULTS[name] else ", unset)"))
    return out


def _dp_attention(opts: dict, overrides: dict[str, tuple[Any, str]]) -> None:
    """--enable-dp-attention with --dp-size N is attention DP of width N on one engine (srt/arg_groups/
    parallel_hook.py:39-61 @0.5.23: attn_dp_size = dp_size, dp_size = 1; before 0.5.22 the same fields, dp_size
    read as the width, srt/server_args.py:3284-3292 @0.5.14)."""
    on = opts.get("enable_dp_attention")
    if on is None or not on.value:
        return
    if "attn_dp_size" not in opts or opts["attn_dp_size"].value == 1:
        width = opts["dp_size"].value if "dp_size" in opts else 1
        overrides["sglang.attn_dp_size"] = (width, f"{on.spelling} --dp-size {width}")
        overrides["parallel.data_parallel_size"] = (1, f"{on.spelling} (--dp-size is the attention DP width)")


def _refused(dest: str, opt) -> None:
    if dest in NOT_MODELLED and opt.value not in HARMLESS.get(dest, ()):
        raise UnsupportedError(f"{SOURCE}: {opt.spelling}: {NOT_MODELLED[dest]} is not modelled for SGLang; remove "
                               "it to plan without it")


def parse(argv: list[str], *, env: dict[str, str] | None = None,
          release: str | None = None) -> tuple[dict, dict[str, tuple[Any, str]], list[str]]:
    """An SGLang server line -> (layout dict, overrides {path: (value, flag)}, notes), read by `release`'s parser
    (the default release when None)."""
    from ...vocab.releases import DEFAULT_SGLANG_VERSION

    line_env, words = assignments(list(argv))
    args, notes = _arguments(words)
    release = release or DEFAULT_SGLANG_VERSION
    opts = read(release, args)
    config = resolve_model(opts["model_path"].value, revision=opts["revision"].value if "revision" in opts else None,
                           flag="--model-path", env=env)
    overrides: dict[str, tuple[Any, str]] = {"engine": ("sglang", SOURCE), **_environment(line_env)}
    if "speculative_draft_model_path" in opts and opts["speculative_draft_model_path"].value is not None:
        draft = resolve_model(opts["speculative_draft_model_path"].value, flag="--speculative-draft-model-path",
                              env=env)
        overrides["sglang.speculative_draft_model_path"] = (os.path.abspath(draft), "--speculative-draft-model-path")
    ignored, deprecated = [], []
    for dest, opt in opts.items():
        _refused(dest, opt)
        if opt.deprecated:
            deprecated.append(opt.spelling)
        if dest in KEYS:
            if dest == "dtype" and opt.value == "auto":
                continue
            if isinstance(opt.value, str) and "${" in opt.value:
                raise fail(opt.spelling, "a value kvcalc can read (it sizes the KV pools)", opt.value)
            overrides[KEYS[dest]] = (_value(dest, opt.value), opt.spelling)
        elif dest in NOTE:
            notes.append(f"{opt.spelling}: {NOTE[dest]}")
        elif dest not in MODEL_FIELDS and dest not in NOT_MODELLED and dest not in HANDLED:
            ignored.append(opt.spelling)
    _dp_attention(opts, overrides)
    if deprecated:
        notes.append(f"SGLang {release} warns that {', '.join(deprecated)} is deprecated (still read)")
    if ignored:
        notes.append("flags that do not change the KV pools: " + ", ".join(dict.fromkeys(ignored)))
    return {"model": {"hf_config": os.path.abspath(config)}}, overrides, notes


def load_sglang_serve(argv: list[str], *, overrides: dict[str, tuple[Any, str]] | None = None,
                      env: dict[str, str] | None = None, base: dict[str, tuple[Any, str]] | None = None):
    """An SGLang server line -> a validated Layout (kvcalc's own flags in `overrides` win over the line's)."""
    from ..layout.validate import validate
    from ..layout.read import expand

    release = (overrides or {}).get(RELEASE_KEY, (None, ""))[0]
    top, from_line, notes = parse(argv, env=env, release=_known(release))
    merged = {**(base or {}), **from_line, **(overrides or {})}
    data, origin = expand(top, source=SOURCE, overrides=merged)
    return validate(data, source=SOURCE, overrides=merged, origin=origin), notes


def _known(release: Any) -> str | None:
    """The release the line is read by: a release kvcalc read, or None (the default; validation then refuses an
    unknown --sglang-version by name)."""
    from ...vocab.releases import SGLANG_RELEASES

    return release if isinstance(release, str) and release in SGLANG_RELEASES else None


# The line-reader interface (serve/servers.line_reader).
is_line = is_sglang
load_line = load_sglang_serve


def image_release(image: str, overrides: dict, base: dict, say, where: str = "") -> None:
    """An SGLang container's image tag gives its SGLang release, under --sglang-version
    (vocab/releases/sglang.image_release); a tag that names none is a note."""
    from ...vocab.releases.sglang import image_release as sglang_image

    version, how = sglang_image(image)
    if version is not None and RELEASE_KEY not in overrides:
        overrides[RELEASE_KEY] = (version, how)
    elif version is None:
        say(f"note: {how}")


__all__ = ["fail", "is_sglang", "load_sglang_serve", "parse"]
