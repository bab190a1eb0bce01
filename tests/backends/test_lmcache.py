"""LMCache as the offload backend (issue 13). Every expected number is derived by hand in the comment next to it
from LMCache's own source (0.5.6 unless named; the rules are the same in 0.3.10 - 0.5.6):

  chunk  = kv_size x (layers on the stage + drafter layers) x chunk_size x KV heads per rank x head size x dtype
           (integration/vllm/vllm_service_factory.py kv_shape; v1/metadata.py get_shapes)
  object = chunk rounded up to 4,096 B (v1/memory_management.py AddressManager.ALIGN_BYTES)
  pool   = int(max_local_cpu_size x 1024^3) B per storing rank (v1/storage_backend/local_cpu_backend.py)
  chunks = pool // object;  tokens = chunks x chunk_size
"""

import json

import pytest

from conftest import GIB, lmcache_plan, run
from kvcalc.vocab.errors import KvcalcError, StartupRefusal
from kvcalc.vocab.releases.lmcache import LMCACHE_RELEASES, config_keys

LLAMA8B = {"model": {"name": "Llama-3.1-8B", "num_layers": 32, "num_kv_heads": 8, "head_size": 128}}
DEEPSEEK = {"model": {"name": "DeepSeek-V3", "num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
            "parallel": {"tensor_parallel_size": 8}, "cache": {"block_size": 64}}
KIMI_EAGLE3 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                         "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
               "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64}}


def tp(n, layout=LLAMA8B):
    return {**layout, "parallel": {"tensor_parallel_size": n}}


# ------------------------------------------------------------------------------------------------- vectors

def test_dense_gqa_tp1_and_tp8_the_512_x_8_surprise():
    # TP 1: 2 x 32 x 256 x 8 x 128 x 2 = 33,554,432 B a chunk (already 4 KiB-aligned); 512 GiB =
    # 549,755,813,888 B // 33,554,432 = 16,384 chunks = 4,194,304 tokens; one rank, 512 GiB for the engine.
    one = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 512}).pool.lmcache
    st = one.stages[0]
    assert (st.chunk_bytes, st.chunk_bytes_aligned, st.chunks_per_rank, st.tokens_per_rank) == \
        (33554432, 33554432, 16384, 4194304)
    assert (one.storing_ranks, one.pool_bytes_per_engine) == (1, 512 * GIB)
    # TP 8: 1 KV head per rank: 2 x 32 x 256 x 1 x 128 x 2 = 4,194,304 B; 512 GiB // 4 MiB = 131,072 chunks =
    # 33,554,432 tokens on every rank -- and every one of the 8 ranks pins its own 512 GiB: 4 TiB.
    eight = lmcache_plan(tp(8), lmcache={"max_local_cpu_size": 512}).pool.lmcache
    st = eight.stages[0]
    assert (st.num_kv_heads, st.chunk_bytes, st.chunks_per_rank, st.tokens_per_rank) == (1, 4194304, 131072, 33554432)
    assert eight.storing_ranks == 8
    assert eight.pool_bytes_per_engine == eight.resident_bytes_per_engine == 8 * 512 * GIB == 4398046511104
    assert eight.tokens_per_engine == 33554432


def test_mla_tp8_only_the_first_rank_stores_by_default():
    # MLA: kv_size 1, 1 head, head size 512 + 64 = 576: 61 x 256 x 576 x 2 = 17,989,632 B (4,392 x 4,096: aligned).
    # save_only_first_rank defaults to use_mla: rank 0 alone pins 64 GiB: 68,719,476,736 // 17,989,632 = 3,819
    # chunks = 977,664 tokens; the engine pins 64 GiB, not 8 x 64.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 64}).pool.lmcache
    st = lc.stages[0]
    assert (st.kv_size, st.num_kv_heads, st.head_size, st.chunk_bytes, st.chunk_bytes_aligned) == \
        (1, 1, 576, 17989632, 17989632)
    assert lc.save_only_first_rank
    assert lc.storing_rank_ids == (0,)
    assert (st.chunks_per_rank, lc.tokens_per_engine, lc.pool_bytes_per_engine) == (3819, 977664, 64 * GIB)


