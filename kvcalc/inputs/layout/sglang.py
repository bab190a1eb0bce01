"""engine sglang: the `sglang` section (and host.available_memory) -> the Layout SGLang's rules plan. The model,
parallelism and cache sections are read as for vLLM (the same model mapping); the vLLM-only keys that would mean
nothing to SGLang (a KV connector, a vLLM KV budget or block size, gpu utilization) are refused, naming SGLang's
spelling. Loaded only for SGLang layouts (start-up time is a target)."""

from __future__ import annotations

import math
from typing import Any

from ...vocab.layout import NO_CONNECTOR, CacheLayout, Layout, ModelLayout, ParallelLayout
from ...vocab.devices import find_device, known_names
from ...vocab.errors import KvcalcError
from ...vocab.releases.sglang import HiCacheLayout, HostCgroup, SglangLayout, parse_release
from ..values import Reader, written

# vLLM keys an SGLang layout must not set: what SGLang calls it instead.
VLLM_ONLY = {
    "offload": "SGLang's host tier is HiCache: sglang.hicache (--enable-hierarchical-cache, --hicache-ratio, "
               "--hicache-size)",
    "cache.kv_cache_memory": "SGLang sizes its pool from sglang.mem_fraction_static (--mem-fraction-static) or caps "
                             "it with sglang.max_total_tokens (--max-total-tokens)",
    "cache.num_gpu_blocks_override": "SGLang's cap is sglang.max_total_tokens (--max-total-tokens)",
    "cache.block_size": "SGLang's is sglang.page_size (--page-size)",
    "gpu.total_memory": "SGLang reads nvidia-smi's capacity: sglang.gpu_capacity_mib (--gpu-capacity-mib), or "
                        "sglang.gpu_free_memory (--gpu-free-memory)",
    "gpu.memory_utilization": "SGLang's is sglang.mem_fraction_static (--mem-fraction-static)",
}


def _given(top: dict, path: str) -> bool:
    node: Any = top
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return node is not None and node != {}


