"""Plans read from a `vllm serve` command line and the local Hugging Face cache (issue 12, parts 1 and 2).

The expected numbers are the examples' own vectors: a serve line that spells a layout must give that layout's plan.
"""

import json
import os
import shutil

import pytest

from conftest import EXAMPLES_DIR, run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
SERVE = os.path.join(HERE, "fixtures", "serve")
CONFIGS = os.path.join(EXAMPLES_DIR, "configs")



def fake_cache(root, repo: str, config: str, revision: str = "main", commit: str = "0123abcd" * 5) -> str:
    """The hub client's layout: refs/<revision> holds the commit, snapshots/<commit>/config.json is a symlink
    into blobs/."""
    base = root / ("models--" + repo.replace("/", "--"))
    (base / "refs").mkdir(parents=True, exist_ok=True)
    (base / "refs" / revision).write_text(commit)
    (base / "blobs").mkdir(exist_ok=True)
    blob = base / "blobs" / "cfg-blob"
    shutil.copy(config, blob)
    snap = base / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    os.symlink(blob, snap / "config.json")
    return str(root)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    fake_cache(root, "moonshotai/Kimi-K2.5", os.path.join(CONFIGS, "kimi-k2.5.json"))
    fake_cache(root, "org/kimi-eagle3", os.path.join(CONFIGS, "kimi-k2.5-eagle3.json"))
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_a_serve_line_from_a_script_plans_vector_b2(capsys, cache):
    # The fixture spells the kimi-k2.5-eagle3-tp4 layout: 9,412 GPU blocks; 0.19.1 old 3,758 / 60, fixed 3,765.
    with open(os.path.join(SERVE, "kimi-k2.5-eagle3-tp4.sh")) as fh:
        line = fh.read()
    code, out, err = run(capsys, "plan", "--serve", line, "--vllm-version", "0.19.1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parallel"]["tensor_parallel_size"] == 4
    assert doc["gpu"]["num_blocks"] == 9412
    assert doc["offload"]["old"]["num_blocks_scheduler"] == 3758
    assert doc["offload"]["old"]["num_blocks_workers"] == [60]
    assert doc["offload"]["fixed"]["num_blocks_scheduler"] == 3765
    assert doc["model"]["draft"] == {"method": "eagle3", "num_layers": 1}
    assert "--trust-remote-code, --port, --served-model-name" in err


def test_the_double_dash_form_equals_the_string_form(capsys, cache):
    argv = ["vllm", "serve", "moonshotai/Kimi-K2.5", "-tp", "4", "--block-size=64", "--kv-cache-memory-bytes", "40G",
            "--max-model-len", "128K", "--kv-offloading-size", "64"]
    code, a, err = run(capsys, "plan", "--format", "json", "--", *argv)
    assert code == 0, err
    code, b, err = run(capsys, "plan", "--format", "json", "--serve", " ".join(argv))
    assert code == 0, err
    assert json.loads(a) == json.loads(b)
    # 40G is vLLM's human_readable_int: 40 x 2^30; 128K = 131,072; --kv-offloading-size 64 = 64 GiB.
    doc = json.loads(a)
    assert doc["cache"]["kv_cache_memory"] == [40 << 30]
    assert doc["cache"]["max_model_len"] == 131072
    assert doc["offload"]["cpu_bytes_to_use"] == 64 << 30


def test_a_vllm_config_file_under_the_command_line(capsys):
    # The file says TP 2; the line says TP 4 and wins, as in vLLM.
    cfg = os.path.join(SERVE, "vllm-config.yaml")
    model = os.path.join(CONFIGS, "kimi-k2.5.json")
    code, out, err = run(capsys, "plan", "--format", "json", "--", "vllm", "serve", model, "--config", cfg, "-tp", "4")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parallel"]["tensor_parallel_size"] == 4
    assert doc["cache"]["max_model_len"] == 32768
    assert doc["cache"]["enable_prefix_caching"] is True
    assert doc["offload"]["cpu_bytes_to_use"] == 64 << 30


