"""Runs of layers: the unit every stage after the layer builder works on. A `Run` is the layers
`model.layers.{i}.{module}` for `i` in one range, all with one spec; a stage, a group or a tensor list is a tuple of
runs, so a 61-layer MLA model is one run and a plan costs O(distinct shapes), not O(layers). Layer names are
expanded only for reports and --verify."""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from ...vocab.units import cdiv

if TYPE_CHECKING:
    from .specs import KVCacheSpec


if TYPE_CHECKING:
    class Run(NamedTuple):
        """The layers `model.layers.{i}.{module}` for `i` in `indices`, every one with `spec`."""

        module: str  # the name after `model.layers.{i}.`, e.g. "self_attn.attn"
        order: int  # position among one decoder layer's KV modules, in registration order
        indices: range  # decoder layer indices (drafter layers continue after the target's)
        spec: KVCacheSpec
else:
    class Run(tuple):
        """The NamedTuple above, built by hand: typing.NamedTuple compiles its constructor from source at import
        (~0.8 M instructions of every command's start-up)."""

        __slots__ = ()

        def __new__(cls, module, order, indices, spec):
            return tuple.__new__(cls, (module, order, indices, spec))

        module = property(itemgetter(0))
        order = property(itemgetter(1))
        indices = property(itemgetter(2))
        spec = property(itemgetter(3))

        def _replace(self, **changes):
            return Run(changes.get("module", self[0]), changes.get("order", self[1]),
                       changes.get("indices", self[2]), changes.get("spec", self[3]))

        def __repr__(self):
            return f"Run(module={self[0]!r}, order={self[1]!r}, indices={self[2]!r}, spec={self[3]!r})"


def layer_count(runs: tuple[Run, ...]) -> int:
    return sum(len(r.indices) for r in runs)


def first_run(runs: tuple[Run, ...]) -> Run:
    """The run holding the first layer in registration order (decoder index, then module order)."""
    return min((r for r in runs if r.indices), key=lambda r: (r.indices[0], r.order))


def spec_counts(runs: tuple[Run, ...]) -> dict[KVCacheSpec, int]:
    """Distinct specs -> how many layers carry each, in order of first appearance."""
    if len(runs) == 1:
        return {runs[0].spec: len(runs[0].indices)}
    out: dict[KVCacheSpec, int] = {}
    for r in sorted((r for r in runs if r.indices), key=lambda r: (r.indices[0], r.order)):
        out[r.spec] = out.get(r.spec, 0) + len(r.indices)
    return out


def ordered(runs: tuple[Run, ...]) -> list[tuple[int, int, Run]]:
    """Every layer as (decoder index, module order, its run), in registration order."""
    if len(runs) == 1:
        r = runs[0]
        return [(i, r.order, r) for i in r.indices]
    return sorted(((i, r.order, r) for r in runs for i in r.indices), key=lambda x: (x[0], x[1]))


def layer_names(runs: tuple[Run, ...]) -> tuple[str, ...]:
    return tuple(f"model.layers.{i}.{r.module}" for i, _, r in ordered(runs))


def named_specs(runs: tuple[Run, ...]) -> tuple[tuple[str, KVCacheSpec], ...]:
    """(layer name, spec) per layer, in registration order (for reports and tests)."""
    return tuple((f"model.layers.{i}.{r.module}", r.spec) for i, _, r in ordered(runs))


def runs_from_names(specs: dict[str, KVCacheSpec]) -> tuple[Run, ...]:
    """An ordered {"model.layers.{i}.{module}": spec} -> runs (the inverse of named_specs; modules keep the
    order they first appear in within a layer)."""
    module_order: dict[str, int] = {}
    items = []
    for name, spec in specs.items():
        head, _, rest = name.partition("model.layers.")
        index, _, module = rest.partition(".")
        if head or not index.isdigit() or not module:
            raise ValueError(f"not a vLLM layer name: {name!r}")
        order = module_order.setdefault(module, len(module_order))
        items.append((int(index), order, Run(module, order, range(int(index), int(index) + 1), spec)))
    return _compress(sorted(items, key=lambda x: (x[0], x[1])))


