"""The CLI end to end: examples, JSON contract, flags, and one-line refusals."""

import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES_DIR, run
from kvcalc.cli import main
from kvcalc.cli.console import RENDERERS
from kvcalc.cli.options import OUTPUT_FORMATS

GIB = 1 << 30
EXAMPLES = sorted(glob.glob(os.path.join(EXAMPLES_DIR, "*.yaml")))



def run_json(capsys, *args):
    code, out, err = run(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def ex(name):
    return os.path.join(EXAMPLES_DIR, name)


def test_there_are_seven_examples():
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_every_example_prints_a_table_and_json(capsys, path):
    code, out, err = run(capsys, "plan", path)
    assert code == 0, err
    assert 'CPU offload' in out
    assert 'Verdict' in out
    doc, _ = run_json(capsys, "plan", path)
    import jsonschema

    from kvcalc.report.schema import output_schema
    jsonschema.validate(doc, output_schema())
    for key in ("schema_version", "vllm_version", "parallel", "gpu", "offload"):
        assert key in doc
    assert doc["schema_version"] == 1
    assert set(doc["parallel"]) >= {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                                    "world_size"}
    gpu = doc["gpu"]
    assert set(gpu) >= {"block_size", "num_blocks", "kv_cache_size_tokens", "max_concurrency", "groups", "workers"}
    for g in gpu["groups"]:
        assert set(g) >= {"kind", "block_size", "page_size_bytes", "layers"}
    for w in gpu["workers"]:
        assert set(w) >= {"pp_rank", "num_blocks", "bytes_per_block", "tensors"}
        assert sum(t["size"] for t in w["tensors"]) == w["num_blocks"] * w["bytes_per_block"]
        assert sum(t["page_bytes"] for t in w["tensors"]) == w["bytes_per_block"]
    off = doc["offload"]
    assert set(off) >= {"cpu_bytes_to_use", "block_size_factor", "old", "fixed", "out_of_bounds",
                        "pinned_bytes_per_engine", "unused_bytes"}
    if off["backend"] == "lmcache":
        # The LMCache backend fills offload.lmcache; the native formula columns stay empty.
        assert off["old"] is None
        assert off["fixed"] is None
        assert off["lmcache"]["pool_bytes_per_engine"] > 0
        assert off["lmcache"]["stages"]
        return
    for f in ("old", "fixed"):
        if off[f] is None:  # that family's release refuses this layout: the reason instead of numbers
            assert off["errors"][f].startswith("vLLM ")
            continue
        assert set(off[f]) >= {"kv_bytes_per_block", "kv_bytes_per_offloaded_block", "num_blocks_scheduler",
                               "num_blocks_workers"}
        assert all(isinstance(v, int) for v in off[f]["num_blocks_workers"])


def test_issue_command_kimi_eagle3_is_vector_b2(capsys):
    doc, err = run_json(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"), "--cpu-bytes", "64G")
    off = doc["offload"]
    assert off["cpu_bytes_to_use"] == 68719476736
    assert off['old']['num_blocks_workers'] == [60]
    assert off['old']['num_blocks_scheduler'] == 3758
    assert off['fixed']['num_blocks_workers'] == [3765]
    assert off['fixed']['num_blocks_scheduler'] == 3765
    assert off['out_of_bounds'] is True
    assert off['selected']['family'] == 'old'
    assert doc['family'] == 'old'
    assert off["old"]["out_of_bounds_ids"] == {"pp_rank": 0, "first": 60, "last": 3757}
    assert doc['gpu']['num_blocks'] == 9412
    assert doc['gpu']['kv_cache_size_tokens'] == 602368
    assert doc["gpu"]["groups"][0]["layers"][-1] == "model.layers.61.self_attn.attn"
    assert 'out-of-bounds' in err
    # and the GPU class the backend was selected for (no --gpu: kvcalc's default, said with its basis)
    assert "H100-class GPU (9.0), no --gpu named" in err
    assert err.count('\n') == 2


def test_issue_command_llama_tp2_is_vector_a2(capsys):
    doc, _ = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"), "--tp", "2", "--cpu-bytes", "64G")
    assert doc["parallel"]["world_size"] == 2
    assert doc["gpu"]["num_blocks"] == 40960
    for f in ("old", "fixed"):
        assert doc["offload"][f]["num_blocks_scheduler"] == 32768
        assert doc["offload"][f]["kv_bytes_per_block"] == 1048576 * 2
    assert doc['offload']['out_of_bounds'] is False
    assert doc['offload']['unused_bytes'] == 0


def test_deepseek_example_is_vector_b64(capsys):
    doc, _ = run_json(capsys, "plan", ex("deepseek-v3-tp4.yaml"))
    assert doc["gpu"]["num_blocks"] == 9549
    assert doc["offload"]["old"]["num_blocks_scheduler"] == doc["offload"]["fixed"]["num_blocks_scheduler"] == 3819
    assert doc["offload"]["unused_bytes"] == 17072128


def test_qwen3_next_example_is_vector_e1(capsys):
    doc, err = run_json(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"))
    assert doc['gpu']['block_size'] == 272
    assert doc['gpu']['num_blocks'] == 12850
    assert doc['offload']['fixed']['num_blocks_scheduler'] == 5140
    assert doc['family'] == 'fixed'
    assert "272" in err


def test_gpt_oss_example_on_old_release_folds(capsys):
    # Vector d1 at TP 2: HMA forced off with the offloader before 0.22 -> 72,817 blocks, 58,254 CPU blocks.
    doc, _ = run_json(capsys, "plan", ex("gpt-oss-120b.yaml"), "--vllm-version", "0.19.1")
    assert doc['gpu']['num_blocks'] == 72817
    assert len(doc['gpu']['workers'][0]['tensors']) == 36
    assert doc["offload"]["old"]["num_blocks_scheduler"] == 58254
    doc, _ = run_json(capsys, "plan", ex("gpt-oss-120b.yaml"))
    assert doc['gpu']['num_blocks'] == 145635
    assert doc['offload']['fixed']['num_blocks_scheduler'] == 116508


def test_kv_offloading_size_is_gib_as_vllm_converts(capsys):
    doc, _ = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"), "--kv-offloading-size", "0.1")
    assert doc["offload"]["cpu_bytes_to_use"] == 107374182
    assert doc["offload"]["fixed"]["num_blocks_scheduler"] == 107374182 // 2097152


def test_decimal_gb_differs_from_gib(capsys):
    # units.md: 64GB -> 30,517 blocks for vector a1; 64G -> 32,768.
    doc, _ = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"), "--cpu-bytes", "64GB")
    assert doc["offload"]["fixed"]["num_blocks_scheduler"] == 30517


def test_flags_override_file(capsys):
    doc, _ = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"), "--pp", "2", "--block-size", "32",
                      "--kv-cache-memory", "20GiB", "--offload-block-size", "64", "--max-model-len", "64K",
                      "--vllm-version", "0.20.0", "--dp", "2")
    assert doc['parallel']['pipeline_parallel_size'] == 2
    assert doc['gpu']['block_size'] == 32
    assert doc['cache']['max_model_len'] == 65536
    assert doc['vllm_version'] == '0.20.0'
    # 16 layers x 32 tokens x 4096 B per stage: 20 GiB / (32 * 131072 ... ) exact:
    page = 32 * 8 * 256 * 2
    assert doc["gpu"]["num_blocks"] == 20 * GIB // page // 16
    assert doc["offload"]["block_size_factor"] == 2
    assert doc["offload"]["cpu_bytes_all_replicas"] == 2 * 64 * GIB


def test_a_zero_budget_is_a_start_up_refusal(capsys):
    # Issue 22: vLLM's CPUOffloadingSpec raises on a falsy cpu_bytes_to_use (v1/kv_offload/cpu/spec.py:100-104
    # @0.33.0): exit 2 (the JSON document says why), and under --check a failed startup gate, exit 1.
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--vllm-version", "0.33.0", "--cpu-bytes", "0",
                         "--format", "json")
    assert code == 2
    assert "cpu_bytes_to_use must be specified in kv_connector_extra_config" in json.loads(out)["error"]
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--vllm-version", "0.33.0", "--cpu-bytes", "0",
                         "--check", "--format", "json")
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["startup"]["status"] == "fail"
    # `size` still plans at no budget to learn a block's bytes.
    code, out, err = run(capsys, "size", ex("llama-3.1-8b.yaml"), "--cpu-tokens", "1M", "--format", "json")
    assert code == 0, err


