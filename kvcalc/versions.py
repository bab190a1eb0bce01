"""vLLM release -> behaviour. Every version difference kvcalc knows lives here, as data.

Two tables: `FAMILIES`, one record per release family (its releases, CPU formula, display range, what to do),
and `STEPS`, one row per behaviour flag: the value it takes from each release on. `behaviour_for(version)`
reads both once per release; later stages read the `Behaviour` and never compare version strings.
Source: ../shared/spec/vllm-kv-model.md sections 0.2-0.4, 1, 3.8, 4.3, 5, 7, 8 and 9.
"""

from __future__ import annotations

import re
from functools import cache

from .errors import StartupRefusal, UnsupportedError
from .records import record

Release = tuple[int, int, int]

# Releases whose wheels the spec read (section 0.2), and the minor series they stand for. A release in a
# series that was not read (0.23, 0.25, 0.27, 0.29, 0.31) takes the nearest older read series, with a warning.
READ_RELEASES = ("0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.19.1", "0.20.0", "0.20.2",
                 "0.21.0", "0.22.0", "0.24.0", "0.26.0", "0.28.0", "0.30.0", "0.32.0", "0.33.0")
READ_SERIES = tuple(sorted({tuple(int(x) for x in r.split(".")[:2]) for r in READ_RELEASES}))
SUPPORTED_MIN: Release = (0, 14, 0)
NEWEST_SERIES = READ_SERIES[-1]
DEFAULT_VERSION = "0.33.0"
HOST_PAGE = 4096  # mmap.PAGESIZE on x86-64: 0.28+ rounds every CPU chunk up to it

_VERSION_PATTERN = r"^v?(\d+)\.(\d+)(?:\.(\d+))?([.+\-]?[0-9A-Za-z.+\-]*)$"


@record
class OffloadRule:
    """How a family turns a worker's KV layout and the CPU budget into a CPU block (chunk) count."""

    unit: str  # "page_x_tensors" (0.14-0.19.1: page x len(tensors)) | "bytes_per_block" (sum(sizes) // num_blocks)
    chunks: bool  # 0.26+: counts are chunks of blocks_per_chunk GPU blocks (block_size sets it)
    alignment: int  # 0.28+: chunks rounded up to the 4096-byte host page
    replication: bool  # 0.28+: pure MLA under TP-only mp may be stored once (the test is the release's)
    shared_region: bool  # 0.28+: one /dev/shm region per engine instead of private pinned tensors per worker
    single_allocation: bool  # 0.30+: one backing GPU allocation; every KVCacheTensor.size is the total


@record
class Family:
    """One release family: its releases, its CPU formula, and how it is shown."""

    id: str
    first: Release  # first release of the family (FAMILIES is in release order; the next one's first ends it)
    versions: str  # display range (JSON `versions`, `kvcalc versions`, the README)
    heading: str  # offload table column heading
    representative: str | None  # the read release that stands for the family (size, the old/fixed notes)
    rule: OffloadRule | None  # None: manual (no formula)
    summary: str
    readme_formula: str  # the README table's "CPU count" cell
    action: str  # what a user should do about it
    readme_action: str  # the README table's "what to do" cell (markdown)


_OLD = OffloadRule(unit="page_x_tensors", chunks=False, alignment=1, replication=False, shared_region=False,
                   single_allocation=False)
_FIXED = OffloadRule(unit="bytes_per_block", chunks=False, alignment=1, replication=False, shared_region=False,
                     single_allocation=False)

