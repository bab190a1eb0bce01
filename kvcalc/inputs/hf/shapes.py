"""Readers of architectures whose KV caches do not follow one-attention-per-decoder-layer (vLLM 0.33.0's model files):
per-layer K and V head sizes (MiMo-V2), attention shared between hybrid layers (Zamba2), and one KV cache per loop
or recurrence step of a layer (IQuest-LoopCoder, Dory, HRM-Text).

A loop model's caches are laid out as the model names them: vLLM gives each loop's Attention a virtual layer index
(loop x layers + layer), so the layout's layers are those virtual slots ("none" where a slot holds no cache). Such
models do not implement SupportsPP, so a pipeline split (which would split the physical layers) never arises.
"""

from __future__ import annotations

import json

from ...vocab.errors import LayoutError, StartupRefusal, UnsupportedError
from .attention import Rule, layer_count, put_heads, window_of
from .readers import Cfg, Mapped, mamba_fields


def _window(m: Mapped, cfg: Cfg, key: str) -> int:
    w = cfg.int_(key, minimum=1)
    m.put("sliding_window", w, cfg.origin(key))
    return w


def mimo_v2(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """MiMoV2FlashForCausalLM / MiMoV2ForCausalLM (mimo_v2.py:382-450,499-500 @0.33.0): hybrid_layer_pattern 1 is a
    sliding layer built from the swa_* keys (window sliding_window_size), 0 a full layer from num_key_value_heads /
    head_dim / v_head_dim; a missing v head size is the K head size (Attention's head_size_v default). The model
    clears cache_config.sliding_window (:403-406): only the per-layer window counts."""
    n = layer_count(m, cfg)
    pattern = cfg.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) < n or any(p not in (0, 1) for p in pattern[:n]):
        raise LayoutError(cfg.source, f"{cfg.prefix}hybrid_layer_pattern", f"a list of {n} entries 0 (full) or 1 "
                          "(sliding)", pattern)
    sliding = [p == 1 for p in pattern[:n]]
    shape = {}
    for swa, pre in ((False, ""), (True, "swa_")):
        if swa not in sliding:
            continue
        heads = cfg.int_(f"{pre}num_key_value_heads", minimum=1)
        k = cfg.int_(f"{pre}head_dim", minimum=1)
        v = cfg.int_(f"{pre}v_head_dim", minimum=1) if cfg.get(f"{pre}v_head_dim") is not None else k
        shape[swa] = (heads, k, v)
    m.put("layer_types", ["sliding_attention" if s else "full_attention" for s in sliding],
          f"{cfg.origin('hybrid_layer_pattern')}: 1 sliding, 0 full")
    origin = f"{cfg.prefix}num_key_value_heads / head_dim / v_head_dim (full), swa_* (sliding layers)"
    m.put("num_kv_heads", [shape[s][0] for s in sliding], origin)
    m.put("head_size", [shape[s][1] for s in sliding], origin)
    m.put("head_size_v", [shape[s][2] for s in sliding], origin)
    m.put("head_size_v_since", "0.20.0", "mimo_v2_flash.py:314 @0.20.0 passes head_size_v; 0.14-0.19 zero-pad V to "
          "the K head size (mimo_v2_flash.py:314-322 @0.17.0)")
    if any(sliding):
        window = cfg.int_("sliding_window_size")
        if window < 1:  # mimo_v2.py:318: a window of -1 is none; kvcalc's sliding layers need one
            raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window_size", "a positive window for the "
                              "hybrid_layer_pattern 1 layers", window)
        _window(m, cfg, "sliding_window_size")
        if cfg.get("add_swa_attention_sink_bias"):
            m.put("attention_sinks", True, f"{cfg.origin('add_swa_attention_sink_bias')} (mimo_v2.py:314-316)")


