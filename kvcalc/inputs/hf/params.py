"""The parameter count of a Hugging Face config, by part, for the weights figure of the GPU budget:
`parameter_breakdown(config_dict)` -> {part: parameters} from the config's own shapes, through the same architecture
row and layer kinds as the KV mapping (hf_config). Matrices, embeddings and norm weights are counted; biases only
where the config turns them on (attention_bias, qkv bias); a vision or audio tower only as an estimate from its
config's sizes (labelled so). Parameters, not bytes: the dtype and any quantization are the caller's.
"""

from __future__ import annotations

from typing import Any, cast

from ...vocab.errors import LayoutError, UnsupportedError
from .config import map_config, resolve
from ...vocab.releases.transformers import ATTRIBUTE_MAPS
from .readers import Cfg, defaults_for

PARTS = ("embedding", "lm_head", "attention", "mlp", "experts", "shared_experts", "router", "mamba", "norms", "biases")
# The GPT-2-style models ("plain" MLP rows) carry biases on every projection and LayerNorm (gpt2.py:84-135,160-164,
# opt.py, bloom.py, Phi); these differ: learned absolute positions (gpt2.py:210 wpe, n_positions; opt.py:60-73
# max_position_embeddings + 2), one LayerNorm per parallel block (gpt_j.py:167; Phi's input_layernorm), no q/k/v/o
# bias (gpt_j.py:76-83), an lm_head bias (gpt_j.py:268; Phi).
_POSITIONS = {"GPT2LMHeadModel": ("n_positions", 0), "GPTBigCodeForCausalLM": ("n_positions", 0),
              "OPTForCausalLM": ("max_position_embeddings", 2)}
_ONE_NORM = {"GPTJForCausalLM", "PhiForCausalLM"}
_NO_ATTENTION_BIAS = {"GPTJForCausalLM"}
_LM_HEAD_BIAS = {"GPTJForCausalLM", "PhiForCausalLM"}


