"""The vocabulary as tables: layer kinds, KV cache dtypes, Mamba kinds (with their state shapes), the TP head rule.

Later stages branch on these records, never on kind strings. Adding a Mamba kind is one `MambaKind` row plus
its shape function; adding a KV dtype is one `KV_DTYPES` row.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Callable

from .records import record


class LayerKind(str, Enum):
    """What one decoder layer owns (the layout's `layer_types` vocabulary)."""

    FULL = "full_attention"
    SLIDING = "sliding_attention"
    CHUNKED = "chunked_attention"
    MLA = "mla"
    MAMBA = "mamba"
    NONE = "none"
    FULL_MAMBA = "full_attention+mamba"  # Falcon-H1: attention, then Mamba, in every layer
    # DeepSeek-V4 (engines/vllm/dsv4.py): a sliding-window MLA cache in every layer; compress ratio 4 ("CSA": with
    # the lightning indexer) or 128 ("HCA") adds a compressed MLA cache and its compressor's state.
    DSV4_SWA = "dsv4_swa"
    DSV4_CSA = "dsv4_csa"
    DSV4_HCA = "dsv4_hca"

    # str's own hash and equality (Enum's __hash__ is a Python call: kinds are hashed per run in hot paths);
    # LayerKind.FULL == "full_attention" either way.
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def attention(self) -> bool:
        """Owns a standard (non-MLA) attention module."""
        return self in _STD_ATTENTION

    @property
    def mamba(self) -> bool:
        """Owns a Mamba / linear-attention state."""
        return self in _OWNS_MAMBA

    @property
    def dsv4(self) -> bool:
        """A DeepSeek-V4 layer."""
        return self in _DSV4


_STD_ATTENTION = frozenset({LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED, LayerKind.FULL_MAMBA})
_OWNS_MAMBA = frozenset({LayerKind.MAMBA, LayerKind.FULL_MAMBA})
_DSV4 = frozenset({LayerKind.DSV4_SWA, LayerKind.DSV4_CSA, LayerKind.DSV4_HCA})
LAYER_KINDS = tuple(k.value for k in LayerKind)


# ---------------------------------------------------------------------------------------------------------
# KV cache dtypes (`--kv-cache-dtype`), as vLLM's KVQuantMode (v1/kv_cache_interface.py @0.33.0) classes them.

class KVQuant(str, Enum):
    NONE = "none"  # plain elements (fp8 is per-tensor scaled: no extra bytes in the page)
    PER_TOKEN_HEAD = "per_token_head"  # + one fp32 scale per token, head and K/V (0.20.0+)
    NVFP4 = "nvfp4"  # each head dim x packs into x//2 data + x//16 scale bytes (0.20.0+)

    # str's own hash (Enum's is a Python call, and intern keys holding a spec's kv_quant hash it every plan).
    __hash__ = str.__hash__


@record
class KVDtype:
    name: str
    storage: str | None  # torch dtype of the cache tensor; None: the model's dtype
    quant: KVQuant
    since: tuple[int, int, int]  # first release that accepts the string


_0 = (0, 0, 0)
_020 = (0, 20, 0)
def _kv(name: str, storage: str | None, quant: KVQuant, since: tuple[int, int, int]) -> KVDtype:
    return KVDtype(name=name, storage=storage, quant=quant, since=since)


KV_DTYPES: dict[str, KVDtype] = {d.name: d for d in (
    _kv("auto", None, KVQuant.NONE, _0),
    _kv("bfloat16", "bfloat16", KVQuant.NONE, _0),
    _kv("float16", "float16", KVQuant.NONE, _0),
    _kv("half", "float16", KVQuant.NONE, _0),
    _kv("float32", "float32", KVQuant.NONE, _0),
    _kv("float", "float32", KVQuant.NONE, _0),
    _kv("fp8", "uint8", KVQuant.NONE, _0),
    _kv("fp8_e4m3", "uint8", KVQuant.NONE, _0),
    _kv("fp8_e5m2", "uint8", KVQuant.NONE, _0),
    _kv("fp8_inc", "uint8", KVQuant.NONE, _0),
    _kv("int8", "uint8", KVQuant.NONE, _0),
    _kv("fp8_ds_mla", "uint8", KVQuant.NONE, _0),  # MLA only: 656 B per token
    _kv("int8_per_token_head", "uint8", KVQuant.PER_TOKEN_HEAD, _020),
    _kv("fp8_per_token_head", "uint8", KVQuant.PER_TOKEN_HEAD, _020),
    _kv("nvfp4", "uint8", KVQuant.NVFP4, _020),
)}
KV_CACHE_DTYPES = tuple(KV_DTYPES)


# ---------------------------------------------------------------------------------------------------------
# The TP head rule (spec 3.2), in one place: the validator and the layer builder both call it.

class HeadRuleError(ValueError):
    """The head count and the TP size do not fit; the message is what would."""


def heads_per_rank(total: int, tp: int, *, replicates: bool = True) -> int:
    """KV heads one TP rank holds: total / TP, or one replicated head when TP exceeds the heads
    (8 heads, TP 16 -> 1). Models whose attention computes heads // TP without a floor (gpt-oss) refuse TP > heads."""
    if total >= tp:
        if total % tp:
            raise HeadRuleError(f"a KV head count divisible by tensor_parallel_size {tp}")
        return total // tp
    if not replicates:
        raise HeadRuleError(f"at least tensor_parallel_size {tp} KV heads: this model's attention does not "
                            "replicate heads (gpt-oss)")
    if tp % total:
        raise HeadRuleError(f"a KV head count that divides tensor_parallel_size {tp} (heads are replicated)")
    return 1


# ---------------------------------------------------------------------------------------------------------
# Mamba / linear-attention kinds (spec 4.1; vLLM model_executor/layers/mamba/mamba_utils.py @0.19.1).
# A shape function gets the kind's fields, the TP size, the speculative tokens and `exact(a, b, what)` (a ÷ b,
# refused when it does not divide), and returns the per-sequence state shapes, conv state first.

if TYPE_CHECKING:  # (a typing.Callable[...] alias built at import costs start-up time on every command)
    Exact = Callable[[int, int, str], int]


def _mamba1(g: dict, tp: int, ns: int, exact: Exact) -> list[tuple[int, ...]]:
    # Jamba: intermediate = expand * hidden; conv (k - 1) x I/tp, ssm I/tp x d_state (no speculative rows).
    per = exact(g["mamba_expand"] * g["hidden_size"], tp, "mamba_expand * hidden_size")
    return [(g["mamba_d_conv"] - 1, per), (per, g["mamba_d_state"])]


def _mamba2(g: dict, tp: int, ns: int, exact: Exact) -> list[tuple[int, ...]]:
    nh, hd, groups, d_state = g["mamba_num_heads"], g["mamba_head_dim"], g["n_groups"], g["ssm_state_size"]
    inter = g.get("intermediate_size", nh * hd)
    # extra_groups_for_head_shards: groups that do not shard evenly are replicated up to TP (1 group, TP 4 -> 4).
    groups = groups if groups % tp == 0 else tp
    conv_dim = inter + 2 * groups * d_state
    return [(g["conv_kernel"] - 1 + ns, exact(conv_dim, tp, "conv dim")),
            (exact(nh, tp, "mamba_num_heads"), hd, d_state)]


def _gated_delta_net(g: dict, tp: int, ns: int, exact: Exact) -> list[tuple[int, ...]]:
    nk, nv = g["linear_num_key_heads"], g["linear_num_value_heads"]
    dk, dv = g["linear_key_head_dim"], g["linear_value_head_dim"]
    conv_dim = dk * nk * 2 + dv * nv
    return [(g["linear_conv_kernel_dim"] - 1 + ns, exact(conv_dim, tp, "conv dim")),
            (exact(nv, tp, "linear_num_value_heads"), dv, dk)]


def _short_conv(g: dict, tp: int, ns: int, exact: Exact) -> list[tuple[int, ...]]:
    return [(g["conv_L_cache"] - 1, exact(g["hidden_size"], tp, "hidden_size"))]


def _linear_attention(g: dict, tp: int, ns: int, exact: Exact) -> list[tuple[int, ...]]:
    # MiniMax: one (heads // tp, d, d) state; vLLM floors the heads here (no divide()).
    return [(g["num_attention_heads"] // tp, g["head_dim"], g["head_dim"])]


@record
class MambaKind:
    name: str
    module: str  # vLLM's module name in the reference model of that kind (the layer name's suffix)
    fields: tuple[str, ...]  # required, under their Hugging Face names
    optional: tuple[str, ...]
    shapes: Callable[..., list[tuple[int, ...]]]
    # Models of this kind support Mamba prefix caching in mode "all" (0.19.1's list: Jamba, Mamba, Mamba2,
    # NemotronH, Bamba, Zamba2, GraniteMoeHybrid, FalconH1); the others get "align".
    mode_all: bool
    single_state: bool  # one state, in the conv dtype (no separate SSM dtype)
    refuses_float32: bool  # vLLM refuses a float32 state for it
    # Other Hugging Face configs' names for the same fields (state-spaces MambaConfig, Mamba2Config, FalconH1Config),
    # accepted in a layout and read as the field they name; giving both spellings with two values is refused.
    aliases: dict[str, str]  # (the builder below gives {} when there are none)
    # Config-file fields that determine no state shape but must agree with those that do (Mamba2Config /
    # NemotronHConfig: intermediate = expand x hidden_size = mamba_num_heads x mamba_head_dim): accepted, checked.
    checked: tuple[str, ...] = ()


# A config-file field every Mamba kind's section accepts: the SSM state dtype the model's config names (NemotronH:
# "float32"); vLLM's --mamba-ssm-cache-dtype auto takes it (an explicit value wins).
MAMBA_STATE_DTYPE_FIELD = "mamba_ssm_cache_dtype"


def _mamba(name: str, module: str, fields: tuple[str, ...], optional: tuple[str, ...], shapes, *,
           aliases: dict | None = None, **flags) -> MambaKind:
    return MambaKind(name=name, module=module, fields=fields, optional=optional, shapes=shapes,
                     aliases=aliases or {}, **flags)


MAMBA_KINDS: dict[str, MambaKind] = {k.name: k for k in (
    # JambaConfig names; transformers MambaConfig: expand, state_size, conv_kernel (intermediate_size = expand x
    # hidden_size, checked); mamba_ssm's config: d_model, d_state, d_conv.
    _mamba("mamba1", "mamba", ("hidden_size", "mamba_expand", "mamba_d_state", "mamba_d_conv"),
              ("chunk_size", "intermediate_size"), _mamba1, mode_all=True, single_state=False, refuses_float32=False,
              aliases={"expand": "mamba_expand", "state_size": "mamba_d_state", "conv_kernel": "mamba_d_conv",
                       "d_model": "hidden_size", "d_state": "mamba_d_state", "d_conv": "mamba_d_conv"}),
    # NemotronHConfig names; Mamba2Config: num_heads, head_dim, state_size; FalconH1Config: mamba_n_heads,
    # mamba_d_head, mamba_n_groups, mamba_d_state, mamba_d_conv, mamba_chunk_size, mamba_d_ssm (intermediate).
    _mamba("mamba2", "mixer", ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
              ("chunk_size", "intermediate_size"), _mamba2, mode_all=True, single_state=False,
              refuses_float32=False,
              aliases={"num_heads": "mamba_num_heads", "head_dim": "mamba_head_dim", "state_size": "ssm_state_size",
                       "mamba_n_heads": "mamba_num_heads", "mamba_d_head": "mamba_head_dim",
                       "mamba_n_groups": "n_groups", "mamba_d_state": "ssm_state_size",
                       "mamba_d_conv": "conv_kernel", "mamba_chunk_size": "chunk_size",
                       "mamba_d_ssm": "intermediate_size"}, checked=("expand", "hidden_size")),
    _mamba("gated_delta_net", "linear_attn",
              ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
               "linear_conv_kernel_dim"), (), _gated_delta_net, mode_all=False, single_state=False,
              refuses_float32=False),
    _mamba("short_conv", "conv", ("hidden_size", "conv_L_cache"), (), _short_conv, mode_all=False,
              single_state=True, refuses_float32=False),
    _mamba("linear_attention", "self_attn", ("num_attention_heads", "head_dim"), (), _linear_attention,
              mode_all=False, single_state=True, refuses_float32=True),
)}
MAMBA_KIND_NAMES = tuple(MAMBA_KINDS)


GPU_ARCHS = ("sm90", "sm100")
GPU_ARCH_CAPABILITY = {"sm90": "9.0", "sm100": "10.0"}  # --gpu-arch: the compute capability it stands for
# vLLM 0.33.0 v1/attention/backends/gdn_attn.py: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64; the FlashInfer GDN
# prefill kernel is chosen on SM90, and on SM100 with head_k_dim 128 (mamba/gdn/qwen_gdn_linear_attn.py
# _resolve_gdn_prefill_backend).
GDN_FLASHINFER_CHECKPOINT_ALIGNMENT = 64
