"""vLLM release -> behaviour family. Every version difference kvcalc knows lives here, as data.

Later stages never compare version strings: they read a `Behaviour` chosen once per run, and the offload
stage looks up its family's `OffloadRule`. Source: ../shared/spec/vllm-kv-model.md sections 0.2-0.4, 1, 3.8,
4.3, 5, 7, 8 and 9.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from .errors import StartupRefusal, UnsupportedError
from .records import record

# Releases whose wheels the spec read (section 0.2), and the minor series they stand for. A release in a
# series that was not read (0.23, 0.25, 0.27, 0.29, 0.31) takes the nearest older read series, with a warning.
READ_RELEASES = ("0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.19.1", "0.20.0", "0.20.2",
                 "0.21.0", "0.22.0", "0.24.0", "0.26.0", "0.28.0", "0.30.0", "0.32.0", "0.33.0")
READ_SERIES = tuple(sorted({tuple(int(x) for x in r.split(".")[:2]) for r in READ_RELEASES}))
SUPPORTED_MIN = (0, 14, 0)
NEWEST_SERIES = READ_SERIES[-1]
DEFAULT_VERSION = "0.33.0"
HOST_PAGE = 4096  # mmap.PAGESIZE on x86-64: 0.28+ rounds every CPU chunk up to it
# The read release that stands for each family when another release is selected (size, the old/fixed notes).
REPRESENTATIVE = {"old": "0.19.1", "fixed": "0.22.1", "packed": "0.24.0", "config": "0.26.0",
                  "replicated": "0.28.0", "single-alloc": "0.33.0"}

_VERSION_PATTERN = r"^v?(\d+)\.(\d+)(?:\.(\d+))?([.+\-]?[0-9A-Za-z.+\-]*)$"


class OffloadRule(NamedTuple):
    """How a family turns a worker's KV layout and the CPU budget into a CPU block (chunk) count."""

    unit: str  # "page_x_tensors" (0.14-0.19.1: page x len(tensors)) | "bytes_per_block" (sum(sizes) // num_blocks)
    chunks: bool  # 0.26+: counts are chunks of blocks_per_chunk GPU blocks (block_size sets it)
    alignment: int  # 0.28+: chunks rounded up to the 4096-byte host page
    replication: bool  # 0.28+: pure MLA under TP-only mp may be stored once (the test is the release's)
    shared_region: bool  # 0.28+: one /dev/shm region per engine instead of private pinned tensors per worker
    packed_tensors: bool  # 0.24-0.26: optional packed tensors (every size the total)
    single_allocation: bool  # 0.30+: one backing GPU allocation; every KVCacheTensor.size is the total


class Family(NamedTuple):
    id: str
    versions: str
    rule: OffloadRule | None  # None: manual (no formula)
    summary: str
    action: str  # what a user should do about it


_OLD = OffloadRule(unit="page_x_tensors", chunks=False, alignment=1, replication=False, shared_region=False,
                   packed_tensors=False, single_allocation=False)
_FIXED = OffloadRule(unit="bytes_per_block", chunks=False, alignment=1, replication=False, shared_region=False,
                     packed_tensors=False, single_allocation=False)