def _number(r: Reader, d: dict, path: str, *, upper: float | None) -> float | None:
    value = written(d, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0 \
            or upper is not None and value > upper:
        raise r.fail(path, "a number in (0, 1]" if upper else "a positive number", value)
    return float(value)


def _size(r: Reader, d: dict, path: str) -> int | None:
    value = d.get(path.rsplit(".", 1)[1])
    if value is None:
        return None
    n = r.size(value, path)
    if n <= 0:
        raise r.fail(path, "a positive size", value)
    return n


def _ints(r: Reader, d: dict, path: str) -> tuple[int, ...] | None:
    """A list of positive integers: a YAML list, or the flag's comma-separated text (1,2,4,8)."""
    value = d.get(path.rsplit(".", 1)[1])
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not items or len(items) > 4096:
        raise r.fail(path, "a non-empty list of positive integers (1,2,4,8)", value)
    out = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if isinstance(text, str) and text.isdigit() and len(text) <= 9:
            text = int(text)
        if isinstance(text, bool) or not isinstance(text, int) or text < 1:
            raise r.fail(path, "a non-empty list of positive integers (1,2,4,8)", value)
        out.append(text)
    return tuple(out)


def _hicache(r: Reader, data: Any, version: str) -> HiCacheLayout:
    h = r.section(data, "sglang.hicache")
    mode = r.key(h, "sglang.hicache.host_memory_mode")
    if mode == "buffer_only" and parse_release(version) < (0, 5, 19, 0):
        raise r.fail("sglang.hicache.host_memory_mode", f"cache (SGLang {version} has no buffer_only mode; 0.5.19+)",
                     mode)
    if mode == "buffer_only" and h.get("storage_backend") is None:
        raise r.fail("sglang.hicache.storage_backend", "an L3 storage backend (SGLang: buffer_only requires "
                     "--hicache-storage-backend)", None)
    size = h.get("size", 0)
    if isinstance(size, float) and not isinstance(size, bool):
        raise r.fail("sglang.hicache.size", "whole decimal GB (SGLang's --hicache-size is an int)", size)
    return HiCacheLayout(
        enabled=r.key(h, "sglang.hicache.enabled"), ratio=_number(r, h, "sglang.hicache.ratio", upper=None),
        size_gb=r.key(h, "sglang.hicache.size"), mem_layout=r.key(h, "sglang.hicache.mem_layout"),
        host_memory_mode=mode, io_backend=r.key(h, "sglang.hicache.io_backend"),
        write_policy=r.key(h, "sglang.hicache.write_policy"),
        storage_backend=r.key(h, "sglang.hicache.storage_backend"),
        host_memory_fraction=_number(r, h, "sglang.hicache.host_memory_fraction", upper=1.0) or 0.8)


def _device(r: Reader, top: dict, s: dict, strict: bool):
    g = top.get("gpu")
    g = g if isinstance(g, dict) else {}
    name, cap = g.get("name"), r.key(s, "sglang.gpu_capacity_mib")
    device = None
    if name is not None:
        device = find_device(r.str_(name, "gpu.name"))
        if device is not None and device.smi_mib is None:
            device = None  # SGLang's defaults read nvidia-smi's capacity, which the table does not have for it
        if device is None and strict:
            raise r.fail("gpu.name", f"a GPU kvcalc has nvidia-smi's (ROCm: rocminfo's) capacity for "
                         f"({known_names('smi_mib')}); "
                         "otherwise give "
                         "--gpu-capacity-mib", name)
    if cap is not None:
        return device, cap, f"{r.where('sglang.gpu_capacity_mib')} {cap:,} MiB"
    if device is not None:
        return device, device.smi_mib, f"{device.name}: {device.smi_mib:,} MiB ({device.smi_source})"
    return None, None, ""


def sglang_settings(r: Reader, top: dict, *, strict: bool = False) -> SglangLayout:
    """The `sglang` section (and host.available_memory, gpu.name as nvidia-smi's capacity), read whatever the
    engine: a vLLM layout keeps it for --compare-engines."""
    s = r.section(top.get("sglang"), "sglang")
    version = r.key(s, "sglang.version")
    device, cap, cap_source = _device(r, top, s, strict)
    h = r.section(top.get("host"), "host")
    config = top.get("__config__")
    arch = None
    if isinstance(config, tuple) and isinstance(config[1].get("architectures"), list) and config[1]["architectures"]:
        arch = str(config[1]["architectures"][0])
    return SglangLayout(
        version=version, version_from=r.flags.get("sglang.version") or ("layout file" if "version" in s else "default"),
        mem_fraction_static=_number(r, s, "sglang.mem_fraction_static", upper=1.0),
        max_total_tokens=r.key(s, "sglang.max_total_tokens"), page_size=r.key(s, "sglang.page_size"),
        chunked_prefill_size=r.key(s, "sglang.chunked_prefill_size"),
        cuda_graph_max_bs=r.key(s, "sglang.cuda_graph_max_bs"),
        disable_cuda_graph=r.key(s, "sglang.disable_cuda_graph"),
        cuda_graph_bs_decode=_ints(r, s, "sglang.cuda_graph_bs_decode"),
        cuda_graph_max_bs_prefill=r.key(s, "sglang.cuda_graph_max_bs_prefill"),
        cuda_graph_bs_prefill=_ints(r, s, "sglang.cuda_graph_bs_prefill"),
        cuda_graph_backend_decode=r.key(s, "sglang.cuda_graph_backend_decode"),
        cuda_graph_backend_prefill=r.key(s, "sglang.cuda_graph_backend_prefill"),
        disable_prefill_cuda_graph=r.key(s, "sglang.disable_prefill_cuda_graph"),
        disable_decode_cuda_graph=r.key(s, "sglang.disable_decode_cuda_graph"),
        max_prefill_tokens=r.key(s, "sglang.max_prefill_tokens"),
        max_running_requests=r.key(s, "sglang.max_running_requests"),
        swa_full_tokens_ratio=_number(r, s, "sglang.swa_full_tokens_ratio", upper=None) or 0.8,
        device=device, capacity_mib=cap, capacity_source=cap_source,
        gpu_free_memory=_size(r, s, "sglang.gpu_free_memory"), weights_bytes=_size(r, s, "sglang.weights_bytes"),
        architecture=arch, hicache=_hicache(r, s.get("hicache"), version),
        context_length_given=isinstance(top.get("cache"), dict) and top["cache"].get("max_model_len") is not None,
        swa_ratio_given=s.get("swa_full_tokens_ratio") is not None,
        host_available=_size(r, h, "host.available_memory"), host_cgroup=_cgroup(r, h), **_deployment(r, s),
        **_model_facts(r, config[1] if isinstance(config, tuple) else {}))


def _cgroup(r: Reader, h: dict) -> HostCgroup | None:
    """The container's memory cgroup (host.cgroup_*), or None: not given."""
    limit, high = _size(r, h, "host.cgroup_limit"), _size(r, h, "host.cgroup_high")
    usage = None if h.get("cgroup_usage") is None else r.size(h["cgroup_usage"], "host.cgroup_usage")
    cache = None if h.get("cgroup_file_cache") is None else r.size(h["cgroup_file_cache"], "host.cgroup_file_cache")
    if limit is None and high is None:
        if usage is not None or cache is not None:
            raise r.fail("host.cgroup_limit", "the cgroup's memory.max or memory.high beside its usage", None)
        return None
    return HostCgroup(limit=limit, high=high, usage=usage or 0, file_cache=cache or 0)


def _deployment(r: Reader, s: dict) -> dict:
    """DP attention, the radix cache, the Mamba state, speculative decoding and multimodal flags."""
    draft = s.get("speculative_draft_model_path")
    layers, source = None, ""
    if draft is not None:
        layers, source = _draft_layers(r, draft)
    return dict(
        attn_dp_size=r.key(s, "sglang.attn_dp_size"), disable_radix_cache=r.key(s, "sglang.disable_radix_cache"),
        disable_overlap_schedule=r.key(s, "sglang.disable_overlap_schedule"),
        mamba_ssm_dtype=r.key(s, "sglang.mamba_ssm_dtype"),
        max_mamba_cache_size=r.key(s, "sglang.max_mamba_cache_size"),
        mamba_full_memory_ratio=_number(r, s, "sglang.mamba_full_memory_ratio", upper=None) or 0.9,
        mamba_radix_cache_strategy=r.key(s, "sglang.mamba_radix_cache_strategy"),
        speculative_algorithm=r.key(s, "sglang.speculative_algorithm"), speculative_draft_layers=layers,
        speculative_draft_source=source, speculative_num_draft_tokens=r.key(s, "sglang.speculative_num_draft_tokens"),
        speculative_num_steps=r.key(s, "sglang.speculative_num_steps"),
        speculative_eagle_topk=r.key(s, "sglang.speculative_eagle_topk"),
        enable_multimodal=r.key(s, "sglang.enable_multimodal"), language_only=r.key(s, "sglang.language_only"),
        language_model_only=r.key(s, "sglang.language_model_only"),
        vlm_cache_size_mb=r.key(s, "sglang.vlm_cache_size_mb"),
        mm_feature_transport=r.key(s, "sglang.mm_feature_transport"),
        mm_feature_cache_mb=r.key(s, "sglang.mm_feature_cache_mb"))


def _draft_layers(r: Reader, path: Any) -> tuple[int, str]:
    """A draft model's KV layers as SGLang counts them (srt/model_executor/model_runner_components/
    spec_aux_hidden_state.py:148-176 @0.5.23): its config's num_nextn_predict_layers, else num_hidden_layers."""
    import os

    from ..files import read_json

    text = r.str_(path, "sglang.speculative_draft_model_path")
    file = os.path.join(text, "config.json") if os.path.isdir(text) else text
    if not os.path.isfile(file):
        raise r.fail("sglang.speculative_draft_model_path", "a draft model's config.json or its directory", text)
    config = read_json(file)
    if not isinstance(config, dict):
        raise r.fail("sglang.speculative_draft_model_path", "a draft model's config.json (a JSON object)", text)
    for key in ("num_nextn_predict_layers", "num_hidden_layers"):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"{file}: {key} {value}"
    raise r.fail("sglang.speculative_draft_model_path", "a draft config with num_hidden_layers", text)


# Vision configs whose transformers class has no num_hidden_layers (their layers are `depth`): SGLang's getattr
# then takes its default, 24 (srt/arg_groups/memory_hook.py:435-437 @0.5.23; executed: Qwen2.5-VL and Qwen3.5, depth
# 32 and 27, both read as 24).
DEPTH_VISION = "depth"


def _model_facts(r: Reader, config: dict) -> dict:
    """What SGLang reads of the model's config beside the layers: a path-less MTP draft's layers, the vision tower
    mem_fraction_static is adjusted by, a nested text_config (SGLang's multimodal sub-config)."""
    nextn = config.get("num_nextn_predict_layers")
    out: dict = {"num_nextn_predict_layers": nextn if isinstance(nextn, int) and nextn > 0 else None,
                 "has_text_config": isinstance(config.get("text_config"), dict),
                 "model_type": config.get("model_type") if isinstance(config.get("model_type"), str) else None,
                 "kv_source_layers": bool(config.get("kv_source_layer_ids")), "config_kv_heads": _kv_heads(config)}
    vision = config.get("vision_config")
    if isinstance(vision, dict):
        layers, hidden = vision.get("num_hidden_layers"), vision.get("hidden_size")
        how = "vision_config.num_hidden_layers"
        if layers is None and DEPTH_VISION in vision:
            layers, how = 24, "24: SGLang's default (the config counts its layers as depth, transformers' class has " \
                "no num_hidden_layers)"
        if isinstance(layers, int) and isinstance(hidden, int):
            out["vision"], out["vision_source"] = (layers, hidden), f"{how} {layers}, hidden_size {hidden}"
        else:
            out["vision_source"] = ("the config's vision_config states no num_hidden_layers / hidden_size (their "
                                    "transformers class defaults are not read)")
    return out


def _kv_heads(config: dict) -> int | None:
    """The config's KV heads as SGLang counts them (srt/configs/model_config.py:1626-1688 @0.5.23
    get_total_num_kv_heads: the text config's n_head_kv, num_kv_heads, num_key_value_heads, multi_query_group_num,
    num_attention_groups, the first set; else num_attention_heads), or None: no config."""
    nested = config.get("text_config")
    text: dict = nested if isinstance(nested, dict) else config
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups",
                "num_attention_heads"):
        if isinstance(text.get(key), int) and not isinstance(text.get(key), bool):
            return text[key]
    return None


