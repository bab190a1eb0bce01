"""DeepSeek-V4 against the vectors of tests/fixtures/dsv4/vectors.json: each from running that vLLM release's own spec,
grouping, allocation, concurrency and (0.26.0+) offload code on CPU for a real config (its header says how). kvcalc's
numbers are compared with them, never with themselves; the hand checks below are vLLM's formulas written out."""

import json
import os

import pytest

from conftest import ROOT_DIR
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError, StartupRefusal, UnsupportedError

FIXTURES = os.path.join(ROOT_DIR, "tests", "fixtures", "dsv4")
with open(os.path.join(FIXTURES, "vectors.json")) as _f:
    VECTORS = json.load(_f)["vectors"]
FLASH = os.path.join(FIXTURES, "DeepSeek-V4-Flash-0731.config.json")
KINDS = {"swa": "attn.swa_cache", "mla_c4": "attn", "mla_c128": "attn", "indexer_k_cache": "attn.indexer.k_cache",
         "indexer_compressor_state": "attn.indexer.compressor.state_cache",
         "compressor_state_c4": "attn.compressor.state_cache", "compressor_state_c128": "attn.compressor.state_cache"}


def _layout(v: dict, offload: bool) -> dict:
    cache = {"kv_cache_memory": v["gpu_kv_budget_bytes"], "max_model_len": v["max_model_len"],
             "max_num_batched_tokens": 8192, "kv_cache_dtype": v["kv_cache_dtype"]}
    if v["block_size_arg"] != "default":
        cache["block_size"] = int(v["block_size_arg"])
    data = {"model": {"hf_config": os.path.join(FIXTURES, v["config"])}, "cache": cache,
            "parallel": {"tensor_parallel_size": v["tp"]}, "vllm": {"version": v["version"]}}
    if offload:
        data["offload"] = {"cpu_bytes_to_use": 100 << 30}
    return data


def _plan(v: dict, offload: bool = False):
    return plan(layout_from_dict(_layout(v, offload), source="dsv4.yaml"))


def _id(v: dict) -> str:
    return f"{v['version']}-{v['config'][12:16]}-tp{v['tp']}-{v['kv_cache_dtype']}-{v['block_size_arg']}"


@pytest.mark.parametrize("v", VECTORS, ids=_id)
def test_gpu_vector(v):
    if v["status"].startswith("executed: startup"):
        with pytest.raises(StartupRefusal, match="fp8"):
            _plan(v)
        return
    p = _plan(v)
    w = p.gpu.workers[0]
    assert p.gpu.num_blocks == v["num_gpu_blocks"]
    assert w.bytes_per_block == v["gpu_bytes_per_block_all_groups"]
    assert w.num_tensors == v["num_kv_cache_tensors"]
    got = [(g.spec.block_size, g.num_layers, g.spec.page_size_bytes) for g in p.grouping.groups]
    assert got == [(g["block_size"], g["num_layers"], g["page_size_bytes"]) for g in v["groups"]]
    assert p.logs.max_concurrency == pytest.approx(v["max_concurrency_at_max_model_len"], rel=1e-12)
    if v["version"] != "0.20.0":  # 0.20.0 logs num_blocks // groups * min block (L1), not concurrency x length
        assert p.logs.kv_cache_size_tokens == v["logged_gpu_kv_cache_size_tokens"]
    specs = {}
    for name, spec in p.layers.stages[0].layers:
        specs.setdefault((name.split(".", 3)[3], spec), 0)
        specs[(name.split(".", 3)[3], spec)] += 1
    for kind, s in v["specs"].items():
        matches = [(spec, n) for (module, spec), n in specs.items() if module == KINDS[kind]
                   and spec.block_size == s["block_size"] and spec.page_size_bytes == s["page_size_bytes"]
                   and spec.head_size == s["head_size"]]
        assert len(matches) == 1, kind
        spec, count = matches[0]
        assert count == s["count"], kind
        assert spec.real_page_size_bytes == s["real_page_size_bytes"]
        assert spec.dtype == s["dtype"].removeprefix("torch.")
        assert getattr(spec, "sliding_window", None) == s["sliding_window"]


CPU = [v for v in VECTORS if "cpu_100GiB" in v and not v["status"].startswith("executed: startup")
       and v["version"] not in ("0.20.0", "0.20.1", "0.20.2", "0.21.0")]