FAMILIES: dict[str, Family] = {f.id: f for f in (
    Family(id="manual", first=(0, 0, 0), versions="<= 0.13.x", heading="manual", representative=None, rule=None,
           summary="no formula: num_cpu_blocks is set by hand in kv_connector_extra_config",
           readme_formula="none: you set `num_cpu_blocks` yourself",
           action="kvcalc only echoes num_cpu_blocks; upgrade to size the pool from bytes",
           readme_action='kvcalc refuses; that number is the pool'),
    Family(id="old", first=(0, 14, 0), versions="0.14.0 - 0.19.1", heading="old 0.14.0–0.19.1",
           representative="0.19.1", rule=_OLD,
           summary="C // (page x len(tensors) x world_size x f): counts a UniformType group's layers twice",
           readme_formula="`C // (page × len(tensors) × W × f)`",
           action="upgrade to >= 0.20.0 if your layout is UniformType (MLA + EAGLE, V3.2, per-layer heads, "
                  "skipped fp8 layers): stores go out of bounds",
           readme_action='**upgrade to ≥ 0.20.0 if your layout is UniformType** (MLA + EAGLE, DeepSeek-V3.2, per-layer KV heads, fp8 skip layers): workers get ~1/L of the blocks the scheduler hands out → out-of-bounds stores'),
    Family(id="fixed", first=(0, 20, 0), versions="0.20.0 - 0.22.x", heading="fixed 0.20.0–0.22",
           representative="0.22.1", rule=_FIXED,
           summary="C // ((sum(tensor sizes) // num_blocks) x world_size x f): the worker's true bytes",
           readme_formula="`C // ((Σ sizes // N) × W × f)`",
           action="safe for UniformType; uneven PP stages still go out of bounds",
           readme_action='safe for UniformType; HMA stays off with the connector until 0.22'),
    Family(id="packed", first=(0, 24, 0), versions="0.24.x", heading="packed", representative="0.24.0",
           rule=_FIXED, summary="as fixed; packed tensors (cross-layer blocks) count size[0], the total",
           readme_formula="as fixed (packed tensors count `size[0]`)",
           action="same counts as fixed for every classic layout",
           readme_action='same numbers for classic layouts'),
    Family(id="config", first=(0, 26, 0), versions="0.26.x", heading="config", representative="0.26.0",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, alignment=1, replication=False,
                            shared_region=False, single_allocation=False),
           summary="build_offloading_config: chunks of blocks_per_chunk GPU blocks (block_size x DCP)",
           readme_formula="chunks of `blocks_per_chunk` blocks",
           action="counts are chunks; blocks_per_chunk and block_size are exclusive",
           readme_action='hybrids need `--enable-prefix-caching`; `block_size` xor `blocks_per_chunk`'),
    Family(id="replicated", first=(0, 28, 0), versions="0.28.x", heading="replicated", representative="0.28.0",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, alignment=HOST_PAGE, replication=True,
                            shared_region=True, single_allocation=False),
           summary="4096-byte aligned chunks in one shared host region; pure MLA under TP-only mp stored once",
           readme_formula="chunks rounded up to 4096 B in one shared region; pure MLA TP-only `mp` stored once",
           action="pure-MLA TP-only runs get TP x more CPU blocks for the same budget",
           readme_action='pure-MLA TP runs get TP× more CPU blocks'),
    Family(id="single-alloc", first=(0, 30, 0), versions="0.30.x - 0.33.x", heading="single-alloc",
           representative="0.33.0",
           rule=OffloadRule(unit="bytes_per_block", chunks=True, alignment=HOST_PAGE, replication=True,
                            shared_region=True, single_allocation=True),
           summary="one backing GPU allocation: bytes per block from size[0] // num_blocks; 0.32+ replicas test",
           readme_formula="as replicated, bytes per block from the one backing allocation; 0.32+ `kv_tp_replicas` "
                          "test",
           action="MLA models (incl. V3.2's indexer) keep one copy when every layer is MLA-like",
           readme_action='V3.2 stored once too; 0.33 hybrid block sizes are approximate'),
)}
REPRESENTATIVE = {f.id: f.representative for f in FAMILIES.values() if f.representative}