def _nodes(r: Reader, par: ParallelLayout) -> None:
    """SGLang's own node rules (srt/arg_groups/validation_hook.py:179-181 and :199-202 @0.5.23), in its words."""
    tp, pp, nnodes = par.tensor_parallel_size, par.pipeline_parallel_size, par.nnodes
    if nnodes > 1 and (tp * pp) % nnodes:
        raise r.fail("parallel.nnodes", f"a divisor of TP x PP = {tp * pp} (SGLang stops: 'tp_size must be divisible "
                                        "by number of nodes')", nnodes)
    if par.data_parallel_size > 1 and nnodes != 1:
        raise r.fail("parallel.nnodes", "1 with DP replicas (SGLang stops: 'multi-node data-parallel replicas are "
                                        "not supported; use attention DP (--attn-dp-size) across nodes')", nnodes)


def sglang_layout(r: Reader, top: dict, *, model: ModelLayout, parallel: ParallelLayout, cache: CacheLayout,
                  common: dict) -> Layout:
    """The Layout of an SGLang deployment (`common`: the Layout fields read as for vLLM)."""
    _nodes(r, parallel)
    for path, instead in VLLM_ONLY.items():
        if _given(top, path):
            raise r.fail(path, f"no such setting with engine sglang: {instead}", "given")
    sg = sglang_settings(r, top, strict=True)
    from .gpu import read_weights

    if sg.weights_bytes is None:
        weights = read_weights(top.get("__config__"))
    else:  # SGLang's budget takes the flag; the breakdown (or why none) is kept for --compare-engines' vLLM side
        try:
            weights = read_weights(top.get("__config__"))
        except KvcalcError as e:
            weights = f"the model's parameter breakdown: {e}"
    return Layout(model=model, parallel=parallel, cache=cache, offload=NO_CONNECTOR, weights=weights,
                  engine="sglang", sglang=sg, **common)


engine_layout = sglang_layout  # the engine reader's interface (inputs/layout/validate.ENGINE_LAYOUTS)
