"""The layout's `gpu` section (the device the KV budget is predicted for) and what it implies: vLLM's scheduler
defaults for the GPU class, and the model's parameter breakdown (read only when a budget is predicted)."""

from __future__ import annotations

import math
import os
from typing import Any

from ...vocab.devices import find_device, known_names
from ...vocab.errors import known
from ...vocab.layout import CacheLayout, GpuLayout
from ...vocab.records import replace
from ...vocab.releases.vllm import behaviour_for
from ...vocab.weights import WeightsSpec
from ..values import Reader

GIB = 1 << 30


def gpu_section(r: Reader, g: dict) -> GpuLayout:
    name = r.key(g, "gpu.name")
    total, source, error, rocm, capability = None, "", None, False, None
    if g.get("total_memory") is not None:
        total = r.size(g["total_memory"], "gpu.total_memory")
        if total <= 0:
            raise r.fail("gpu.total_memory", "a positive size", g["total_memory"])
        source = f"{r.where('gpu.total_memory')} {g['total_memory']}"
    if name is not None:
        device = find_device(name)
        if device is None or device.total_bytes is None:
            raise r.fail("gpu.name", f"a GPU kvcalc has a total for ({known_names()}); otherwise give "
                         "--gpu-total-memory", name)
        if total is None:
            total, source = device.total_bytes, device.total_text
            error = device.total_error_gib if device.total_basis == "estimate" else None
        name, rocm, capability = device.name, device.rocm, device.capability
    util = g.get("memory_utilization")
    if util is not None:
        if isinstance(util, bool) or not isinstance(util, (int, float)) or not math.isfinite(util) \
                or not 0 < util <= 1:
            raise r.fail("gpu.memory_utilization", "a fraction in (0, 1]", util)
        util = float(util)
    return GpuLayout(name=name, total_memory=total, total_source=source, total_error_gib=error, rocm=rocm,
                     capability=capability,
                     memory_utilization=util, used_memory=_used(r, g, total),
                     enforce_eager=r.key(g, "gpu.enforce_eager"), quantization=r.key(g, "gpu.quantization"),
                     estimate_cudagraphs=r.key(g, "gpu.estimate_cudagraphs"),
                     estimate_cudagraphs_from=r.where("gpu.estimate_cudagraphs"))


def _used(r: Reader, g: dict, total: int | None) -> int | None:
    """gpu.used_memory: bytes other processes hold on the device, less than its total."""
    if g.get("used_memory") is None:
        return None
    used = r.size(g["used_memory"], "gpu.used_memory")
    if total is not None and used >= total:
        raise r.fail("gpu.used_memory", f"less than the device's total ({total:,} B)", g["used_memory"])
    return used


def batch_defaults(total: int, name: str | None, version: str) -> tuple[int, int, str]:
    """vLLM's `vllm serve` defaults (max_num_batched_tokens, max_num_seqs) for the GPU class, and the class: engine/
    arg_utils.py get_batch_defaults (1816-1898 @0.14.0 ... 2939-3039 @0.33.0) on the device's total and lower-cased
    name: >= 160 GiB 16384 / 1024 (0.28.0+, :2582-2591 @0.28.0); >= 70 GiB and no 'a100' in the name 8192 / 1024
    (0.33.0: not GB10 either, :2963, 2983-2987 @0.33.0); else 2048 / 256. vLLM measures the class with NVML's total
    (a little above torch's mem_get_info total): kvcalc uses the torch total it has."""
    b = behaviour_for(version)
    lowered = (name or "").lower()
    if b.batch_class_large and total >= 160 * GIB:
        return 16384, 1024, ">= 160 GiB"
    if total >= 70 * GIB and "a100" not in lowered and not (b.batch_class_gb10_other and "gb10" in lowered):
        return 8192, 1024, ">= 70 GiB, not an A100"
    return 2048, 256, "other"


def class_defaults(cache: CacheLayout, gpu: GpuLayout, version: str) -> CacheLayout:
    """The cache with vLLM's class defaults where the layout gave none (then min(seqs x max_model_len, mnbt), and
    max_num_seqs at most mnbt: arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args)."""
    mnbt, seqs, _ = batch_defaults(known(gpu.total_memory, "the GPU's total"), gpu.name, version)  # gpu.predicts
    seqs = cache.max_num_seqs or seqs
    if not cache.max_num_batched_tokens_given:
        mnbt = min(seqs * cache.max_model_len, mnbt)
        cache = replace(cache, max_num_batched_tokens=mnbt)
    return replace(cache, max_num_seqs=min(seqs, cache.max_num_batched_tokens))


def read_weights(config: Any) -> WeightsSpec | str:
    """The model's parameter breakdown from the config.json the layout read (inputs/hf/weights.py), or why none."""
    if not isinstance(config, tuple):
        return ("the KV budget prediction weighs the model from its config.json: give one (model.hf_config, a model "
                "directory) or --kv-cache-memory")
    from ..hf.weights import weights_spec

    path, data = config
    return weights_spec(data, source=path, directory=os.path.dirname(os.path.abspath(path)))