def test_zero_gpu_blocks_are_vllms_refusal(capsys):
    # Issue 34: --num-gpu-blocks-override 0 was planned (0 GPU blocks, the startup gate passed); vLLM's BlockPool
    # asserts num_gpu_blocks > 0 (v1/core/block_pool.py:169 @0.33.0, :155 @0.14.0): exit 2, and with --check the
    # startup gate fails (exit 1).
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--num-gpu-blocks-override", "0")
    assert code == 2
    assert "BlockPool asserts num_gpu_blocks > 0" in err
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--num-gpu-blocks-override", "0", "--check",
                         "--format", "json")
    assert code == 1
    startup = {c["name"]: c for c in json.loads(out)["checks"]}["startup"]
    assert startup["status"] == "fail"


def test_every_format_has_a_renderer(capsys):
    assert set(RENDERERS) == set(OUTPUT_FORMATS)
    for fmt in OUTPUT_FORMATS:
        code, out, _ = run(capsys, "plan", ex("deepseek-v3-tp4.yaml"), "--format", fmt)
        assert code == 0
        assert out.strip()


def test_json_is_byte_identical_across_runs(capsys):
    a = run(capsys, "plan", ex("gpt-oss-120b.yaml"), "--format", "json")[1]
    b = run(capsys, "plan", ex("gpt-oss-120b.yaml"), "--format", "json")[1]
    assert a == b


