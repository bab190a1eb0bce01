"""Architectures mapped for issue 32 against vLLM 0.33.0's own classes: tests/fixtures/archs2/vectors.json holds, per
config and TP size, the KV cache specs GPUModelRunner.get_kv_cache_spec returned with each model built on the meta
device (how: the fixture's header; configs and their sources: tests/fixtures/archs2/SOURCES.md). kvcalc's plan of the
same config must give the same specs (class, block size, KV heads, head sizes, window, page bytes, how many layers),
and where vLLM refused the configuration kvcalc must refuse it too."""

import json
import os
from collections import Counter

import pytest

from kvcalc.inputs.layout.read import load_layout
from kvcalc.inputs.values import overrides as make_overrides
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError, StartupRefusal

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "archs2")
VECTORS = json.load(open(os.path.join(HERE, "vectors.json")))["vectors"]
# vLLM's SinkFullAttentionSpec is a FullAttentionSpec with sink_len whose pages and grouping are full attention's
# (uniform_type_base_spec FullAttentionSpec, v1/core/single_type_kv_cache_manager.py:2723-2727); kvcalc builds the
# FullAttentionSpec and checks sink_len against the block size itself.
SAME_CLASS = {"SinkFullAttentionSpec": "FullAttentionSpec"}


def layout(config, tp, version="0.33.0", **extra):
    ov = make_overrides(dict(tp=tp, cpu_bytes=None, kv_cache_memory="40GiB", max_model_len="4096", prefix=None,
                             vllm_version=version, draft_config=None, speculative=None, **extra))
    return load_layout(os.path.join(HERE, config), overrides=ov)


def specs(p):
    out = Counter()
    for stage in p.layers.stages:
        for _, s in stage.layers:
            name = type(s).__name__
            if name == "MambaSpec":
                out[(name, s.block_size, None, None, None, None, s.page_size_bytes)] += 1
            else:  # an MLA spec's one latent has no V part of its own (vLLM: head_size_v 0)
                v = None if name == "MLAAttentionSpec" else s.head_size_v
                out[(name, s.block_size, s.num_kv_heads, s.head_size, v, s.sliding_window, s.page_size_bytes)] += 1
    return out


def expected(vector):
    out = Counter()
    for cls, block, heads, head, head_v, window, page, n in vector["layers"]:
        cls = SAME_CLASS.get(cls, cls)
        out[(cls, block, heads, head, None if cls == "MLAAttentionSpec" else head_v, window, page)] += n
    return out


@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v['config']}-tp{v['tp']}" for v in VECTORS])
def test_specs_equal_vllm_0_33_0(vector):
    extra = {"attention_backend": vector["attention_backend"]} if "attention_backend" in vector else {}
    if "refused" in vector:
        with pytest.raises(KvcalcError):
            plan(layout(vector["config"], vector["tp"], **extra))
        return
    p = plan(layout(vector["config"], vector["tp"], **extra))
    assert p.layers.block_size == vector["block_size"], "the attention block size vLLM settled"
    assert specs(p) == expected(vector), "every KV cache spec vLLM 0.33.0 built, by count"


def test_iquest_loop_bytes_per_token_by_hand():
    # iquest_loopcoder.py:130-165: 80 layers x loop_num 2; loop 0 full, loop 1 sliding over loop_window_size 64.
    # Head 5120 // 40 = 128, 8 KV heads / TP 2 = 4; a 16-token page is 16 x 2 x 4 x 128 x 2 B = 32,768.
    p = plan(layout("iquest-loopcoder.json", 2))
    pages = Counter((type(s).__name__, s.page_size_bytes, getattr(s, "sliding_window", None))
                    for _, s in p.layers.stages[0].layers)
    assert pages == {("FullAttentionSpec", 16 * 2 * 4 * 128 * 2, None): 80,
                     ("SlidingWindowSpec", 16 * 2 * 4 * 128 * 2, 64): 80}, "one cache per loop of each layer"


