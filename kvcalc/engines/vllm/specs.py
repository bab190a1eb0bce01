"""Per-layer KV cache specs (vLLM's `v1/kv_cache_interface.py` kinds), interned, and the merge rules on them.

Specs are frozen records whose sizes are derived properties, computed once per object; equality is class plus
fields, which is what vLLM uses to bucket layers (spec section 2: "equal class and equal fields"). Layers sharing
one spec travel as runs (runs.py).
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable, ClassVar, TypeVar, cast

from ...vocab.errors import StartupRefusal
from ...vocab.kinds import KVQuant
from ...vocab.records import cached, fields, record
from ...vocab.units import DTYPE_BYTES, cdiv, round_up
from .runs import Run, first_run, spec_counts


# Specs are interned: a plan asks for the same few shapes every time (a sweep asks 10,000 times), and an interned
# spec brings its page size, hash and max usage already computed. Bounded; cleared when full.
_INTERNED: dict = {}
INTERN_LIMIT = 4096
_S = TypeVar("_S", bound="KVCacheSpec")


def interned(make: Callable[..., _S], *args: Any, **fields: Any) -> _S:
    """The one `make(*args, **fields)`: a spec class with the fields it is built from, or a pure function of its
    arguments that builds a spec. The key is `make` and every argument, names included, so it cannot leave a field
    out or drift from what it names: two specs that differ in one field are two entries. (The same spec spelled
    with its fields in another order, or a default written out, is a second entry, never a wrong spec.)"""
    key = (make, args, *fields, *fields.values())  # one tuple: the names, then their values
    spec = _INTERNED.get(key)
    if spec is None:
        if len(_INTERNED) >= INTERN_LIMIT:
            _INTERNED.clear()
        spec = _INTERNED[key] = make(*args, **fields)
    return spec


# Contexts one spec remembers its usage for: a sweep or a loop of plans meets one or a few; 50,000 API plans with
# distinct max_model_len meet 50,000 (the memo is cleared when full).
USAGE_MEMO_LIMIT = 16


def _remember(memo: dict, key: tuple, value: int) -> int:
    if len(memo) >= USAGE_MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


class NotMergeable(Exception):
    """vLLM's merge asserted: the specs are not one uniform spec (a 'no', not an error)."""


@record
class UsageContext:
    """The scheduler limits that bound one request's KV usage."""

    max_model_len: int
    max_num_batched_tokens: int
    cp: int = 1  # DCP * PCP
    max_num_encoder_input_tokens: int = 0
    mamba_cache_mode: str = "none"

    @cached
    def key(self) -> tuple:
        return (self.max_model_len, self.max_num_batched_tokens, self.cp, self.max_num_encoder_input_tokens,
                self.mamba_cache_mode)


@record(cache_hash=True)
class KVCacheSpec:
    block_size: int
    kind: ClassVar[str] = "spec"  # the output vocabulary (JSON `kind`); never branched on

    @cached
    def page_size_bytes(self) -> int:
        raise NotImplementedError

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        raise NotImplementedError

    def max_usage(self, ctx: UsageContext) -> int:
        """max_memory_usage_bytes(ctx), remembered for the last few contexts (an interned spec meets the same few:
        1.4 % of an MLA plan; bounded, as the spec outlives the plans that ask)."""
        memo = self.__dict__.setdefault("_usage", {})
        value = memo.get(ctx.key)
        if value is None:
            value = _remember(memo, ctx.key, self.max_memory_usage_bytes(ctx))
        return value

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        # Base rule: only identical specs merge.
        if not all(s == specs[0] for s in specs[1:]):
            raise NotMergeable
        return specs[0]


@record(cache_hash=True)
class AttentionSpec(KVCacheSpec):
    num_kv_heads: int
    head_size: int
    dtype: str  # storage torch dtype name
    page_size_padded: int | None = None
    kv_quant: KVQuant = KVQuant.NONE  # extra per-token-head quantisation, from 0.20.0

    def _element_dims(self, dim: int) -> int:
        # nvfp4 packs each head dim x into x//2 data bytes + x//16 scale bytes (x=128 -> 72).
        if self.kv_quant is KVQuant.NVFP4:
            return dim // 2 + dim // 16
        return dim

    def _real_page(self, dims: int) -> int:
        page = self.block_size * self.num_kv_heads * dims * DTYPE_BYTES[self.dtype]
        if self.kv_quant is KVQuant.PER_TOKEN_HEAD:
            # One fp32 scale per token, head, and K/V: 2 * B * H * 4 bytes, before padding.
            page += 2 * self.block_size * self.num_kv_heads * 4
        return page

    def _k_plus_v_page(self, head_size_v: int) -> int:
        """Keys of head_size and values of head_size_v for every head of every token of a block."""
        return self._real_page(self._element_dims(self.head_size) + self._element_dims(head_size_v))

    def _padded(self, real: int) -> int:
        if self.page_size_padded is not None:
            if self.page_size_padded < real:  # pragma: no cover - guarded by the builder
                raise StartupRefusal(f"padded page {self.page_size_padded} is smaller than the real page {real}")
            return self.page_size_padded
        return real