def zamba2(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """Zamba2ForCausalLM (zamba2.py:143-200,735-776,869-897 @0.33.0): every layer a Mamba-2 mixer; a "hybrid" layer
    also runs one of num_mem_blocks shared attention blocks, which holds one Attention (so one KV cache) per hybrid
    layer that uses it: num_attention_heads KV heads (none passed: multi-head), head attention_head_dim, divided by
    TP with no replication (an assertion). The state: intermediate mamba_expand x hidden_size, n_mamba_heads,
    mamba_headdim, mamba_ngroups, mamba_d_state, mamba_d_conv."""
    n = layer_count(m, cfg)
    kinds = cfg.get("layers_block_type")
    if not isinstance(kinds, list) or len(kinds) != n or not all(isinstance(k, str) for k in kinds):
        raise LayoutError(cfg.source, f"{cfg.prefix}layers_block_type", f"a list of {n} layer kinds (hybrid, mamba)",
                          kinds)
    m.put("layer_types", ["full_attention+mamba" if k == "hybrid" else "mamba" for k in kinds],
          f"{cfg.origin('layers_block_type')}: hybrid = shared attention + Mamba-2, else Mamba-2")
    m.put("num_kv_heads", cfg.int_("num_attention_heads", minimum=1),
          f"{cfg.origin('num_attention_heads')} (zamba2.py:186-195: multi-head)")
    m.put("head_size", cfg.int_("attention_head_dim", minimum=1), cfg.origin("attention_head_dim"))
    m.put("kv_head_replication", False, "zamba2.py:149: num_attention_heads % TP == 0 asserted")
    m.put("pipeline_parallel", False, "zamba2.py:833: Zamba2ForCausalLM does not implement SupportsPP")
    mamba_fields(m, cfg, "mamba2", [("mamba_num_heads", "n_mamba_heads"), ("mamba_head_dim", "mamba_headdim"),
                                    ("n_groups", "mamba_ngroups"), ("ssm_state_size", "mamba_d_state"),
                                    ("conv_kernel", "mamba_d_conv"), ("chunk_size", "chunk_size")])
    m.model["mamba"]["intermediate_size"] = cfg.int_("mamba_expand", minimum=1) * cfg.int_("hidden_size", minimum=1)
    m.origin["model.mamba.intermediate_size"] = f"{cfg.origin('mamba_expand')} x hidden_size (zamba2.py:886)"


def _virtual(m: Mapped, slots: list[str], origin: str, why_pp: str) -> None:
    m.put("num_layers", len(slots), f"{origin}: one layer per KV cache slot vLLM names")
    m.put("layer_types", slots, origin)
    m.put("pipeline_parallel", False, why_pp)


def iquest_loop(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """IQuestLoopCoderForCausalLM (iquest_loopcoder.py:60-165,408 @0.33.0): every layer has loop_num (default 2)
    Attentions named layers.{loop x num_hidden_layers + layer}; loop 0 takes the cache config's window (the model-level
    one), the later loops slide over loop_window_size (default 64). KV heads num_key_value_heads, head hidden //
    heads."""
    n = cfg.int_("num_hidden_layers", minimum=1)
    loops = cfg.int_("loop_num", minimum=1) if cfg.get("loop_num") is not None else 2
    window, _ = window_of(m, cfg)
    if window is not None:
        raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window", "null (a model-level window on loop 0 beside "
                          "the later loops' loop_window_size is not modelled)", window)
    loop_window = cfg.int_("loop_window_size", minimum=1) if cfg.get("loop_window_size") is not None else 64
    if loops > 1:
        m.put("sliding_window", loop_window, f"{cfg.origin('loop_window_size')} (default 64, iquest_loopcoder.py:100)")
    slots = ["full_attention"] * n + ["sliding_attention"] * (n * (loops - 1))
    _virtual(m, slots, f"{cfg.origin('loop_num')} = {loops} loops x {n} layers (loop 0 full, the others sliding)",
             "iquest_loopcoder.py:536: IQuestLoopCoderForCausalLM does not implement SupportsPP")
    m.put("num_kv_heads", cfg.int_("num_key_value_heads", minimum=1), cfg.origin("num_key_value_heads"))
    hidden, heads = cfg.int_("hidden_size", minimum=1), cfg.int_("num_attention_heads", minimum=1)
    m.put("head_size", hidden // heads, f"{cfg.prefix}hidden_size // num_attention_heads (iquest_loopcoder.py:91)")


def dory(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """DoryForCausalLM (dory.py:101-133,204-252 @0.33.0; DoryConfig transformers_utils/configs/dory.py): layer_types
    "mlp" layers hold no cache; the n_recurrent_layers after n_input_layers hold one Attention per loop
    (n_recurrent_loops) with recurrent_kv_cache_mode "per_loop", named layers.{loop x num_hidden_layers + layer};
    sliding_attention layers slide over sliding_window. KV heads num_key_value_heads, head head_dim."""
    n = cfg.int_("num_hidden_layers", minimum=1)
    kinds = cfg.get("layer_types")
    names = {"full_attention": "full_attention", "sliding_attention": "sliding_attention", "mlp": "none"}
    if not isinstance(kinds, list) or len(kinds) != n or any(k not in names for k in kinds):
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", f"a list of {n} kinds {sorted(names)}", kinds)
    first = cfg.int_("n_input_layers", minimum=0) if cfg.get("n_input_layers") is not None else 0
    out = cfg.int_("n_output_layers", minimum=0) if cfg.get("n_output_layers") is not None else 0
    rec = cfg.int_("n_recurrent_layers", minimum=0) if cfg.get("n_recurrent_layers") is not None else n - first - out
    loops = cfg.int_("n_recurrent_loops", minimum=1) if cfg.get("n_recurrent_loops") is not None else 1
    mode = cfg.get("recurrent_kv_cache_mode") or "per_loop"
    if mode not in ("per_loop", "last_loop"):
        raise LayoutError(cfg.source, f"{cfg.prefix}recurrent_kv_cache_mode", "per_loop or last_loop", mode)
    per_loop = loops if mode == "per_loop" else 1
    slots = ["none"] * (n * per_loop)
    for i, k in enumerate(kinds):
        for loop in range(per_loop if first <= i < first + rec else 1):
            slots[loop * n + i] = names[k]
    while slots and slots[-1] == "none":
        slots.pop()
    _virtual(m, slots, f"{cfg.origin('layer_types')} with {per_loop} cache(s) per recurrent layer "
             f"({first} input, {rec} recurrent layers)", "dory.py:283: DoryForCausalLM does not implement SupportsPP")
    m.put("num_kv_heads", cfg.int_("num_key_value_heads", minimum=1), cfg.origin("num_key_value_heads"))
    m.put("head_size", cfg.int_("head_dim", minimum=1), cfg.origin("head_dim"))
    m.put("tp_must_divide", 1, "dory.py:295-296: \"Dory currently supports tensor_parallel_size=1 only\"")
    if "sliding_attention" in slots:
        _window(m, cfg, "sliding_window")


def hrm_text(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """HrmTextForCausalLM (hrm_text.py:133-225 @0.33.0): two stacks (L, H) of num_layers_per_stack layers; L runs
    at steps h x (L_cycles + 1) + l, H at h x (L_cycles + 1) + L_cycles, and each (step, layer) has its own Attention
    named layers.{step x num_layers_per_stack + layer}: H_cycles x (L_cycles + 1) x num_layers_per_stack caches.
    Multi-head (num_attention_heads KV heads, divided by TP with no replication), head head_dim or hidden // heads."""
    per = cfg.int_("num_layers_per_stack", minimum=1)
    steps = cfg.int_("H_cycles", minimum=1) * (cfg.int_("L_cycles", minimum=1) + 1)
    _virtual(m, ["full_attention"] * (steps * per), f"{cfg.prefix}H_cycles x (L_cycles + 1) = {steps} steps x "
             f"{cfg.origin('num_layers_per_stack')}", "hrm_text.py:457: HrmTextForCausalLM does not implement "
             "SupportsPP")
    heads = cfg.int_("num_attention_heads", minimum=1)
    m.put("num_kv_heads", heads, f"{cfg.origin('num_attention_heads')} (hrm_text.py:143: multi-head)")
    m.put("kv_head_replication", False, "hrm_text.py:138-141: num_attention_heads % TP == 0 asserted")
    if cfg.get("head_dim") is not None:
        m.put("head_size", cfg.int_("head_dim", minimum=1), cfg.origin("head_dim"))
    else:
        m.put("head_size", cfg.int_("hidden_size", minimum=1) // heads, f"{cfg.prefix}hidden_size // heads")


def _pangu_sink(m: Mapped, cfg: Cfg, sinks: int) -> None:
    """openpangu.py:522-640 @0.33.0: StaticSinkAttention in every layer, whose spec is SinkFullAttentionSpec
    (static_sink_attention.py:211-225: a full-attention page whatever interleaved_sliding_window says, grouped as
    full attention: single_type_kv_cache_manager.py:2723-2727): K head qk_nope_dim + qk_rope_dim, V head v_channels,
    KV heads num_key_value_heads divided by TP and never replicated (:550-567). vLLM writes the param_sink_number
    sink tokens into blocks 1..sink_len / block_size of every request's table (static_sink_attention.py:72-78);
    0.14-0.29 also pop that many blocks off the free queue at start (STEPS sink_blocks_reserved), 0.30.0+ none."""
    n = layer_count(m, cfg)
    m.put("layer_types", ["full_attention"] * n, f"{cfg.origin('param_sink_number')} > 0: static-sink attention "
          "(SinkFullAttentionSpec) in every layer")
    heads = cfg.int_("num_key_value_heads", minimum=1) if cfg.get("num_key_value_heads") is not None else \
        cfg.int_("num_attention_heads", minimum=1)
    m.put("num_kv_heads", heads, cfg.origin("num_key_value_heads"))
    m.put("kv_head_replication", False, "openpangu.py:562-567: KV heads below TP refused (no replication)")
    nope, rope = cfg.int_("qk_nope_dim", minimum=1), cfg.int_("qk_rope_dim", minimum=1)
    m.put("head_size", nope + rope, f"{cfg.prefix}qk_nope_dim + qk_rope_dim ({nope} + {rope})")
    m.put("head_size_v", cfg.int_("v_channels", minimum=1), cfg.origin("v_channels"))
    m.put("sink_len", sinks, cfg.origin("param_sink_number"))


def pangu_embedded(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """PanguEmbeddedForCausalLM and PanguProMoEV2ForCausalLM (openpangu.py:769-880 @0.33.0): the decoder layer's
    attention follows the config, the same for every layer: MLA when it has qk_nope_head_dim, qk_rope_head_dim,
    v_head_dim and kv_lora_rank (:790-795); static-sink attention when param_sink_number > 0 (_pangu_sink);
    else standard attention (:389-488): KV heads num_key_value_heads (else every head), head head_dim or hidden //
    heads, the window interleaved_sliding_window (one int for every layer, a list cycled by layer), else vLLM's
    model-level window."""
    from .attention import attention, window_list
    from .readers import mla

    if all(cfg.get(k) is not None for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")):
        mla(m, cfg, indexer=False)
        return
    sinks = cfg.get("param_sink_number")
    if isinstance(sinks, int) and not isinstance(sinks, bool) and sinks > 0:
        _pangu_sink(m, cfg, sinks)
        return
    rule = Rule(layer_types=False)
    windows = cfg.get("interleaved_sliding_window")
    if windows is None:
        attention(m, cfg, rule)
    elif isinstance(windows, list):
        window_list(m, cfg, rule, "interleaved_sliding_window", cyclic=True)
    else:
        n = layer_count(m, cfg)
        put_heads(m, cfg, rule)
        w = cfg.int_("interleaved_sliding_window", minimum=1)
        m.put("layer_types", ["sliding_attention"] * n, f"{cfg.origin('interleaved_sliding_window')}: every layer")
        m.put("sliding_window", w, cfg.origin("interleaved_sliding_window"))


def _int_or(cfg: Cfg, key: str, default: int) -> tuple[int, str]:
    if cfg.get(key) is None:
        return default, f"{cfg.prefix}{key} absent: the model file's default {default}"
    return cfg.int_(key, minimum=1), cfg.origin(key)


def _bailing_head_dim(m: Mapped, cfg: Cfg) -> tuple[int, str]:
    """The head_dim vLLM's Bailing linear / KDA layers read: transformers 5.24's BailingHybridConfig (model_type
    bailing_hybrid) overwrites it with qk_rope_head_dim after keeping the file's value as linear_head_dim
    (configuration_bailing_hybrid.py:139-160), and vLLM reads config.head_dim (executed: 64, not the file's 128)."""
    if m.config_type == "bailing_hybrid":
        rope, origin = _int_or(cfg, "qk_rope_head_dim", 64)
        return rope, f"{origin} (transformers 5.24 BailingHybridConfig sets head_dim = qk_rope_head_dim)"
    if cfg.get("head_dim") is not None:
        return cfg.int_("head_dim", minimum=1), cfg.origin("head_dim")
    heads = cfg.int_("num_attention_heads", minimum=1)
    return cfg.int_("hidden_size", minimum=1) // heads, f"{cfg.prefix}hidden_size // num_attention_heads"


def bailing_v25(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """BailingMoeV2_5ForCausalLM (bailing_moe_linear.py:68-74,347-377,455-500,768-795 @0.33.0): layer i is linear
    attention unless (i + 1) % layer_group_size == 0 (layer_group_size default 1: every layer MLA), where an MLA
    layer holds one latent head of kv_lora_rank + qk_rope_head_dim (defaults 512 and 64, :95-102); the linear
    layers' state is one (num_attention_heads // TP, head_dim, head_dim) tensor (head_dim default hidden // heads)."""
    n = layer_count(m, cfg)
    group, g_origin = _int_or(cfg, "layer_group_size", 1)
    m.put("layer_types", ["mla" if (i + 1) % group == 0 else "mamba" for i in range(n)],
          f"{g_origin}: layer i is MLA iff (i + 1) % layer_group_size == 0, else linear attention")
    rank, r_origin = _int_or(cfg, "kv_lora_rank", 512)
    rope, p_origin = _int_or(cfg, "qk_rope_head_dim", 64)
    nope, n_origin = _int_or(cfg, "qk_nope_head_dim", 128)
    m.put("kv_lora_rank", rank, r_origin)
    m.put("qk_rope_head_dim", rope, p_origin)
    m.put("qk_nope_head_dim", nope, n_origin)
    heads = cfg.int_("num_attention_heads", minimum=1)
    m.put("num_attention_heads", heads, cfg.origin("num_attention_heads"))
    if group > 1:
        norm, n_origin = _int_or(cfg, "group_norm_size", 1)
        m.put("tp_must_divide", norm, f"{n_origin} (bailing_linear_attn.py:446-453: TP <= group_norm_size and "
              "divides it)")
        head, head_origin = _bailing_head_dim(m, cfg)
        m.model["mamba"] = {"kind": "linear_attention", "num_attention_heads": heads, "head_dim": head}
        m.origin["model.mamba.kind"] = "bailing_moe_linear.py:768-785 (linear_attention_state_shape)"
        m.origin["model.mamba.num_attention_heads"] = cfg.origin("num_attention_heads")
        m.origin["model.mamba.head_dim"] = head_origin


def _per_layer_windows(m: Mapped, cfg: Cfg, n: int, kinds: list, k_origin: str, window: int | None,
                       w_origin: str) -> None:
    if any(k not in ("full_attention", "sliding_attention") for k in kinds) or len(kinds) != n:
        raise LayoutError(cfg.source, f"{cfg.prefix}layer_types", f"{n} entries full_attention / sliding_attention",
                          kinds)
    if "sliding_attention" in kinds:
        if window is None:
            raise LayoutError(cfg.source, f"{cfg.prefix}sliding_window", f"an integer for the sliding layers of "
                              f"{k_origin}")
        m.put("sliding_window", window, w_origin)
    m.put("layer_types", list(kinds), k_origin)


def beam(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """BeamForCausalLM (models/beam/nvidia/attention.py:55-143 @0.33.0; BeamConfig transformers_utils/configs/
    beam.py:19-91): KV heads num_key_value_heads, head head_dim or hidden // heads; layer_types (default every layer
    sliding) give sliding layers the window sliding_window (default 4096)."""
    n = layer_count(m, cfg)
    put_heads(m, cfg, Rule())
    kinds, k_origin = cfg.get("layer_types"), cfg.origin("layer_types")
    if kinds is None:
        kinds, k_origin = ["sliding_attention"] * n, "layer_types absent: BeamConfig makes every layer sliding"
    window, w_origin = cfg.get("sliding_window"), cfg.origin("sliding_window")
    if "sliding_window" not in cfg.data:
        window, w_origin = 4096, "sliding_window absent: BeamConfig's default 4096"
    elif window is not None:
        window = cfg.int_("sliding_window", minimum=1)
    _per_layer_windows(m, cfg, n, kinds, k_origin, window, w_origin)


def flint(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """FlintForCausalLM (models/flint/model.py:243-307 @0.33.0; FlintConfig models/flint/configs.py:40-77): KV heads
    num_key_value_heads, head head_dim; every attention has sinks; layer_types (default every layer full) give
    sliding layers sliding_window (default 513), none when use_sliding_window is false."""
    n = layer_count(m, cfg)
    put_heads(m, cfg, Rule(head="head_dim!"))
    kinds, k_origin = cfg.get("layer_types"), cfg.origin("layer_types")
    if kinds is None:
        kinds, k_origin = ["full_attention"] * n, "layer_types absent: FlintConfig makes every layer full"
    window, w_origin = cfg.get("sliding_window"), cfg.origin("sliding_window")
    if "sliding_window" not in cfg.data:
        window, w_origin = 513, "sliding_window absent: FlintConfig's default 513"
    elif window is not None:
        window = cfg.int_("sliding_window", minimum=1)
    if cfg.get("use_sliding_window") is False:
        window, w_origin = None, f"{cfg.origin('use_sliding_window')} false: FlintConfig drops the window"
    _per_layer_windows(m, cfg, n, kinds, k_origin, window, w_origin)
    m.put("attention_sinks", True, "models/flint/model.py:296-307: every attention layer passes sinks")
    m.put("requires_backend", "FLASHINFER", "models/flint/model.py:317-318: \"Flint requires FlashInfer attention\"")


def kimi_linear(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """KimiLinearForCausalLM (models/kimi_k3/nvidia/model.py:683-760,1495-1525 @0.33.0; KimiLinearConfig.is_kda_layer,
    transformers_utils/configs/kimi_linear.py:157-161): layer i is Kimi Delta Attention when i + 1 is in
    linear_attn_config.kda_layers, else MLA (one latent head of kv_lora_rank + qk_rope_head_dim). The KDA state
    (mamba/gdn/kimi_gdn_linear_attn.py:155-175): linear_attn_config's num_heads, head_dim, short_conv_kernel_size.
    Kimi-K3's full-rank gate (use_full_rank_gate) takes another class whose FlashKDA prefill keeps checkpoint blocks
    (models/kimi_k3/nvidia/kda.py:901-909): refused."""
    n = layer_count(m, cfg)
    kda = cfg.get("linear_attn_config")
    if not isinstance(kda, dict) or not isinstance(kda.get("kda_layers"), list):
        raise LayoutError(cfg.source, f"{cfg.prefix}linear_attn_config", "an object with kda_layers (1-based KDA "
                          "layer numbers), num_heads, head_dim, short_conv_kernel_size", kda)
    if kda.get("use_full_rank_gate"):
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}linear_attn_config.use_full_rank_gate: Kimi-K3's KDA "
                               "(KimiK3DeltaAttention, whose FlashKDA prefill keeps checkpoint state blocks per GPU "
                               "and backend, models/kimi_k3/nvidia/kda.py:824-909) is not modelled")
    layers = set(kda["kda_layers"])
    m.put("layer_types", ["mamba" if i + 1 in layers else "mla" for i in range(n)],
          f"{cfg.origin('linear_attn_config')}.kda_layers (1-based): KDA, the others MLA")
    m.put("kv_lora_rank", cfg.int_("kv_lora_rank", minimum=1), cfg.origin("kv_lora_rank"))
    m.put("qk_rope_head_dim", cfg.int_("qk_rope_head_dim"), cfg.origin("qk_rope_head_dim"))
    m.put("qk_nope_head_dim", cfg.int_("qk_nope_head_dim"), cfg.origin("qk_nope_head_dim"))
    m.put("num_attention_heads", cfg.int_("num_attention_heads", minimum=1), cfg.origin("num_attention_heads"))
    section: dict = {"kind": "kda"}
    m.origin["model.mamba.kind"] = "Kimi Delta Attention (kimi_gdn_linear_attn.py:155-175)"
    for key in ("num_heads", "head_dim", "short_conv_kernel_size"):
        value = kda.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LayoutError(cfg.source, f"{cfg.prefix}linear_attn_config.{key}", "a positive integer", value)
        section[key] = value
        m.origin[f"model.mamba.{key}"] = f"{cfg.origin('linear_attn_config')}.{key}"
    m.model["mamba"] = section


def alice_ai(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """AliceAIForCausalLM (alice_ai.py:118-150,320-350,686-701 @0.33.0): layer_types "linear_attention" is Kimi Delta
    Attention (KimiGatedDeltaNetAttention over linear_num_key_heads x linear_key_head_dim, conv
    linear_conv_kernel_dim; the value heads and size must equal them), "full_attention" Qwen3-Next's attention (KV
    heads num_key_value_heads, head head_dim or hidden // heads). No SupportsPP (:579-581)."""
    from .hybrid import kinds_of

    for key, want in (("kda_allow_negative_eigenvalues", False), ("router_score_function", "sigmoid"),
                      ("router_bias_correction", True)):
        if cfg.get(key) != want:  # model_executor/models/config.py:28-40 AliceAIForCausalLMConfig, at start-up
            raise StartupRefusal(f"{cfg.source}: {cfg.prefix}{key} {cfg.get(key)!r}: vLLM refuses AliceAI unless it is "
                                 f"{json.dumps(want)} (model_executor/models/config.py:28-40)")
    n = layer_count(m, cfg)
    kinds_of(m, cfg, n, {"linear_attention": "mamba", "full_attention": "full_attention"}, "AliceAI")
    put_heads(m, cfg, Rule())
    heads, dim = cfg.int_("linear_num_key_heads", minimum=1), cfg.int_("linear_key_head_dim", minimum=1)
    if cfg.int_("linear_num_value_heads", minimum=1) != heads or cfg.int_("linear_value_head_dim", minimum=1) != dim:
        raise LayoutError(cfg.source, f"{cfg.prefix}linear_num_value_heads", "the key heads and head size (vLLM: "
                          "\"AliceAI KDA requires matching key/value head counts and dimensions\", alice_ai.py:124)",
                          [cfg.get("linear_num_value_heads"), cfg.get("linear_value_head_dim")])
    m.model["mamba"] = {"kind": "kda", "num_heads": heads, "head_dim": dim,
                        "short_conv_kernel_size": cfg.int_("linear_conv_kernel_dim", minimum=1)}
    m.origin["model.mamba.kind"] = "Kimi Delta Attention (alice_ai.py:118-137)"
    for field, key in (("num_heads", "linear_num_key_heads"), ("head_dim", "linear_key_head_dim"),
                       ("short_conv_kernel_size", "linear_conv_kernel_dim")):
        m.origin[f"model.mamba.{field}"] = cfg.origin(key)
    m.put("pipeline_parallel", False, "alice_ai.py:579-581: AliceAIForCausalLM does not implement SupportsPP")


def bailing_v3(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """BailingMoeV3ForCausalLM (bailing_moe_v3.py:131-157,458-500,635-660,1240-1262 @0.33.0): layer i is MLA when
    (i + 1) % layer_group_size == 0 or it is past the last whole group, else Kimi Delta Attention over
    num_attention_heads x head_dim with short_conv_kernel_size; MLA: one latent head of kv_lora_rank +
    qk_rope_head_dim (defaults 512 and 64)."""
    if not cfg.get("no_kda_lora"):  # bailing_moe_v3.py:686-687, at model construction
        raise StartupRefusal(f"{cfg.source}: {cfg.prefix}no_kda_lora {cfg.get('no_kda_lora')!r}: vLLM refuses it: "
                             "\"BailingMoeV3 KDA currently expects no_kda_lora=True\"")
    n = layer_count(m, cfg)
    group = cfg.int_("layer_group_size", minimum=1)
    tail = n // group * group
    m.put("layer_types", ["mla" if (i + 1) % group == 0 or i >= tail else "mamba" for i in range(n)],
          f"{cfg.origin('layer_group_size')}: MLA every layer_group_size-th layer and past the last group, else KDA")
    for key, default in (("kv_lora_rank", 512), ("qk_rope_head_dim", 64), ("qk_nope_head_dim", 128)):
        value, origin = _int_or(cfg, key, default)
        m.put(key, value, origin)
    m.put("num_attention_heads", cfg.int_("num_attention_heads", minimum=1), cfg.origin("num_attention_heads"))
    head, head_origin = _bailing_head_dim(m, cfg)
    m.model["mamba"] = {"kind": "kda", "num_heads": cfg.int_("num_attention_heads", minimum=1), "head_dim": head,
                        "short_conv_kernel_size": cfg.int_("short_conv_kernel_size", minimum=1)}
    m.origin["model.mamba.kind"] = "Kimi Delta Attention (bailing_moe_v3.py:140-157)"
    m.origin["model.mamba.num_heads"] = cfg.origin("num_attention_heads")
    m.origin["model.mamba.head_dim"] = head_origin
    m.origin["model.mamba.short_conv_kernel_size"] = cfg.origin("short_conv_kernel_size")


def domyn_edge(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """DomynEdgeForCausalLM (domyn_edge.py:35-108,136-170 @0.33.0): every layer's head size is
    per_layer_config[layer].head_dim (the layer's override, else the global head_dim), its window
    window_sizes[layer][0] (a layer with a window w > 0 slides over w + 1 keys, :106), KV heads num_key_value_heads
    (replicated below TP). No SupportsPP (:226)."""
    n = layer_count(m, cfg)
    per, windows = cfg.get("per_layer_config") or {}, cfg.get("window_sizes")
    # transformers 5.24 integrations/heterogeneity/configuration_utils.py:163-190: per_layer_config maps a layer
    # index to its overrides; a layer without one takes the global value.
    if not isinstance(per, dict) or not all(isinstance(v, dict) for v in per.values()):
        raise LayoutError(cfg.source, f"{cfg.prefix}per_layer_config", "an object: layer index -> overrides", per)
    if not isinstance(windows, list) or len(windows) < n or not all(isinstance(w, list) and w for w in windows[:n]):
        raise LayoutError(cfg.source, f"{cfg.prefix}window_sizes", f"a list of {n} [left, right] windows", windows)
    overrides = {int(k) if str(k).isdigit() else k: v for k, v in per.items()}
    heads = []
    for i in range(n):
        d = overrides.get(i, {}).get("head_dim", cfg.get("head_dim"))
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise LayoutError(cfg.source, f"{cfg.prefix}per_layer_config.{i}.head_dim", "a positive integer (or a "
                              "global head_dim)", d)
        heads.append(d)
    m.put("num_kv_heads", cfg.int_("num_key_value_heads", minimum=1), cfg.origin("num_key_value_heads"))
    m.put("head_size", heads, f"{cfg.origin('per_layer_config')}[layer].head_dim, else head_dim")
    from .attention import put_windows

    left = [w[0] for w in windows[:n]]
    if any(isinstance(w, bool) or not isinstance(w, int) for w in left):
        raise LayoutError(cfg.source, f"{cfg.prefix}window_sizes", "integer windows", left)
    put_windows(m, cfg, [w + 1 if w > 0 else None for w in left], "window_sizes")
    if all(w <= 0 for w in left):
        m.put("layer_types", ["full_attention"] * n, f"{cfg.origin('window_sizes')}: no layer has a window")
    m.put("pipeline_parallel", False, "domyn_edge.py:226: DomynEdgeForCausalLM does not implement SupportsPP")


_SPARSE = ("deepseek_sparse_attention", "sparse_attention", "sparse")


def hy_v4(m: Mapped, cfg: Cfg, rule: Rule | None) -> None:
    """HYV4ForCausalLM (models/hy_v4/nvidia/attention.py:60-110,134-200,318-340,425-462 @0.33.0; HYV4Config
    transformers_utils/configs/hy_v4.py:116-160): every layer MLA (one latent head of kv_lora_rank +
    qk_rope_head_dim); a sparse layer (layer_types deepseek_sparse_attention) has a DSA indexer key cache of
    index_head_dim (+ an fp32 scale per 128) unless indexer_types says "shared" (it reuses the closest earlier "full"
    layer's top-k). indexer_types defaults to full on layer 0 and every (i - 1) % 4 == 0 layer."""
    from .readers import mla

    n = cfg.int_("num_hidden_layers", minimum=1)
    kinds = cfg.get("layer_types")
    sparse = [isinstance(kinds, list) and i < len(kinds) and kinds[i] in _SPARSE for i in range(n)]
    if any(sparse) and not all(sparse):
        raise UnsupportedError(f"{cfg.source}: {cfg.prefix}layer_types: sparse and dense MLA layers in one model "
                               "(two MLA backends) are not modelled")
    mla(m, cfg, indexer=False)
    if not any(sparse) or cfg.get("index_topk") is None:
        return
    types = cfg.get("indexer_types")
    if types is None:
        types = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
        origin = "indexer_types absent: HYV4Config's full on layer 0 and every (i - 1) % 4 == 0"
    else:
        origin = cfg.origin("indexer_types")
        if not isinstance(types, list) or len(types) != n or set(types) - {"full", "shared"}:
            raise LayoutError(cfg.source, f"{cfg.prefix}indexer_types", f"{n} entries full / shared", types)
    m.put("index_head_dim", cfg.int_("index_head_dim", minimum=1), cfg.origin("index_head_dim"))
    skip = [i for i, t in enumerate(types) if t == "shared"]
    if skip:
        m.put("index_skip_layers", skip, f"{origin}: the shared layers build no indexer (attention.py:330-340)")
