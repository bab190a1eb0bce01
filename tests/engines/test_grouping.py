"""Grouping rules A-E on hand-built spec dicts."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import chunked, full, indexer, layer_names as names, mla, runs, sw
from kvcalc.vocab.errors import StartupRefusal
from kvcalc.engines.vllm.grouping import group_layers as _group_layers


def group_layers(specs: dict, **kw):
    return _group_layers(runs(specs), **kw)


def test_uniform_single_group():
    g = group_layers({n: full() for n in names(4)}, hma_enabled=True, threshold=(3, 2))
    assert g.rule == 'uniform'
    assert len(g.groups) == 1


def test_rule_e_threshold_changed_in_018():
    # 10 full + 7 sliding: 10 < 1.5*7 = 10.5 -> group_size 10 (0.18+), but 10 >= 1.25*7 = 8.75 -> 7 (0.14-0.17).
    specs = {**{n: full() for n in names(10)}, **{n: sw() for n in names(7, 10)}}
    new = group_layers(dict(specs), hma_enabled=True, threshold=(3, 2))
    assert [len(g.layer_names) for g in new.groups] == [10, 7]
    assert new.padding_layers == 3
    old = group_layers(dict(specs), hma_enabled=True, threshold=(5, 4))
    # group_size 7: full bucket of 10 -> cdiv(10, 7) = 2 strided groups (5, 5), sliding bucket -> 1 group of 7.
    assert [len(g.layer_names) for g in old.groups] == [5, 5, 7]
    assert old.groups[0].layer_names[:2] == ("model.layers.0.self_attn.attn", "model.layers.2.self_attn.attn")


def test_rule_a_folds_sliding_into_full():
    specs = {**{n: full() for n in names(2)}, **{n: sw() for n in names(2, 2)}}
    g = group_layers(specs, hma_enabled=False, threshold=(3, 2))
    assert g.rule == 'uniform'
    assert g.folded
    assert g.groups[0].spec.sliding_window == 128


def test_rule_a_two_windows_is_a_hard_error():
    specs = {**{n: full() for n in names(1)}, **{n: sw(128) for n in names(1, 1)}, **{n: sw(256) for n in names(1, 2)}}
    with pytest.raises(StartupRefusal, match="same window"):
        group_layers(specs, hma_enabled=False, threshold=(3, 2))


def test_rule_a_fold_with_different_shapes_is_uniform_type():
    specs = {**{n: full(h=8) for n in names(2)}, **{n: sw(h=4) for n in names(2, 2)}}
    g = group_layers(specs, hma_enabled=False, threshold=(3, 2))
    assert g.rule == 'uniform_type'
    assert g.groups[0].spec.page_size_bytes == 2 * 65536 + 2 * 32768


def test_chunked_fold():
    ch = chunked()
    specs = {**{n: ch for n in names(3)}, **{n: full() for n in names(1, 3)}}
    g = group_layers(specs, hma_enabled=False, threshold=(3, 2))
    assert g.rule == 'uniform'
    assert g.groups[0].spec.attention_chunk_size == 8192
    # HMA on: 3 chunked + 1 full -> group_size 1 (3 >= 1.5) -> 4 groups of 1.
    h = group_layers(specs, hma_enabled=True, threshold=(3, 2))
    assert [len(x.layer_names) for x in h.groups] == [1, 1, 1, 1]


def test_rule_d_grows_smaller_pages():
    specs = {**{n: full(h=8) for n in names(2)}, **{n: sw(h=4) for n in names(2, 2)}}
    g = group_layers(specs, hma_enabled=True, threshold=(3, 2))
    assert g.rule == 'hybrid'
    assert {x.spec.page_size_bytes for x in g.groups} == {65536}
    assert sorted(x.spec.block_size for x in g.groups) == [16, 32]


def test_mla_and_indexer_never_merge():
    idx = indexer()
    g = group_layers({"model.layers.0.self_attn.indexer.k_cache": idx, "model.layers.0.self_attn.attn": mla()},
                     hma_enabled=False, threshold=(3, 2))
    assert g.rule == "uniform_type"
    assert g.groups[0].spec.first == idx


def test_empty_is_attention_free():
    assert group_layers({}, hma_enabled=True, threshold=(3, 2)).groups == ()


@given(step=st.integers(2, 8), data=st.data())
def test_strided_split_of_interleaved_runs_equals_the_per_layer_split(step, data):
    # specs.strided_split's shortcut (runs whose layers interleave one by one, k a multiple of their number) must
    # give exactly the groups the per-layer walk gives.
    from kvcalc.engines.vllm.runs import Run, _compress, ordered, strided_split

    starts = data.draw(st.lists(st.integers(0, step - 1), min_size=2, max_size=step, unique=True))
    n = data.draw(st.integers(1, 12))
    base = data.draw(st.integers(0, 5))
    k = len(starts) * data.draw(st.integers(1, 3))
    runs = tuple(Run("self_attn.attn", 0, range(base + s, base + s + step * n, step), full()) for s in starts)
    items = ordered(runs)
    walked = [_compress(items[i::k]) for i in range(k) if items[i::k]]
    assert strided_split(runs, k) == walked