_ATTENTION_FIELDS = tuple(f.name for f in fields(AttentionSpec))


@record(cache_hash=True)
class FullAttentionSpec(AttentionSpec):
    head_size_v: int
    # Set only when rule A (HMA off) folds a sliding/chunked layer into full attention.
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    kind: ClassVar[str] = "full_attention"

    @cached
    def real_page_size_bytes(self) -> int:
        return self._k_plus_v_page(self.head_size_v)

    @cached
    def page_size_bytes(self) -> int:
        return self._padded(self.real_page_size_bytes)

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        mml = cdiv(ctx.max_model_len, ctx.cp) if ctx.cp > 1 else ctx.max_model_len
        return cdiv(mml, self.block_size) * self.page_size_bytes

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        if not all(type(s) is FullAttentionSpec for s in specs):
            raise NotMergeable
        full = cast("list[FullAttentionSpec]", specs)
        windows = {s.sliding_window for s in full if s.sliding_window is not None}
        chunks = {s.attention_chunk_size for s in full if s.attention_chunk_size is not None}
        if len(windows) > 1 or len(chunks) > 1:
            # vLLM raises a ValueError here, not an assertion: a hard startup error (trap 7).
            raise StartupRefusal(
                "all attention layers in one KV cache group must use the same window size "
                f"(windows {sorted(windows)}, chunks {sorted(chunks)}); with the hybrid KV cache manager off "
                "vLLM cannot start"
            )
        first = full[0]
        for s in full[1:]:
            for name in _ATTENTION_FIELDS:
                if getattr(s, name) != getattr(first, name):
                    raise NotMergeable
        merged = FullAttentionSpec(
            block_size=first.block_size, num_kv_heads=first.num_kv_heads, head_size=first.head_size,
            head_size_v=first.head_size_v, dtype=first.dtype, page_size_padded=first.page_size_padded,
            kv_quant=first.kv_quant, sliding_window=next(iter(windows), None),
            attention_chunk_size=next(iter(chunks), None),
        )
        if merged.sliding_window is not None and merged.attention_chunk_size is not None:
            raise StartupRefusal("a KV cache group cannot mix sliding-window and chunked-local layers with HMA off")
        return merged if merged != first else first


# DeepSeek-V4's fp8_ds_mla row: 448 B fp8 NoPE + 128 B bf16 RoPE + 8 B (7 UE8M0 scales + 1 pad) a token
# (0.20.0 v1/kv_cache_interface.py:330-344, :472-484; 0.29.0+ the layers' state_content_bytes=584, 0.33.0
# models/deepseek_v4/attention.py:864-885, v1/attention/backends/mla/sparse_swa.py:120-149).
DSV4_FP8_DS_MLA_BYTES = 584


def _aligned(spec, real: int) -> int:
    """vLLM's _apply_alignment_padding (0.20.0 v1/kv_cache_interface.py:277-284; 0.33.0 :719-725): the page rounded
    up to `alignment` (FlashMLA's 576 B), unless a padded page was set."""
    if spec.page_size_padded is None and spec.alignment:
        return round_up(real, spec.alignment)
    return spec._padded(real)


