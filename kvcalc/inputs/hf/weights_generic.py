"""The parameter blocks of an architecture without its own rule in inputs/hf/weights.py RULES: the parameter count
by part (inputs/hf/params.py parameter_breakdown, through the same architecture row and per-layer kinds as the KV
mapping: hybrids' Mamba / GDN / short-conv mixers, MoE layer patterns, MLA, gated attention) laid out as blocks.

Every architecture `kvcalc models` maps has a reader, and params.py counts every reader's layers, so every mapped
architecture is weighed (LongCat-Flash and DeepSeek-V4 are refused by name there). The count is exact at PP 1: a
part summed over heterogeneous layers becomes a per-layer block of total // layers on every layer plus the
remainder on layer 0, so a PP split shares it by layer count (an estimate where layers differ). KV-head
projections are inside the attention part here (split by TP, not replicated when TP exceeds the KV heads).
Imported only when a budget is predicted for such a model.
"""

from __future__ import annotations

from typing import Any

from ...vocab.errors import KvcalcError
from ...vocab.weights import ParamBlock

# params.py part -> (a linear layer's weight, an MoE expert weight): the parts quantization applies to.
_LAYER_PARTS = {"attention": (True, False), "mlp": (True, False), "experts": (True, True),
                "shared_experts": (True, False), "mamba": (True, False), "router": (False, False),
                "norms": (False, False), "biases": (False, False)}


def _spread(name: str, total: int, layers: int, linear: bool, experts: bool) -> list[ParamBlock]:
    """A part's total over `layers` decoder layers: total // layers a layer, the remainder on layer 0."""
    per, rest = divmod(total, max(layers, 1))
    out = [ParamBlock(name=name, params=per, placement="layers", tp="shard" if linear else "replicate",
                      linear=linear, experts=experts)] if per else []
    if rest:
        out.append(ParamBlock(name=f"{name} (remainder)", params=rest, placement="layers",
                              tp="shard" if linear else "replicate", linear=linear, experts=experts, layers=(0,)))
    return out


def generic_blocks(data: Any, source: str, layers: int) -> list[ParamBlock] | str:
    """The blocks from params.py's count (a vision tower's as an estimate), or why there is none."""
    from .params import parameter_breakdown

    try:
        parts = parameter_breakdown(data, source=source)
    except KvcalcError as e:
        return str(e)
    vocab_rows = parts["embedding"]
    blocks = [ParamBlock(name="embed_tokens", params=vocab_rows, placement="first", tp="vocab", linear=False)]
    if parts["lm_head"]:
        blocks.append(ParamBlock(name="lm_head", params=parts["lm_head"], placement="last", tp="vocab",
                                 linear=False))
    for part, (linear, experts) in _LAYER_PARTS.items():
        if parts[part]:
            blocks += _spread(part, parts[part], layers, linear, experts)
    vision = parts.get("vision_estimate") or 0
    if vision:
        blocks.append(ParamBlock(name="vision encoder (estimate)", params=vision, placement="first",
                                 tp="replicate", linear=False))
    return blocks
