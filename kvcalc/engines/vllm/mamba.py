"""The Mamba side of vLLM's layer plan: the state dtypes and the Mamba cache mode (with prefix caching) each release
settles (spec 4.2)."""

from __future__ import annotations

from ...vocab.errors import LayoutError, UnsupportedError
from ...vocab.layout import Layout
from ...vocab.releases.vllm import Behaviour
from ...vocab.units import MODEL_DTYPES


def mamba_dtypes(layout: Layout, n_states: int) -> tuple[str, ...]:
    """The Mamba state dtypes (conv, then SSM): the cache flags, auto taking the model dtype (the SSM state: the conv
    dtype), refused where vLLM refuses float32 for the kind."""
    conv = layout.cache.mamba_cache_dtype
    conv = layout.model.dtype if conv == "auto" else MODEL_DTYPES[conv]
    ssm = layout.cache.mamba_ssm_cache_dtype
    ssm = conv if ssm == "auto" else MODEL_DTYPES[ssm]
    row = layout.model.mamba_section.row
    if row.refuses_float32 and conv == "float32":
        raise UnsupportedError(f"{layout.source}: cache.mamba_cache_dtype: float32 is refused by vLLM for "
                               f"{row.name.replace('_', ' ')}")
    if row.single_state or n_states == 1:
        return (conv,)
    return (conv, ssm)


def mamba_mode(layout: Layout, behaviour: Behaviour) -> tuple[bool, str, tuple[str, ...]]:
    """(prefix caching on, Mamba cache mode, notes) as the release settles them (spec 4.2;
    model_executor/models/config.py MambaModelConfig.verify_and_update_config of each release)."""
    model, cache = layout.model, layout.cache
    prefix = cache.enable_prefix_caching
    if not model.has_mamba:
        return prefix is not False, "none", ()  # vLLM: prefix caching on by default (layers.py asks only for Mamba)
    if prefix is None:
        # vLLM's default (config/model.py is_prefix_caching_supported): hybrid models from 0.26.0, never an
        # attention-free (pure Mamba) model.
        prefix = behaviour.hybrid_prefix_caching and model.first_attention is not None
    modes = behaviour.mamba_modes
    mode, notes = "none", []
    row = model.mamba_section.row
    if cache.mamba_cache_mode != "auto":
        mode = cache.mamba_cache_mode
        if mode not in modes:
            raise LayoutError(layout.source, "cache.mamba_cache_mode",
                              f"one of {', '.join(m for m in ('auto',) + modes)} for vLLM {behaviour.version} "
                              "(config/cache.py MambaCacheMode)", mode)
    if not prefix:
        if mode != "none":
            # Every release: "Mamba cache mode is set to 'none' when prefix caching is disabled" (a warning).
            notes.append(f"mamba_cache_mode {mode!r} becomes 'none': prefix caching is off (vLLM does the same)")
        return prefix, "none", tuple(notes)
    if cache.mamba_cache_mode == "auto":
        if "align" not in modes:
            # 0.14.x: no mode; models without Mamba prefix caching turn prefix caching off.
            if not row.mode_all:
                notes.append("vLLM turns prefix caching off for this Mamba kind (no Mamba prefix caching)")
                return False, "none", tuple(notes)
            mode = "all"
        elif behaviour.mamba_default_all and row.mode_all and model.draft is not None \
                and behaviour.mamba_align_with_drafter:
            mode = "align"  # 0.20.0 - 0.21.0 (vocab/releases/vllm.py STEPS mamba_align_with_drafter)
            notes.append(f"vLLM {behaviour.version} sets Mamba cache mode 'align' by default when prefix caching and "
                         "speculative decoding are enabled")
        elif behaviour.mamba_default_all:
            mode = "all" if row.mode_all else "align"
        else:
            mode = "align"
    if mode == "all" and not row.mode_all:
        # "Hybrid or mamba-based model detected without support for prefix caching with Mamba cache 'all'
        # mode: falling back to 'align' mode." (0.15.0 - 0.31.0)
        notes.append("mamba_cache_mode 'all' falls back to 'align' for this Mamba kind (vLLM does the same)")
        mode = "align"
    return prefix, mode, tuple(notes)
