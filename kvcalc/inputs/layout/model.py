"""The `model` section of an expanded layout dict -> ModelLayout: layer kinds, the attention shape, the Mamba state
(a kind's Hugging Face field names and the config-file fields checked against them) and the drafter."""

from __future__ import annotations

from typing import Any

from ...vocab.errors import LayoutError
from ...vocab.keys import CHILDREN, KEY
from ...vocab.kinds import MAMBA_KINDS, MAMBA_STATE_DTYPE_FIELD, LayerKind
from ...vocab.layout import LAYERLESS_DRAFT_METHODS, DraftLayout, MambaLayout, ModelLayout
from ...vocab.units import MODEL_DTYPES
from ..values import Reader, written


def validate_model(top: dict, *, source: str) -> ModelLayout:
    """The `model` section of an expanded layout dict alone."""
    if "model" not in top:
        raise LayoutError(source, "model", "a model section (see the README's layout format)")
    return model_section(Reader(source, {}), top.get("model"))


# Model keys the record takes as the key table reads them (no check across keys).
_AS_WRITTEN = ("sink_len", "pipeline_parallel", "tp_must_divide", "registered_since", "head_size_v_since",
               "requires_backend", "kv_cache_dtype_auto", "num_attention_heads", "qk_nope_head_dim", "attention_sinks",
               "hf_model_type", "mm_prefix_lm", "bidirectional_vision")


def model_section(r: Reader, data: Any) -> ModelLayout:
    m = r.section(data, "model")
    if "num_layers" not in m:
        raise r.fail("model.num_layers", "the number of decoder layers")
    n = r.key(m, "model.num_layers")
    name = r.key(m, "model.name")
    dtype = MODEL_DTYPES[r.key(m, "model.dtype")]
    kv_lora = r.key(m, "model.kv_lora_rank")
    kinds = _layer_kinds(r, m, n, LayerKind.MLA if kv_lora else LayerKind.FULL)
    present = set(kinds)
    heads, head_size, head_size_v = _attention_shape(r, m, n, kinds, any(k.attention for k in present))

    def needed(key: str, why: str) -> int:
        if m.get(key) is None:
            raise r.fail(f"model.{key}", f"a positive integer ({why})")
        return r.key(m, f"model.{key}")

    sliding = needed("sliding_window", "the model has sliding_attention layers") if LayerKind.SLIDING in present \
        else r.key(m, "model.sliding_window")
    chunk = needed("attention_chunk_size", "the model has chunked_attention layers") \
        if LayerKind.CHUNKED in present else r.key(m, "model.attention_chunk_size")
    rope = r.key(m, "model.qk_rope_head_dim")
    if LayerKind.MLA in present:
        kv_lora = needed("kv_lora_rank", "the model has mla layers")
        if rope is None:
            raise r.fail("model.qk_rope_head_dim", "an integer (the model has mla layers)")
    index_dim = r.key(m, "model.index_head_dim")
    if index_dim is not None and LayerKind.MLA not in present and LayerKind.DSV4_CSA not in present:
        raise r.fail("model.index_head_dim", "no value: the DeepSeek-V3.2 indexer sits next to mla layers only "
                     "(DeepSeek-V4's next to dsv4_csa layers)", index_dim)
    if any(k.dsv4 for k in present):
        _dsv4(r, m, kinds, head_size, needed)
    mamba = None
    if any(k.mamba for k in present):
        mamba = _mamba(r, m.get("mamba"))
    elif m.get("mamba") is not None:
        raise r.fail("model.mamba", "no mamba section: no layer has the kind mamba")
    draft = _draft(r, m.get("draft"), present) if m.get("draft") is not None else None
    replication = r.key(m, "model.kv_head_replication")
    per_layer = r.key(m, "model.mla_per_layer")
    if per_layer > 1 and (index_dim is not None or m.get("draft") is not None):
        raise r.fail("model.mla_per_layer", "1 with an indexer or a drafter (two MLA attentions a layer with those "
                     "is not modelled)", per_layer)
    skip = m.get("index_skip_layers")
    if skip is not None and (index_dim is None or not isinstance(skip, list)
                             or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n for i in skip)):
        raise r.fail("model.index_skip_layers", f"layer indices below {n}, beside model.index_head_dim", skip)
    return ModelLayout(**{k: r.key(m, f"model.{k}") for k in _AS_WRITTEN},
                       index_skip_layers=frozenset(skip or ()), kv_head_replication=replication,
                       mla_per_layer=per_layer, name=name, num_layers=n, dtype=dtype, layer_types=kinds,
                       num_kv_heads=heads, head_size=head_size, head_size_v=head_size_v, sliding_window=sliding,
                       attention_chunk_size=chunk, kv_lora_rank=kv_lora, qk_rope_head_dim=rope,
                       index_head_dim=index_dim, mamba=mamba, draft=draft)