def test_loop_models_refuse_pipeline_parallelism():
    # None of the loop classes implements SupportsPP: vLLM's config/model.py:1569-1576 refuses PP > 1.
    for config in ("iquest-loopcoder.json", "hrm-text-default.json", "zamba2-default.json"):
        with pytest.raises(StartupRefusal, match="SupportsPP"):
            plan(layout(config, 1, pp=2))


def test_flint_refuses_a_backend_other_than_flashinfer():
    # models/flint/model.py:317-318 asserts FlashInferImpl; on an H100 vLLM 0.33.0 picks FLASH_ATTN by default.
    with pytest.raises(StartupRefusal, match="--attention-backend FLASHINFER"):
        plan(layout("flint-swa.json", 1))


def test_architecture_before_its_first_release_is_refused():
    # BeamForCausalLM joined the registry in 0.33.0 (vocab/releases/archs.py, read from each registry.py).
    with pytest.raises(StartupRefusal, match="added in 0.33.0"):
        plan(layout("beam-default.json", 1, version="0.32.0"))


def test_dory_refuses_tensor_parallelism():
    # dory.py:295-296: "Dory currently supports tensor_parallel_size=1 only".
    with pytest.raises(StartupRefusal, match="tensor_parallel_size 2"):
        plan(layout("dory-default.json", 2))


def test_kda_state_layout_before_0_23_is_refused():
    # 0.14-0.22 kept four KDA states (mamba_utils.py kda_state_dtype @0.22.1); kvcalc models the 0.23.0+ two.
    with pytest.raises(KvcalcError, match="0.23.0"):
        plan(layout("kimi-linear-48b.json", 2, version="0.22.1"))


def test_kimi_linear_recurrent_state_is_float32_by_hand():
    # kimi_gdn_linear_attn.py:155-175: conv (4 - 1, 3 x 32 x 128 / TP 2) bf16, recurrent (32 / 2, 128, 128) fp32.
    p = plan(layout("kimi-linear-48b.json", 2))
    mamba = next(s for _, s in p.layers.stages[0].layers if type(s).__name__ == "MambaSpec")
    assert mamba.shapes == ((3, 6144), (16, 128, 128)), "the KDA state shapes at TP 2"
    assert mamba.real_page_size_bytes == 3 * 6144 * 2 + 16 * 128 * 128 * 4, "bf16 conv + fp32 recurrent bytes"


def test_hy_v4_shared_indexer_layers_have_no_indexer_cache():
    # HYV4Config: indexer_types full on layer 0 and every (i - 1) % 4 == 0, so 34 layers have 9 full + 25 shared;
    # attention.py:330-340: a shared layer builds no indexer.
    p = plan(layout("hy-v4-sparse.json", 1))
    names = [n for n, _ in p.layers.stages[0].layers]
    assert sum(n.endswith("indexer.k_cache") for n in names) == 1 + len(range(1, 34, 4)), "indexer caches"
    assert sum(n.endswith("self_attn.attn") for n in names) == 34, "one MLA cache a layer"


def test_mimo_v2_pads_v_to_the_k_head_before_0_20():
    # mimo_v2_flash.py:314-322 @0.17.0 zero-pads V to head_dim 192 (no head_size_v); 0.20.0 passes head_size_v 128.
    # TP 2: full layers 4 / 2 = 2 KV heads, sliding 8 / 2 = 4; a 16-token page is 16 x heads x (K + V) x 2 B.
    for version, v in (("0.19.1", 192), ("0.20.0", 128)):
        p = plan(layout("mimo-v2-flash.json", 2, version=version))
        pages = {(type(s).__name__, s.page_size_bytes) for _, s in p.layers.stages[0].layers}
        assert pages == {("FullAttentionSpec", 16 * 2 * (192 + v) * 2),
                         ("SlidingWindowSpec", 16 * 4 * (192 + v) * 2)}, f"pages on {version}"
