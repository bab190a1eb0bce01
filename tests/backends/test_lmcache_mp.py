"""LMCache's MP server as the host pool (issue 33). Numbers are derived in the comment beside each from LMCache
0.5.6's rules (backends/lmcache_mp_plan.py cites the lines) or taken from vectors computed by running LMCache's own
code (tests/fixtures/lmcache_mp/more_vectors.json, harness/more_vectors.py):

  object = chunk x (per layer of one rank: 2 x KV heads on the rank x head size x dtype bytes; MLA: the latent),
           rounded up to --l1-align-bytes; one per writer rank (every rank; MLA-only: one per PP stage)
  L1     = int(--l1-size-gb x 2^30); lazy: rounded up to 64 MiB and pinned whole in the background
  chunks = heap // (the engine's objects of one chunk); tokens = chunks x chunk
"""

import json
import os

import pytest

from conftest import GIB, deep_merge, run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import StartupRefusal, UnsupportedError

HERE = os.path.dirname(os.path.abspath(__file__))
MORE = json.load(open(os.path.join(HERE, "..", "fixtures", "lmcache_mp", "more_vectors.json"), encoding="utf-8"))
LLAMA8B = {"name": "Llama-3.1-8B", "num_layers": 32, "num_kv_heads": 8, "head_size": 128}
LLAMA70B = {"name": "Llama-3.1-70B", "num_layers": 80, "num_kv_heads": 8, "head_size": 128}
DEEPSEEK = {"name": "DeepSeek-V3", "num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
SERVER = {"l1_size_gb": 100, "eviction_policy": "LRU"}


def mp(model=LLAMA8B, tp=1, server=SERVER, version="0.33.0", **sections):
    data = {"model": dict(model), "parallel": {"tensor_parallel_size": tp},
            "cache": {"max_model_len": 131072, "block_size": 16},
            "offload": {"backend": "lmcache_mp", "lmcache_mp": dict(server)}, "vllm": {"version": version}}
    return plan(layout_from_dict(deep_merge(data, sections), source="test.yaml"))


def layout_file(tmp_path, server=SERVER, tp=1) -> str:
    """A layout YAML (JSON is YAML) of Llama-3.1-8B with the server's section, for the CLI."""
    path = tmp_path / "l.yaml"
    path.write_text(json.dumps({"model": LLAMA8B, "parallel": {"tensor_parallel_size": tp},
                                "cache": {"max_model_len": 8192},
                                "offload": {"backend": "lmcache_mp", "lmcache_mp": server},
                                "vllm": {"version": "0.33.0"}}))
    return str(path)


# ------------------------------------------------------------------------------------ one pool per node

@pytest.mark.parametrize("tp", [1, 2, 8])
def test_the_l1_is_one_pool_for_the_node_not_one_per_rank(tp):
    # SemiAnalysisAI/InferenceX#1709, #1654 sized LMCACHE_L1_SIZE_GB per rank (TOTAL_CPU_DRAM_GB / (8 / TP)). The
    # server's L1 is the node's: at TP t every rank stores its own object of 2 x 32 x 256 x (8/t) x 128 x 2 B, t of
    # them a chunk = 33,554,432 B at any TP; 100 GiB = 107,374,182,400 B // 33,554,432 = 3,200 chunks = 819,200 tokens.
    m = mp(tp=tp).pool.mp
    assert (m.stages[0].object_bytes, m.objects_per_chunk, m.bytes_per_chunk) == (33554432 // tp, tp, 33554432)
    assert (m.chunks_held, m.tokens_held) == (3200, 819200)
    assert m.pool.resident_bytes == 100 * GIB  # pinned once for the node, not TP x (LMCache#5127, as issue 33 names it)


def test_the_per_rank_formula_of_inferencex_1654_loses_seven_eighths():
    # InferenceX#1654: LMCACHE_L1_SIZE_GB=$((TOTAL_CPU_DRAM_GB / (8 / TP))) with 3000 at TP 1 "yields 375 GB instead
    # of the intended ~3000 GB node budget": 375 GiB // 32 MiB a chunk = 12,000 chunks (3,072,000 tokens) against
    # 3000 GiB = 96,000 chunks (24,576,000 tokens).
    assert mp(server={**SERVER, "l1_size_gb": 375}).pool.mp.tokens_held == 3072000
    assert mp(server={**SERVER, "l1_size_gb": 3000}).pool.mp.tokens_held == 24576000


def test_dp_engines_on_a_node_share_its_server():
    # DP 2 on one node: one server, one 100 GiB L1; each engine's share is 3,200 // 2 = 1,600 chunks = 409,600 tokens,
    # and the node pins 100 GiB, not 200.
    p = mp(parallel={"tensor_parallel_size": 8, "data_parallel_size": 2})
    assert (p.pool.mp.engines_per_node, p.pool.mp.tokens_per_engine, p.pool.tokens) == (2, 409600, 409600)
    assert (p.pool.resident_bytes_per_node, p.pool.resident_bytes_per_engine) == (100 * GIB, 50 * GIB)


def test_an_engine_over_two_nodes_is_refused():
    with pytest.raises(UnsupportedError, match="one server per node"):
        mp(parallel={"tensor_parallel_size": 8, "pipeline_parallel_size": 2, "nnodes": 2})


# ------------------------------------------------------------------------ layouts the server sees (more_vectors)

def _case(label):
    return next(v for v in MORE["vectors"] if v["label"] == label)


def test_pipeline_stages_each_store_their_own_layers():
    # LMCache's own code: Llama-3.1-70B PP 2 x TP 4 registers 40 layers per rank, 2 x 40 x 256 x 2 x 128 x 2 =
    # 10,485,760 B an object; every one of the 8 ranks writes: 83,886,080 B a chunk (327,680 B a token, as at PP 1).
    v = _case("Llama-3.1-70B PP2 TP4")
    m = mp(LLAMA70B, parallel={"tensor_parallel_size": 4, "pipeline_parallel_size": 2}).pool.mp
    assert [st.layers for st in m.stages] == [s["layers"] for s in v["stages"]]
    assert [st.object_bytes for st in m.stages] == [s["raw_bytes_per_object"][0] for s in v["stages"]]
    assert [st.staging_bytes_per_gpu - 8 * 2 ** 20 for st in m.stages] == [s["server_gpu_staging_bytes"]
                                                                            for s in v["stages"]]
    assert m.objects_per_chunk == sum(r["is_kv_writer"] for r in v["ranks"]) == 8
    assert m.bytes_per_chunk == 83886080


@pytest.mark.parametrize("label, align", [("DeepSeek-V3 PP2 TP4", 4096), ("DeepSeek-V3 PP2 TP4 align 2 MiB", 2 << 20)])
def test_mla_pipeline_stages_store_one_object_each(label, align):
    # MLA-only: ranks 0 and 4 (the first TP rank of each stage) write; stages of 31 and 30 layers: 31 x 256 x 576 x 2
    # = 9,142,272 B and 8,847,360 B (both 4 KiB multiples); at --l1-align-bytes 2 MiB each rounds up to 10,485,760.
    v = _case(label)
    m = mp(DEEPSEEK, server={**SERVER, "l1_align_bytes": align},
           parallel={"tensor_parallel_size": 4, "pipeline_parallel_size": 2}).pool.mp
    assert [(st.layers, st.object_bytes, st.object_bytes_aligned, st.writer_ranks) for st in m.stages] == \
        [(s["layers"], s["raw_bytes_per_object"][0], s["aligned_bytes_per_object"][0], 1) for s in v["stages"]]
    assert [r["rank"] for r in v["ranks"] if r["is_kv_writer"]] == [0, 4]
    assert m.bytes_per_chunk == sum(s["aligned_bytes_per_object"][0] for s in v["stages"])


def test_a_drafter_layer_of_its_own_shape_joins_the_ranks_object():
    # LMCache's own code: 32 target layers (4 heads x 128 on a TP 2 rank) and one drafter layer (2 heads x 64 on the
    # rank): two kernel groups, one object group, 16,777,216 + 131,072 = 16,908,288 B an object.
    v = _case("Llama-3.1-8B TP2 + a drafter layer of 4 heads x 64")
    m = mp(dict(LLAMA8B, draft={"method": "eagle", "num_layers": 1, "num_kv_heads": 4, "head_size": 64}), tp=2).pool.mp
    assert (m.stages[0].layers, m.stages[0].object_bytes) == (33, v["stages"][0]["raw_bytes_per_object"][0])
    assert (v["stages"][0]["kernel_groups"], v["stages"][0]["object_groups"]) == (2, 1)


def test_layouts_the_server_does_not_store_as_whole_chunks_are_refused():
    # noonghunna/club-3090#422 measured ~131 KB/token in MP L1 against 18.9 KB on the GPU for an int8 per-token-head
    # hybrid: what the server registers for scaled layouts and for Mamba / GDN state was not read, so kvcalc refuses
    # rather than print a per-token cost the server does not have.
    with pytest.raises(UnsupportedError, match="per-token scales"):
        mp(cache={"kv_cache_dtype": "int8_per_token_head"}, vllm={"version": "0.33.0"})
    gemma = {"name": "g", "num_layers": 6, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
             "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"]}
    with pytest.raises(UnsupportedError, match="disable-hybrid-kv-cache-manager"):
        mp(gemma)
    # With the hybrid manager off vLLM folds the windows into full attention: whole chunks, 6 x 2 x 8 x 128 x 2 x 256.
    assert mp(gemma, cache={"hybrid_kv_cache_manager": "off"}).pool.mp.bytes_per_chunk == 6 * 2 * 8 * 128 * 2 * 256


def test_fp8_kv_costs_one_byte_an_element():
    # vLLM's fp8 KV tensors are torch.uint8 (0.23.0 utils/torch_utils.py:38-39): 2 x 32 x 256 x 8 x 128 x 1 =
    # 16,777,216 B a chunk, 65,536 B a token (the vectors' Llama-3.1-8B-fp8kv).
    assert mp(cache={"kv_cache_dtype": "fp8"}).pool.mp.bytes_per_chunk == 16777216


# ------------------------------------------------------------------------------- the allocator and the host

def test_lazy_pins_the_whole_pool_in_the_background():
    # noonghunna/club-3090#421: "--l1-size-gb over-allocation ... (the l1=100-on-94GB host-OOM that forced a
    # reboot)". Lazy pins 20 GiB at start and the other 80 GiB in 1,280 x 64 MiB steps whether or not anything is
    # cached: the host_memory gate counts the whole 100 GiB + 3 GiB of process memory against 94 GB.
    p = mp()
    pool = p.pool.mp.pool
    assert (pool.resident_bytes_initial, pool.background_pin_calls, pool.resident_bytes) == (20 * GIB, 1280, 100 * GIB)
    assert any("not on demand" in n for n in p.notes)


def test_host_memory_gate_counts_the_whole_l1(capsys, tmp_path):
    layout = layout_file(tmp_path)
    code, out, err = run(capsys, "plan", layout, "--check", "--host-memory", "94GB", "--format", "json")
    assert code == 1
    gate = next(c for c in json.loads(out)["checks"] if c["name"] == "host_memory")
    assert (gate["status"], gate["need"], gate["limit"]) == ("fail", 100 * GIB + 3 * GIB, 94 * 10 ** 9)


def test_server_memory_gate_reads_the_servers_own_limit(capsys, tmp_path):
    # The pinned L1 is charged to the server's own container: --server-memory 90GiB is short of 100 GiB.
    layout = layout_file(tmp_path)
    code, out, err = run(capsys, "plan", layout, "--check", "--server-memory", "90GiB", "--format", "json")
    assert code == 1
    gate = next(c for c in json.loads(out)["checks"] if c["name"] == "host_memory")
    assert (gate["status"], gate["need"], gate["margin"]) == ("fail", 100 * GIB, -10 * GIB)


def test_eager_hugepages_and_shm():
    # Eager: one cudaHostAlloc of exactly int(10.01 x 2^30) = 10,748,155,658 B; hugepages round it up to 2 MiB:
    # 5,126 pages = 10,750,001,152 B (the heap stays 10,748,155,658); --shm-name: a /dev/shm segment of the size.
    eager = mp(server={**SERVER, "l1_size_gb": 10.01, "l1_use_lazy": False}).pool.mp.pool
    assert (eager.mode, eager.resident_bytes, eager.heap_bytes, eager.background_pin_calls) == \
        ("eager", 10748155658, 10748155658, 0)
    huge = mp(server={**SERVER, "l1_size_gb": 10.01, "l1_use_hugepages": True}).pool.mp.pool
    assert (huge.mode, huge.hugepages, huge.resident_bytes, huge.heap_bytes) == \
        ("hugepages", 5126, 5126 * 2 ** 21, 10748155658)
    p = mp(server={**SERVER, "l1_size_gb": 10, "l1_use_lazy": False, "shm_name": "l1"})
    assert (p.pool.mp.pool.mode, p.pool.shm_bytes_per_node, p.pool.shm_bytes_per_engine) == ("shm", 10 * GIB, 0)


def test_the_servers_buffers_on_every_gpu_are_outside_the_utilization():
    # local-inference-lab/rtx6kpro#42: "server appears on all 4 GPUs. Footprint is 658 MiB/GPU" (its CUDA context
    # included) with --chunk-size 512; the block-id buffer is "2^20 int64 = 8 MiB per GPU context". kvcalc counts what
    # the source allocates: Llama-3.1-70B TP 4 at chunk 512: 4 objects of 2 x 80 x 512 x 2 x 128 x 2 = 41,943,040 B
    # + 8 MiB = 176,160,768 B on each GPU. An 80 GiB GPU at --gpu-memory-utilization 0.999 leaves
    # 85,899,345,920 - ceil(85,899,345,920 x 0.999) = 85,899,345 B: the server does not fit there.
    p = mp(LLAMA70B, tp=4, server={**SERVER, "chunk_size": 512}, gpu={"total_memory": "80GiB",
                                                                         "memory_utilization": 0.999},
           cache={"kv_cache_memory": "40GiB"})
    assert p.pool.mp.staging_bytes_per_gpu == 4 * 41943040 + 8 * 2 ** 20 == 176160768
    assert p.pool.mp.gpu_room_bytes == 85899345
    assert any("runs the GPU out of memory" in w for w in p.warnings)
    assert not any("runs the GPU out of memory" in w for w in mp(LLAMA70B, tp=4).warnings)


def test_isolated_lru_kills_the_eviction_thread():
    # LMCache#4817 (still so in 0.5.6: eviction_policy/isolated_lru.py:150-155 raises without a cache_salt, which the
    # eviction loop never passes).
    assert any("LMCache#4817" in w for w in mp(server={**SERVER, "eviction_policy": "IsolatedLRU"}).warnings)


# -------------------------------------------------------------------------------------- vLLM's side

def test_which_releases_run_it():
    # vLLM 0.22.0+ imports LMCache's own LMCacheMPConnector (lmcache_mp_connector.py 0.22.0:1201-1226); before, its
    # builtin copy runs: not modelled. --kv-offloading-backend lmcache selects the MP connector from 0.23.0.
    assert mp(version="0.22.0").pool.backend == "lmcache_mp"
    with pytest.raises(UnsupportedError, match="builtin"):
        mp(version="0.21.0")


def test_kv_offloading_size_selects_the_connector_and_sizes_nothing(capsys, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(open(os.path.join(HERE, "..", "fixtures", "models", "llama-3.1-8b.json")).read())
    line = ["--", "vllm", "serve", str(model), "-tp", "8", "--kv-offloading-backend", "lmcache",
            "--kv-offloading-size", "1"]
    server = ["--lmcache-server", "lmcache server --l1-size-gb 100 --eviction-policy LRU"]
    code, out, err = run(capsys, "plan", "--vllm-version", "0.33.0", "--format", "json", *server, *line)
    assert code == 0, err
    m = json.loads(out)["offload"]["lmcache_mp"]
    assert (m["kv_offloading_size"], m["tokens_held"]) == (1.0, 819200)  # the server's 100 GiB, not vLLM's 1
    assert "--kv-offloading-size 1 selects the connector and sizes nothing" in err
    # 0.22.1: the same flag is the in-process connector's 1 GiB / 8 per rank; the server's line is not used.
    code, out, err = run(capsys, "plan", "--vllm-version", "0.22.1", "--format", "json", *server, *line)
    assert json.loads(out)["offload"]["lmcache"]["pool_bytes_per_storing_rank"] == GIB // 8
    assert "the LMCache server's settings are not used" in err


def test_a_server_that_does_not_start_stops_vllm(capsys, tmp_path):
    # "a missing --l1-size-gb or --eviction-policy does not start": the server's ValueError, then vLLM's connector
    # gives up after lmcache.mp.mq_timeout (300 s): exit 2, a failed startup gate under --check.
    p = mp(server={"l1_size_gb": 100})
    assert "Legacy L1 configuration requires --l1-size-gb and --eviction-policy" in p.pool.startup_error
    assert "Cannot reach the LMCache MP server at 'tcp://localhost:5555' within 300.0s." in p.pool.startup_error
    layout = layout_file(tmp_path, server={"l1_size_gb": 100})
    code, out, err = run(capsys, "plan", layout)
    assert code == 2
    code, out, err = run(capsys, "plan", layout, "--check", "--format", "json")
    assert code == 1
    assert json.loads(out)["checks"][0]["status"] == "fail"


def test_a_chunk_the_block_does_not_divide_stops_vllms_worker():
    with pytest.raises(StartupRefusal, match="must be a multiple of 64"):
        mp(DEEPSEEK, tp=8, server={**SERVER, "chunk_size": 96}, cache={"block_size": 64})


# --------------------------------------------------------------------------------------------------- size

def test_size_answers_the_smallest_l1(capsys, tmp_path):
    # 2M = 2,097,152 tokens of Llama-3.1-8B TP 8: 8,192 chunks x 33,554,432 B = 256 GiB. Lazy rounds the L1 up to
    # 64 MiB, so any size above 256 GiB - 64 MiB does: 255.938 GiB (int(255.938 x 2^30) > 274,810,798,080). Below the
    # 0.8 watermark the heap must exceed 8,192 x 33,554,432 / 0.8 = 320 GiB: 320.001 (the next 64 MiB step).
    layout = layout_file(tmp_path, tp=8)
    code, out, err = run(capsys, "size", layout, "--cpu-tokens", "2M", "--format", "json")
    assert code == 0, err
    a = json.loads(out)["lmcache_mp"]
    assert (a["l1_size_gb"], a["l1_size_gb_below_watermark"], a["tokens_held"]) == (255.938, 320.001, 2097152)
    code, out, err = run(capsys, "size", layout, "--cpu-tokens", "2M", "--no-l1-use-lazy", "--format", "json")
    assert json.loads(out)["lmcache_mp"]["l1_size_gb"] == 256.0  # eager: no rounding
    code, out, err = run(capsys, "size", layout, "--resident", "100GiB", "--format", "json")
    assert json.loads(out)["lmcache_mp"]["l1_size_gb"] == 100.0


def test_vllm_args_prints_the_server_line(capsys, tmp_path):
    layout = layout_file(tmp_path, server={**SERVER, "l1_use_lazy": False})
    code, out, err = run(capsys, "vllm-args", layout)
    assert code == 0, err
    assert "lmcache server --l1-size-gb 100 --eviction-policy LRU --no-l1-use-lazy" in out
    assert '{"kv_connector":"LMCacheMPConnector","kv_role":"kv_both"}' in out
    assert "--kv-offloading-backend lmcache --kv-offloading-size 100" in out


# ------------------------------------------------------------------------------------------------- schemas

EXAMPLE = os.path.join(HERE, "..", "..", "examples", "lmcache_mp", "llama-3.1-70b-tp4-dp2.yaml")


@pytest.mark.parametrize("args", [
    [EXAMPLE], [EXAMPLE, "--check", "--host-memory", "512GiB", "--server-memory", "420GiB"],
    [EXAMPLE, "--compare-backends"], [EXAMPLE, "--vllm-version", "0.22.1"],
    [EXAMPLE, "--lmcache-server", "lmcache server --l1-size-gb 8"],  # the server does not start: the error document
])
def test_outputs_validate_against_the_schemas(capsys, args):
    import jsonschema
    import yaml

    from kvcalc.inputs.layout.schema import layout_schema
    from kvcalc.report.schema import output_schema

    jsonschema.validate(yaml.safe_load(open(EXAMPLE, encoding="utf-8")), layout_schema())
    code, out, err = run(capsys, "plan", *args, "--format", "json")
    # --lmcache-server replaces the layout's section whole (a command line is all the server is told): without
    # --eviction-policy that server does not start (exit 2, the report with its error).
    assert code == (2 if "--lmcache-server" in args else 0), err
    jsonschema.validate(json.loads(out), output_schema())


def test_the_example_shares_one_l1_between_its_two_engines():
    # examples/lmcache_mp: Llama-3.1-70B TP 4, DP 2 on one node, --l1-size-gb 400: 4 objects of 20,971,520 B a
    # chunk = 83,886,080 B; 400 GiB // that = 5,120 chunks = 1,310,720 tokens, 655,360 for each engine.
    from kvcalc.inputs.layout.read import load_layout

    p = plan(load_layout(EXAMPLE))
    assert (p.pool.mp.bytes_per_chunk, p.pool.mp.tokens_held, p.pool.tokens) == (83886080, 1310720, 655360)


@pytest.mark.parametrize("watermark, tokens", [(float("nan"), 0), (float("inf"), 819200), (float("-inf"), 0),
                                               (1.5, 819200), (0.0, 0)])
def test_watermarks_argparse_takes_without_complaint(watermark, tokens):
    # The legacy --eviction-trigger-watermark is a bare float(): the loop's `usage < watermark` is never true for nan
    # (eviction every second), always for inf or anything above 1 (never before the L1 is full).
    m = mp(server={**SERVER, "eviction_trigger_watermark": watermark}).pool.mp
    assert m.tokens_before_eviction == tokens