def parameter_breakdown(data: Any, *, source: str = "config.json") -> dict:
    """{part: parameters} of the language model (PARTS), `total`, the `vision_estimate` of a multimodal wrapper's
    tower (None without one), and `notes` (what was assumed)."""
    mapped = map_config(data, source=source)
    if mapped.model_type == "mamba_ssm":  # state-spaces' checkpoints: no architecture row
        row, inner, prefix = None, data, ""
    else:
        row, inner, prefix = resolve(data, source)
    config_type = inner.get("model_type") if isinstance(inner.get("model_type"), str) else ""
    cfg = Cfg(inner, defaults_for(config_type, sizes=bool(prefix)), source, prefix, ATTRIBUTE_MAPS.get(config_type))
    model, notes = mapped.model, []
    n = model["num_layers"]
    kinds = model.get("layer_types") or ["mla" if model.get("kv_lora_rank") else "full_attention"] * n
    if model.get("mla_per_layer", 1) > 1:
        raise UnsupportedError(f"{source}: LongCat-Flash's parameter count (two MLA attentions and two MLPs a layer, "
                               "zero-computation experts) is not modelled: give the KV cache memory instead")
    if any(k.startswith("dsv4_") for k in kinds):
        raise UnsupportedError(f"{source}: DeepSeek-V4's parameter count (its compressed attention, indexer, "
                               "compressors and hyper-connections) is not modelled: give the KV cache memory "
                               "(--kv-cache-memory, or a start-up log) instead of predicting it")
    hidden = cfg.int_("hidden_size", minimum=1) if cfg.get("hidden_size") is not None else cfg.int_("d_model")
    out: dict[str, Any] = dict.fromkeys(PARTS, 0)
    # qwen3_next.py:280-330 (Qwen3-Next, Qwen3.5): q_proj also projects a gate per head, attn_output_gate default on.
    gate = row is not None and row.reader in ("qwen3_next", "gdn_hybrid") and cfg.get("attn_output_gate", True)
    vocab = cfg.int_("padded_vocab_size", minimum=1) if cfg.get("vocab_size") is None and \
        cfg.get("padded_vocab_size") is not None else cfg.int_("vocab_size", minimum=1)  # ChatGLM: padded_vocab_size
    out["embedding"] = vocab * hidden
    tied = cfg.get("tie_word_embeddings", data.get("tie_word_embeddings", True) if isinstance(data, dict) else True)
    out["lm_head"] = 0 if tied else vocab * hidden
    for i, kind in enumerate(kinds):
        if kind in ("full_attention", "sliding_attention", "chunked_attention", "full_attention+mamba"):
            out["attention"] += _attention(cfg, model, i, hidden, gate=gate)
        elif kind == "mla":
            out["attention"] += _mla(cfg, hidden)
        elif kind == "none" and row is not None and row.reader in ("gemma3n", "gemma4"):
            out["attention"] += _attention(cfg, model, i, hidden, kv=False)  # a KV-sharing layer keeps q and o
        if kind in ("mamba", "full_attention+mamba"):
            out["mamba"] += _mamba(model["mamba"], hidden)
        ffn = _ffn_kind(row.reader if row is not None else "mamba2", cfg, i)
        if ffn != "none":
            _feed_forward(out, cfg, i, hidden, row.mlp if row is not None else "gated", moe=ffn == "moe")
        out["norms"] += (2 if ffn != "none" else 1) * hidden
    out["norms"] += hidden
    if row is not None and row.mlp == "plain":
        _plain_extras(out, cfg, row.name, model, kinds, hidden, vocab)
        notes.append("biases and LayerNorm biases counted (a GPT-2-style model)")
    elif cfg.get("attention_bias") or cfg.get("qkv_bias"):
        heads_q, size = cfg.int_("num_attention_heads", minimum=1), _at(model.get("head_size", 0), 0)
        out["biases"] += len(kinds) * (heads_q * size + 2 * _at(model.get("num_kv_heads", 0), 0) * size)
        notes.append("q/k/v biases counted (attention_bias / qkv_bias)")
    else:
        notes.append("biases not counted (the config turns none on)")
    if tied:
        notes.append("lm_head tied to the embedding (tie_word_embeddings)")
    out["total"] = sum(out[p] for p in PARTS)
    out["vision_estimate"] = _vision(data) if prefix else None
    out["notes"] = notes
    return out


def _plain_extras(out: dict, cfg: Cfg, name: str, model: dict, kinds: list, hidden: int, vocab: int) -> None:
    """A GPT-2-style model's biases, LayerNorm biases and learned positions."""
    heads_q = cfg.int_("num_attention_heads", minimum=1)
    one_norm = name in _ONE_NORM
    linear_bias = True
    if name == "FalconForCausalLM":
        # falcon.py:284-305 @0.33.0: two LayerNorms unless parallel_attn with num_ln_in_parallel_attn != 2 (2 by
        # default with new_decoder_architecture); Linear biases only with config.bias.
        num_ln = cfg.get("num_ln_in_parallel_attn") or (2 if cfg.get("new_decoder_architecture") else None)
        one_norm = bool(cfg.get("parallel_attn", True)) and num_ln != 2
        linear_bias = bool(cfg.get("bias"))
    norms_per_layer = 1 if one_norm else 2
    if one_norm:
        out["norms"] -= len(kinds) * hidden  # one LayerNorm per parallel block, not two
    width_key = next((k for k in ("intermediate_size", "ffn_hidden_size", "n_inner") if cfg.get(k) is not None), None)
    width = cfg.int_(width_key, minimum=1) if width_key else 4 * hidden
    for i in range(len(kinds)):
        size, kv = _at(model["head_size"], i), _at(model["num_kv_heads"], i)
        if name not in _NO_ATTENTION_BIAS and linear_bias:
            out["biases"] += heads_q * size + 2 * kv * size + hidden
        out["biases"] += (width + hidden if linear_bias else 0) + norms_per_layer * hidden
    out["biases"] += hidden + (vocab if name in _LM_HEAD_BIAS else 0)
    if name in _POSITIONS:
        key, extra = _POSITIONS[name]
        out["embedding"] += (cfg.int_(key, minimum=1) + extra) * hidden


