"""Per-layer KV cache specs (vLLM's `v1/kv_cache_interface.py` kinds), as frozen dataclasses.

Sizes are derived properties (computed once per object: cached_property writes to the instance dict
without going through the frozen __setattr__, and equality and hashing see only the fields); nothing
stores a total. Spec equality is dataclass equality, which is
what vLLM uses to bucket layers (section 2 of the spec: "equal class and equal fields").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from math import prod

from .errors import StartupRefusal
from .units import DTYPE_BYTES, cdiv


def spec_class(cls):
    """A frozen, keyword-only dataclass whose hash is computed once: layers share spec objects, and grouping,
    counting and merging hash them thousands of times per plan."""
    cls = dataclass(frozen=True, kw_only=True)(cls)
    field_hash = cls.__hash__

    def __hash__(self) -> int:
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = self.__dict__["_hash"] = field_hash(self)
            return h

    cls.__hash__ = __hash__
    return cls


class NotMergeable(Exception):
    """vLLM's merge asserted: the specs are not one uniform spec (a 'no', not an error)."""


@dataclass(frozen=True, kw_only=True)
class UsageContext:
    """The scheduler limits that bound one request's KV usage."""

    max_model_len: int
    max_num_batched_tokens: int
    cp: int = 1  # DCP * PCP
    max_num_encoder_input_tokens: int = 0
    mamba_cache_mode: str = "none"


@spec_class
class KVCacheSpec:
    block_size: int

    @property
    def kind(self) -> str:
        raise NotImplementedError

    @cached_property
    def page_size_bytes(self) -> int:
        raise NotImplementedError

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        raise NotImplementedError

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        # Base rule: only identical specs merge.
        if not all(s == specs[0] for s in specs[1:]):
            raise NotMergeable
        return specs[0]


@spec_class
class AttentionSpec(KVCacheSpec):
    num_kv_heads: int
    head_size: int
    dtype: str  # storage torch dtype name
    page_size_padded: int | None = None
    # Extra per-token-head quantisation, from 0.20.0: None | "per_token_head" | "nvfp4".
    kv_quant: str | None = None

    def _element_dims(self, dim: int) -> int:
        # nvfp4 packs each head dim x into x//2 data bytes + x//16 scale bytes (x=128 -> 72).
        if self.kv_quant == "nvfp4":
            return dim // 2 + dim // 16
        return dim

    def _real_page(self, dims: int) -> int:
        page = self.block_size * self.num_kv_heads * dims * DTYPE_BYTES[self.dtype]
        if self.kv_quant == "per_token_head":
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


@spec_class
class FullAttentionSpec(AttentionSpec):
    head_size_v: int
    # Set only when rule A (HMA off) folds a sliding/chunked layer into full attention.
    sliding_window: int | None = None
    attention_chunk_size: int | None = None

    @property
    def kind(self) -> str:
        return "full_attention"

    @cached_property
    def real_page_size_bytes(self) -> int:
        return self._k_plus_v_page(self.head_size_v)

    @cached_property
    def page_size_bytes(self) -> int:
        return self._padded(self.real_page_size_bytes)

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        mml = cdiv(ctx.max_model_len, ctx.cp) if ctx.cp > 1 else ctx.max_model_len
        return cdiv(mml, self.block_size) * self.page_size_bytes

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        if not all(type(s) in (FullAttentionSpec,) for s in specs):
            raise NotMergeable
        windows = {s.sliding_window for s in specs if s.sliding_window is not None}
        chunks = {s.attention_chunk_size for s in specs if s.attention_chunk_size is not None}
        if len(windows) > 1 or len(chunks) > 1:
            # vLLM raises a ValueError here, not an assertion: a hard startup error (trap 7).
            raise StartupRefusal(
                "all attention layers in one KV cache group must use the same window size "
                f"(windows {sorted(windows)}, chunks {sorted(chunks)}); with the hybrid KV cache manager off "
                "vLLM cannot start"
            )
        first = specs[0]
        for s in specs[1:]:
            for f in fields(AttentionSpec):
                if getattr(s, f.name) != getattr(first, f.name):
                    raise NotMergeable
        merged = FullAttentionSpec(
            block_size=first.block_size,
            num_kv_heads=first.num_kv_heads,
            head_size=first.head_size,
            head_size_v=first.head_size_v,
            dtype=first.dtype,
            page_size_padded=first.page_size_padded,
            kv_quant=first.kv_quant,
            sliding_window=next(iter(windows), None),
            attention_chunk_size=next(iter(chunks), None),
        )
        if merged.sliding_window is not None and merged.attention_chunk_size is not None:
            raise StartupRefusal("a KV cache group cannot mix sliding-window and chunked-local layers with HMA off")
        return merged


@spec_class
class MLAAttentionSpec(FullAttentionSpec):
    # The cache-dtype string: "auto", "fp8", "fp8_ds_mla", ...; None for the V3.2 indexer cache.
    cache_dtype_str: str | None = None

    @property
    def kind(self) -> str:
        return "mla_indexer" if self.cache_dtype_str is None else "mla"

    @cached_property
    def real_page_size_bytes(self) -> int:
        if self.cache_dtype_str == "fp8_ds_mla":
            # 512 fp8 latent + 4 fp32 scales + 64 bf16 rope = 656 bytes per token.
            return self.block_size * 656
        # One unsharded latent "head": no K/V factor of 2, no head_size_v.
        return self.block_size * self.num_kv_heads * self.head_size * DTYPE_BYTES[self.dtype]

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        if not all(type(s) is MLAAttentionSpec for s in specs):
            raise NotMergeable
        if len({s.cache_dtype_str for s in specs}) != 1:
            raise NotMergeable
        # vLLM compares only the cache-dtype string and keeps the first layer's fields.
        return specs[0]