def test_mla_tp8_first_rank_size_and_without_save_only_first_rank():
    # first_rank_max_local_cpu_size 256: rank 0 pins 274,877,906,944 B // 17,989,632 = 15,279 chunks = 3,911,424
    # tokens; the other ranks pin nothing.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 64,
                                         "extra_config": {"first_rank_max_local_cpu_size": 256}}).pool.lmcache
    assert (lc.first_rank.pool_bytes, lc.first_rank.chunks, lc.first_rank.tokens) == (256 * GIB, 15279, 3911424)
    assert (lc.storing_ranks, lc.pool_bytes_per_engine, lc.tokens_per_engine) == (1, 256 * GIB, 3911424)
    # save_only_first_rank false: all 8 ranks pin 64 GiB (512 GiB) for the same 977,664 tokens of replicated MLA.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 64,
                                         "extra_config": {"save_only_first_rank": False}}).pool.lmcache
    assert (lc.storing_ranks, lc.pool_bytes_per_engine, lc.tokens_per_engine) == (8, 512 * GIB, 977664)


def test_lookup_server_ranks_allocate_a_pool_too():
    # v1/cache_engine.py post_init: with save_only_first_rank a rank in lookup_server_worker_ids builds a storage
    # manager (and pins max_local_cpu_size); rank 0 pins first_rank_max_local_cpu_size: 256 + 2 x 64 = 384 GiB.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 64, "lookup_server_worker_ids": [0, 3, 5],
                                         "extra_config": {"first_rank_max_local_cpu_size": 256}}).pool.lmcache
    assert lc.storing_rank_ids == (0, 3, 5)
    assert lc.pool_bytes_per_engine == (256 + 64 + 64) * GIB


def test_a_drafter_is_counted_in_the_chunk_with_the_targets_shape():
    # Kimi-K2.5 + EAGLE3 (1 layer) at TP 4: LMCache adds the drafter's layer to num_layer and sizes it as MLA:
    # 62 x 256 x 576 x 2 = 18,284,544 B (4,464 x 4,096); rank 0's 64 GiB // 18,284,544 = 3,758 chunks = 962,048.
    p = lmcache_plan(KIMI_EAGLE3, lmcache={"max_local_cpu_size": 64})
    st = p.pool.lmcache.stages[0]
    assert (st.num_layers, st.draft_layers, st.chunk_bytes, st.chunks_per_rank) == (61, 1, 18284544, 3758)
    assert p.pool.lmcache.tokens_per_engine == 962048
    assert any("drafter's 1 layer(s) like the target's" in n for n in p.notes)
    # A dense model with an EAGLE drafter: 33 layers: 2 x 33 x 256 x 8 x 128 x 2 = 34,603,008 B (8,448 x 4,096);
    # 512 GiB // 34,603,008 = 15,887 chunks.
    dense = {"model": {**LLAMA8B["model"], "draft": {"method": "eagle", "num_layers": 1, "num_kv_heads": 8,
                                                     "head_size": 128}}}
    st = lmcache_plan(dense, lmcache={"max_local_cpu_size": 512}).pool.lmcache.stages[0]
    assert (st.chunk_bytes, st.chunks_per_rank) == (34603008, 15887)


