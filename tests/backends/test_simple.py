"""SimpleCPUOffloadConnector as the offload backend (issue 25). Every expected number is derived by hand in the comment
next to it from the releases' own source (simple_cpu_offload_connector.py, v1/simple_kv_offload/*.py; the evidence
of each rule is in kvcalc/vocab/releases/simple.py):

  capacity per rank = cpu_bytes_to_use // world_size (or cpu_bytes_to_use_per_rank)
  worker bytes per block b_s = the sum over the stage's KV cache tensors of size // num_blocks (= its pages)
  workers' blocks  = max(1, capacity // b_s) on each PP stage
  scheduler blocks = max(1, num_gpu_blocks x capacity // (num_gpu_blocks x b_0)) = max(1, capacity // b_0), rank 0
  0.33.0: every worker and the scheduler take min over the workers' counts
"""

import json
import os
import shutil

import pytest

from conftest import EXAMPLES_DIR, GIB, ROOT_DIR, deep_merge, run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError

# Qwen3-32B: 64 layers, 8 KV heads of 128, bf16; at TP 2 a layer's block is 16 x 4 x (128 + 128) x 2 = 32,768 B.
# An EAGLE3 drafter of the same shape sits on the last PP stage.
QWEN3_32B_EAGLE3 = {"model": {"name": "Qwen3-32B", "num_layers": 64, "num_kv_heads": 8, "head_size": 128,
                              "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
                    "parallel": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2},
                    "cache": {"max_model_len": 32768, "kv_cache_memory": 20 * GIB}}