@pytest.mark.parametrize("v", CPU, ids=_id)
def test_cpu_vector(v):
    p = _plan(v, offload=True)
    r = p.offload.selected_result
    assert r.scheduler.num_blocks == v["cpu_100GiB"]["chunks"]
    assert r.scheduler.aligned_bytes == v["cpu_100GiB"]["bytes_per_chunk"]
    if "replicated" in v["cpu_100GiB"]:
        assert r.replicated is bool(v["cpu_100GiB"]["replicated"])


@pytest.mark.parametrize("version", ["0.20.0", "0.21.0"])
def test_native_offloader_turns_the_hybrid_manager_off(version):
    # 0.20-0.21 turn the hybrid manager off with a KV connector (spec 0.4); vLLM then rewrites every sliding cache
    # as a full-length MLA cache (kv_cache_utils.py:1345-1375 @0.20.0): not modelled, refused by name.
    v = next(x for x in VECTORS if x["version"] == version and x["kv_cache_dtype"] == "fp8")
    with pytest.raises(UnsupportedError, match="hybrid KV cache manager off"):
        _plan(v, offload=True)


def test_not_registered_before_0_20():
    v = {**VECTORS[0], "version": "0.19.1"}
    with pytest.raises(KvcalcError, match="0.20.0"):
        _plan(v)


