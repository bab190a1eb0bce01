"""LMCache findings of issue 22 (checked against LMCache 0.5.6's own code run on CPU). Every expected number is
derived by hand in the comment next to it from LMCache's source (`pip download lmcache==X --no-deps`; 0.5.6 line
numbers, the other releases named where they differ):

  hidden-state pool = int(max_hidden_state_cpu_size x 1024^3) B (default 2.0; v1/config.py:646-648,
                      v1/hidden_state_store.py:74), pinned by every LMCacheEngine (v1/cache_engine.py:245-246): every
                      worker, and the scheduler with enable_scheduler_bypass_lookup (vllm_service_factory.py:166-217)
  max_local_cpu_size 0 -> no LocalCPUBackend (v1/storage_backend/__init__.py:180-190), then the StorageManager a
                      storing rank builds raises (KeyError 'LocalCPUBackend', storage_manager.py:325; with a local
                      disk AssertionError, __init__.py:222); 0.3.14+ catch it (v1/manager.py:212-238, "degraded mode
                      (recompute)"), 0.3.10 - 0.3.13 do not.
"""

import json

import pytest
import yaml

from conftest import GIB, lmcache_plan, run
from kvcalc.vocab.errors import StartupRefusal
from kvcalc.vocab.releases.lmcache import LMCACHE_RELEASES, init_failure_degrades

LLAMA8B = {"model": {"name": "Llama-3.1-8B", "num_layers": 32, "num_kv_heads": 8, "head_size": 128}}
DEEPSEEK = {"model": {"name": "DeepSeek-V3", "num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
            "parallel": {"tensor_parallel_size": 8}, "cache": {"block_size": 64}}


def tp(n, layout=LLAMA8B):
    return {**layout, "parallel": {"tensor_parallel_size": n}}


def write(path, text):
    path.write_text(text)
    return str(path)


def deepseek_yaml(tmp_path, **lmcache):
    data = {**DEEPSEEK, "cache": {"block_size": 64, "kv_cache_memory": "40GiB", "max_model_len": 131072},
            "vllm": {"version": "0.33.0"}, "offload": {"backend": "lmcache", "lmcache": lmcache}}
    return write(tmp_path / "ds.yaml", yaml.safe_dump(data))


# ------------------------------------------------------------------------ 1. enable_hidden_state_cache

def test_the_hidden_state_pool_is_pinned_on_every_rank_mla_ranks_included():
    # DeepSeek TP 8, max_local_cpu_size 1: rank 0 alone pins its KV pool (1 GiB = 1,073,741,824 B), but every one of
    # the 8 workers builds an LMCacheEngine and so a hidden-state pool of int(2.0 x 1024^3) = 2,147,483,648 B (a
    # whole number of 4 KiB pages): 1 GiB + 8 x 2 GiB = 17 GiB = 18,253,611,008 B per engine. The KV figures do
    # not move: 1,073,741,824 // 17,989,632 (61 x 256 x 576 x 2) = 59 chunks = 15,104 tokens.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 1, "enable_hidden_state_cache": True}).pool.lmcache
    assert lc.resident_bytes_per_engine == 17 * GIB == 18253611008
    assert lc.resident_bytes_per_node == 18253611008
    assert lc.pool_bytes_per_engine == GIB
    assert lc.tokens_per_engine == 15104
    assert (lc.hidden_state_pools, lc.hidden_state_bytes) == (8, 2147483648)
    assert any("8 process(es)" in n and "2,147,483,648 B" in n for n in lc.notes)
    # Off (LMCache's default): 1 GiB.
    off = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 1}).pool.lmcache
    assert off.resident_bytes_per_engine == GIB


def test_the_hidden_state_size_rounds_to_host_pages_and_the_scheduler_can_pin_one_too():
    # Llama TP 1, max_local_cpu_size 8, max_hidden_state_cpu_size 0.3: int(0.3 x 2^30) = 322,122,547 B, pinned as
    # whole 4,096 B pages: ceil(322,122,547 / 4096) = 78,644 pages = 322,125,824 B; resident 8 GiB + that =
    # 8,589,934,592 + 322,125,824 = 8,912,060,416 B.
    lm = {"max_local_cpu_size": 8, "enable_hidden_state_cache": True, "max_hidden_state_cpu_size": 0.3}
    lc = lmcache_plan(tp(1), lmcache=lm).pool.lmcache
    assert lc.resident_bytes_per_engine == 8912060416
    # enable_scheduler_bypass_lookup: the scheduler builds an LMCacheEngine as well (on MLA, where LMCache allows
    # it): DeepSeek TP 8 at 1 GiB -> 1 + 9 x 2 = 19 GiB = 20,401,094,656 B.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 1, "enable_hidden_state_cache": True,
                                         "enable_scheduler_bypass_lookup": True}).pool.lmcache
    assert lc.resident_bytes_per_engine == 19 * GIB == 20401094656