def clip(r: range, lo: int, hi: int) -> range:
    """The part of a (positive-step) range inside [lo, hi): `r` itself when it lies inside (the common case: one
    PP stage, or a run within one stage)."""
    if not r or (r.start >= lo and r.stop <= hi):
        return r
    start = r.start if r.start >= lo else r.start + cdiv(lo - r.start, r.step) * r.step
    return range(start, max(start, min(r.stop, hi)), r.step)


def restrict(runs: tuple[Run, ...], lo: int, hi: int) -> tuple[Run, ...]:
    """The runs' layers whose decoder index lies in [lo, hi) (one PP stage's share): `runs` itself when the
    stage holds them all."""
    if all(r.indices and r.indices.start >= lo and r.indices.stop <= hi for r in runs):
        return runs
    out = []
    for r in runs:
        clipped = clip(r.indices, lo, hi)
        if clipped:
            out.append(r if clipped == r.indices else r._replace(indices=clipped))
    return tuple(out)


def progressions(idx: list[int]) -> list[range]:
    """Ascending indices -> maximal arithmetic progressions ([0, 2, 4, 5] -> range(0, 5, 2), range(5, 6))."""
    out = []
    j = 0
    while j < len(idx):
        step = idx[j + 1] - idx[j] if j + 1 < len(idx) else 1
        k = j + 1
        while k < len(idx) and idx[k] - idx[k - 1] == step:
            k += 1
        out.append(range(idx[j], idx[k - 1] + 1, step))
        j = k
    return out


def _compress(items: list[tuple[int, int, Run]]) -> tuple[Run, ...]:
    """Layers in order -> runs: per (module, order, spec), maximal arithmetic progressions of indices."""
    by_key: dict[tuple, list[int]] = {}
    template: dict[tuple, Run] = {}
    for i, order, r in items:
        key = (r.module, order, r.spec)
        by_key.setdefault(key, []).append(i)
        template.setdefault(key, r)
    return tuple(template[key]._replace(indices=p) for key, idx in by_key.items() for p in progressions(idx))


def strided_split(runs: tuple[Run, ...], k: int) -> list[tuple[Run, ...]]:
    """vLLM's rule E split of one bucket into k groups: group i holds the bucket's layers i, i+k, i+2k, ..."""
    if len(runs) == 1:
        r = runs[0]
        return [(r._replace(indices=r.indices[i::k]),) for i in range(k) if r.indices[i::k]]
    cycle = _interleaved(runs)
    if cycle is not None:
        # The layers in order cycle through the m runs (Qwen3-Next: 36 GDN layers as 3 runs 0,4,8.. 1,5,9..
        # 2,6,10..), so layer p of the bucket is run p mod m's (p div m)-th layer: no per-layer walk.
        # When k is a multiple of m each group is a slice of one run (the same progression _compress finds).
        m = len(cycle)
        if k % m == 0:
            q = k // m
            return [(cycle[i % m]._replace(indices=cycle[i % m].indices[i // m::q]),) for i in range(k)
                    if cycle[i % m].indices[i // m::q]]
    items = ordered(runs)
    return [_compress(items[i::k]) for i in range(k) if items[i::k]]


def _interleaved(runs: tuple[Run, ...]) -> list[Run] | None:
    """The runs in start order when they share one step and one length and start within one step of each other
    (their layers interleave one by one), else None."""
    first = runs[0].indices
    step, n = first.step, len(first)
    if n < 2 or any(r.indices.step != step or len(r.indices) != n for r in runs):
        return None
    cycle = sorted(runs, key=lambda r: r.indices.start)
    if cycle[-1].indices.start - cycle[0].indices.start >= step:
        return None
    return cycle
