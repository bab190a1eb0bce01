"""Every held-out vector of LMCache 0.5.6's MP server (tests/fixtures/lmcache_mp/vectors.json: computed by running
LMCache 0.5.6's own server configuration, L1 allocator and KV-layout code on CPU, mocks only for pinning and device
calls; its `header` says how) against kvcalc: the pool's bytes (reserved, resident at start and once grown, heap),
each layout's object per rank and chunk, the objects a chunk takes, what the L1 holds (at start, in full, below the
eviction watermark), the server's GPU staging per registered worker, and every refusal."""

import json
import os

import pytest

from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.inputs.serve.lmcache_mp import parse
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError, LayoutError, StartupRefusal, UnsupportedError

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = json.load(open(os.path.join(HERE, "..", "fixtures", "lmcache_mp", "vectors.json"), encoding="utf-8"))
# The vectors' models, as kvcalc layouts (the harness built their vLLM tensors from the same numbers:
# harness/run_vectors.py MODELS). vLLM's fp8 KV tensors are torch.uint8 (vLLM 0.23.0 utils/torch_utils.py:38-39).
LLAMA8B = {"name": "Llama-3.1-8B", "num_layers": 32, "num_kv_heads": 8, "head_size": 128}
LLAMA70B = {"name": "Llama-3.1-70B", "num_layers": 80, "num_kv_heads": 8, "head_size": 128}
MODELS = {
    "Llama-3.1-8B": (LLAMA8B, "auto"), "Llama-3.1-8B-fp8kv": (LLAMA8B, "fp8"),
    "Llama-3.1-70B": (LLAMA70B, "auto"), "Llama-3.1-70B-fp8kv": (LLAMA70B, "fp8"),
    "DeepSeek-V3": ({"name": "DeepSeek-V3", "num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}, "auto"),
}
MOCK_RESERVES_FROM = 1 << 26  # harness/mocks.py _TorchProxy.empty records only reservations of >= 64 MiB


def server_section(argv: list[str]) -> dict:
    """The server's command line as kvcalc's reader gives it (inputs/serve/lmcache_mp.parse)."""
    return dict(parse(argv)["offload.lmcache_mp"][0])


def mp_plan(model: str, tp: int, argv: list[str], free_hugepages=None, version="0.33.0", chunk=None):
    fields, kv_dtype = MODELS[model]
    section = server_section(argv)
    if chunk is not None:
        section["chunk_size"] = chunk
    data = {"model": dict(fields), "parallel": {"tensor_parallel_size": tp},
            "cache": {"max_model_len": 131072, "kv_cache_dtype": kv_dtype, "block_size": 16},  # the vectors' block
            "offload": {"backend": "lmcache_mp", "lmcache_mp": section}, "vllm": {"version": version}}
    if free_hugepages is not None:
        data["host"] = {"free_hugepages": free_hugepages}
    return plan(layout_from_dict(data, source="vector"))


def recorded_reservation(reserved: int) -> int:
    return reserved if reserved >= MOCK_RESERVES_FROM else 0


POOL_VECTORS = [v for v in VECTORS["vectors"] if "allocator" in v]
REFUSALS = [v for v in VECTORS["vectors"] if "allocator" not in v]


def test_the_fixture_holds_what_the_issue_names():
    assert len(VECTORS["vectors"]) == 344
    assert sum(v["how"] == "executed" for v in VECTORS["vectors"]) == 341
    assert VECTORS["lmcache_version"] == "0.5.6"
    assert len(POOL_VECTORS) == 312


@pytest.mark.parametrize("v", POOL_VECTORS, ids=lambda v: f"{v['inputs']['label']}-{' '.join(v['inputs']['argv'][2:])}"
                         f"-{v['inputs']['model']}-tp{v['inputs']['tp']}")
def test_pool_vector(v):
    i = v["inputs"]
    m = mp_plan(i["model"], i["tp"], i["argv"], i["free_hugepages_mock"]).pool.mp
    p, st = m.pool, m.stages[0]
    assert m.chunk_size == i["chunk_size"]
    assert p.allocator == v["allocator"]
    assert recorded_reservation(p.reserved_bytes) == v["pool_bytes_reserved"]
    assert (p.resident_bytes_initial, p.resident_bytes) == (v["pool_bytes_resident_initial"],
                                                            v["pool_bytes_resident_final"])
    assert (p.heap_bytes_initial, p.heap_bytes) == (v["pool_heap_bytes_initial"], v["pool_heap_bytes_final"])
    assert st.object_bytes_aligned == v["bytes_per_chunk_object"]
    assert st.object_bytes_aligned - st.object_bytes == v["alignment_padding_bytes"]
    assert v["objects_per_chunk"] == 1  # one object per writer rank and chunk
    assert m.objects_per_chunk == v["objects_per_chunk_total"]
    assert m.bytes_per_chunk / m.chunk_size == v["bytes_per_token"]
    assert p.heap_bytes // st.object_bytes_aligned == v["objects_held"]
    assert m.tokens_held == v["tokens_held"]
    assert m.tokens_held_at_start == v["tokens_held_initial_heap"]
    assert m.tokens_before_eviction == v["tokens_before_eviction_trigger"]
    assert (m.eviction_policy, m.eviction_trigger_watermark) == (v["eviction"]["policy"],
                                                                 v["eviction"]["trigger_watermark"])


@pytest.mark.parametrize("v", VECTORS["layout_vectors"], ids=lambda v: f"{v['inputs']['model']}-tp{v['inputs']['tp']}"
                         f"-chunk{v['inputs']['chunk_size']}")
def test_layout_vector(v):
    # One registered worker's objects and the server's GPU buffers for it (cache_context.py:417-472).
    i = v["inputs"]
    m = mp_plan(i["model"], i["tp"], ["lmcache", "server", "--l1-size-gb", "1", "--eviction-policy", "LRU"],
                chunk=i["chunk_size"]).pool.mp
    st = m.stages[0]
    assert [st.object_bytes] == v["raw_bytes_per_object"]
    assert st.staging_bytes_per_gpu == v["server_gpu_staging_bytes_per_registered_worker"] + \
        v["server_gpu_block_ids_buffer_bytes_per_registered_worker"]
    assert st.writer_ranks == v["writer_ranks"] == sum(r["is_kv_writer"] for r in v["ranks"])
    assert m.objects_per_chunk == v["objects_per_chunk_total"]
    assert st.ranks == len(v["ranks"])


ACCEPTED = [v for v in REFUSALS if "accepted_pool" in v]
ARGV_REFUSALS = [v for v in REFUSALS if "argv" in v["inputs"] and "accepted_pool" not in v]


@pytest.mark.parametrize("v", ACCEPTED, ids=lambda v: v["inputs"]["label"])
def test_accepted_settings(v):
    # What LMCache accepts without complaint: a zero L1 (it holds nothing: the zero_cpu_blocks gate's case), a
    # watermark above 1 (the legacy flags are not range-checked), a chunk size of 0, an unreadable hugepage count.
    i, want = v["inputs"], v["accepted_pool"]
    try:
        p = mp_plan("Llama-3.1-8B", 1, i["argv"], i["free_hugepages_mock"])
    except UnsupportedError as e:
        assert "--chunk-size 0" in str(e)  # accepted by LMCache, refused by kvcalc as storing nothing
        return
    pool = p.pool.mp.pool
    assert (pool.allocator, pool.size_bytes, pool.heap_bytes, pool.resident_bytes) == \
        (want["allocator"], want["size_in_bytes"], want["heap_bytes_final"], want["resident_bytes_final"])
    assert recorded_reservation(pool.reserved_bytes) == want["reserved_bytes"]


@pytest.mark.parametrize("v", ARGV_REFUSALS, ids=lambda v: v["inputs"]["label"])
def test_refusal_vector(v):
    i, r = v["inputs"], v["refusal"]
    if r["stage"] == "argparse":
        with pytest.raises(LayoutError) as e:
            mp_plan("Llama-3.1-8B", 1, i["argv"], i["free_hugepages_mock"])
        assert r["text"] in e.value.one_line()
        return
    if v["how"] == "undetermined" or "--l1-manager" in i["argv"]:
        # A negative eager size reaches cudaHostAlloc (no CPU run shows its error); the tagged-L1 JSON path is not
        # modelled: kvcalc refuses both (exit 2) rather than guess.
        with pytest.raises(UnsupportedError if "Use either" not in (r.get("text") or "") else KvcalcError):
            p = mp_plan("Llama-3.1-8B", 1, i["argv"], i["free_hugepages_mock"])
            assert r["text"] in p.pool.startup_error
            raise KvcalcError(p.pool.startup_error)
        return
    p = mp_plan("Llama-3.1-8B", 1, i["argv"], i["free_hugepages_mock"])
    assert r["text"] in p.pool.startup_error
    assert f"{r['type']}: {r['text']}" in p.pool.startup_error
    # ...and vLLM, finding no server, gives up after its timeout (vllm_multi_process_adapter.py:305-333, read).
    unreachable = next(x for x in REFUSALS if x["inputs"]["label"].startswith("vLLM cannot reach"))
    assert unreachable["refusal"]["text_starts"] in p.pool.startup_error


def test_chunk_size_that_is_not_a_multiple_of_the_block():
    # The worker adapter's check (read: vllm_multi_process_adapter.py:1499-1505) runs before the server's own at
    # registration (executed: kv_layer_groups.py:727-765, "group 0: lmcache_tokens_per_chunk 100 must be a multiple
    # of tokens_per_block 16"): vLLM's worker stops.
    adapter = next(x for x in REFUSALS if x["inputs"]["label"].startswith("vLLM worker adapter"))
    server = next(x for x in REFUSALS if x["inputs"]["label"].startswith("server chunk 100"))
    assert "must be a multiple of tokens_per_block 16" in server["refusal"]["text"]
    with pytest.raises(StartupRefusal) as e:
        mp_plan("Llama-3.1-8B", 1, ["lmcache", "server", "--l1-size-gb", "1", "--eviction-policy", "LRU",
                                    "--chunk-size", "100"])
    assert adapter["refusal"]["text"] in e.value.one_line()
