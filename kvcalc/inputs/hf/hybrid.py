"""Readers of the hybrid and attention-free architectures added from vLLM 0.33.0's registry: each layer's kind from
the config's `layer_types` (hf_attention.config_layer_types), the attention shape as the model file builds it, and the
state's fields as the model's `get_mamba_state_shape_from_config` passes them (layers/mamba/mamba_utils.py)."""

from __future__ import annotations

from ...vocab.errors import LayoutError, UnsupportedError
from .attention import Rule, config_layer_types, layer_count, put_heads
from .readers import Cfg, Mapped, mamba_fields

def kinds_of(m: Mapped, cfg: Cfg, n: int, table: dict[str, str], what: str) -> None:
    """Per-layer kinds from the config's layer_types through `table` (config name -> layout kind)."""
    kinds, origin = config_layer_types(m, cfg, n)
    if kinds is None:
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", f"the per-layer kinds of {what}")
    unknown = sorted(set(kinds) - set(table))
    if unknown:
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", f"kinds {sorted(table)} ({what})", unknown)
    m.put("layer_types", [table[k] for k in kinds], origin)


def mamba1(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:  # (no attention: no rule)
    """MambaForCausalLM / FalconMambaForCausalLM (mamba.py:63-79,234-246): every layer Mamba-1 with
    intermediate_size, state_size, conv_kernel."""
    n = layer_count(m, cfg)
    m.put("layer_types", ["mamba"] * n, "every layer is Mamba-1 (attention-free)")
    hidden, inter = cfg.int_("hidden_size", minimum=1), cfg.int_("intermediate_size", minimum=1)
    if inter % hidden:
        raise LayoutError(cfg.source, f"{cfg.prefix}intermediate_size", f"a multiple of hidden_size {hidden}", inter)
    mamba_fields(m, cfg, "mamba1", [("hidden_size", "hidden_size"), ("mamba_d_state", "state_size"),
                                    ("mamba_d_conv", "conv_kernel")])
    m.model["mamba"]["mamba_expand"] = inter // hidden
    m.origin["model.mamba.mamba_expand"] = f"{cfg.origin('intermediate_size')} // hidden_size ({inter} // {hidden})"


def granite_hybrid(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    """GraniteMoeHybridForCausalLM (granitemoehybrid.py:72-90,240-290,321-324,630-645): layer_types "linear_attention"
    Mamba-2 (intermediate mamba_expand x hidden), "full_attention" attention with head size hidden // heads."""
    n = layer_count(m, cfg)
    kinds_of(m, cfg, n, {"linear_attention": "mamba", "full_attention": "full_attention"}, "Granite-4")
    put_heads(m, cfg, rule)
    hidden, expand = cfg.int_("hidden_size", minimum=1), cfg.int_("mamba_expand", minimum=1)
    heads = cfg.int_("mamba_n_heads", minimum=1)
    head, head_origin = cfg.get("mamba_d_head"), cfg.origin("mamba_d_head")
    if head in (None, "auto"):  # configuration_granitemoehybrid.py:110-112
        head, head_origin = expand * hidden // heads, "mamba_expand x hidden_size // mamba_n_heads (auto)"
    if not isinstance(head, int) or isinstance(head, bool) or head * heads != expand * hidden:
        raise LayoutError(cfg.source, f"{cfg.prefix}mamba_d_head", f"mamba_d_head x mamba_n_heads = mamba_expand x "
                          f"hidden_size ({expand * hidden})", head)
    mamba_fields(m, cfg, "mamba2", [("mamba_num_heads", "mamba_n_heads"), ("n_groups", "mamba_n_groups"),
                                    ("ssm_state_size", "mamba_d_state"), ("conv_kernel", "mamba_d_conv"),
                                    ("chunk_size", "mamba_chunk_size")])
    m.model["mamba"].update(mamba_head_dim=head, intermediate_size=expand * hidden)
    m.origin["model.mamba.mamba_head_dim"] = head_origin
    m.origin["model.mamba.intermediate_size"] = f"{cfg.origin('mamba_expand')} x hidden_size"


def lfm2(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    """Lfm2ForCausalLM / Lfm2MoeForCausalLM (lfm2.py:120-170,435,570-577): "full_attention" layers attention (head
    size hidden // heads), the others a short convolution of conv_dim channels and conv_L_cache - 1 rows."""
    n = layer_count(m, cfg)
    kinds, origin = config_layer_types(m, cfg, n)
    if kinds is None:
        # Lfm2MoeConfig derives nothing (transformers 5.24 configuration_lfm2_moe.py:87): vLLM indexes
        # config.layer_types[layer_idx] (lfm2_moe.py:433), which fails on None.
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", "the per-layer kinds of LFM2-MoE (its config "
                          "class derives none, and vLLM reads layer_types[i] at lfm2_moe.py:433)")
    kinds = ["full_attention" if k == "full_attention" else "mamba" for k in kinds]
    if "mamba" not in kinds:
        # vLLM still sizes a short-conv state from conv_dim for its hybrid block alignment (lfm2.py:570-577;
        # platforms/interface.py _align_hybrid_block_size @0.33.0), though no layer keeps one.
        raise UnsupportedError(f"{cfg.source}: every LFM2 layer is full attention ({origin}): vLLM still aligns the "
                               "attention block to a short-convolution state no layer keeps; not modelled")
    m.put("layer_types", kinds, origin)
    put_heads(m, cfg, rule)
    # The conv state's channels: conv_dim for LFM2 (lfm2.py:575), hidden_size for LFM2-MoE (lfm2_moe.py:565).
    channels = "hidden_size" if m.config_type == "lfm2_moe" else "conv_dim"
    mamba_fields(m, cfg, "short_conv", [("hidden_size", channels), ("conv_L_cache", "conv_L_cache")])


def gdn_hybrid(m: Mapped, cfg: Cfg, rule: Rule) -> None:
    """Qwen3.5 (qwen3_5.py:125-160, Qwen3NextAttention + QwenGatedDeltaNetAttention) and OLMo-Hybrid
    (olmo_hybrid.py:81-135,226-250,455-470): "linear_attention" layers gated delta net, the others attention."""
    n = layer_count(m, cfg)
    kinds_of(m, cfg, n, {"linear_attention": "mamba", "full_attention": "full_attention"}, "a GDN hybrid")
    put_heads(m, cfg, rule)
    mamba_fields(m, cfg, "gated_delta_net", [(k, k) for k in (
        "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim")])
    mtp = cfg.get("mtp_num_hidden_layers")  # model_arch_config_convertor.py:733-735 (Qwen3_5MTP)
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        m.num_nextn_predict_layers = mtp