def test_a_revision_and_a_commit(capsys, tmp_path, monkeypatch):
    root = tmp_path / "hub"
    fake_cache(root, "org/model", os.path.join(CONFIGS, "kimi-k2.5.json"), revision="v2", commit="f" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    code, out, err = run(capsys, "plan", "--format", "json", "--", "vllm", "serve", "org/model", "--revision", "v2",
                         "-tp", "4", "--kv-offloading-size", "1")
    assert code == 0, err
    code, out, err = run(capsys, "plan", "--format", "json", "--", "vllm", "serve", "org/model", "--revision",
                         "f" * 40, "-tp", "4", "--kv-offloading-size", "1")
    assert code == 0, err


def test_hf_home_is_the_fallback(tmp_path, monkeypatch):
    from kvcalc.inputs.serve.vllm import hub_cache_dirs

    assert hub_cache_dirs({"HF_HUB_CACHE": "/a", "HF_HOME": "/b"}) == ["/a"]
    assert hub_cache_dirs({"HF_HOME": "/b"}) == [os.path.join("/b", "hub")]
    assert hub_cache_dirs({})[0].endswith(os.path.join(".cache", "huggingface", "hub"))


@pytest.mark.parametrize("argv, needle", [
    (["vllm", "serve", "no-such/model"], "tried "),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--kv-transfer-config", "{not json"], "--kv-transfer-config: expected "
                                                                                     "valid JSON"),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--frobnicate", "3"], "--frobnicate: expected an option of vLLM 0.33.0's `vllm serve` (vLLM stops with 'unrecognized arguments')"),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'],
     "kvcalc models OffloadingConnector, LMCacheConnectorV1, LMCacheMPConnector and SimpleCPUOffloadConnector"),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--kv-offloading-backend", "lmcache", "--kv-offloading-size", "8",
      "--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'], "give one of them"),
    # config/kv_transfer.py __post_init__: a connector without kv_role is a ValueError at start-up (issue 22).
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--kv-transfer-config", '{"kv_connector": "OffloadingConnector", '
      '"kv_connector_extra_config": {"cpu_bytes_to_use": 1000000000}}'], "Please specify kv_role"),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "-tp", "four"], "-tp: expected an integer, got 'four'"),
    (["vllm", "serve", "moonshotai/Kimi-K2.5", "--max-model-len", "64GB"], "--max-model-len"),
    (["vllm", "serve"], "a model"),
])
def test_bad_serve_lines_are_one_line_exit_2(capsys, cache, argv, needle):
    code, out, err = run(capsys, "plan", "--", *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kvcalc: error: "), err
    assert needle in lines[0], err


def test_a_model_not_in_the_cache_names_every_path_and_the_fetch_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    code, out, err = run(capsys, "plan", "--", "vllm", "serve", "org/absent")
    assert code == 2
    assert str(tmp_path / "empty" / "models--org--absent" / "snapshots" / "main" / "config.json") in err
    assert "huggingface-cli download org/absent config.json" in err


def test_a_layout_and_a_serve_line_are_exclusive(capsys):
    code, out, err = run(capsys, "plan", os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml"), "--serve", "vllm serve x")
    assert code == 2
    assert "give one input" in err


@pytest.mark.parametrize("config", sorted(n for n in os.listdir(CONFIGS) if n.endswith(".json") and "eagle" not in n))
@pytest.mark.parametrize("version", ["0.19.1", "0.22.1", "0.33.0"])
def test_vllm_args_round_trips_through_a_serve_line(capsys, config, version):
    # What vllm-args prints, fed back as a serve line (MODEL = the config), plans exactly what the config plans.
    from kvcalc.inputs.hf.limits import model_limits

    path = os.path.join(CONFIGS, config)
    with open(path) as fh:
        derived = model_limits(json.load(fh), path).derived_max_model_len  # vLLM refuses a longer --max-model-len
    flags = ["--tp", "2", "--cpu-bytes", "64G", "--kv-cache-memory", "40GiB", "--max-model-len",
             str(int(min(32768, derived or 32768))), "--enable-prefix-caching", "--vllm-version", version]
    code, out, err = run(capsys, "plan", path, *flags, "--format", "json")
    if code != 0:
        pytest.skip(f"{config} on {version} is refused: {err.strip()[:80]}")
    direct = json.loads(out)
    code, out, err = run(capsys, "vllm-args", path, *flags, "--force")
    assert code == 0, err
    line = out.splitlines()[-1].replace("<model>", path)  # the --kv-transfer-config spelling: exact bytes
    code, out, err = run(capsys, "plan", "--serve", line, "--vllm-version", version, "--format", "json")
    assert code == 0, err
    back = json.loads(out)
    for key in ("cache", "parallel"):
        assert back[key] == direct[key], key
    # The line names the block size vllm-args settled (--block-size): only the attention section's reasons differ.
    assert {k: v for k, v in back["gpu"].items() if k != "attention"} == \
        {k: v for k, v in direct["gpu"].items() if k != "attention"}
    assert [c["backend"] for c in back["gpu"]["attention"]["choices"]] == \
        [c["backend"] for c in direct["gpu"]["attention"]["choices"]]
    for key in ("selected", "old", "fixed", "host", "startup_error"):
        assert back["offload"][key] == direct["offload"][key], key


def test_gpu_blocks_from_a_startup_log(capsys, tmp_path):
    # Vector b2's log: 40.00 GiB allows 9,411..9,413 blocks; "602,368 tokens" (= 9,412 x 64) pins 9,412.
    log = os.path.join(HERE, "fixtures", "logs", "kimi-k2.5-eagle3-tp4-v0.33.0.log")
    layout = os.path.join(EXAMPLES_DIR, "kimi-k2.5-eagle3-tp4.yaml")
    code, out, err = run(capsys, "plan", layout, "--kv-cache-memory-from-log", log, "--vllm-version", "0.33.0",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gpu"]["num_blocks"] == 602368 // 64 == 9412
    assert doc["cache"]["num_gpu_blocks_override"] == 9412
    assert doc["cache"]["kv_cache_memory"] is None
    assert "9,412 GPU blocks from" in err
    assert "matched by its KV cache size line" in err
    # A log with the memory line only: the smallest count its rounding allows, said so.
    only = tmp_path / "only.log"
    only.write_text("Available KV cache memory: 40.00 GiB\n")
    code, out, err = run(capsys, "plan", layout, "--kv-cache-memory-from-log", str(only), "--vllm-version", "0.33.0",
                         "--format", "json")
    assert code == 0
    assert json.loads(out)["gpu"]["num_blocks"] == 9411
    assert "the smallest of 9,411..9,413" in err
    none = tmp_path / "none.log"
    none.write_text("INFO nothing\n")
    code, out, err = run(capsys, "plan", layout, "--kv-cache-memory-from-log", str(none))
    assert code == 2
    assert "no 'Available KV cache memory' line" in err


def test_init_from_a_serve_line_plans_what_the_line_plans(capsys, tmp_path):
    line = (f"vllm serve {os.path.join(CONFIGS, 'kimi-k2.5.json')} -tp 4 --block-size 64 --kv-cache-memory-bytes 40G "
            "--max-model-len 32K --kv-offloading-size 64")
    code, text, err = run(capsys, "init", "--serve", line)
    assert code == 0, err
    assert "tensor_parallel_size: 4  # -tp" in text
    assert "kv_offloading_size: 64.0  # --kv-offloading-size" in text
    path = tmp_path / "layout.yaml"
    path.write_text(text)
    code, a, err = run(capsys, "plan", str(path), "--format", "json")
    assert code == 0, err
    code, b, err = run(capsys, "plan", "--serve", line, "--format", "json")
    assert code == 0, err
    a, b = json.loads(a), json.loads(b)
    for key in ("gpu", "cache", "parallel"):
        assert a[key] == b[key], key
    assert a["offload"]["selected"] == b["offload"]["selected"]


LMCACHE_LINE = ("vllm serve {model} -tp 4 --kv-transfer-config "
                "'{{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}}'")


def _lmcache_gates(capsys, line, *flags):
    code, out, err = run(capsys, "plan", "--serve", line, "--vllm-version", "0.33.0", "--check", "--format", "json",
                         *flags)
    doc = json.loads(out)
    return code, doc, {c["name"]: c for c in doc["checks"]}


@pytest.mark.parametrize("how", ["variable", "config file"])
def test_an_lmcache_variable_before_the_serve_line_sets_its_pool(capsys, tmp_path, how):
    # Issue 34: `LMCACHE_MAX_LOCAL_CPU_SIZE=100 vllm serve …` (or LMCACHE_CONFIG_FILE naming a file that says so)
    # was planned on LMCache's 5 GiB default and the note said the variable did not change the pool. LMCache reads
    # its environment in the serve process: 100 GiB on each of the 4 TP ranks = 400 GiB, past a 300 GiB node.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(HERE, "fixtures", "models", "llama-3.1-8b.json"), model / "config.json")
    if how == "variable":
        prefix = "LMCACHE_MAX_LOCAL_CPU_SIZE=100"
    else:
        (tmp_path / "lmcache.yaml").write_text("max_local_cpu_size: 100\n")
        prefix = f"LMCACHE_CONFIG_FILE={tmp_path}/lmcache.yaml"
    code, doc, gates = _lmcache_gates(capsys, f"{prefix} " + LMCACHE_LINE.format(model=model),
                                      "--host-memory", "300GiB")
    assert doc["offload"]["lmcache"]["max_local_cpu_size"] == 100
    assert doc["offload"]["lmcache"]["pool_bytes_per_engine"] == 4 * 100 * 2 ** 30
    assert gates["host_memory"]["status"] == "fail"
    assert code == 1


@pytest.mark.parametrize("budget, bytes_", [("1.5e10", 15_000_000_000), ("68719476736.9", 68_719_476_736)])
def test_a_float_cpu_bytes_to_use_is_what_vllms_int_makes_of_it(capsys, tmp_path, budget, bytes_):
    # Issue 34: a float budget in kv_connector_extra_config was refused as "vLLM calls int() on it and stops"; the
    # spec's int(cpu_bytes_to_use) (v1/kv_offload/cpu/spec.py:123 @0.33.0) truncates a float and goes on.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(HERE, "fixtures", "models", "llama-3.1-8b.json"), model / "config.json")
    cfg = '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":%s}}'
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve {model} --kv-transfer-config '{cfg % budget}'",
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["cpu_bytes_to_use"] == bytes_
    text = cfg % '"64G"'
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve {model} --kv-transfer-config '{text}'",
                         "--vllm-version", "0.33.0")
    assert code == 2
    assert "int() raises on it" in err


@pytest.mark.parametrize("env, backend", [("VLLM_ROCM_USE_AITER=1 ", "ROCM_AITER_MLA"), ("", "TRITON_MLA"),
                                          ("VLLM_ROCM_USE_AITER=false ", "TRITON_MLA")])
def test_a_serve_lines_aiter_variable_moves_rocms_backend(capsys, env, backend):
    # The selection vectors (tests/fixtures/attn/vectors.json, executed on 0.14.1): mla-dsv3 on gfx942, KV auto:
    # ROCM_AITER_MLA with VLLM_ROCM_USE_AITER=1, TRITON_MLA with 0 (envs.py: "true" / "1" turn it on).
    model = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "attn", "models",
                         "mla-dsv3")
    code, out, err = run(capsys, "plan", "--serve", f"{env}vllm serve {model} --kv-cache-memory-bytes 40G -tp 8",
                         "--vllm-version", "0.14.1", "--gpu", "MI300X", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["gpu"]["attention"]["choices"][0]["backend"] == backend