# One row per behaviour: (first release, value) steps in release order; the value before the first step is the
# first row's. A release takes the value of the last step at or below it.
STEPS: dict[str, tuple[tuple[Release, object], ...]] = {
    # Rule E's group-size threshold, as numerator/denominator: 5/4 before 0.18.0, 3/2 from 0.18.0.
    "group_threshold": (((0, 0, 0), (5, 4)), ((0, 18, 0), (3, 2))),
    # Which log formulas (spec section 7).
    "log_family": (((0, 0, 0), "L1"), ((0, 21, 0), "L2"), ((0, 28, 0), "L3")),
    "log_device_prefix": (((0, 0, 0), False), ((0, 30, 0), True)),  # the log line starts with the device name
    "sliding_page_uses_head_size_v": (((0, 0, 0), False), ((0, 20, 0), True)),
    "supports_skip_layers": (((0, 0, 0), False), ((0, 19, 0), True)),  # kv_cache_dtype_skip_layers
    "hybrid_kernel_uses_block_size": (((0, 0, 0), False), ((0, 20, 0), True)),  # section 4.3
    "hybrid_block_size_approximate": (((0, 0, 0), False), ((0, 33, 0), True)),  # 0.33's extra alignment terms
    "hma_default_with_connector": (((0, 0, 0), False), ((0, 22, 0), True)),  # HMA stays on with the connector
    "hma_forced_on_allowed": (((0, 0, 0), False), ((0, 21, 0), True)),  # OffloadingConnector is SupportsHMA
    # Trap 14: the offloading scheduler asserts on a chunked-local group with HMA on.
    "offload_refuses_chunked_local": (((0, 0, 0), False), ((0, 21, 0), True), ((0, 24, 0), False)),
    # Where the shared host region (and so single-copy MLA) exists.
    "replication_platforms": (((0, 0, 0), ("cuda", "rocm")), ((0, 33, 0), ("cuda", "xpu"))),
    # 0.28-0.30: one group whose spec is exactly MLA ("narrow"); 0.32+: kv_tp_replicas == TP.
    "replication_test": (((0, 0, 0), "narrow"), ((0, 32, 0), "kv_tp_replicas")),
}


def _step(name: str, release: Release):
    value = STEPS[name][0][1]
    for first, v in STEPS[name]:
        if release >= first:
            value = v
    return value


@record
class Behaviour:
    """What one vLLM release does, as far as KV layout and CPU offload sizing go (fields: see STEPS)."""

    version: str
    release: Release
    modelled_as: Release  # the read release whose behaviour applies
    family: Family
    warning: str | None  # set when the release was not read and the mapping is unverified
    group_threshold: tuple[int, int]
    log_family: str
    log_device_prefix: bool
    sliding_page_uses_head_size_v: bool
    supports_skip_layers: bool
    hybrid_kernel_uses_block_size: bool
    hybrid_block_size_approximate: bool
    hma_default_with_connector: bool
    hma_forced_on_allowed: bool
    offload_refuses_chunked_local: bool
    replication_platforms: tuple[str, ...]
    replication_test: str

    @property
    def formula(self) -> str:
        return self.family.id

    @property
    def rule(self) -> OffloadRule:
        return self.family.rule


def parse_release(text: str) -> tuple[Release, str]:
    """`0.19.1` -> ((0, 19, 1), ''); the suffix (rc1, .post1, +cu128) is returned for a warning."""
    m = re.match(_VERSION_PATTERN, text.strip()) if isinstance(text, str) else None
    if not m:
        raise UnsupportedError(f"vLLM version {text!r} is not a release string such as 0.19.1")
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return (major, minor, patch), m.group(4) or ""


def family_of(release: Release) -> Family:
    family = FAMILIES["manual"]
    for fam in FAMILIES.values():
        if release >= fam.first:
            family = fam
    return family


def supported_range() -> str:
    """The releases kvcalc models, for help texts: '0.14.0 to 0.33.x'."""
    return f"{'.'.join(map(str, SUPPORTED_MIN))} to {NEWEST_SERIES[0]}.{NEWEST_SERIES[1]}.x"


@cache
def behaviour_for(version: str) -> Behaviour:
    """The behaviour of one release (cached: a sweep asks for the same few releases thousands of times)."""
    release, suffix = parse_release(version)
    if release < SUPPORTED_MIN:
        raise UnsupportedError(
            f"vLLM {version}: releases up to 0.13.x take num_cpu_blocks directly in kv_connector_extra_config "
            f"(no formula to check: that number is the pool); kvcalc models {supported_range()}"
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
    return Behaviour(version=version, release=release, modelled_as=modelled, family=family_of(modelled),
                     warning="; ".join(warnings) or None, **{name: _step(name, modelled) for name in STEPS})


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


def families_markdown() -> str:
    """The README's families table, from the records (a test checks the README against it)."""
    rows = ["| family | releases | CPU count | what to do |", "|---|---|---|---|"]
    for f in FAMILIES.values():
        versions = f.versions.replace(" - ", " – ").replace("<= ", "≤ ")
        rows.append(f"| `{f.id}` | {versions} | {f.readme_formula} | {f.readme_action} |")
    return "\n".join(rows) + "\n"


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