def test_pp_stages_and_the_drafters_stage():
    # PP 2, 32 layers: 16 + 16. The drafter's 1 layer goes where vLLM's get_pp_indices(1, rank, 2) puts it:
    # partitions [0, 0] + 1 remainder on partitions[-2] -> stage 0 (vLLM itself places the drafter on the last
    # stage, hence a warning). Stage 0: 17 x 2 x 256 x 8 x 128 x 2 = 17,825,792 B; stage 1: 16,777,216 B.
    # 64 GiB: 3,855 / 4,096 chunks; the engine holds what every stage holds: 3,855 x 256 = 986,880 tokens.
    dense = {"model": {**LLAMA8B["model"], "draft": {"method": "eagle", "num_layers": 1, "num_kv_heads": 8,
                                                     "head_size": 128}},
             "parallel": {"pipeline_parallel_size": 2}}
    p = lmcache_plan(dense, lmcache={"max_local_cpu_size": 64})
    s0, s1 = p.pool.lmcache.stages
    assert (s0.num_layers + s0.draft_layers, s1.num_layers + s1.draft_layers) == (17, 16)
    assert (s0.chunk_bytes, s1.chunk_bytes) == (17825792, 16777216)
    assert (s0.chunks_per_rank, s1.chunks_per_rank) == (64 * GIB // 17825792, 4096) == (3855, 4096)
    assert p.pool.lmcache.tokens_per_engine == 986880
    assert any("vLLM places them on the last stage 1" in w for w in p.warnings)


def test_layerwise_aligns_every_layer_apart_and_hugepages_round_the_pool():
    # chunk_size 100 at TP 8: a layer's slice is 2 x 100 x 1 x 128 x 2 = 51,200 B. One object: 32 x 51,200 =
    # 1,638,400 B (400 x 4,096). Layerwise: each layer rounds up to 53,248 (13 x 4,096): 1,703,936 B a chunk.
    flat = lmcache_plan(tp(8), lmcache={"chunk_size": 100, "max_local_cpu_size": 1}).pool.lmcache.stages[0]
    assert flat.chunk_bytes_aligned == 1638400
    lw = lmcache_plan(tp(8), lmcache={"chunk_size": 100, "max_local_cpu_size": 1, "use_layerwise": True})
    assert lw.pool.lmcache.stages[0].chunk_bytes_aligned == 1703936
    assert lw.pool.lmcache.stages[0].chunks_per_rank == GIB // 1703936 == 630
    # 0.3 GiB: int(0.3 x 1024^3) = int(322,122,547.2) = 322,122,547 B pinned; resident in 4 KiB pages:
    # cdiv(., 4,096) = 78,644 pages = 322,125,824 B; on 2 MiB hugepages: 154 x 2,097,152 = 322,961,408 B.
    small = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 0.3}).pool.lmcache
    assert (small.pool_bytes_per_storing_rank, small.resident_bytes_per_engine) == (322122547, 322125824)
    huge = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 0.3, "local_cpu_use_hugepages": True}).pool.lmcache
    assert huge.resident_bytes_per_engine == 322961408


def test_disk_and_local_cpu_false():
    # 100 GiB of disk per rank: 107,374,182,400 // 33,554,432 = 3,200 chunks. local_cpu false: the pool is still
    # pinned (a staging buffer) but holds no hits.
    lc = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 8, "local_disk": "file:///mnt/nvme/",
                                      "max_local_disk_size": 100, "local_cpu": False}).pool.lmcache
    assert (lc.disk_bytes_per_rank, lc.disk_chunks_per_rank) == (100 * GIB, 3200)
    assert (lc.pool_bytes_per_engine, lc.tokens_per_engine) == (8 * GIB, 0)


def test_nodes_and_replicas():
    # vLLM's --nnodes counts the whole world: 4 engines of TP 8 = 32 ranks over 4 nodes, 2 engines per node group
    # (--data-parallel-size-local 2): 4 / 2 = 2 node groups of 4 // 2 = 2 nodes, each engine spans 2 nodes (4 ranks
    # on each), and one node holds 4 ranks x 16 GiB x 2 engines = 128 GiB.
    lc = lmcache_plan({**tp(8), "parallel": {"tensor_parallel_size": 8, "nnodes": 4, "data_parallel_size": 4,
                                              "data_parallel_size_local": 2}},
                      lmcache={"max_local_cpu_size": 16}).pool.lmcache
    assert lc.resident_bytes_per_node == 4 * 16 * GIB * 2


# ------------------------------------------------------------------------------------------ vLLM's own flag

def test_vllm_flag_divides_the_size_over_tp_x_pp_and_mla_uses_a_fraction():
    # 0.22.1: --kv-offloading-size 64 at TP 8 -> lmcache.max_local_cpu_size 64 / 8 = 8.0 GiB per rank. With MLA
    # only rank 0 pins it: 8 GiB of the 64 asked (8,589,934,592 // 17,989,632 = 477 chunks = 122,112 tokens).
    p = lmcache_plan(DEEPSEEK, "0.22.1", offload={"kv_offloading_size": 64})
    lc = p.pool.lmcache
    assert (lc.vllm_flag.max_local_cpu_size, lc.pool_bytes_per_engine, lc.tokens_per_engine) == (8.0, 8 * GIB, 122112)
    assert any("uses 1/8 of it" in w for w in p.warnings)
    # The flag overrides the LMCache config's max_local_cpu_size and local_cpu (applied after file and env).
    lc = lmcache_plan(tp(8), "0.22.1", lmcache={"max_local_cpu_size": 100, "local_cpu": False},
                      offload={"kv_offloading_size": 64}).pool.lmcache
    assert (lc.max_local_cpu_size, lc.local_cpu, lc.pool_bytes_per_engine) == (8.0, True, 64 * GIB)


