"""The attention selection is kept per the layout values it reads (engines/vllm/attention_block.READS): a layout
that differs anywhere the selection looks must not get another layout's plan. Each selection below runs on a proxy
that records every attribute it reads; a read outside READS (a new rule reading a new field) fails here, before a
memo could hand one layout's backend to another."""

import glob
import os

import pytest

from kvcalc import load_layout
from kvcalc.engines.vllm import attention_block
from kvcalc.vocab.errors import KvcalcError
from kvcalc.vocab.records import replace
from kvcalc.vocab.releases.vllm import behaviour_for

from test_attention_vectors import VECTORS, layout_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Layout properties the selection may call: what each of them reads.
PROPERTIES = {"gpu_class": {"gpu", "gpu_arch", "platform"}, "capability": {"gpu", "gpu_arch", "platform"}}


class Reads:
    """Stands in for a record and records the dotted path of each attribute read through it."""

    def __init__(self, obj, path: str, seen: set):
        self._obj, self._path, self._seen = obj, path, seen

    def __getattr__(self, name: str):
        value = getattr(self._obj, name)
        path = f"{self._path}{name}"
        if not self._path and name in PROPERTIES:  # a property of the layout: what it reads
            self._seen.update(PROPERTIES[name])
            return value
        if not self._path and name in ("cache", "parallel", "offload"):  # records the selection reads a field of
            return Reads(value, f"{name}.", self._seen)
        self._seen.add(path)
        return value


def _reads(layout, version: str) -> set:
    seen: set = set()
    try:
        attention_block.select_attention(Reads(layout, "", seen), behaviour_for(version))
    except KvcalcError:
        pass  # a refusal reads what it read before refusing: still checked
    return seen


def _example_layouts():
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))):
        try:
            yield os.path.basename(path), load_layout(path)
        except KvcalcError:
            continue


def test_every_read_of_the_selection_is_in_its_memo_key():
    read: set = set()
    sampled = VECTORS[::7]  # every 7th of 2,033 vectors: every release, GPU class, model kind and KV dtype
    for v in sampled:
        read |= _reads(layout_of(v), v["release"])
    for _, layout in _example_layouts():
        read |= _reads(layout, layout.vllm_version)
    assert {"model", "cache.block_size", "gpu", "attention_backend"} <= read, f"the proxy recorded only {read}"
    outside = sorted(read - set(attention_block.READS))
    assert outside == [], f"the selection reads {outside}, which its memo key (READS) does not hold"
    assert len(sampled) > 250, f"only {len(sampled)} vectors sampled"


def test_a_kept_plan_equals_a_fresh_selection():
    for name, layout in _example_layouts():
        behaviour = behaviour_for(layout.vllm_version)
        first = attention_block.plan_attention(layout, behaviour)
        assert attention_block.plan_attention(layout, behaviour) is first, f"{name}: the second plan is not kept"
        assert first == attention_block.select_attention(layout, behaviour), f"{name}: the kept plan differs"


@pytest.mark.parametrize("block", [32, 64])
def test_a_layout_differing_in_a_read_field_gets_its_own_plan(block):
    layout = load_layout(os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"))
    behaviour = behaviour_for(layout.vllm_version)
    default = attention_block.plan_attention(layout, behaviour)
    other = attention_block.plan_attention(replace(layout, cache=replace(layout.cache, block_size=block)), behaviour)
    assert (default.block_size, other.block_size) == (16, block), "block size of the default and the given layout"


def test_the_memo_is_bounded():
    layout = load_layout(os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"))
    behaviour = behaviour_for(layout.vllm_version)
    for block in range(16, 16 * (attention_block._PLANS_KEPT + 40), 16):
        attention_block.plan_attention(replace(layout, cache=replace(layout.cache, block_size=block)), behaviour)
    assert len(attention_block._PLANS) <= attention_block._PLANS_KEPT, "plans kept past the bound"