def test_hand_formulas_flash_0_27():
    """vLLM 0.27.0 by hand: rows of 584 B (0.20.0 kv_cache_interface.py:330-344) padded to 576 B; the MLA group's
    page is its layers' sum; the block id costs the widest group; concurrency is N / sum of each group's blocks."""
    v = next(x for x in VECTORS if x["version"] == "0.27.0" and x["tp"] == 1 and x["kv_cache_dtype"] == "fp8"
             and x["config"].startswith("DeepSeek-V4-Flash"))
    p = _plan(v)
    swa, c4, c128, idx = 37440, 37440, 1728, 8640  # 64*584 -> 576*65; 64*584; 2*584 -> 576*3; 64*132 -> 576*15
    for page, real in ((swa, 64 * 584), (c128, 2 * 584), (idx, 64 * 132)):
        assert real <= page < real + 576
        assert page % 576 == 0
    mla_page = 21 * c4 + 21 * idx + 20 * c128
    assert p.gpu.workers[0].bytes_per_block == mla_page == 1_002_240
    n = (60 << 30) // mla_page
    assert p.gpu.num_blocks == n
    # blocks one 1M request takes: MLA 1M/256; SWA cdiv(127 + 8192, 64) + 1 twice; C4 cdiv(7 + 8192, 4) + 1;
    # C128 cdiv(127 + 8192, 8) + 1
    per_request = 4096 + 2 * (-(-8319 // 64) + 1) + (-(-8199 // 4) + 1) + (-(-8319 // 8) + 1)
    assert p.logs.max_concurrency == n / per_request


def _b300():
    with open(os.path.join(FIXTURES, "deepseek-v4-flash-0731-b300-tp1-v0.26.0.log")) as f:
        return f.read()


def test_b300_log_without_the_drafter_is_refused_by_name():
    # The server ran a DSpark drafter (three more decoder layers' caches): a layout without it is refused by name
    # rather than reported as a mismatch.
    from kvcalc.tools.logcheck import check

    layout = layout_from_dict({"model": {"hf_config": FLASH}}, source="dsv4.yaml")
    with pytest.raises(UnsupportedError, match="dspark drafter"):
        check(layout, _b300(), source="b300.log")


def test_b300_log_with_the_dspark_drafter_agrees():
    # A real start-up log (vLLM 0.26.0, one B300, --speculative-config method dspark, 7 tokens; its header cites the
    # source): "GPU KV cache size: 913,657 tokens", "Maximum concurrency for 65,536 tokens per request: 13.94x".
    # The logged numbers come from the log itself; kvcalc reads the 86.74 GiB, the async scheduling and V2 runner
    # lines (2 batches in flight, config/vllm.py:512-533 @0.26.0) and plans the drafter's three sliding caches.
    from kvcalc.tools.logcheck import check

    layout = layout_from_dict({"model": {"hf_config": FLASH, "draft": {"method": "dspark",
                                                                       "num_speculative_tokens": 7}}},
                              source="dsv4.yaml")
    out = check(layout, _b300(), source="b300.log")
    rows = {r["quantity"]: r for r in out["rows"]}
    tokens = rows["GPU KV cache size (tokens)"]
    assert tokens["logged"] == "913,657", "the log's GPU KV cache size"
    assert tokens["predicted"] == "913,657", "GPU KV cache size"
    conc = rows["maximum concurrency (65,536 tokens)"]
    assert conc["logged"] == "13.94x", "the log's maximum concurrency"
    assert conc["predicted"] == "13.94x", "maximum concurrency"
    assert out["match"] is True, "every logged row agrees"
    # The block count lies in the +-0.005 GiB band of 86.74 GiB at 1,077,120 B a block id: 0.26.0's slots per page
    # size, the most layers of it in one group (the DSpark layers make both sliding groups 23 layers of 37,440 B).
    per_block = 23 * 37440 + 21 * 8640 + 20 * 1728
    assert per_block == 1_077_120
    lo, hi = -(-(8674 * (1 << 30) - (1 << 30) // 2) // 100 // per_block), (8674 * (1 << 30) + (1 << 30) // 2) // 100 \
        // per_block
    assert lo <= out["num_gpu_blocks"] <= hi, "num_gpu_blocks within the logged memory's band"


@pytest.mark.parametrize("version,blocks,stride", [("0.26.0", 7962, 1_039_680), ("0.33.0", 8260, 1_002_240)])
def test_mtp_layer_joins_the_second_sliding_group(version, blocks, stride):
    # Executed in the research (each release's own code, Flash-0731, TP 2, a 7.71 GiB pool, one MTP layer): the MTP
    # layer's sliding cache (compress ratio 1) joins the 21-layer sliding group; blocks and stride do not move.
    data = {"model": {"hf_config": FLASH, "draft": {"method": "mtp"}}, "vllm": {"version": version},
            "cache": {"kv_cache_memory": int(7.71 * (1 << 30)), "max_model_len": 1 << 20, "kv_cache_dtype": "fp8"},
            "parallel": {"tensor_parallel_size": 2}}
    p = plan(layout_from_dict(data, source="mtp.yaml"))
    swa = [g.num_layers for g in p.grouping.groups if g.spec.block_size == 64]
    assert swa == [22, 22]
    assert (p.gpu.num_blocks, p.gpu.workers[0].bytes_per_block) == (blocks, stride)


with open(os.path.join(FIXTURES, "dspark_vectors.json")) as _f:
    DSPARK = json.load(_f)["vectors"]


def _dspark_plan(v: dict):
    cache = {"kv_cache_memory": v["gpu_kv_budget_bytes"], "max_model_len": v["max_model_len"],
             "max_num_batched_tokens": 8192, "kv_cache_dtype": "fp8", "block_size": 256}
    if v["async_scheduling"]:
        cache["in_flight_batches"] = 2  # max_concurrent_batches at PP 1 with async scheduling, either runner
    data = {"model": {"hf_config": FLASH, "draft": {"method": "dspark", "num_speculative_tokens": 7}},
            "cache": cache, "parallel": {"tensor_parallel_size": v["tp"]}, "vllm": {"version": v["version"]}}
    return plan(layout_from_dict(data, source="dspark.yaml"))


@pytest.mark.parametrize("v", DSPARK, ids=lambda v: f"{v['version']}-tp{v['tp']}-async{int(v['async_scheduling'])}")
def test_dspark_vector(v):
    # Each release's own code with the DSpark drafter's three sliding caches (the fixture's header says how).
    p = _dspark_plan(v)
    assert p.gpu.num_blocks == v["num_gpu_blocks"], "num_gpu_blocks"
    assert p.gpu.workers[0].bytes_per_block == v["bytes_per_block"], "bytes per block id"
    assert p.gpu.workers[0].num_tensors == v["num_kv_cache_tensors"], "kv_cache_tensors"
    got = [[g.spec.block_size, g.num_layers, g.spec.page_size_bytes] for g in p.grouping.groups]
    assert got == v["groups"], "groups (block size, layers, page)"
    assert p.logs.max_concurrency == pytest.approx(v["max_concurrency"], rel=1e-12), "max concurrency"


def test_dspark_refused_before_its_release():
    v = {**DSPARK[0], "version": "0.24.0"}
    with pytest.raises(StartupRefusal, match="DSparkDraftModel from 0.25.0"):
        _dspark_plan(v)
