"""vLLM's config validation that refuses a layout before any KV number exists: each rule with vLLM's own message
(the same text in every release kvcalc models, 0.14.0 - 0.33.0, unless noted). Pure."""

from __future__ import annotations

from ...vocab.errors import StartupRefusal
from ...vocab.layout import Layout

_LONG_WARNING = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position "
                 "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute "
                 "position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds "
                 "error.")




def verify(layout: Layout, version: str) -> None:
    """Raise vLLM's refusal when its config validation stops this layout."""
    cache, tp = layout.cache, layout.parallel.tensor_parallel_size
    limits = layout.limits
    prefix = f"vLLM {version} refuses to start: "
    if limits is not None and limits.num_attention_heads and limits.num_attention_heads % tp:
        # config/model.py verify_with_parallel_config (0.14.0:1054-1062, 0.19.1:1108-1116, 0.33.0:1557-1563).
        raise StartupRefusal(f"{prefix}Total number of attention heads ({limits.num_attention_heads}) must be "
                             f"divisible by tensor parallel size ({tp}).")
    derived = None if limits is None else limits.derived_max_model_len
    if limits is not None and derived is not None and cache.max_model_len > derived and \
            not cache.allow_long_max_model_len and (
            limits.model_max_length is None or cache.max_model_len > limits.model_max_length):
        # config/model.py _get_and_verify_max_len (0.14.0:1999-2025, 0.19.1:2155-2181, 0.33.0:2657-2683).
        raise StartupRefusal(
            f"{prefix}User-specified max_model_len ({cache.max_model_len}) is greater than the derived max_model_len "
            f"({limits.derived_key}={derived} or model_max_length={limits.model_max_length} in model's "
            "config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. "
            + _LONG_WARNING)
    if cache.enable_chunked_prefill is False and cache.max_num_batched_tokens_given and \
            cache.max_num_batched_tokens < cache.max_model_len:
        # config/scheduler.py verify_max_model_len (0.14.0:249-261, 0.33.0:317-329); a default
        # max_num_batched_tokens vLLM raises to max_model_len itself (engine/arg_utils.py 0.33.0:3194-3199).
        raise StartupRefusal(f"{prefix}max_num_batched_tokens ({cache.max_num_batched_tokens}) is smaller than "
                             f"max_model_len ({cache.max_model_len}). This effectively limits the maximum sequence "
                             "length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
                             "max_num_batched_tokens or decrease max_model_len.")
    if cache.max_num_seqs is not None and cache.max_num_batched_tokens_given and \
            cache.max_num_batched_tokens < cache.max_num_seqs:
        # config/scheduler.py verify_max_model_len (0.14.0:263-268, 0.33.0:331-336); vLLM lowers a default
        # max_num_seqs to max_num_batched_tokens itself (engine/arg_utils.py 0.33.0:3232-3234), so both are given.
        raise StartupRefusal(f"{prefix}max_num_batched_tokens ({cache.max_num_batched_tokens}) must be greater than or "
                             f"equal to max_num_seqs ({cache.max_num_seqs}).")
    if cache.num_gpu_blocks_override == 0:
        # v1/core/block_pool.py BlockPool.__init__ (0.14.0:155, 0.33.0:169): assert num_gpu_blocks > 0.
        raise StartupRefusal(f"{prefix}--num-gpu-blocks-override 0: BlockPool asserts num_gpu_blocks > 0 "
                             "(AssertionError): there is no KV cache to allocate")


def in_flight_batches(layout: Layout, behaviour, stages, notes: list[str]) -> int:
    """The batches whose tokens a sliding / chunked window keeps: vLLM 0.26+ max_in_flight_tokens =
    max_concurrent_batches x max_num_batched_tokens (config/vllm.py:512-533 @0.26.0); one before 0.26.0. Unset,
    kvcalc assumes one and says so where a window would keep more (async scheduling, on by default, keeps 2)."""
    from .specs import ChunkedLocalAttentionSpec, SlidingWindowSpec

    if not behaviour.in_flight_reserve:
        return 1
    given = layout.cache.in_flight_batches
    if given is None and any(isinstance(r.spec, (SlidingWindowSpec, ChunkedLocalAttentionSpec))
                             for s in stages for r in s.runs):
        notes.append(f"in-flight batches not set: assuming 1 (vLLM {behaviour.version} keeps max_concurrent_batches "
                     "x max_num_batched_tokens in a window: 2 with async scheduling at PP 1, PP + 1 on the V2 "
                     "runner; cache.in_flight_batches, or check --log reads it)")
    return given or 1