def _dsv4(r: Reader, m: dict, kinds: tuple[LayerKind, ...], head_size: tuple[int, ...], needed) -> None:
    """DeepSeek-V4 layers: no other kind beside them; a head size (head_dim, the latent) on each; the window of
    their sliding caches; the indexer's head next to dsv4_csa layers."""
    other = sorted({k.value for k in kinds if not k.dsv4})
    if other:
        raise r.fail("model.layer_types", "dsv4_swa / dsv4_csa / dsv4_hca layers only (a DeepSeek-V4 model)", other)
    needed("sliding_window", "the DeepSeek-V4 layers' sliding-window caches")
    if LayerKind.DSV4_CSA in kinds:
        needed("index_head_dim", "the dsv4_csa layers' lightning indexer")
    if min(head_size) < 1:
        raise r.fail("model.head_size", "a positive head size (head_dim) on every DeepSeek-V4 layer", min(head_size))


def _layer_kinds(r: Reader, m: dict, n: int, default_kind: LayerKind) -> tuple[LayerKind, ...]:
    """model.layer_types (one kind per layer) or model.layer_pattern (repeated to n layers); else every layer
    `default_kind`."""
    if m.get("layer_types") is not None and m.get("layer_pattern") is not None:
        raise r.fail("model.layer_pattern", "either layer_types or layer_pattern, not both")
    choices = KEY["model.layer_types"].choices
    if m.get("layer_types") is not None:
        raw = m["layer_types"]
        if not isinstance(raw, list) or len(raw) != n:
            raise r.fail("model.layer_types", f"a list of {n} layer kinds (one per layer)",
                          f"a list of {len(raw)}" if isinstance(raw, list) else raw)
        return tuple(LayerKind(r.choice(v, f"model.layer_types[{i}]", choices)) for i, v in enumerate(raw))
    if m.get("layer_pattern") is not None:
        raw = m["layer_pattern"]
        if not isinstance(raw, list) or len(raw) < KEY["model.layer_pattern"].minimum or len(raw) > n:
            raise r.fail("model.layer_pattern", f"a non-empty list of at most {n} layer kinds", raw)
        pattern = [LayerKind(r.choice(v, f"model.layer_pattern[{i}]", choices)) for i, v in enumerate(raw)]
        return tuple(pattern[i % len(pattern)] for i in range(n))
    return (default_kind,) * n


def _attention_shape(r: Reader, m: dict, n: int, kinds: tuple[LayerKind, ...],
                     attention: bool) -> tuple[tuple[int, ...], ...]:
    """(KV heads, head size, value head size) per layer; every attention layer (some has: `attention`) needs
    positive ones."""
    if attention:
        if m.get("num_kv_heads") is None:
            raise r.fail("model.num_kv_heads", "an integer or a per-layer list (the model has attention layers)")
        if m.get("head_size") is None:
            raise r.fail("model.head_size", "an integer or a per-layer list (the model has attention layers)")
    heads, head_size = (r.per_layer(written(m, f"model.{key}"), f"model.{key}", n, minimum=KEY[f"model.{key}"].minimum)
                        for key in ("num_kv_heads", "head_size"))
    head_size_v = head_size if m.get("head_size_v") is None else \
        r.per_layer(m["head_size_v"], "model.head_size_v", n, minimum=KEY["model.head_size_v"].minimum)
    if attention:
        for key, vals in (("num_kv_heads", heads), ("head_size", head_size), ("head_size_v", head_size_v)):
            if min(vals) >= 1:
                continue  # the common case: no layer has a zero, whatever its kind
            for i, kind in enumerate(kinds):
                if kind.attention and vals[i] < 1:
                    raise r.fail(f"model.{key}" + (f"[{i}]" if isinstance(m.get(key), list) else ""),
                                 f"a positive value for attention layer {i}", vals[i])
    return heads, head_size, head_size_v


def _mamba(r: Reader, data: Any) -> MambaLayout:
    if data is None:
        raise r.fail("model.mamba", f"a mapping with kind ({', '.join(MAMBA_KINDS)}) and its fields")
    if not isinstance(data, dict):
        raise r.fail("model.mamba", "a mapping", type(data).__name__)
    row = MAMBA_KINDS[r.choice(data.get("kind"), "model.mamba.kind", KEY["model.mamba.kind"].choices)]
    # The kind's own fields are its row's (vocab/kinds.MAMBA_KINDS), beside the keys the table has.
    r.mapping(data, "model.mamba", CHILDREN["model.mamba"] + row.fields + row.optional + tuple(row.aliases)
              + row.checked + (MAMBA_STATE_DTYPE_FIELD,))
    data = dict(data)
    for alias, name in row.aliases.items():
        if data.get(alias) is None:
            continue
        if data.get(name) is not None and data[name] != data[alias]:
            raise r.fail(f"model.mamba.{alias}", f"the value of model.mamba.{name} ({data[name]!r}): both name "
                         "one field", data[alias])
        data[name] = data.pop(alias)
    params = []
    for key in row.fields:
        if data.get(key) is None:
            raise r.fail(f"model.mamba.{key}", f"a positive integer (needed by kind {row.name})")
        params.append((key, r.int_(data[key], f"model.mamba.{key}", minimum=1)))
    for key in row.optional:
        if data.get(key) is not None:
            params.append((key, r.int_(data[key], f"model.mamba.{key}", minimum=1)))
    got = dict(params)
    if row.name == "mamba1" and "intermediate_size" in got and \
            got["intermediate_size"] != got["mamba_expand"] * got["hidden_size"]:
        # transformers MambaConfig / JambaConfig: intermediate_size = expand x hidden_size, the state's width.
        raise r.fail("model.mamba.intermediate_size", f"mamba_expand x hidden_size = "
                     f"{got['mamba_expand'] * got['hidden_size']}", got["intermediate_size"])
    if row.name == "mamba2" and "intermediate_size" in got and \
            got["intermediate_size"] != got["mamba_num_heads"] * got["mamba_head_dim"]:
        # FalconH1Config.validate_architecture: mamba_d_head x mamba_n_heads == the intermediate size.
        raise r.fail("model.mamba.intermediate_size", f"mamba_num_heads x mamba_head_dim = "
                     f"{got['mamba_num_heads'] * got['mamba_head_dim']}", got["intermediate_size"])
    _check_width(r, row, data, got)
    dtype = data.get(MAMBA_STATE_DTYPE_FIELD)
    if dtype is not None:
        dtype = r.choice(dtype, f"model.mamba.{MAMBA_STATE_DTYPE_FIELD}", tuple(MODEL_DTYPES))
    return MambaLayout(kind=row.name, params=tuple(params), state_dtype=dtype)