def test_hma_is_off_with_lmcache_and_forcing_it_on_is_refused():
    gemma = {"model": {"num_layers": 12, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
                       "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"]}}
    p = lmcache_plan(gemma, lmcache={"max_local_cpu_size": 8})
    assert not p.hma_enabled
    assert "SupportsHMA" in p.hma_reason
    # Sliding layers hold a whole chunk in LMCache: 2 x 12 x 256 x 8 x 128 x 2 = 12,582,912 B.
    assert p.pool.lmcache.stages[0].chunk_bytes == 12582912
    with pytest.raises(StartupRefusal, match="does not support it"):
        lmcache_plan(gemma, cache={"hybrid_kv_cache_manager": "on"})


# ------------------------------------------------------------------------------------- sources and precedence

def write(path, text):
    path.write_text(text)
    return str(path)


def test_env_over_yaml_extra_config_replaced_whole_and_vllm_extra_last(tmp_path, capsys):
    # LMCache: the file (chunk_size 512, max 8, extra {save_only_first_rank: false, first_rank: 100}), then
    # LMCACHE_* over it: max 16 wins; LMCACHE_EXTRA_CONFIG replaces extra_config whole, so save_only_first_rank
    # falls back to its MLA default (true) and rank 0 gets 32 GiB. 512 x 576 x 2 x 61 = 35,979,264 B a chunk:
    # 34,359,738,368 // 35,979,264 = 954 (955 x 35,979,264 = 34,360,197,120 is over) = 488,448 tokens.
    cfg = write(tmp_path / "lmcache.yaml", "chunk_size: 512\nmax_local_cpu_size: 8\nextra_config:\n"
                                           "  save_only_first_rank: false\n  first_rank_max_local_cpu_size: 100\n")
    env = write(tmp_path / "lmcache.env", "LMCACHE_MAX_LOCAL_CPU_SIZE=16\n"
                                          "export LMCACHE_EXTRA_CONFIG='{\"first_rank_max_local_cpu_size\": 32}'\n")
    layout = write(tmp_path / "ds.yaml", "model: {num_layers: 61, kv_lora_rank: 512, qk_rope_head_dim: 64}\n"
                                         "parallel: {tensor_parallel_size: 8}\ncache: {block_size: 64, max_model_len: 131072}\n")
    code, out, err = run(capsys, "plan", layout, "--lmcache-config", cfg, "--lmcache-env-file", env,
                         "--format", "json")
    assert code == 0, err
    lc = json.loads(out)["offload"]["lmcache"]
    assert (lc["chunk_size"], lc["max_local_cpu_size"], lc["save_only_first_rank"]) == (512, 16.0, True)
    assert lc["first_rank"] == {"pool_bytes": 32 * GIB, "chunks": 954, "tokens": 488448}
    assert lc["config_from"]["max_local_cpu_size"].startswith("LMCACHE_MAX_LOCAL_CPU_SIZE")
    assert lc["config_from"]["chunk_size"] == cfg


def llama_dir(tmp_path):
    """A local model directory with a Llama-3.1-8B config.json (for serve lines)."""
    model = tmp_path / "llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "head_dim": 128,
        "torch_dtype": "bfloat16", "max_position_embeddings": 131072}))
    return model


def test_a_serve_line_with_lmcache_connector_extra_config(tmp_path, capsys, monkeypatch):
    # vLLM's kv_connector_extra_config "lmcache.chunk_size": 128 beats LMCACHE_CHUNK_SIZE=512 (applied after the
    # environment, vllm_v1_adapter.py _apply_extra_config). TP 8: 2 x 32 x 128 x 1 x 128 x 2 = 2,097,152 B a chunk;
    # LMCACHE_MAX_LOCAL_CPU_SIZE=4: 4 GiB // 2 MiB = 2,048 chunks = 262,144 tokens.
    model = llama_dir(tmp_path)
    monkeypatch.setenv("LMCACHE_CHUNK_SIZE", "512")
    monkeypatch.setenv("LMCACHE_MAX_LOCAL_CPU_SIZE", "4")
    transfer = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both",
                           "kv_connector_extra_config": {"lmcache.chunk_size": 128}})
    code, out, err = run(capsys, "plan", "--lmcache-env", "--format", "json", "--", "vllm", "serve", str(model),
                         "-tp", "8", "--kv-transfer-config", transfer)
    assert code == 0, err
    lc = json.loads(out)["offload"]["lmcache"]
    assert lc["chunk_size"] == 128
    assert lc["stages"][0]["chunk_bytes"] == 2097152
    assert (lc["stages"][0]["chunks_per_rank"], lc["tokens_per_engine"]) == (2048, 262144)
    assert json.loads(out)["offload"]["backend"] == "lmcache"