@spec_class
class SlidingWindowSpec(AttentionSpec):
    head_size_v: int
    sliding_window: int

    @property
    def kind(self) -> str:
        return "sliding_attention"

    @cached_property
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size_v))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        # window - 1 tokens of context plus one step's new tokens, +1 block for a window straddling blocks.
        tokens = min(self.sliding_window - 1 + ctx.max_num_batched_tokens, ctx.max_model_len)
        return (cdiv(tokens, self.block_size) + 1) * self.page_size_bytes


@spec_class
class ChunkedLocalAttentionSpec(AttentionSpec):
    head_size_v: int
    attention_chunk_size: int

    @property
    def kind(self) -> str:
        return "chunked_attention"

    @cached_property
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size_v))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        tokens = min(self.attention_chunk_size + ctx.max_num_batched_tokens, ctx.max_model_len)
        return cdiv(tokens, self.block_size) * self.page_size_bytes


@spec_class
class CrossAttentionSpec(AttentionSpec):
    @property
    def kind(self) -> str:
        return "cross_attention"

    @cached_property
    def page_size_bytes(self) -> int:
        return self._padded(self._k_plus_v_page(self.head_size))

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        return cdiv(ctx.max_num_encoder_input_tokens, self.block_size) * self.page_size_bytes


@spec_class
class MambaSpec(KVCacheSpec):
    """Recurrent state: one page per sequence, independent of the block size."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    page_size_padded: int | None = None
    mamba_type: str = "mamba2"
    num_speculative_blocks: int = 0

    @property
    def kind(self) -> str:
        return "mamba"

    @cached_property
    def real_page_size_bytes(self) -> int:
        return sum(prod(shape) * DTYPE_BYTES[dt] for shape, dt in zip(self.shapes, self.dtypes))

    @cached_property
    def page_size_bytes(self) -> int:
        if self.page_size_padded is not None:
            return self.page_size_padded
        return self.real_page_size_bytes

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        if ctx.mamba_cache_mode == "all":
            return cdiv(ctx.max_model_len, self.block_size) * self.page_size_bytes
        if ctx.mamba_cache_mode == "align":
            return (2 + self.num_speculative_blocks) * self.page_size_bytes
        return (1 + self.num_speculative_blocks) * self.page_size_bytes


@spec_class
class UniformTypeKVCacheSpecs(KVCacheSpec):
    """One group of layers of one attention type whose pages differ: the page is the SUM of theirs."""

    specs: tuple[tuple[str, KVCacheSpec], ...]  # (layer name, spec), in registration order

    @property
    def kind(self) -> str:
        return "uniform_type"

    @cached_property
    def spec_by_layer(self) -> dict[str, KVCacheSpec]:
        return dict(self.specs)

    @cached_property
    def page_size_bytes(self) -> int:
        return sum(s.page_size_bytes for _, s in self.specs)

    def max_memory_usage_bytes(self, ctx: UsageContext) -> int:
        # Layers share a handful of distinct specs (61 MLA + 1 drafter = 2): evaluate each once.
        blocks = max(cdiv(s.max_memory_usage_bytes(ctx), s.page_size_bytes) for s in self.distinct_specs)
        return blocks * self.page_size_bytes

    @cached_property
    def distinct_specs(self) -> tuple[KVCacheSpec, ...]:
        return tuple({id(s): s for _, s in self.specs}.values())  # by identity: layers share spec objects

    def first_spec(self) -> KVCacheSpec:
        return self.specs[0][1]

    def restricted_to(self, names: list[str]) -> UniformTypeKVCacheSpecs:
        by_layer = self.spec_by_layer
        return UniformTypeKVCacheSpecs(block_size=self.block_size, specs=tuple((n, by_layer[n]) for n in names))


def is_full_family(spec: KVCacheSpec) -> bool:
    """vLLM's isinstance(spec, FullAttentionSpec): plain full attention and MLA (its subclass)."""
    return isinstance(spec, FullAttentionSpec)


def merge_specs(specs: list[KVCacheSpec]) -> KVCacheSpec:
    """Merge by the first spec's class rule, as `specs[0].merge(specs)` does in vLLM."""
    return type(specs[0]).merge(specs)


def is_uniform(specs: list[KVCacheSpec]) -> bool:
    """Rule B: every spec merges into one (raises StartupRefusal on two windows, as vLLM does)."""
    if not specs:
        return False
    try:
        merge_specs(specs)
    except NotMergeable:
        return False
    return True


def is_uniform_type(specs: list[KVCacheSpec]) -> bool:
    """Rule C: one block size and one attention type, judged by the first spec's class."""
    if not specs or len({s.block_size for s in specs}) > 1:
        return False
    first = specs[0]
    if isinstance(first, FullAttentionSpec):
        return all(isinstance(s, FullAttentionSpec) for s in specs)
    if isinstance(first, CrossAttentionSpec):
        return all(isinstance(s, CrossAttentionSpec) for s in specs)
    if isinstance(first, SlidingWindowSpec):
        return all(isinstance(s, SlidingWindowSpec) and s.sliding_window == first.sliding_window for s in specs)
    if isinstance(first, ChunkedLocalAttentionSpec):
        return all(
            isinstance(s, ChunkedLocalAttentionSpec) and s.attention_chunk_size == first.attention_chunk_size
            for s in specs
        )
    if isinstance(first, MambaSpec):
        return all(isinstance(s, MambaSpec) and s.num_speculative_blocks == first.num_speculative_blocks for s in specs)
    return False