# DeepSeek-V3: 61 MLA layers, one 576-wide latent, block 64: 64 x 576 x 2 = 73,728 B a layer's block. PP 4 splits
# the layers 15, 15, 16, 15 (vLLM's get_pp_indices).
DEEPSEEK_V3 = {"model": {"name": "DeepSeek-V3", "num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64},
               "parallel": {"tensor_parallel_size": 2, "pipeline_parallel_size": 4},
               "cache": {"block_size": 64, "max_model_len": 131072}}
KIMI_EAGLE3 = {"model": {"num_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                         "draft": {"method": "eagle3", "num_layers": 1, "num_kv_heads": 8, "head_size": 128}},
               "parallel": {"tensor_parallel_size": 4}, "cache": {"block_size": 64, "max_model_len": 131072}}


def simple(layout: dict, version: str, offload: dict | None = None, **sections):
    data = deep_merge(layout, {"offload": {"backend": "simple", **(offload or {})}, "vllm": {"version": version}})
    return plan(layout_from_dict(deep_merge(data, sections), source="test.yaml"))


# ------------------------------------------------------------------------------------- the held-out vectors

def test_qwen3_32b_pp2_tp2_8gib_the_scheduler_outcounts_the_last_stage_before_0_33():
    # 8 GiB // (TP 2 x PP 2) = 2,147,483,648 B a rank. Stage 0: 32 layers x 32,768 = 1,048,576 B a block ->
    # 2,048 blocks; stage 1: 32 layers + the drafter = 33 x 32,768 = 1,081,344 B -> 2,147,483,648 // 1,081,344 =
    # 1,985. 0.32.0: the scheduler counts rank 0's 2,048, so ids 1,985..2,047 are stored out of bounds on stage 1.
    sp = simple(QWEN3_32B_EAGLE3, "0.32.0", {"cpu_bytes_to_use": "8GiB"}).pool.simple
    assert [st.bytes_per_block for st in sp.stages] == [1048576, 1081344]
    assert [st.num_cpu_blocks for st in sp.stages] == [2048, 1985]
    assert sp.num_cpu_blocks_scheduler == 2048
    assert (sp.out_of_bounds.pp_rank, sp.out_of_bounds.first, sp.out_of_bounds.last) == (1, 1985, 2047)


def test_qwen3_32b_pp2_tp2_8gib_0_33_takes_the_min():
    # 0.33.0: the all-reduce MIN gives every worker and the scheduler min(2,048, 1,985) = 1,985; no id is out of
    # bounds. Host memory: stage 0 pins 1,985 x 1,048,576 B, stage 1 1,985 x 1,081,344 B on each of 2 TP ranks,
    # exactly (cudaHostRegister, no power-of-two rounding).
    p = simple(QWEN3_32B_EAGLE3, "0.33.0", {"cpu_bytes_to_use": "8GiB"})
    sp = p.pool.simple
    assert (sp.num_cpu_blocks_scheduler, sp.num_cpu_blocks_per_rank, sp.out_of_bounds) == (1985, 1985, None)
    assert [st.num_cpu_blocks for st in sp.stages] == [1985, 1985]
    assert p.pool.resident_bytes_per_engine == 2 * 1985 * (1048576 + 1081344) == 8455782400
    assert p.pool.host.pinned_rounding == "none"


def test_qwen3_32b_without_a_drafter_agrees():
    # Without the drafter both stages have 32 layers: 2,048 blocks everywhere, the scheduler's 2,048 too.
    layout = deep_merge(QWEN3_32B_EAGLE3, {})
    del layout["model"]["draft"]
    sp = simple(layout, "0.32.0", {"cpu_bytes_to_use": "8GiB"}).pool.simple
    assert (sp.num_cpu_blocks_scheduler, sp.num_cpu_blocks_per_rank, sp.out_of_bounds) == (2048, 2048, None)


def test_deepseek_v3_pp4_tp2_8gib():
    # World 8: 8 GiB // 8 = 1,073,741,824 B a rank. Stages of 15 layers: 15 x 73,728 = 1,105,920 B -> 970 blocks;
    # stage 2 has 16 layers: 1,179,648 B -> 910. 0.32.0: the scheduler (stage 0) counts 970: ids 910..969 out of
    # bounds on stage 2. 0.33.0: the MIN, 910, on every rank.
    old = simple(DEEPSEEK_V3, "0.32.0").pool.simple  # no budget: the connector's 8 GiB default
    assert [st.num_cpu_blocks for st in old.stages] == [970, 970, 910, 970]
    assert (old.num_cpu_blocks_scheduler, old.out_of_bounds.pp_rank, old.out_of_bounds.first,
            old.out_of_bounds.last) == (970, 2, 910, 969)
    new = simple(DEEPSEEK_V3, "0.33.0").pool.simple
    assert (new.num_cpu_blocks_scheduler, new.num_cpu_blocks_per_rank, new.out_of_bounds) == (910, 910, None)
    assert new.capacity_bytes_per_rank == 8 * GIB // 8 == 1073741824


def test_the_default_budget_is_8_gib_with_a_note():
    p = simple(DEEPSEEK_V3, "0.33.0")
    assert p.layout.offload.cpu_bytes_to_use == 8 * GIB
    assert any("SimpleCPUOffloadConnector's default (8 GiB)" in n for n in p.notes)


def test_real_log_minimax_m2_5_tp4_2000_gib():
    # SemiAnalysisAI/InferenceX issue #1358 (a ROCm nightly whose worker.py:144 logs the 0.19.0-0.23.0 line):
    # "SimpleCPUOffloadWorker: 124 unique GPU KV tensors, allocating 528516 CPU blocks (500.00 GB)" for MiniMax-M2.5
    # (62 layers, 8 KV heads of 128) at TP 4 with --kv-offloading-size 2000 and VLLM_USE_SIMPLE_KV_OFFLOAD=1.
    # 2,000 x 2^30 // 4 = 536,870,912,000 B a rank; a block is 62 x 16 x 2 heads x (128 + 128) x 2 = 1,015,808 B
    # -> 528,516 blocks; the K and V halves of each layer's (2, num_blocks, ...) tensor are 2 x 62 = 124 regions.
    # The run's script (InferenceX benchmarks/single_node/agentic/minimaxm2.5_fp8_mi355x.sh) exports
    # VLLM_ROCM_USE_AITER=1: with a KV connector 0.23.0 leaves ROCM_ATTN out and picks ROCM_AITER_FA, whose
    # (2, num_blocks, ...) KV tensor is split in K and V (the script also forces ROCM_AITER_UNIFIED_ATTN, the same
    # shape, which 0.23.0's own checks refuse with a connector: the nightly ran later code).
    layout = {"model": {"name": "MiniMax-M2.5", "num_layers": 62, "num_kv_heads": 8, "head_size": 128},
              "parallel": {"tensor_parallel_size": 4}, "cache": {"max_model_len": 196608},
              "vllm": {"platform": "rocm", "rocm_use_aiter": True}}
    data = deep_merge(layout, {"offload": {"kv_offloading_size": 2000, "use_simple_kv_offload": True},
                               "vllm": {"version": "0.23.0"}})
    sp = plan(layout_from_dict(data, source="test.yaml")).pool.simple
    assert (sp.stages[0].num_cpu_blocks, sp.stages[0].regions, sp.stages[0].bytes_per_block) == (528516, 124, 1015808)
    assert f"{528516 * 1015808 / 2 ** 30:.2f}" == "500.00"  # the log's (%.2f GB)


# ------------------------------------------------------------------------------------------ release rules

def test_not_before_0_19_0():
    p = simple(DEEPSEEK_V3, "0.18.1")
    assert "Unsupported connector type: SimpleCPUOffloadConnector" in p.pool.startup_error


def test_prefix_caching_off_disables_the_pool():
    p = simple(DEEPSEEK_V3, "0.33.0", cache={"enable_prefix_caching": False})
    sp = p.pool.simple
    assert (sp.enabled, sp.num_cpu_blocks_per_rank, p.pool.empty) == (False, 0, True)
    assert any("disabling CPU offload since it requires prefix caching" in w for w in p.warnings)


def test_0_29_0_views_the_backing_allocation_in_the_first_layers_blocks():
    # Kimi-K2.5 + EAGLE3 at TP 4 (one UniformType group): 61 x 73,728 + the drafter's 64 x 2 heads x 256 x 2 =
    # 4,562,944 B a block; 0.29.0 views it as (-1, N, 73,728): 4,562,944 % 73,728 = 65,536, a RuntimeError at start.
    # 0.30.0 walks the layers' regions: 64 GiB // 4 = 16 GiB // 4,562,944 = 3,765 blocks (0.28.0 the same, per
    # storage).
    assert "is invalid" in simple(KIMI_EAGLE3, "0.29.0", {"cpu_bytes_to_use": "64GiB"}).pool.startup_error
    for version in ("0.28.0", "0.30.0"):
        sp = simple(KIMI_EAGLE3, version, {"cpu_bytes_to_use": "64GiB"}).pool.simple
        assert (sp.startup_error, sp.num_cpu_blocks_per_rank, sp.stages[0].regions) == (None, 3765, 62), version
    # Without the drafter every page is 73,728 B: 0.29.0 starts (61 regions of the first layer's page).
    no_draft = deep_merge(KIMI_EAGLE3, {})
    del no_draft["model"]["draft"]
    sp = simple(no_draft, "0.29.0", {"cpu_bytes_to_use": "64GiB"}).pool.simple
    assert (sp.startup_error, sp.stages[0].regions, sp.num_cpu_blocks_per_rank) == (None, 61, 17179869184 // 4497408)


def test_num_cpu_blocks_from_0_33_0():
    # 0.32.0 ignores the key (a warning); 0.33.0 allocates 500 on every rank; 1,000 is more than stage 2's 910.
    p = simple(DEEPSEEK_V3, "0.32.0", {"simple": {"num_cpu_blocks": 500}})
    assert p.pool.simple.num_cpu_blocks_scheduler == 970
    assert any("ignores num_cpu_blocks" in w for w in p.warnings)
    sp = simple(DEEPSEEK_V3, "0.33.0", {"simple": {"num_cpu_blocks": 500}}).pool.simple
    assert [st.num_cpu_blocks for st in sp.stages] == [500] * 4
    err = simple(DEEPSEEK_V3, "0.33.0", {"simple": {"num_cpu_blocks": 1000}}).pool.startup_error
    assert "num_cpu_blocks=1000 must be between 1 and local offload capacity 910" in err


def test_cpu_bytes_to_use_per_rank_wins_with_a_warning():
    # 1 GiB per rank instead of 8 GiB // 8 = 1 GiB: no warning; 2 GiB: vLLM's warning, 2 GiB // 1,179,648 = 1,820.
    quiet = simple(DEEPSEEK_V3, "0.33.0", {"simple": {"cpu_bytes_to_use_per_rank": "1GiB"}})
    assert not any("cpu_bytes_to_use_per_rank" in w for w in quiet.warnings)
    p = simple(DEEPSEEK_V3, "0.33.0", {"simple": {"cpu_bytes_to_use_per_rank": "2GiB"}})
    assert any("cpu_bytes_to_use_per_rank (2.00 GB) != cpu_bytes_to_use/world_size (1.00 GB)" in w
               for w in p.warnings)
    assert p.pool.simple.num_cpu_blocks_per_rank == 2 * GIB // 1179648 == 1820


def test_the_disk_tier():
    # 0.27.1 has no disk tier: CPU mode with a warning. 0.28.0: 100 GiB per rank (the default) // 1,179,648 =
    # 91,022 slots on stage 2's ranks; the files are {disk_path}.rank_0..7 (one node, 8 GPUs); host memory is the
    # staging buffers: per region (a layer) 2 x (2 slots x 73,728 + 4,096) B = 303,104 B x 16 regions on stage 2.
    disk = {"simple": {"kv_offload_backend": "disk", "disk_path": "/nvme/kv"}}
    old = simple(DEEPSEEK_V3, "0.27.1", disk)
    assert old.pool.simple.mode == "cpu"
    assert any("ignores kv_offload_backend" in w for w in old.warnings)
    sp = simple(DEEPSEEK_V3, "0.33.0", disk).pool.simple
    assert (sp.mode, sp.num_cpu_blocks_per_rank) == ("disk", 100 * GIB // 1179648)
    assert sp.disk_files == tuple(f"/nvme/kv.rank_{i}" for i in range(8))
    assert sp.stages[2].disk_bytes_per_rank == 91022 * 1179648
    assert sp.stages[2].resident_bytes_per_worker == 16 * 2 * (2 * 73728 + 4096) == 4849664


def test_disk_refusals_per_release():
    # disk_path is required from 0.28.0; disk_capacity_bytes 0: 0.29.0 starts, its scheduler sizes from the CPU
    # capacity (970 on stage 0) while every worker gets max(1, 0 // b) = 1 slot: out of bounds; 0.30.0 refuses.
    assert "requires disk_path" in simple(DEEPSEEK_V3, "0.28.0", {"simple": {"kv_offload_backend": "disk"}}
                                          ).pool.startup_error
    zero = {"simple": {"kv_offload_backend": "disk", "disk_path": "/nvme/kv", "disk_capacity_bytes": 0}}
    sp = simple(DEEPSEEK_V3, "0.29.0", zero).pool.simple
    assert (sp.num_cpu_blocks_scheduler, sp.out_of_bounds.first) == (970, 1)
    assert "disk_capacity_bytes > 0" in simple(DEEPSEEK_V3, "0.30.0", zero).pool.startup_error


def test_disk_needs_4096_byte_blocks_without_the_page_cache():
    # One layer of 1 KV head of 40 at block 16: 16 x (40 + 40) x 2 = 2,560 B a block, not a multiple of 4,096:
    # O_DIRECT's assert at start (0.29.0 whatever use_page_cache; 0.30.0 only without it).
    layout = {"model": {"num_layers": 1, "num_kv_heads": 1, "head_size": 40}, "cache": {"max_model_len": 4096}}
    disk = {"kv_offload_backend": "disk", "disk_path": "/nvme/kv"}
    assert "not aligned to 4096" in simple(layout, "0.30.0", {"simple": disk}).pool.startup_error
    assert "not aligned to 4096" in simple(layout, "0.29.0", {"simple": {**disk, "use_page_cache": True}}
                                           ).pool.startup_error
    assert simple(layout, "0.30.0", {"simple": {**disk, "use_page_cache": True}}).pool.startup_error is None


def test_the_hybrid_manager_can_be_forced_on_from_0_19_0():
    # SimpleCPUOffloadConnector subclasses SupportsHMA from 0.19.0: forcing the manager on is allowed where the
    # OffloadingConnector is refused (before 0.21.0); by default it is off with a connector before 0.22.0.
    gemma = {"model": {"num_layers": 12, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
                       "layer_pattern": ["sliding_attention"] * 5 + ["full_attention"]},
             "cache": {"max_model_len": 8192}}
    assert simple(gemma, "0.20.2", cache={"hybrid_kv_cache_manager": "on"}).hma_enabled is True
    assert simple(gemma, "0.21.0").hma_enabled is False
    assert simple(gemma, "0.22.0").hma_enabled is True


def test_a_layout_without_full_attention_is_refused():
    # All sliding layers with the hybrid manager on: the scheduler finds no FullAttentionSpec group (fa_gidx).
    layout = {"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
                        "layer_types": ["sliding_attention"] * 4}, "cache": {"max_model_len": 8192}}
    assert "fa_gidx" in simple(layout, "0.33.0").pool.startup_error


# ------------------------------------------------------------------------------------------------ inputs

def test_the_variable_selects_the_connector_only_with_kv_offloading_size():
    # native + kv_offloading_size + VLLM_USE_SIMPLE_KV_OFFLOAD=1 -> SimpleCPUOffloadConnector on 0.19.0+;
    # 0.18.1 does not read it; cpu_bytes_to_use (the --kv-transfer-config spelling) stays OffloadingConnector.
    base = deep_merge(DEEPSEEK_V3, {"offload": {"use_simple_kv_offload": True}})
    picked = plan(layout_from_dict(deep_merge(base, {"offload": {"kv_offloading_size": 8},
                                                     "vllm": {"version": "0.19.0"}})))
    assert picked.pool.backend == "simple"
    for extra in ({"offload": {"kv_offloading_size": 8}, "vllm": {"version": "0.18.1"}},
                  {"offload": {"cpu_bytes_to_use": "8GiB"}, "vllm": {"version": "0.33.0"}}):
        p = plan(layout_from_dict(deep_merge(base, extra)))
        assert p.pool.backend == "native"
        assert any("VLLM_USE_SIMPLE_KV_OFFLOAD" in n or "use_simple_kv_offload" in n for n in p.notes)


SERVE = ["vllm", "serve", "examples/configs/kimi-k2.5.json", "-tp", "4", "--max-model-len", "128K",
         "--kv-offloading-size", "64"]


def test_a_serve_line_with_the_variable_is_never_planned_as_offloading_connector(capsys):
    # Kimi-K2.5 (61 MLA layers) at TP 4, FLASH_ATTN_MLA's 16-token blocks (0.33.0 on an H100-class GPU): 64 GiB // 4 =
    # 16 GiB // (61 x 16 x 1,152 = 1,124,352) = 15,279 blocks on every rank.
    code, out, err = run(capsys, "plan", "--format", "json", "--", "VLLM_USE_SIMPLE_KV_OFFLOAD=1", *SERVE)
    assert code == 0, err
    off = json.loads(out)["offload"]
    assert (off["backend"], off["simple"]["num_cpu_blocks_per_rank"]) == ("simple", 15279)
    code, out, err = run(capsys, "plan", "--format", "json", "--", *SERVE)
    assert json.loads(out)["offload"]["backend"] == "native"


def test_a_serve_line_naming_the_connector(capsys):
    # The InferenceX DSv4 launcher's spelling (cpu_bytes_to_use for the engine, lazy_offload): 64 GiB -> 15,279.
    cfg = ('{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both","kv_connector_extra_config":'
           '{"cpu_bytes_to_use":68719476736,"lazy_offload":true}}')
    code, out, err = run(capsys, "plan", "--format", "json", "--", *SERVE[:-2], "--kv-transfer-config", cfg)
    assert code == 0, err
    sp = json.loads(out)["offload"]["simple"]
    assert (sp["num_cpu_blocks_per_rank"], sp["lazy_offload"]) == (15279, True)


def test_bad_variable_values_are_one_line_exit_2(capsys):
    code, out, err = run(capsys, "plan", "--", "VLLM_USE_SIMPLE_KV_OFFLOAD=yes", *SERVE)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert "VLLM_USE_SIMPLE_KV_OFFLOAD: expected an integer" in err


def test_a_manifest_with_the_variable(capsys, tmp_path):
    model = tmp_path / "kimi-k2.5"
    model.mkdir()
    shutil.copy(os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"), model / "config.json")
    with open(os.path.join(ROOT_DIR, "tests", "fixtures", "k8s", "deployment-simple.yaml"), encoding="utf-8") as fh:
        text = fh.read().replace("/models/kimi-k2.5", str(model))
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text)
    code, out, err = run(capsys, "plan", "--k8s", str(manifest), "--format", "json")
    assert code == 0, err
    off = json.loads(out)["offload"]
    # Kimi-K2.5 at TP 4, block 64, 64 GiB: 3,819 blocks on every rank, 4 x 3,819 x 4,497,408 B pinned.
    assert (off["backend"], off["simple"]["num_cpu_blocks_per_rank"]) == ("simple", 3819)
    assert off["host"]["resident_bytes_per_engine"] == 4 * 3819 * 4497408
    manifest.write_text(text.replace('value: "1"', 'value: "0"'))
    code, out, err = run(capsys, "plan", "--k8s", str(manifest), "--format", "json")
    assert json.loads(out)["offload"]["backend"] == "native"


def test_bad_layouts_name_the_key():
    with pytest.raises(KvcalcError, match=r"offload\.simple: expected no simple section"):
        layout_from_dict({"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128},
                          "cache": {"max_model_len": 4096}, "offload": {"simple": {"num_cpu_blocks": 5}}})
    with pytest.raises(KvcalcError, match=r"offload\.simple\.kv_offload_backend: expected one of cpu, disk"):
        simple(DEEPSEEK_V3, "0.33.0", {"simple": {"kv_offload_backend": "nvme"}})
    with pytest.raises(KvcalcError, match=r"offload\.block_size: expected no value with SimpleCPUOffloadConnector"):
        simple(DEEPSEEK_V3, "0.33.0", {"block_size": 64})


# ------------------------------------------------------------------------------------------- the commands

def _write(tmp_path, layout: dict, version: str, offload: dict | None = None) -> str:
    import yaml

    data = deep_merge(layout, {"offload": {"backend": "simple", **(offload or {})}, "vllm": {"version": version}})
    path = tmp_path / "layout.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_check_gates_the_out_of_bounds_verdict(capsys, tmp_path):
    # 128 GiB so the CPU tier outholds the GPU's 317,744 tokens: 128 GiB // 4 = 32 GiB a rank; stage 1 gets
    # 34,359,738,368 // 1,081,344 = 31,775 blocks (31,775 / 2,048 blocks a request x 32,768 = 508,400 tokens), the
    # scheduler 32,768 on 0.32.0: ids 31,775..32,767 out of bounds.
    path = _write(tmp_path, QWEN3_32B_EAGLE3, "0.32.0", {"cpu_bytes_to_use": "128GiB"})
    code, out, err = run(capsys, "plan", path, "--check", "--format", "json")
    assert code == 1
    gates = {c["name"]: c for c in json.loads(out)["checks"]}
    assert gates["out_of_bounds"]["passed"] is False
    assert "31,775..32,767" in gates["out_of_bounds"]["reason"]
    assert gates["cpu_smaller_than_gpu"]["passed"] is True
    code, out, err = run(capsys, "plan", _write(tmp_path, QWEN3_32B_EAGLE3, "0.33.0", {"cpu_bytes_to_use": "128GiB"}),
                         "--check", "--format", "json")
    assert code == 0, err


def test_vllm_args_spells_both_and_reads_back(capsys, tmp_path):
    path = _write(tmp_path, DEEPSEEK_V3, "0.33.0", {"cpu_bytes_to_use": "8GiB"})
    code, out, err = run(capsys, "vllm-args", path, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["env_kv_offloading_size"] == {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}
    assert doc["args_kv_offloading_size"][-2:] == ["--kv-offloading-size", "8.0"]
    cfg = json.loads(doc["args_kv_transfer_config"][-1])
    assert cfg == {"kv_connector": "SimpleCPUOffloadConnector", "kv_role": "kv_both",
                   "kv_connector_extra_config": {"cpu_bytes_to_use": 8 * GIB}}
    code, out, err = run(capsys, "vllm-args", path)
    assert out.startswith("VLLM_USE_SIMPLE_KV_OFFLOAD=1 vllm serve <model> ")


def test_size_answers_in_the_connectors_budget(capsys, tmp_path):
    # 2M tokens of 131,072-token requests on DeepSeek-V3 PP 4 x TP 2, 0.33.0: a request takes 131,072 / 64 = 2,048
    # blocks; 2,097,152 tokens = 16 requests = 32,768 blocks on every rank; the worst stage's block is 1,179,648 B:
    # 32,768 x 1,179,648 = 38,654,705,664 B a rank, x 8 ranks = 309,237,645,312 B for the engine.
    path = _write(tmp_path, DEEPSEEK_V3, "0.33.0")
    code, out, err = run(capsys, "size", path, "--cpu-tokens", "2M", "--format", "json")
    assert code == 0, err
    s = json.loads(out)["simple"]
    assert (s["num_cpu_blocks_per_rank"], s["bytes_per_rank"], s["cpu_bytes_to_use"]) == \
        (32768, 38654705664, 309237645312)
    assert s["tokens"] == 2097152
    # 0.32.0: the scheduler (stage 0, 1,105,920 B a block) outcounts stage 2 at every budget: no answer.
    path = _write(tmp_path, DEEPSEEK_V3, "0.32.0")
    code, out, err = run(capsys, "size", path, "--cpu-tokens", "2M", "--format", "json")
    assert json.loads(out)["simple"]["out_of_bounds_at_any_budget"] is True


def test_sweep_rows_carry_the_connectors_figures(capsys, tmp_path):
    path = _write(tmp_path, DEEPSEEK_V3, "0.32.0")
    code, out, err = run(capsys, "sweep", path, "--vllm-version", "0.32.0,0.33.0", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["family"], r["cpu_blocks_scheduler"], r["cpu_blocks_worst_worker"], r["out_of_bounds"])
            for r in rows] == [("simple", 970, 910, True), ("simple", 910, 910, False)]


def test_the_table(capsys, tmp_path):
    code, out, err = run(capsys, "plan", _write(tmp_path, QWEN3_32B_EAGLE3, "0.32.0", {"cpu_bytes_to_use": "8GiB"}))
    assert code == 0, err
    assert "out-of-bounds CPU stores      YES ids 1,985–2,047 (PP stage 1)" in out
    assert "UNSAFE on vLLM 0.32.0" in out


def test_compare_versions_carries_the_pool_per_release(capsys):
    # The example (Qwen3-32B + EAGLE3, PP 2 x TP 2, 128 GiB): 32 GiB a rank; stage 0 32,768 blocks, stage 1 31,775.
    # 0.18.1 has no connector; 0.32.0's scheduler counts 32,768; 0.33.0 gives 31,775 everywhere.
    code, out, err = run(capsys, "plan", "examples/simple/qwen3-32b-eagle3-pp2-tp2.yaml", "--compare-versions",
                         "0.18.1,0.32.0,0.33.0", "--format", "json")
    assert code == 0, err
    rels = json.loads(out)["releases"]
    assert "Unsupported connector type" in rels[0]["startup_error"]
    assert [(r["simple"]["num_cpu_blocks_scheduler"], r["simple"]["num_cpu_blocks_per_rank"]) for r in rels[1:]] == \
        [(32768, 31775), (31775, 31775)]
    assert [r["offload"] for r in rels] == [None, None, None]


def test_a_native_plan_loads_none_of_the_connectors_modules():
    # Start-up time is a target: the connector's modules load only for its layouts (backends.base.backend).
    import subprocess
    import sys

    code = ("import sys, kvcalc.cli as c; rc = c.main(['plan', 'examples/llama-3.1-8b.yaml', '--format', 'json']); "
            "sys.stderr.write(f'rc={rc} loaded=' + ','.join(sorted(m for m in sys.modules if 'simple' in m)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT_DIR, timeout=60)
    last = r.stderr.strip().splitlines()[-1]
    assert last == "rc=0 loaded="


@pytest.mark.parametrize("offload, expected", [
    ({"backend": "simple", "simple": {"kv_offload_backend": "nvme"}}, "offload.simple.kv_offload_backend: expected one "
                                                                      "of cpu, disk, got 'nvme'"),
    ({"backend": "simple", "simple": {"num_cpu_blocks": 0}}, "offload.simple.num_cpu_blocks: expected an integer"),
    ({"backend": "simple", "simple": {"disk_path": ""}}, "offload.simple.disk_path: expected a non-empty string"),
    ({"backend": "simple", "simple": {"typo": 1}}, "offload.simple.typo: expected a known key"),
    ({"simple": {"num_cpu_blocks": 5}}, "offload.simple: expected no simple section with this backend"),
    ({"use_simple_kv_offload": "yes"}, "offload.use_simple_kv_offload: expected true or false"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, offload, expected):
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128},
                                    "cache": {"max_model_len": 4096}, "offload": offload}))
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2
    assert err.count("\n") == 1
    assert f"{path}: {expected}" in err