def _attention(cfg: Cfg, model: dict, i: int, hidden: int, kv: bool = True, gate: bool = False) -> int:
    heads_q = cfg.int_("num_attention_heads", minimum=1)
    size = _at(model["head_size"], i)
    kv_heads = _at(model["num_kv_heads"], i)
    q_o = (3 if gate else 2) * hidden * heads_q * size
    return q_o + (2 * hidden * kv_heads * size if kv else 0)


def _mla(cfg: Cfg, hidden: int) -> int:
    """deepseek_v2.py:1000-1125: q (LoRA or plain), kv_a (latent + rope), kv_a norm, kv_b, o; DSA's indexer."""
    heads = cfg.int_("num_attention_heads", minimum=1)
    nope, rope, v = cfg.int_("qk_nope_head_dim"), cfg.int_("qk_rope_head_dim"), cfg.int_("v_head_dim")
    latent = cfg.int_("kv_lora_rank", minimum=1)
    q_rank = cfg.get("q_lora_rank")
    q = hidden * q_rank + q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
    total = q + hidden * (latent + rope) + latent + latent * heads * (nope + v) + heads * v * hidden
    if cfg.get("index_topk") is not None and q_rank:
        index_heads, index_dim = cfg.int_("index_n_heads", minimum=1), cfg.int_("index_head_dim", minimum=1)
        total += q_rank * index_heads * index_dim + hidden * index_dim + 2 * index_dim + hidden * index_heads
    return total