FAMILIES = {
    "manual": Family(id="manual", versions="<= 0.13.x", rule=None,
                     summary="no formula: num_cpu_blocks is set by hand in kv_connector_extra_config",
                     action="kvcalc only echoes num_cpu_blocks; upgrade to size the pool from bytes"),
    "old": Family(id="old", versions="0.14.0 - 0.19.1", rule=_OLD,
                  summary="C // (page x len(tensors) x world_size x f): counts a UniformType group's layers twice",
                  action="upgrade to >= 0.20.0 if your layout is UniformType (MLA + EAGLE, V3.2, per-layer heads, "
                         "skipped fp8 layers): stores go out of bounds"),
    "fixed": Family(id="fixed", versions="0.20.0 - 0.22.x", rule=_FIXED,
                    summary="C // ((sum(tensor sizes) // num_blocks) x world_size x f): the worker's true bytes",
                    action="safe for UniformType; uneven PP stages still go out of bounds"),
    "packed": Family(id="packed", versions="0.24.x", rule=OffloadRule(
        unit="bytes_per_block", chunks=False, alignment=1, replication=False, shared_region=False, packed_tensors=True,
        single_allocation=False),
        summary="as fixed; packed tensors (cross-layer blocks) count size[0], the total",
        action="same counts as fixed for every classic layout"),
    "config": Family(id="config", versions="0.26.x", rule=OffloadRule(
        unit="bytes_per_block", chunks=True, alignment=1, replication=False, shared_region=False, packed_tensors=True,
        single_allocation=False),
        summary="build_offloading_config: chunks of blocks_per_chunk GPU blocks (block_size x DCP)",
        action="counts are chunks; blocks_per_chunk and block_size are exclusive"),
    "replicated": Family(id="replicated", versions="0.28.x", rule=OffloadRule(
        unit="bytes_per_block", chunks=True, alignment=HOST_PAGE, replication=True, shared_region=True,
        packed_tensors=False, single_allocation=False),
        summary="4096-byte aligned chunks in one shared host region; pure MLA under TP-only mp stored once",
        action="pure-MLA TP-only runs get TP x more CPU blocks for the same budget"),
    "single-alloc": Family(id="single-alloc", versions="0.30.x - 0.33.x", rule=OffloadRule(
        unit="bytes_per_block", chunks=True, alignment=HOST_PAGE, replication=True, shared_region=True,
        packed_tensors=False, single_allocation=True),
        summary="one backing GPU allocation: bytes per block from size[0] // num_blocks; 0.32+ replicas test",
        action="MLA models (incl. V3.2's indexer) keep one copy when every layer is MLA-like"),
}


@record
class Behaviour:
    """What one vLLM release does, as far as KV layout and CPU offload sizing go."""

    version: str
    release: tuple[int, int, int]
    modelled_as: tuple[int, int, int]  # the read release whose behaviour applies
    family: Family
    warning: str | None  # set when the release was not read and the mapping is unverified
    group_threshold: tuple[int, int]  # rule E, as numerator/denominator: 5/4 before 0.18.0, 3/2 from 0.18.0
    log_family: str  # L1 (<= 0.20), L2 (0.21-0.26), L3 (0.28+)
    log_device_prefix: bool  # 0.30+: the log line starts with the device name
    sliding_page_uses_head_size_v: bool  # 0.20.0+
    supports_skip_layers: bool  # kv_cache_dtype_skip_layers: 0.19.0+
    supports_scaled_kv_dtypes: bool  # per-token-head scales, nvfp4: 0.20.0+
    hybrid_kernel_uses_block_size: bool  # section 4.3: 0.20.0+
    hybrid_block_size_approximate: bool  # 0.33 adds alignment terms kvcalc does not model
    hma_default_with_connector: bool  # 0.22.0+: HMA stays on with the OffloadingConnector
    hma_forced_on_allowed: bool  # 0.21.0+: OffloadingConnector is SupportsHMA
    offload_refuses_chunked_local: bool  # trap 14: 0.21-0.22 with HMA on
    replication_platforms: tuple[str, ...]  # where the shared host region exists
    # 0.28-0.30: one group whose spec is exactly MLA ("narrow"); 0.32+: kv_tp_replicas == TP.
    replication_test: str

    @property
    def formula(self) -> str:
        return self.family.id

    @property
    def rule(self) -> OffloadRule:
        return self.family.rule


def parse_release(text: str) -> tuple[tuple[int, int, int], str]:
    """`0.19.1` -> ((0, 19, 1), ''); the suffix (rc1, .post1, +cu128) is returned for a warning."""
    m = re.match(_VERSION_PATTERN, text.strip()) if isinstance(text, str) else None
    if not m:
        raise UnsupportedError(f"vLLM version {text!r} is not a release string such as 0.19.1")
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return (major, minor, patch), m.group(4) or ""