def test_kv_offloading_backend_lmcache_on_serve_lines(tmp_path, capsys):
    model = llama_dir(tmp_path)
    line = ["--", "vllm", "serve", str(model), "-tp", "8", "--kv-offloading-backend", "lmcache",
            "--kv-offloading-size", "64"]
    code, out, err = run(capsys, "plan", "--vllm-version", "0.20.0", "--format", "json", *line)
    assert code == 0, err
    lc = json.loads(out)["offload"]["lmcache"]
    assert (lc["connector"], lc["vllm_flag"]["max_local_cpu_size"], lc["pool_bytes_per_engine"]) == \
        ("LMCacheConnectorV1", 8.0, 64 * GIB)
    # 0.23.0+: LMCacheMPConnector, whose pool is the LMCache server's (issue 33: backends/lmcache_mp.py). Without
    # the server's command line there are no pool figures, but the per-chunk cost is known: 8 ranks x 2 x 32 x 256
    # x 1 x 128 x 2 = 33,554,432 B a chunk.
    code, out, err = run(capsys, "plan", "--vllm-version", "0.33.0", "--format", "json", *line)
    assert code == 0, err
    off = json.loads(out)["offload"]
    assert (off["backend"], off["lmcache"]) == ("lmcache_mp", None)
    m = off["lmcache_mp"]
    assert (m["connector"], m["server_given"], m["pool"], m["kv_offloading_size"]) == \
        ("LMCacheMPConnector", False, None, 64.0)
    assert (m["objects_per_chunk"], m["bytes_per_chunk"]) == (8, 33554432)
    assert "--kv-offloading-size 64 selects the connector and sizes nothing" in err
    assert "give it (--lmcache-server" in err


def test_a_manifests_lmcache_env_is_read(tmp_path, capsys):
    # The container's env sets LMCACHE_MAX_LOCAL_CPU_SIZE "20": 20 GiB on each of 8 ranks = 160 GiB, the pod's
    # memory limit 100Gi fails the host_memory gate.
    model = llama_dir(tmp_path)
    manifest = write(tmp_path / "pod.yaml", f"""apiVersion: v1
kind: Pod
metadata: {{name: vllm}}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      command: ["vllm", "serve", "{model}", "-tp", "8", "--kv-cache-memory-bytes", "40G",
                "--kv-transfer-config", '{{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}}']
      env:
        - {{name: LMCACHE_MAX_LOCAL_CPU_SIZE, value: "20"}}
      resources: {{limits: {{memory: 100Gi}}}}
""")
    code, out, err = run(capsys, "plan", "--k8s", manifest, "--check", "--format", "json")
    doc = json.loads(out)
    assert doc["offload"]["lmcache"]["pool_bytes_per_engine"] == 8 * 20 * GIB
    gate = next(c for c in doc["checks"] if c["name"] == "host_memory")
    assert code == 1
    assert not gate["passed"]


# ------------------------------------------------------------------------------------------------ refusals

