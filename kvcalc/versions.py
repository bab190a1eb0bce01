"""vLLM release -> behaviour family. Every version difference kvcalc knows lives here, as data.

Later stages never compare version strings: they read a `Behaviour` chosen once per run.
Families in this module: `old` (0.14.0-0.19.1, the double-counting CPU formula) and `fixed`
(0.20.0-0.22.x). Source: ../shared/spec/vllm-kv-model.md sections 0.3, 0.4, 1, 3.8, 4.3, 5, 7, 8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .errors import UnsupportedError

DEFAULT_VERSION = "0.22.1"

# Minor series whose wheels the spec read (section 0.2). A release in another series is mapped to
# the nearest older read series with a warning; patch releases inside a read series are taken as read.
READ_SERIES = ((0, 14), (0, 15), (0, 16), (0, 17), (0, 18), (0, 19), (0, 20), (0, 21), (0, 22))
SUPPORTED_MIN = (0, 14, 0)
SUPPORTED_MAX_SERIES = (0, 22)

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?([.+\-]?[0-9A-Za-z.+\-]*)$")


@dataclass(frozen=True, kw_only=True)
class Family:
    id: str
    versions: str
    formula: str  # which CPU-offload formula the family uses (a key into offload.FORMULAS)
    summary: str


FAMILIES = {
    "old": Family(
        id="old",
        versions="0.14.0 - 0.19.1",
        formula="old",
        summary="page_size x len(tensors) x world_size: counts a UniformType group's layers twice",
    ),
    "fixed": Family(
        id="fixed",
        versions="0.20.0 - 0.22.x",
        formula="fixed",
        summary="sum(tensor sizes) // num_blocks x world_size: the worker's true bytes per block",
    ),
}


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """What one vLLM release does, as far as KV layout and CPU offload sizing go."""

    version: str
    release: tuple[int, int, int]
    family: Family
    warning: str | None  # set when the release was not read and the mapping is unverified
    # Rule E bucket threshold (section 5): 1.25 before 0.18.0, 1.5 from 0.18.0.
    group_threshold: Fraction
    # GPU log formulas (section 7): L1 up to 0.20.x, L2 from 0.21.
    log_family: str
    # Sliding-window page uses head_size_v from 0.20.0 (2*D before); equal whenever Dv == D.
    sliding_page_uses_head_size_v: bool
    # kv_cache_dtype_skip_layers exists from 0.19.0 (absent in 0.18.0).
    supports_skip_layers: bool
    # per-token-head scale dtypes and nvfp4 exist from 0.20.0.
    supports_scaled_kv_dtypes: bool
    # Hybrid Mamba alignment (section 4.3): 0.19.1 uses a fixed kernel block; 0.20+ the larger of the
    # backend's smallest kernel block and the current block size.
    hybrid_kernel_uses_block_size: bool
    # Section 0.4: what happens to the hybrid KV cache manager when the offloading connector is set.
    hma_default_with_connector: bool  # True: stays on (0.22+); False: switched off (<= 0.21)
    hma_forced_on_allowed: bool  # False: OffloadingConnector is not SupportsHMA (<= 0.20)
    # Trap 14: the offloading scheduler asserts on a chunked-local group with HMA on (0.21-0.22).
    offload_refuses_chunked_local: bool

    @property
    def formula(self) -> str:
        return self.family.formula


def parse_release(text: str) -> tuple[tuple[int, int, int], str]:
    """`0.19.1` -> ((0, 19, 1), ''); the suffix (rc1, .post1, +cu128) is returned for a warning."""
    m = _VERSION_RE.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise UnsupportedError(f"vLLM version {text!r} is not a release string such as 0.19.1")
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return (major, minor, patch), m.group(4) or ""


def behaviour_for(version: str) -> Behaviour:
    release, suffix = parse_release(version)
    if release < SUPPORTED_MIN:
        raise UnsupportedError(
            f"vLLM {version}: releases up to 0.13.x take num_cpu_blocks directly in kv_connector_extra_config; "
            "kvcalc models 0.14.0 to 0.22.x"
        )
    series = release[:2]
    if series > SUPPORTED_MAX_SERIES:
        raise UnsupportedError(f"vLLM {version}: kvcalc models 0.14.0 to 0.22.x for now")
    warnings = []
    if series not in READ_SERIES:  # pragma: no cover - every series 0.14-0.22 was read
        older = max(s for s in READ_SERIES if s < series)
        warnings.append(f"vLLM {version} was not read; using the behaviour of {older[0]}.{older[1]}")
    if suffix:
        warnings.append(f"vLLM {version}: suffix {suffix!r} ignored, modelled as {'.'.join(map(str, release))}")
    family = FAMILIES["old" if release < (0, 20, 0) else "fixed"]
    return Behaviour(
        version=version,
        release=release,
        family=family,
        warning="; ".join(warnings) or None,
        group_threshold=Fraction(5, 4) if release < (0, 18, 0) else Fraction(3, 2),
        log_family="L1" if release < (0, 21, 0) else "L2",
        sliding_page_uses_head_size_v=release >= (0, 20, 0),
        supports_skip_layers=release >= (0, 19, 0),
        supports_scaled_kv_dtypes=release >= (0, 20, 0),
        hybrid_kernel_uses_block_size=release >= (0, 20, 0),
        hma_default_with_connector=release >= (0, 22, 0),
        hma_forced_on_allowed=release >= (0, 21, 0),
        offload_refuses_chunked_local=(0, 21, 0) <= release < (0, 23, 0),
    )


def decide_hma(behaviour: Behaviour, preference: str, *, wants_off_reason: str | None) -> tuple[bool, str]:
    """Is the hybrid KV cache manager on, with the OffloadingConnector configured (spec section 0.4)?

    `preference` is auto | on | off (vLLM's --[no-]disable-hybrid-kv-cache-manager); `wants_off_reason`
    names a model rule that turns HMA off (e.g. chunked-local attention with an EAGLE drafter).
    Returns (enabled, why) or raises StartupRefusal when the user forces it on and vLLM refuses.
    """
    from .errors import StartupRefusal

    if preference == "off":
        return False, "disabled by the user (--disable-hybrid-kv-cache-manager)"
    if preference == "on":
        if not behaviour.hma_forced_on_allowed:
            raise StartupRefusal(
                f"vLLM {behaviour.version} refuses to start: the hybrid KV cache manager was forced on but "
                "OffloadingConnector does not support it before 0.21.0"
            )
        if wants_off_reason:
            raise StartupRefusal(f"vLLM {behaviour.version} refuses to start: HMA forced on but {wants_off_reason}")
        return True, "forced on by the user (--no-disable-hybrid-kv-cache-manager)"
    if wants_off_reason:
        return False, wants_off_reason
    if behaviour.hma_default_with_connector:
        return True, "on: the OffloadingConnector supports the hybrid manager (0.22.0+)"
    return False, "off: vLLM disables the hybrid manager whenever a KV connector is set (before 0.22.0)"