@record(cache_hash=True)
class MLAAttentionSpec(FullAttentionSpec):
    # The cache-dtype string: "auto", "fp8", "fp8_ds_mla", ...; None for the V3.2 indexer cache.
    cache_dtype_str: str | None = None
    # DeepSeek-V4 only (0.20.0 v1/kv_cache_interface.py:313-345; 0.29.0+ compress_ratio is tokens_per_state): the
    # page's alignment, the tokens one stored row compresses, the model's row layout.
    alignment: int | None = None
    compress_ratio: int = 1
    model_version: str | None = None

    # The kind depends on the cache dtype: a property where the others have a ClassVar. Only instances read it (a
    # str either way), so the override is sound, but mypy cannot tell a ClassVar read on instances only.
    @property
    def kind(self) -> str:  # type: ignore[override]
        return "mla_indexer" if self.cache_dtype_str is None else "mla"

    @cached
    def real_page_size_bytes(self) -> int:
        rows = self.block_size // self.compress_ratio  # storage_block_size
        if self.cache_dtype_str == "fp8_ds_mla":
            if self.model_version == "deepseek_v4":
                return rows * DSV4_FP8_DS_MLA_BYTES
            # 512 fp8 latent + 4 fp32 scales + 64 bf16 rope = 656 bytes per token.
            return self.block_size * 656
        # One unsharded latent "head": no K/V factor of 2, no head_size_v.
        return rows * self.num_kv_heads * self.head_size * DTYPE_BYTES[self.dtype]

    @cached
    def page_size_bytes(self) -> int:
        return _aligned(self, self.real_page_size_bytes)

    @property
    def is_indexer(self) -> bool:
        return self.cache_dtype_str is None

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        if not all(type(s) is MLAAttentionSpec for s in specs):
            raise NotMergeable
        if len({s.cache_dtype_str for s in cast("list[MLAAttentionSpec]", specs)}) != 1:
            raise NotMergeable
        # vLLM compares only the cache-dtype string and keeps the first layer's fields.
        return specs[0]


@record(cache_hash=True)
class SlidingWindowSpec(AttentionSpec):
    head_size_v: int
    sliding_window: int
    kind: ClassVar[str] = "sliding_attention"

    @cached
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size_v))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        # window - 1 tokens of context plus one step's new tokens, +1 block for a window straddling blocks.
        tokens = min(self.sliding_window - 1 + ctx.max_num_batched_tokens, ctx.max_model_len)
        return (cdiv(tokens, self.block_size) + 1) * self.page_size_bytes


@record(cache_hash=True)
class SlidingWindowMLASpec(SlidingWindowSpec):
    """DeepSeek-V4's sliding-window caches and compressor states: one latent vector a token (no K and V), its page
    aligned (0.20.0 v1/kv_cache_interface.py:456-500; 0.33.0 :1008). head_size_v is 0 (0.29.0 :793-794)."""

    cache_dtype_str: str | None = None
    alignment: int | None = None
    model_version: str | None = None
    kind: ClassVar[str] = "sliding_window_mla"

    @cached
    def real_page_size_bytes(self) -> int:
        if self.model_version == "deepseek_v4":
            return self.block_size * DSV4_FP8_DS_MLA_BYTES
        return self.block_size * self.num_kv_heads * self.head_size * DTYPE_BYTES[self.dtype]

    @cached
    def page_size_bytes(self) -> int:
        return _aligned(self, self.real_page_size_bytes)


@record(cache_hash=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    head_size_v: int
    attention_chunk_size: int
    kind: ClassVar[str] = "chunked_attention"

    @cached
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size_v))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        tokens = min(self.attention_chunk_size + ctx.max_num_batched_tokens, ctx.max_model_len)
        return cdiv(tokens, self.block_size) * self.page_size_bytes


@record(cache_hash=True)
class CrossAttentionSpec(AttentionSpec):
    kind: ClassVar[str] = "cross_attention"

    @cached
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        return cdiv(ctx.max_num_encoder_input_tokens, self.block_size) * self.page_size_bytes