def test_python_dash_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kvcalc", "plan", ex("llama-3.1-8b.yaml"), "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert json.loads(r.stdout)['offload']['fixed']['num_blocks_scheduler'] == 32768


def test_verify_rebuilds_views_on_meta(capsys):
    pytest.importorskip("torch")
    for name in ("kimi-k2.5-eagle3-tp4.yaml", "qwen3-next-80b-tp4.yaml", "gpt-oss-120b.yaml"):
        doc, _ = run_json(capsys, "plan", ex(name), "--verify")
        v = doc["verify"]
        assert v['ok']
        assert v['tensors_checked'] == sum((len(w['tensors']) for w in doc['gpu']['workers']))


def test_verify_without_torch_says_how(capsys, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_torch(name, *a, **k):
        if name == "torch":
            raise ImportError("no torch")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--verify")
    assert code == 2
    assert 'kvcalc[torch]' in err
    assert out == ''


# ------------------------------------------------------------------ refusals: one line, exit 2


def write(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


GOOD = """
model: {num_layers: 32, num_kv_heads: 8, head_size: 128}
cache: {block_size: 16, kv_cache_memory: 40GiB, max_model_len: 131072}
offload: {cpu_bytes_to_use: 64GiB}
"""


def refuse(capsys, *args, must=()):
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    assert out == ""
    assert err.count('\n') == 1
    assert err.startswith('kvcalc: error: ')
    assert "Traceback" not in err
    for m in must:
        assert m in err, err
    return err


@pytest.mark.parametrize("text,must", [
    (GOOD.replace("head_size: 128", "head_size: 128, heads: 4"), ["model.heads", "unknown key"]),
    (GOOD.replace("num_layers: 32", "num_layers: thirty"), ["model.num_layers", "integer"]),
    (GOOD.replace("num_layers: 32", "num_layers: 32.0"), ["model.num_layers"]),
    (GOOD.replace("num_kv_heads: 8", "num_kv_heads: 6") + "parallel: {tensor_parallel_size: 4}\n",
     ["model.num_kv_heads", "tensor_parallel_size"]),
    (GOOD.replace("64GiB}", "64GiB, block_size: 24}"), ["offload.block_size", "multiple of the GPU block size 16"]),
    (GOOD.replace("64GiB}", "64g}"), ["offload.cpu_bytes_to_use", "GiB"]),
    (GOOD.replace("block_size: 16,", "block_size: -16,"), ["cache.block_size"]),
    (GOOD + "vllm: {version: 0.20}\n", ["vllm.version", "quoted"]),
    (GOOD + "vllm: {version: '0.12.0'}\n", ["num_cpu_blocks"]),
    (GOOD + "vllm: {version: '0.34.0'}\n", ["newer than every release"]),
    (GOOD.replace("kv_cache_memory: 40GiB,", "kv_cache_memory: [40GiB, 40GiB],"), ["cache.kv_cache_memory"]),
    (GOOD.replace("max_model_len: 131072", "max_model_len: 131072, kv_cache_dtype: turboquant_4bit"),
     ["unsupported KV dtype"]),
    ("model: [1, 2]\n", ["model", "mapping"]),
    ("- just\n- a list\n", ["(top level)", "mapping"]),
    ("model: {num_layers: 2\n", ["valid YAML"]),
    ("", ["model"]),
    (GOOD.replace("max_model_len: 131072", "max_model_len: 1000000000"), ["refuses to start"]),
])
def test_bad_yaml_is_one_line(capsys, tmp_path, text, must):
    path = write(tmp_path, text)
    refuse(capsys, "plan", path, must=[path, *must])


def test_tp_flag_named_in_error(capsys, tmp_path):
    path = write(tmp_path, GOOD)
    refuse(capsys, "plan", path, "--tp", "3", must=["model.num_kv_heads", "--tp"])


def test_missing_file_and_directory(capsys, tmp_path):
    refuse(capsys, "plan", str(tmp_path / "nope.yaml"), must=["nope.yaml", "readable"])
    refuse(capsys, "plan", str(tmp_path), must=[str(tmp_path)])


def test_binary_garbage(capsys, tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    refuse(capsys, "plan", str(p), must=["UTF-8"])


def test_startup_refusal_is_one_line(capsys):
    refuse(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"), "--vllm-version", "0.19.1", must=["unified type"])


def test_forcing_hma_on_before_021_is_refused(capsys):
    refuse(capsys, "plan", ex("gpt-oss-120b.yaml"), "--vllm-version", "0.20.0", "--hma", must=["0.21.0"])


def test_usage_errors_are_one_line(capsys):
    refuse(capsys, "plan", ex("llama-3.1-8b.yaml"), "--format", "xml")
    refuse(capsys, "plan", ex("llama-3.1-8b.yaml"), "--tp", "two")
    refuse(capsys, "plan", ex("llama-3.1-8b.yaml"), "--cpu-bytes", "1G", "--kv-offloading-size", "1")
    refuse(capsys, "plan")


def test_other_family_layout_noted(capsys):
    # Each column is planned on its own release (issue 21). Vector e1: 0.14-0.21 refuse Qwen3-Next with the
    # offloader (rule A): the old column (0.19.1) has no numbers, errors.old says why.
    doc, _ = run_json(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"))
    assert doc['offload']['old'] is None
    assert doc['offload']['errors']['old'].startswith("vLLM 0.19.1 refuses this layout at startup: ")
    assert doc['offload']['fixed']['note'] is None
    # Vector d2: 0.23.0 keeps HMA on for gpt-oss (2 groups of 18 layers); 0.19.1 folds the sliding layers into one
    # group. At TP 2 a layer's page is 16 tokens x 4 heads x 64 x 2 (K, V) x 2 B = 16,384 B; 0.23.0's 18 tensors
    # (one per layer pair) make sum(tensor sizes) // N = 18 x 16,384 = 294,912 B a block, x 2 workers = 589,824 B:
    # the fixed formula gives 68,719,476,736 // 589,824 = 116,508 CPU blocks.
    doc, _ = run_json(capsys, "plan", ex("gpt-oss-120b.yaml"), "--vllm-version", "0.19.1")
    fixed = doc["offload"]["fixed"]
    assert fixed["vllm_version"] == "0.23.0"
    assert fixed["num_blocks_scheduler"] == 68719476736 // (18 * 16384 * 2) == 116508
    assert "hybrid manager on, 2 KV cache group(s)" in fixed["note"]
    doc, _ = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"))
    assert doc["offload"]["old"]["note"] is None


def test_without_kv_memory_cpu_counts_still_exact(capsys, tmp_path):
    # The CPU counts never depend on the GPU block count (old: page x tensors; fixed: sum(page x N) // N):
    # vector (b2)'s 60 / 3,758 / 3,765 without any KV memory, and no GPU numbers invented.
    path = ex("kimi-k2.5-eagle3-tp4.yaml")
    text = open(path).read().replace("  kv_cache_memory: 40GiB\n", "")
    p = tmp_path / "kimi-no-memory.yaml"
    p.write_text(text)
    doc, err = run_json(capsys, "plan", str(p))
    assert doc['gpu']['num_blocks'] is None
    assert doc['gpu']['kv_cache_size_tokens'] is None
    assert all(t["size"] is None for t in doc["gpu"]["workers"][0]["tensors"])
    assert doc['offload']['old']['num_blocks_workers'] == [60]
    assert doc['offload']['old']['num_blocks_scheduler'] == 3758
    assert doc["offload"]["fixed"]["num_blocks_scheduler"] == 3765
    assert "--kv-cache-memory" in err
    code, out, _ = run(capsys, "plan", str(p))
    assert code == 0
    assert 'GPU block count unknown' in out


def test_compare_versions(capsys):
    doc, _ = run_json(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"), "--compare-versions",
                      "0.19.1,0.20.0,0.28.0,0.33.0")
    fams = doc["offload"]["families"]
    assert set(fams) == {"old", "fixed", "replicated", "single-alloc"}
    # Vector b2: OLD-w 60 / OLD-s 3,758; FIXED = 0.28 = 0.33 = 3,765.
    assert fams['old']['num_blocks_workers'] == [60]
    assert fams['old']['num_blocks_scheduler'] == 3758
    assert {fams[f]["num_blocks_scheduler"] for f in ("fixed", "replicated", "single-alloc")} == {3765}
    assert fams['old']['out_of_bounds']
    assert not fams['single-alloc']['out_of_bounds']
    # A release kvcalc models that refuses the layout is a column with its reason (Jamba: before 0.21 the hybrid
    # manager cannot run with a connector, and Mamba layers need it); one it does not model is exit 2.
    doc, _ = run_json(capsys, "plan", ex("jamba-1.5-mini-tp2.yaml"), "--compare-versions", "0.19.1,0.33.0")
    refused = doc["releases"][0]
    assert refused['family'] is None
    assert 'hybrid KV cache manager' in refused['startup_error']
    code, out, err = run(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"), "--compare-versions", "0.12.0,0.33.0")
    assert code == 2
    assert "--compare-versions: vLLM 0.12.0" in err
    code, out, _ = run(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"), "--compare-versions", "0.19.1,0.33.0")
    assert code == 0
    assert 'release by release' in out


def test_selected_entry_has_family_keys(capsys):
    doc, _ = run_json(capsys, "plan", ex("deepseek-v3-tp4.yaml"), "--vllm-version", "0.28.0")
    sel = doc["offload"]["selected"]
    assert doc['family'] == 'replicated'
    assert sel['family'] == 'replicated'
    assert sel['copies'] == 1
    assert sel['alignment'] == 4096
    assert sel['padding_bytes'] == 0
    assert sel['num_blocks_scheduler'] == 15279
    assert doc['offload']['out_of_bounds'] is False
    assert doc["gpu"]["log_lines"] == ["GPU KV cache size: 611,136 tokens, Maximum concurrency for 131,072 tokens "
                                       "per request: 4.66x"]


def test_versions_command(capsys):
    assert main(["versions", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["family"] for f in doc["families"]] == ["manual", "old", "fixed", "packed", "config", "replicated",
                                                      "single-alloc"]
    from kvcalc.vocab.releases.vllm import DEFAULT_VERSION  # the table's default (its newest release)

    assert doc["default_version"] == DEFAULT_VERSION
    assert main(['versions']) == 0
    assert 'single-alloc' in capsys.readouterr().out


def test_a_release_that_does_not_exist_is_refused_naming_the_series(capsys):
    # Every release from 0.14.0 to 0.33.0 was read; 0.29.1 was never published (0.29.x: 0.29.0 only).
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--vllm-version", "0.29.1")
    assert code == 2
    assert "0.29.1 is not a release" in err
    assert "0.29.x: 0.29.0" in err


def test_every_release_is_modelled_as_its_own_source(capsys):
    # 0.29.0 (not read by the spec, once mapped to 0.28) already has the single backing allocation
    # (offloading/config.py: kv_cache_tensors[0].size // num_blocks): family single-alloc, no warning.
    doc, err = run_json(capsys, "plan", ex("llama-3.1-8b.yaml"), "--vllm-version", "0.29.0")
    assert doc["family"] == "single-alloc"
    assert "not read" not in err


def test_a_command_builds_only_the_options_its_line_spells():
    # Each Typer option costs start-up time: `plan FILE --format json` builds --format (and the argument), not
    # --verify, --summary or the other 17 own options; an option it does not build still reaches the command with
    # its default (the plan below runs with verify False, summary False).
    import inspect

    from kvcalc.cli.app import app

    (command,) = [c for c in app.registered_commands if c.callback.__name__ == "plan"]
    flags = command.callback
    flags.select(["examples/llama-3.1-8b.yaml", "--format", "json"])
    built = set(inspect.signature(flags).parameters)
    assert {"layout", "fmt"} <= built, f"plan built {sorted(built)}"
    assert not {"verify", "summary", "compare_versions"} & built, f"plan built {sorted(built)}"
    flags.select(["examples/llama-3.1-8b.yaml", "--verify"])
    assert "verify" in inspect.signature(flags).parameters, "--verify spelled but not built"
    flags.select(["examples/llama-3.1-8b.yaml", "--no-such-option"])
    assert {"verify", "summary"} <= set(inspect.signature(flags).parameters), "an unknown option builds them all"
    flags.select(None)


def test_the_entry_points_freeze_the_imports_and_main_does_not():
    # The console script and `python -m kvcalc` run through cli.entry, which moves the imports' objects to the
    # permanent generation (a cold start's collections stop walking them); main, called in-process, does not.
    import gc
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as fh:  # (tomllib is 3.11+; 3.10 is supported)
        script = [line for line in fh if line.startswith("kvcalc = ")]
    assert script == ['kvcalc = "kvcalc.cli:entry"\n'], f"the console script line: {script}"
    with open(os.path.join(root, "kvcalc", "__main__.py"), encoding="utf-8") as fh:
        assert "sys.exit(entry())" in fh.read(), "python -m kvcalc does not run cli.entry"
    probe = ("import gc, sys; from kvcalc.cli import entry; sys.argv = ['kvcalc', '--version']; rc = entry(); "
             "print(rc, gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.split()[-2:] == ["0", "True"], f"entry: {out.stdout!r}"
    before = gc.get_freeze_count()
    main(["--version"])
    assert gc.get_freeze_count() == before, "main froze the caller's objects"