@pytest.mark.parametrize("lmcache, needle", [
    ({"max_local_cpu_sz": 5}, "offload.lmcache.max_local_cpu_sz: expected a config key LMCache 0.5.6 defines"),
    ({"max_local_cpu_size": "5GB"}, "cannot read a unit"),
    ({"local_cpu": "yes"}, "LMCache reads only 'true' and '1' as true"),
    ({"save_only_first_rank": True}, "LMCache reads save_only_first_rank from extra_config"),
    ({"extra_config": {"save_only_first_rank": "false"}}, "the string 'false' counts as true"),
    ({"extra_config": {"first_rank_max_local_cpu_size": "8"}}, "not a string"),
    ({"extra_config": {"shm_name": "x"}}, "not modelled"),
    ({"enable_p2p": True}, "enable_p2p true is not modelled"),
    ({"version": "0.3.9"}, "LMCache release '0.3.9' is not one kvcalc read"),
    ({"version": "0.4.5", "local_cpu_use_hugepages": True}, "a config key LMCache 0.4.5 defines"),
    ({"enable_lazy_memory_allocator": True, "version": "0.3.12"}, "pins the pool lazily"),
])
def test_bad_lmcache_config_is_one_line_exit_2(tmp_path, capsys, lmcache, needle):
    import yaml

    layout = tmp_path / "l.yaml"
    layout.write_text(yaml.safe_dump({"model": LLAMA8B["model"],
                                      "cache": {"kv_cache_memory": "40GiB", "max_model_len": 131072},
                                      "offload": {"backend": "lmcache", "lmcache": lmcache}}))
    code, out, err = run(capsys, "plan", str(layout))
    assert code == 2, err
    assert out == "", err
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("layout, needle", [
    ({"model": {"num_layers": 8, "num_kv_heads": 8, "head_size": 128, "layer_pattern": ["mamba", "full_attention"],
                "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                          "mamba_d_conv": 4}}},
     # vLLM refuses first: LMCache's connector turns the hybrid manager off, and a hybrid SSM model needs it.
     "with the hybrid KV cache manager disabled"),
    ({"model": {"num_layers": 4, "layer_types": ["mamba"] * 4,
                "mamba": {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
                          "mamba_d_conv": 4}}}, "Mamba / linear-attention layers"),
    ({"model": {"num_layers": 4, "num_kv_heads": [8, 8, 4, 4], "head_size": 128}}, "different KV heads"),
    ({"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128}, "cache": {"kv_cache_dtype": "fp8_per_token_head"}},
     "per-token scales"),
    ({**DEEPSEEK, "parallel": {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}}, "pipeline parallelism"),
])
def test_layouts_lmcache_cannot_serve_are_refused(layout, needle):
    with pytest.raises(KvcalcError, match=needle.replace("(", r"\(")):
        lmcache_plan(layout, lmcache={"max_local_cpu_size": 8})


def test_env_variables_a_release_does_not_define_are_ignored_not_refused(tmp_path, capsys):
    # LMCACHE_LOCAL_CPU_USE_HUGEPAGES exists from 0.4.6: LMCache 0.4.5 does not read it; LMCACHE_NOT_A_KEY is no key.
    env = write(tmp_path / "e.env", "LMCACHE_LOCAL_CPU_USE_HUGEPAGES=true\nLMCACHE_NOT_A_KEY=1\n")
    code, out, err = run(capsys, "plan", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--lmcache-version", "0.4.5",
                         "--lmcache-env-file", env, "--format", "json")
    assert code == 0, err
    assert "LMCACHE_NOT_A_KEY" in err
    assert "local_cpu_use_hugepages (LMCache 0.4.5 does not read it)" in err


def test_key_history_matches_the_releases_read():
    # 0.3.10 defines 77 keys (its v1/config.py); 0.5.6 defines 108; hugepages arrive in 0.4.6.
    assert len(config_keys("0.3.10")) == 77
    assert len(config_keys("0.5.6")) == 108
    assert "local_cpu_use_hugepages" not in config_keys("0.4.5")
    assert "local_cpu_use_hugepages" in config_keys("0.4.6")
    assert LMCACHE_RELEASES[0] == "0.3.10"
    assert LMCACHE_RELEASES[-1] == "0.5.6"


# ------------------------------------------------------------------------------------- size, vllm-args, compare

def test_size_answers_max_local_cpu_size_for_a_token_target(capsys):
    # 2M tokens at chunk 256 = 8,192 chunks x 4 MiB (TP 8) = 32 GiB per rank, on 8 ranks: 256 GiB.
    code, out, err = run(capsys, "size", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--cpu-tokens", "2M",
                         "--format", "json")
    assert code == 0, err
    row = json.loads(out)["lmcache"]
    assert (row["key"], row["gib"], row["tokens"], row["pool_bytes_per_engine"]) == \
        ("max_local_cpu_size", 32.0, 2097152, 256 * GIB)


def test_size_for_mla_names_the_first_rank_key(tmp_path, capsys):
    # 1M tokens at chunk 256 = 4,096 chunks x 17,989,632 B = 73,684,533,248 B = 68.625 GiB exactly (x 1,000 ->
    # 68,625 thousandths), rank 0 alone.
    layout = write(tmp_path / "ds.yaml", "model: {num_layers: 61, kv_lora_rank: 512, qk_rope_head_dim: 64}\n"
                                         "parallel: {tensor_parallel_size: 8}\ncache: {block_size: 64, max_model_len: 131072}\n"
                                         "offload: {backend: lmcache}\n")
    code, out, err = run(capsys, "size", layout, "--cpu-tokens", "1M", "--format", "json")
    assert code == 0, err
    row = json.loads(out)["lmcache"]
    assert row["key"] == "extra_config.first_rank_max_local_cpu_size"
    assert row["gib"] == 68.625
    assert row["tokens"] == 4096 * 256
    assert row["storing_ranks"] == 1


def test_vllm_args_print_the_connector_the_yaml_and_the_env(capsys):
    code, out, err = run(capsys, "vllm-args", "examples/llama-3.1-8b-lmcache-tp8.yaml")
    assert code == 0, err
    assert "--kv-offloading-backend lmcache --kv-offloading-size 4096" in out  # 512 x 8 ranks, 0.22.1
    assert '\'{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}\'' in out
    assert "max_local_cpu_size: 512.0" in out
    assert "LMCACHE_MAX_LOCAL_CPU_SIZE=512" in out


def test_compare_backends_uses_the_same_budget(capsys):
    # LMCache's 4 TiB pool as the native budget: 0.22.1 fixed formula, 2 MiB a block (32 layers x 16 x 8 x 128 x 2
    # x 2 / 8 ranks ... x 8 copies): 4 TiB // 2,097,152 = 2,097,152 blocks x 16 tokens = 33,554,432 tokens, as
    # LMCache's 131,072 chunks x 256.
    code, out, err = run(capsys, "plan", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--compare-backends",
                         "--format", "json")
    assert code == 0, err
    native, lm, mp, simple = json.loads(out)["offload"]["backends"]
    assert (native["backend"], native["pool_bytes_per_engine"], native["tokens"]) == ("native", 4 * 1024 * GIB,
                                                                                      33554432)
    assert (lm["backend"], lm["tokens"], lm["unit_bytes"]) == ("lmcache", 33554432, 4194304)
    # The LMCache MP server given the engine's 4 TiB as its L1 (--l1-size-gb 4096, lazy; a 64 MiB multiple, so the
    # heap is all of it): one chunk is the 8 ranks' objects, 8 x 4,194,304 = 33,554,432 B; 4 TiB // that = 131,072
    # chunks = 33,554,432 tokens, the same tokens as the per-rank pools (issue 33).
    assert (mp["backend"], mp["unit_bytes"], mp["pool_bytes_per_engine"], mp["tokens"]) == \
        ("lmcache_mp", 33554432, 4 * 1024 * GIB, 33554432)
    # SimpleCPUOffloadConnector with the same 4 TiB for the engine: 4 TiB // 8 ranks = 512 GiB a rank; a worker's
    # block is 32 layers x 16 x 1 head x (128 + 128) x 2 = 262,144 B: 549,755,813,888 // 262,144 = 2,097,152 blocks,
    # pinned exactly (cudaHostRegister), 2,097,152 x 16 = 33,554,432 tokens.
    assert (simple["backend"], simple["unit_bytes"], simple["pool_bytes_per_engine"], simple["tokens"]) == \
        ("simple", 262144, 8 * 2097152 * 262144, 33554432)


def test_sweep_rows_carry_lmcache_figures(capsys):
    # TP 1: 16,384 chunks of 32 MiB = 4,194,304 tokens, 512 GiB; TP 8: 131,072 chunks, 8 x 512 GiB.
    code, out, err = run(capsys, "sweep", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--tp", "1,8", "--format", "csv")
    assert code == 0, err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["tp"], r["family"], r["cpu_blocks_worst_worker"], r["cpu_tokens_safe"], r["cpu_bytes_to_use"])
            for r in rows] == [("1", "lmcache", "16384", "4194304", str(512 * GIB)),
                               ("8", "lmcache", "131072", "33554432", str(4096 * GIB))]


def test_compare_backends_from_a_native_mla_layout(capsys):
    # Kimi-K2.5 + EAGLE3 at TP 4, 64 GiB, 0.33.0. Native: vector b2's 3,765 chunks of one 64-token block each =
    # 240,960 tokens. LMCache, the budget split as vLLM's flag splits it: 64 / 4 = 16 GiB per rank, pinned on rank 0
    # alone (MLA): 17,179,869,184 // 18,284,544 (62 MLA-shaped layers x 256 x 576 x 2) = 939 chunks = 240,384.
    code, out, err = run(capsys, "plan", "examples/kimi-k2.5-eagle3-tp4.yaml", "--vllm-version", "0.33.0",
                         "--compare-backends", "--format", "json")
    assert code == 0, err
    native, lm, mp, simple = json.loads(out)["offload"]["backends"]
    assert native["tokens"] == 3765 * 64 == 240960
    assert (lm["pool_bytes_per_engine"], lm["tokens"]) == (16 * GIB, 939 * 256)
    # SimpleCPUOffloadConnector: 64 GiB // 4 ranks = 16 GiB a rank; a worker's block is 61 MLA layers x 73,728 B +
    # the EAGLE3 layer's 64 x 2 heads x (128 + 128) x 2 = 65,536 B = 4,562,944 B: 17,179,869,184 // 4,562,944 =
    # 3,765 blocks on every rank (MLA is stored on every rank: 4 x 3,765 x 4,562,944 B pinned), 3,765 x 64 tokens.
    assert (simple["unit_bytes"], simple["tokens"], simple["pool_bytes_per_engine"]) == (4562944, 240960,
                                                                                         4 * 3765 * 4562944)


def test_size_resident_gives_the_largest_size_under_a_host_limit(capsys):
    # 100 GiB for 8 ranks: 12.5 GiB each (13,421,772,800 B, whole 4 KiB pages): 3,200 chunks of 4 MiB = 819,200.
    code, out, err = run(capsys, "size", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--resident", "100GiB",
                         "--format", "json")
    assert code == 0, err
    row = json.loads(out)["lmcache"]
    assert (row["gib"], row["resident_bytes_per_node"], row["chunks_per_rank"], row["tokens"]) == \
        (12.5, 100 * GIB, 3200, 819200)


@pytest.mark.parametrize("argv, needle", [
    (["--offload-backend", "redis"], "offload.backend (from --offload-backend): expected one of native, lmcache"),
    (["--lmcache-version", "0.9.0"], "LMCache release '0.9.0' is not one kvcalc read"),
    (["--lmcache-config", "no/such.yaml"], "no/such.yaml: expected a readable LMCache config YAML"),
    (["--lmcache-env-file", "README.md"], "README.md: line 3: expected NAME=VALUE"),
    (["--compare-backends", "--vllm-version", "0.33.0"], None),  # an LMCache layout: fine
])
def test_lmcache_flags_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, "plan", "examples/llama-3.1-8b-lmcache-tp8.yaml", *argv)
    if needle is None:
        assert code == 0, err
        return
    assert code == 2, err
    assert out == "", err
    assert needle in err, err
    assert err.count("\n") == 1, err


def test_compare_backends_needs_a_budget_on_the_native_backend(tmp_path, capsys):
    layout = write(tmp_path / "l.yaml", "model: {num_layers: 32, num_kv_heads: 8, head_size: 128}\n"
                                        "cache: {max_model_len: 8192}\n")
    code, out, err = run(capsys, "plan", layout, "--compare-backends")
    assert code == 2, err
    assert "--compare-backends needs a budget" in err, err
    assert err.count("\n") == 1, err


def test_size_for_a_layout_set_through_vllms_flag_sizes_the_per_rank_value(tmp_path, capsys):
    # offload.kv_offloading_size 8 at TP 8 on 0.22.1 (1 GiB per rank today). 2M tokens need 8,192 chunks of 4 MiB =
    # 32 GiB per rank (256 GiB through the flag): the answer's tokens are what 32 GiB per rank holds, 2,097,152.
    layout = write(tmp_path / "f.yaml", "model: {num_layers: 32, num_kv_heads: 8, head_size: 128}\n"
                                        "parallel: {tensor_parallel_size: 8}\ncache: {max_model_len: 131072}\n"
                                        "offload: {backend: lmcache, kv_offloading_size: 8}\n"
                                        "vllm: {version: 0.22.1}\n")
    code, out, err = run(capsys, "size", layout, "--cpu-tokens", "2M", "--format", "json")
    assert code == 0, err
    row = json.loads(out)["lmcache"]
    assert (row["gib"], row["tokens"], row["pool_bytes_per_engine"]) == (32.0, 2097152, 256 * GIB)
    assert row["key"].startswith("--kv-offloading-size (x TP x PP)")