@record(cache_hash=True)
class MambaSpec(KVCacheSpec):
    """Recurrent state: one page per sequence, independent of the block size."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    page_size_padded: int | None = None
    mamba_type: str = "mamba2"
    num_speculative_blocks: int = 0
    num_prefill_checkpoint_blocks: int = 0  # 0.33.0: GDN layers exporting prefill checkpoints keep one more
    kind: ClassVar[str] = "mamba"

    @cached
    def real_page_size_bytes(self) -> int:
        return sum(prod(shape) * DTYPE_BYTES[dt] for shape, dt in zip(self.shapes, self.dtypes))

    @cached
    def page_size_bytes(self) -> int:
        if self.page_size_padded is not None:
            return self.page_size_padded
        return self.real_page_size_bytes

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        if ctx.mamba_cache_mode == "all":
            return cdiv(ctx.max_model_len, self.block_size) * self.page_size_bytes
        if ctx.mamba_cache_mode == "align":
            return (2 + self.num_speculative_blocks + self.num_prefill_checkpoint_blocks) * self.page_size_bytes
        return (1 + self.num_speculative_blocks) * self.page_size_bytes


@record(cache_hash=True)
class UniformTypeKVCacheSpecs(KVCacheSpec):
    """One group of layers of one attention type whose pages differ: the page is the SUM of theirs.

    vLLM keeps a per-layer dict; the sums only need each distinct spec and how many layers carry it."""

    members: tuple[tuple[KVCacheSpec, int], ...]  # (spec, layers carrying it), in first-seen order
    first: KVCacheSpec  # the first layer's spec in registration order (what the scheduler flattens to)
    kind: ClassVar[str] = "uniform_type"

    @cached
    def page_size_bytes(self) -> int:
        return sum(s.page_size_bytes * n for s, n in self.members)

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        blocks = max(cdiv(s.max_usage(ctx), s.page_size_bytes) for s, _ in self.members)
        return blocks * self.page_size_bytes

    def summed_usage(self, ctx: UsageContext) -> int:
        """Bytes one max-length request needs over the group's layers (the sum of each layer's max usage: vLLM's
        start-up memory check), remembered per context as max_usage is."""
        memo = self.__dict__.setdefault("_summed", {})
        value = memo.get(ctx.key)
        if value is None:
            value = _remember(memo, ctx.key, sum(n * s.max_usage(ctx) for s, n in self.members))
        return value

    @property
    def distinct_specs(self) -> tuple[KVCacheSpec, ...]:
        return tuple(s for s, _ in self.members)

    @classmethod
    def of(cls, runs: tuple[Run, ...]) -> UniformTypeKVCacheSpecs:
        """The UniformType spec of these layers (the group's, or one worker's share of it), interned by the runs it
        is a function of (deriving its fields first, to key by them, costs ~11 % of an MLA plan)."""
        return interned(_uniform_type_of, runs)


def _uniform_type_of(runs: tuple[Run, ...]) -> UniformTypeKVCacheSpecs:
    first = first_run(runs).spec
    return UniformTypeKVCacheSpecs(block_size=first.block_size, members=tuple(spec_counts(runs).items()), first=first)


def merge_specs(specs: list[KVCacheSpec]) -> KVCacheSpec:
    """Merge by the first spec's class rule, as `specs[0].merge(specs)` does in vLLM (one spec merges to itself)."""
    if len(specs) == 1:
        return specs[0]
    return type(specs[0]).merge(specs)


def is_uniform(specs: list[KVCacheSpec]) -> bool:
    """Rule B: every spec merges into one (raises StartupRefusal on two windows, as vLLM does)."""
    if not specs:
        return False
    cls = type(specs[0])
    for s in specs:
        if type(s) is not cls:
            return False  # every class's merge rule wants one class: answer without raising NotMergeable
    try:
        merge_specs(specs)
    except NotMergeable:
        return False
    return True


def _same_window(first: SlidingWindowSpec, s: SlidingWindowSpec) -> bool:
    return s.sliding_window == first.sliding_window


def _same_chunk(first: ChunkedLocalAttentionSpec, s: ChunkedLocalAttentionSpec) -> bool:
    return s.attention_chunk_size == first.attention_chunk_size


def _same_speculation(first: MambaSpec, s: MambaSpec) -> bool:
    return s.num_speculative_blocks == first.num_speculative_blocks


# Rule C, judged by the first spec's class: (class every spec must be an instance of, extra equality test on two
# specs of that class).
_UNIFORM_TYPE_RULES: tuple[tuple[type[KVCacheSpec], Callable[[Any, Any], bool] | None], ...] = (
    (FullAttentionSpec, None),  # includes MLA (vLLM's isinstance)
    (CrossAttentionSpec, None),
    (SlidingWindowSpec, _same_window),
    (ChunkedLocalAttentionSpec, _same_chunk),
    (MambaSpec, _same_speculation),
)


def is_uniform_type(specs: list[KVCacheSpec]) -> bool:
    """Rule C: one block size and one attention type, judged by the first spec's class."""
    if not specs:
        return False
    first = specs[0]
    for s in specs:
        if s.block_size != first.block_size:
            return False
    for cls, same in _UNIFORM_TYPE_RULES:
        if isinstance(first, cls):
            for s in specs:
                if not isinstance(s, cls) or (same is not None and not same(first, s)):
                    return False
            return True
    return False