def _mamba(section: dict, hidden: int) -> int:
    """The state-space mixer's projections per kind (layers/mamba/*: in_proj, conv1d, the per-head A/D/dt, norm,
    out_proj)."""
    kind = section["kind"]
    if kind == "mamba2":
        heads, head, groups = section["mamba_num_heads"], section["mamba_head_dim"], section["n_groups"]
        state, conv = section["ssm_state_size"], section["conv_kernel"]
        inner = section.get("intermediate_size", heads * head)
        conv_dim = inner + 2 * groups * state
        return hidden * (2 * inner + 2 * groups * state + heads) + conv_dim * conv + conv_dim + 3 * heads + inner \
            + inner * hidden
    if kind == "mamba1":
        inner, state, conv = section["mamba_expand"] * section["hidden_size"], section["mamba_d_state"], \
            section["mamba_d_conv"]
        rank = -(-hidden // 16)  # MambaConfig time_step_rank "auto": ceil(hidden / 16)
        return hidden * 2 * inner + inner * conv + inner + inner * (rank + 2 * state) + rank * inner + inner \
            + inner * state + inner + inner * hidden
    if kind == "gated_delta_net":
        nk, nv = section["linear_num_key_heads"], section["linear_num_value_heads"]
        dk, dv = section["linear_key_head_dim"], section["linear_value_head_dim"]
        conv = section["linear_conv_kernel_dim"]
        conv_dim = 2 * nk * dk + nv * dv
        return hidden * (conv_dim + nv * dv) + hidden * 2 * nv + conv_dim * conv + 2 * nv + dv + nv * dv * hidden
    if kind == "short_conv":
        width = section["hidden_size"]
        return hidden * 3 * width + width * section["conv_L_cache"] + width * hidden
    raise LayoutError("config", "model.mamba.kind", "a kind whose parameters kvcalc counts", kind)


def _experts(cfg: Cfg) -> int:
    return next((cfg.get(k) for k in ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
                 if isinstance(cfg.get(k), int) and not isinstance(cfg.get(k), bool) and cfg.get(k) > 1), 0)


def _ffn_kind(reader: str, cfg: Cfg, i: int) -> str:
    """Layer i's feed-forward: "moe", "dense" or "none" (pure Mamba layers, Nemotron-H's mixer-only layers)."""
    if reader in ("mamba1", "mamba2"):
        return "none"
    if reader == "nemotron_h":  # nemotron_h.py: M Mamba-2 and * attention alone, - an MLP, E a MoE
        pattern = cfg.get("hybrid_override_pattern") or ""
        return {"-": "dense", "E": "moe"}.get(pattern[i] if i < len(pattern) else "", "none")
    if reader == "jamba":  # jamba.py: experts iff i % expert_layer_period == expert_layer_offset
        period, offset = cfg.get("expert_layer_period") or 2, cfg.get("expert_layer_offset") or 1
        return "moe" if _experts(cfg) and i % period == offset else "dense"
    return "moe" if _experts(cfg) and _is_moe_layer(cfg, i) else "dense"


def _feed_forward(out: dict, cfg: Cfg, i: int, hidden: int, mlp: str, *, moe: bool) -> None:
    """Layer i's feed-forward: routed experts, shared experts and router on a MoE layer, else the dense MLP."""
    mats = 3 if mlp == "gated" else 2
    experts = _experts(cfg)
    if moe:
        width = cfg.get("moe_intermediate_size") or cfg.int_("intermediate_size", minimum=1)
        out["experts"] += experts * mats * hidden * width
        out["router"] += hidden * experts
        shared = cfg.get("n_shared_experts") or cfg.get("num_shared_experts") or 0
        shared_width = cfg.get("shared_expert_intermediate_size") or cfg.get("shared_intermediate_size") or 0
        out["shared_experts"] += mats * hidden * (shared * width if shared else shared_width)
        if cfg.get("shared_expert_intermediate_size"):
            out["router"] += hidden  # Qwen-MoE's shared_expert_gate
        return
    key = next((k for k in ("intermediate_size", "ffn_hidden_size", "n_inner") if cfg.get(k) is not None), None)
    width = cfg.int_(key, minimum=1) if key else 4 * hidden  # GPT-2 / GPT-J: n_inner null is 4 x hidden
    out["mlp"] += mats * hidden * width


def _is_moe_layer(cfg: Cfg, i: int) -> bool:
    kinds = cfg.get("mlp_layer_types")
    if isinstance(kinds, list) and i < len(kinds):
        return kinds[i] == "sparse"
    if i < (cfg.get("first_k_dense_replace") or 0) or i in (cfg.get("mlp_only_layers") or ()):
        return False
    freq = cfg.get("moe_layer_freq") or 1
    step = cfg.get("decoder_sparse_step") or cfg.get("interleave_moe_layer_step") or 1
    return i % freq == 0 and (i + 1) % step == 0


def _at(value: Any, i: int) -> int:
    return value[i] if isinstance(value, list) else value


def _vision(data: dict) -> int | None:
    """An estimate of a ViT tower from vision_config: layers x (4 h^2 attention + 2 h x intermediate MLP + 4 h norms)
    + the patch embedding (channels x patch^2 x h)."""
    vision = data.get("vision_config")
    if not isinstance(vision, dict):
        return None
    h = vision.get("hidden_size")
    layers = vision.get("num_hidden_layers") or vision.get("depth")
    inter = vision.get("intermediate_size") or (4 * h if isinstance(h, int) else None)
    patch, channels = vision.get("patch_size") or 14, vision.get("num_channels") or vision.get("in_channels") or 3
    dims = (h, layers, inter, patch, channels)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in dims):
        return None
    h, layers, inter, patch, channels = cast("tuple[int, int, int, int, int]", dims)  # positive ints, checked
    return layers * (4 * h * h + 2 * h * inter + 4 * h) + channels * patch * patch * h