# The first release of each family, in order; before the first one is the manual family.
FAMILY_STARTS = (((0, 14, 0), "old"), ((0, 20, 0), "fixed"), ((0, 24, 0), "packed"), ((0, 26, 0), "config"),
                 ((0, 28, 0), "replicated"), ((0, 30, 0), "single-alloc"))


def family_of(release: tuple[int, int, int]) -> Family:
    family = "manual"
    for start, fam in FAMILY_STARTS:
        if release >= start:
            family = fam
    return FAMILIES[family]


@cache
def behaviour_for(version: str) -> Behaviour:
    """The behaviour of one release (cached: a sweep asks for the same few releases thousands of times)."""
    return _behaviour_for(version)


def _behaviour_for(version: str) -> Behaviour:
    release, suffix = parse_release(version)
    if release < SUPPORTED_MIN:
        raise UnsupportedError(
            f"vLLM {version}: releases up to 0.13.x take num_cpu_blocks directly in kv_connector_extra_config "
            "(no formula to check: that number is the pool); kvcalc models 0.14.0 to 0.33.x"
        )
    series = release[:2]
    if series > NEWEST_SERIES:
        raise UnsupportedError(f"vLLM {version} is newer than every release kvcalc read (up to "
                               f"{NEWEST_SERIES[0]}.{NEWEST_SERIES[1]}.x); its behaviour is not modelled")
    warnings = []
    modelled = release
    if series not in READ_SERIES:
        older = max(s for s in READ_SERIES if s < series)
        modelled = (older[0], older[1], 99)
        warnings.append(f"vLLM {version} was not read; modelled as {older[0]}.{older[1]}.x (unverified)")
    if suffix:
        warnings.append(f"vLLM {version}: suffix {suffix!r} ignored, modelled as {'.'.join(map(str, release))}")
    r = modelled
    return Behaviour(
        version=version,
        release=release,
        modelled_as=modelled,
        family=family_of(r),
        warning="; ".join(warnings) or None,
        group_threshold=(5, 4) if r < (0, 18, 0) else (3, 2),
        log_family="L1" if r < (0, 21, 0) else ("L2" if r < (0, 28, 0) else "L3"),
        log_device_prefix=r >= (0, 30, 0),
        sliding_page_uses_head_size_v=r >= (0, 20, 0),
        supports_skip_layers=r >= (0, 19, 0),
        supports_scaled_kv_dtypes=r >= (0, 20, 0),
        hybrid_kernel_uses_block_size=r >= (0, 20, 0),
        hybrid_block_size_approximate=r >= (0, 33, 0),
        hma_default_with_connector=r >= (0, 22, 0),
        hma_forced_on_allowed=r >= (0, 21, 0),
        offload_refuses_chunked_local=(0, 21, 0) <= r < (0, 24, 0),
        replication_platforms=("cuda", "xpu") if r >= (0, 33, 0) else ("cuda", "rocm"),
        replication_test="kv_tp_replicas" if r >= (0, 32, 0) else "narrow",
    )


def decide_hma(behaviour: Behaviour, preference: str, *, wants_off_reason: str | None) -> tuple[bool, str]:
    """Is the hybrid KV cache manager on, with the OffloadingConnector configured (spec section 0.4)?

    `preference` is auto | on | off (vLLM's --[no-]disable-hybrid-kv-cache-manager); `wants_off_reason`
    names a model rule that turns HMA off (e.g. chunked-local attention with an EAGLE drafter).
    Returns (enabled, why) or raises StartupRefusal when the user forces it on and vLLM refuses.
    """
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


def releases_table() -> list[dict]:
    """For `kvcalc versions`: each family, its releases, what changed, and which releases were read."""
    rows = []
    for fam in FAMILIES.values():
        read = [r for r in READ_RELEASES if family_of(parse_release(r)[0]).id == fam.id]
        if fam.id == "manual":
            read = ["0.12.0", "0.13.0"]
        rows.append({"family": fam.id, "versions": fam.versions, "formula": fam.summary, "action": fam.action,
                     "releases_read": read})
    return rows