def _check_width(r: Reader, row: Any, data: dict, got: dict) -> None:
    """A Mamba-2 section's config-file `expand` and `hidden_size`: the mixer's width expand x hidden_size must be
    the heads' mamba_num_heads x mamba_head_dim (transformers Mamba2Config: intermediate_size = int(expand x
    hidden_size); vLLM's mixer shards mamba_num_heads x head_dim), e.g. 2 x 4,096 = 128 x 64 = 8,192."""
    values = {k: r.int_(data[k], f"model.mamba.{k}", minimum=1) for k in row.checked if data.get(k) is not None}
    if "expand" not in values or "hidden_size" not in values:
        return
    width, heads = values["expand"] * values["hidden_size"], got["mamba_num_heads"] * got["mamba_head_dim"]
    if width != heads:
        raise r.fail("model.mamba.expand", f"expand x hidden_size = mamba_num_heads x mamba_head_dim "
                     f"({got['mamba_num_heads']} x {got['mamba_head_dim']} = {heads:,})",
                     f"{values['expand']} x {values['hidden_size']} = {width:,}")


def _draft(r: Reader, data: Any, kinds: set) -> DraftLayout:
    d = r.section(data, "model.draft")
    method = r.choice(d.get("method"), "model.draft.method", KEY["model.draft.method"].choices)
    ns = r.key(d, "model.draft.num_speculative_tokens")
    if method in LAYERLESS_DRAFT_METHODS:
        for key in ("num_layers", "num_kv_heads", "head_size", "head_size_v", "hf_config"):
            if d.get(key) is not None:
                raise r.fail(f"model.draft.{key}", f"no value: {method} drafting has no draft model", d[key])
        return DraftLayout(method=method, num_layers=0, num_speculative_tokens=ns)
    n = r.key(d, "model.draft.num_layers")
    if method == "dspark":
        # DeepSeek-V4's DSpark drafter reuses the target's config and decoder layer (models/deepseek_v4/nvidia/
        # dspark.py:56-100 @0.26.0); the DSpark drafters of Qwen3 / Gemma-4 / Kimi-K3 have their own: not modelled.
        if not any(k.dsv4 for k in kinds):
            raise r.fail("model.draft.method", "mtp, eagle or eagle3: kvcalc models the DSpark drafter of "
                         "DeepSeek-V4 only", method)
        for key in ("num_kv_heads", "head_size", "head_size_v"):
            if d.get(key) is not None:
                raise r.fail(f"model.draft.{key}", "no value: DSpark layers take the main model's shape", d[key])
        return DraftLayout(method=method, num_layers=n, num_speculative_tokens=ns)
    if method == "mtp":
        if not ({LayerKind.MLA, LayerKind.FULL} & kinds or any(k.dsv4 for k in kinds)):
            raise r.fail("model.draft.method", "eagle or eagle3: mtp copies the model's mla or full-attention layer",
                         method)
        for key in ("num_kv_heads", "head_size", "head_size_v"):
            if d.get(key) is not None:
                raise r.fail(f"model.draft.{key}", "no value: mtp layers take the main model's shape", d[key])
        return DraftLayout(method=method, num_layers=n, num_speculative_tokens=ns)
    for key in ("num_kv_heads", "head_size"):
        if d.get(key) is None:
            raise r.fail(f"model.draft.{key}", f"a positive integer (the {method} drafter's own attention shape)")
    return DraftLayout(
        method=method, num_layers=n, num_kv_heads=r.key(d, "model.draft.num_kv_heads"),
        head_size=r.key(d, "model.draft.head_size"), head_size_v=r.key(d, "model.draft.head_size_v"),
        num_speculative_tokens=ns,
    )