def test_hidden_state_cache_from_the_environment_reaches_the_host_memory_gate(tmp_path, capsys):
    # LMCACHE_ENABLE_HIDDEN_STATE_CACHE=true over a file with max_local_cpu_size 1: 17 GiB resident (above) against
    # a 16 GiB host with no process overhead: short by 1 GiB = 1,073,741,824 B -> exit 1.
    layout = deepseek_yaml(tmp_path, max_local_cpu_size=1)
    env = write(tmp_path / "e.env", "LMCACHE_ENABLE_HIDDEN_STATE_CACHE=true\n")
    code, out, err = run(capsys, "plan", layout, "--lmcache-env-file", env, "--check", "--host-memory", "16GiB",
                         "--host-overhead", "0", "--format", "json")
    doc = json.loads(out)
    gate = next(c for c in doc["checks"] if c["name"] == "host_memory")
    assert code == 1, err
    assert gate["status"] == "fail"
    assert gate["need"] == 18253611008
    assert gate["margin"] == -1073741824
    assert doc["offload"]["lmcache"]["resident_bytes_per_engine"] == 18253611008
    # LMCache 0.5.0 has no hidden-state cache (the key arrives in 0.5.1): it does not read the variable.
    code, out, err = run(capsys, "plan", layout, "--lmcache-env-file", env, "--lmcache-version", "0.5.0",
                         "--check", "--host-memory", "16GiB", "--host-overhead", "0", "--format", "json")
    doc = json.loads(out)
    assert next(c for c in doc["checks"] if c["name"] == "host_memory")["status"] == "pass"
    assert doc["offload"]["lmcache"]["resident_bytes_per_engine"] == GIB
    assert "enable_hidden_state_cache (LMCache 0.5.0 does not read it)" in err


def test_vllm_args_spell_the_hidden_state_settings(tmp_path, capsys):
    # The printed config reproduces the plan: the two hidden-state keys, in the YAML and as LMCACHE_* lines.
    layout = deepseek_yaml(tmp_path, max_local_cpu_size=1, enable_hidden_state_cache=True,
                           max_hidden_state_cpu_size=4)
    code, out, err = run(capsys, "vllm-args", layout, "--format", "json")
    doc = json.loads(out)
    assert code == 0, err
    assert "enable_hidden_state_cache: true\n" in doc["lmcache_yaml"]
    assert "max_hidden_state_cpu_size: 4.0\n" in doc["lmcache_yaml"]
    assert "LMCACHE_ENABLE_HIDDEN_STATE_CACHE=true" in doc["lmcache_env"]
    # 1 GiB + 8 x 4 GiB = 33 GiB resident; the pod block asks for it (a memory limit of 33Gi).
    assert doc["pod"]["memory_limit_bytes"] == 33 * GIB


# -------------------------------------------------------------------------------- 2. max_local_cpu_size 0

@pytest.mark.parametrize("extra, exception", [
    ({}, "KeyError: 'LocalCPUBackend'"),
    ({"local_disk": "file:///mnt/nvme/", "max_local_disk_size": 100}, "AssertionError"),
])
def test_max_local_cpu_size_0_fails_lmcache_start_and_it_runs_degraded(extra, exception):
    # 0.5.6: the StorageManager of rank 0 raises; LMCache catches it and stores nothing: 0 tokens, 0 B pinned, and
    # no disk chunks either (the disk backend is never built) -- not 107,374,182,400 // 33,554,432 = 3,200.
    lc = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 0, **extra}).pool.lmcache
    assert lc.degraded is not None
    assert exception in lc.degraded
    assert (lc.tokens_per_engine, lc.pool_bytes_per_engine, lc.resident_bytes_per_engine) == (0, 0, 0)
    assert (lc.disk_bytes_per_rank, lc.disk_chunks_per_rank) == (0, 0)
    assert any("degraded mode (recompute)" in w and exception in w for w in lc.warnings)


def test_before_0_3_14_the_failure_stops_vllms_worker():
    # 0.3.13 v1/manager.py:544 calls engine.post_init without a try; 0.3.14 wraps it (manager.py:514-519).
    assert [v for v in LMCACHE_RELEASES if not init_failure_degrades(v)] == \
        ["0.3.10", "0.3.10.post1", "0.3.10.post2", "0.3.11", "0.3.12", "0.3.13"]
    with pytest.raises(StartupRefusal, match="KeyError: 'LocalCPUBackend'"):
        lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 0, "version": "0.3.13"})
    lc = lmcache_plan(tp(1), lmcache={"max_local_cpu_size": 0, "version": "0.3.14"}).pool.lmcache
    assert lc.tokens_per_engine == 0
    assert lc.degraded is not None


