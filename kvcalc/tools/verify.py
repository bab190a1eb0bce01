"""Optional: rebuild every KV cache tensor and every layer's view of it on torch's meta device (no memory)
and check that the views tile each tensor exactly. torch is imported here only."""

from __future__ import annotations

from ..vocab.errors import KvcalcError, UnsupportedError
from ..vocab.kinds import KVQuant
from ..report.optional import VerifySection
from ..engines.vllm.specs import (AttentionSpec, FullAttentionSpec, KVCacheSpec, MambaSpec, MLAAttentionSpec,
                                  UniformTypeKVCacheSpecs)


class VerifyError(KvcalcError):
    """The rebuilt tensors disagree with the plan: a kvcalc bug, not bad input."""

    exit_code = 70


def _torch():
    try:
        import torch
    except ImportError:
        raise UnsupportedError(
            "--verify needs torch: pip install 'kvcalc[torch]' (the CPU build is enough: pip install torch==2.13.0)"
        ) from None
    return torch


def _layer_views(torch, raw, spec: KVCacheSpec, n: int):
    """The views vLLM's runner makes of one layer's share of a raw int8 tensor: [(view, byte offset)], padding."""
    dt = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "uint8": torch.uint8,
          "int8": torch.int8}
    if isinstance(spec, MambaSpec):
        views, offset = [], 0
        page = spec.page_size_bytes
        for shape, dtype in zip(spec.shapes, spec.dtypes):
            tdt = dt[dtype]
            es = torch.empty((), dtype=tdt).element_size()
            typed = raw.view(tdt)
            contiguous: list[int] = []
            stride = 1
            for dim in reversed(shape):
                contiguous.insert(0, stride)
                stride *= dim
            # One state per block, at the same offset inside every page (stride = page / element size).
            v = torch.as_strided(typed, (n, *shape), (page // es, *contiguous), offset // es)
            views.append((v, offset))
            offset += stride * es
        return views, (page - spec.real_page_size_bytes) * n
    if isinstance(spec, MLAAttentionSpec):
        if spec.cache_dtype_str == "fp8_ds_mla":
            return [(raw.view(torch.uint8).view(n, spec.block_size, 656), 0)], 0
        return [(raw.view(dt[spec.dtype]).view(n, spec.block_size, spec.head_size), 0)], 0
    assert isinstance(spec, AttentionSpec)  # a layer's own spec: Mamba's (above) or an attention layer's
    if spec.kv_quant is not KVQuant.NONE:
        return [(raw.view(torch.uint8).view(n, spec.page_size_bytes), 0)], 0
    d, dv = spec.head_size, getattr(spec, "head_size_v", spec.head_size)
    typed = raw.view(dt[spec.dtype])
    if d == dv:  # FlashAttention's layout: (2, num_blocks, block_size, heads, head_size)
        return [(typed.view(2, n, spec.block_size, spec.num_kv_heads, d), 0)], 0
    return [(typed.view(n, spec.block_size, spec.num_kv_heads, d + dv), 0)], 0


def verify_plan(plan) -> VerifySection:
    from ..pipeline import require

    require(plan.layout, "verify", "--verify")
    torch = _torch()
    tensors = views = 0
    for w in plan.gpu.workers:
        by_layer: dict[str, KVCacheSpec] = {}
        for g in w.groups:
            uniform_type = isinstance(g.spec, UniformTypeKVCacheSpecs)
            for r in g.runs:  # a UniformType group's runs carry each layer's own spec
                spec = r.spec if uniform_type else g.spec
                by_layer.update({f"model.layers.{i}.{r.module}": spec for i in r.indices})
        n = 1 if w.num_blocks is None else w.num_blocks  # unknown GPU block count: check one block's layout
        for t in w.tensors:
            size = t.page_bytes * n
            raw = torch.empty(size, dtype=torch.int8, device="meta")
            tensors += 1
            for name in t.shared_by:
                spec = by_layer[name]
                if isinstance(spec, AttentionSpec) and not isinstance(spec, FullAttentionSpec) \
                        and spec.kv_quant is KVQuant.NONE \
                        and spec.page_size_padded is not None:  # pragma: no cover - no such layout today
                    raise VerifyError(f"{name}: padded attention pages are not modelled by --verify")
                if n == 0:
                    continue
                layer_views, padding = _layer_views(torch, raw, spec, n)
                covered = 0
                for v, _ in layer_views:
                    es = v.element_size()
                    last = v.storage_offset() + sum((s - 1) * st for s, st in zip(v.shape, v.stride()))
                    if (last + 1) * es > size:
                        raise VerifyError(f"PP stage {w.pp_rank}: {name}: a view reaches past its {size}-byte tensor")
                    covered += v.numel() * es
                    views += 1
                if covered + padding != size:
                    raise VerifyError(f"PP stage {w.pp_rank}: {name}: views cover {covered} + {padding} padding bytes "
                                      f"of a {size}-byte tensor")
    return VerifySection(
        ok=True, torch_version=torch.__version__, tensors_checked=tensors, views_checked=views,
        summary=f"verify: {tensors} tensors and {views} layer views rebuilt on torch's meta device "
                f"(torch {torch.__version__}); every layer's views tile its tensor exactly",
    )