def test_max_local_cpu_size_0_on_the_cli(tmp_path, capsys):
    layout = write(tmp_path / "l.yaml", yaml.safe_dump({
        "model": LLAMA8B["model"], "cache": {"kv_cache_memory": "40GiB", "max_model_len": 131072},
        "vllm": {"version": "0.33.0"}, "offload": {"backend": "lmcache", "lmcache": {
            "max_local_cpu_size": 0, "local_disk": "file:///mnt/nvme/", "max_local_disk_size": 100}}}))
    # 0.5.6: vLLM starts, the CPU tier is empty: --check fails zero_cpu_blocks (exit 1), the warning quotes LMCache.
    code, out, err = run(capsys, "plan", layout, "--check", "--format", "json")
    doc = json.loads(out)
    checks = {c["name"]: c["status"] for c in doc["checks"]}
    assert code == 1, err
    assert checks["startup"] == "pass"
    assert checks["zero_cpu_blocks"] == "fail"
    assert doc["offload"]["lmcache"]["disk_chunks_per_rank"] == 0
    assert "System will operate in degraded mode (recompute)" in err
    # No flags to paste for a config LMCache cannot start with.
    code, out, err = run(capsys, "vllm-args", layout)
    assert code == 2
    assert "fails to start with this config" in err
    # 0.3.13: a start-up refusal, one line, exit 2; under --check the startup gate fails.
    code, out, err = run(capsys, "plan", layout, "--lmcache-version", "0.3.13")
    assert code == 2
    assert err.count("\n") == 1
    assert "LMCache 0.3.13 raises in rank 0's post_init" in err
    code, out, err = run(capsys, "plan", layout, "--lmcache-version", "0.3.13", "--check", "--format", "json")
    startup = next(c for c in json.loads(out)["checks"] if c["name"] == "startup")
    assert code == 1
    assert startup["status"] == "fail"
    assert "AssertionError" in startup["reason"]


def test_a_zero_first_rank_pool_and_a_zero_hidden_state_pool_fail_too():
    # DeepSeek TP 8 (save_only_first_rank): first_rank_max_local_cpu_size 0 is capped to min(0, available -
    # reserve) = 0 and LMCache asserts it is positive (local_cpu_backend.py:367).
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 4,
                                         "extra_config": {"first_rank_max_local_cpu_size": 0}}).pool.lmcache
    assert "assert effective_cpu_size > 0" in lc.degraded
    assert lc.tokens_per_engine == 0
    # max_hidden_state_cpu_size 0 with the cache on: the engine itself is not built (hidden_state_store.py:75-79),
    # so nothing is pinned; LMCache logs "Failed to initialize LMCacheManager components" (manager.py:104-110).
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 4, "enable_hidden_state_cache": True,
                                         "max_hidden_state_cpu_size": 0}).pool.lmcache
    assert "max_hidden_state_cpu_size must be > 0" in lc.degraded
    assert (lc.tokens_per_engine, lc.resident_bytes_per_engine) == (0, 0)
    assert any("Failed to initialize LMCacheManager components" in w for w in lc.warnings)
    # With max_local_cpu_size 0 and the hidden-state cache on, the engines are built (8 x 2 GiB pinned) and the
    # StorageManager fails after: 8 x 2,147,483,648 = 17,179,869,184 B resident, 0 tokens.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 0, "enable_hidden_state_cache": True}).pool.lmcache
    assert (lc.tokens_per_engine, lc.resident_bytes_per_engine) == (0, 17179869184)


def test_maru_without_a_cpu_pool_is_not_modelled(tmp_path, capsys):
    # 0.4.3+ storage_manager.py _get_allocator_backend: without a LocalCPUBackend MaruBackend allocates (no failure).
    layout = write(tmp_path / "l.yaml", yaml.safe_dump({
        "model": LLAMA8B["model"], "cache": {"kv_cache_memory": "40GiB", "max_model_len": 131072},
        "offload": {"backend": "lmcache", "lmcache": {"max_local_cpu_size": 0, "maru_path": "/dev/maru0"}}}))
    code, out, err = run(capsys, "plan", layout)
    assert code == 2
    assert "maru_path with max_local_cpu_size 0 is not modelled" in err


def test_size_never_answers_zero(tmp_path, capsys):
    # DeepSeek TP 8 with the hidden-state cache: 8 x 2 GiB = 16 GiB are resident whatever the pool; under a 10 GiB
    # limit no size fits (0 would not start): a refusal (exit 2, issue 34), its document still written.
    layout = deepseek_yaml(tmp_path, max_local_cpu_size=1, enable_hidden_state_cache=True)
    code, out, err = run(capsys, "size", layout, "--resident", "10GiB", "--format", "json")
    row = json.loads(out)["lmcache"]
    assert code == 2, err
    assert row["gib"] is None
    assert "no size fits" in row["note"]


# ------------------------------------------------------------------- 3. the available-memory cap of rank 0

def test_the_available_memory_cap_is_named_with_its_rule():
    # local_cpu_backend.py:315-370: min(configured, psutil available - reserve) on every save_only_first_rank
    # storing rank, read when the rank starts: kvcalc cannot know it and says so, naming the reserve.
    lc = lmcache_plan(DEEPSEEK, lmcache={"max_local_cpu_size": 64, "reserve_local_cpu_size": 8}).pool.lmcache
    note = next(n for n in lc.notes if "psutil" in n)
    assert "reserve_local_cpu_size (8 GiB)" in note
    assert "local_cpu_backend.py:315-370" in note
    assert "an upper bound" in note
    dense = lmcache_plan(tp(8), lmcache={"max_local_cpu_size": 64}).pool.lmcache
    assert not any("psutil" in n for n in dense.notes)  # not capped without save_only_first_rank
