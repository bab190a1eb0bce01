"""Issue 22: hostile and edge inputs that gave tracebacks, exit 70, hangs or silently wrong output. Each test
failed before its fix."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLES_DIR, ROOT_DIR, run

LLAMA = os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml")
BIG = "9" * 5000  # past Python's 4,300-digit int() limit


def sh(script, **env):
    """A shell line around `kvcalc` (streams closed or full): (exit code, stdout, stderr)."""
    e = {**os.environ, "PYTHONPATH": ROOT_DIR, **env}
    p = subprocess.run(["sh", "-c", re.sub(r"(?<![\w/.-])kvcalc(?![\w/.-])", f"{sys.executable} -m kvcalc", script)], cwd=ROOT_DIR, env=e,
                       capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_a_closed_stdout_is_a_failed_write():
    code, _, err = sh(f"kvcalc plan {LLAMA} --vllm-version 0.33.0 >&-")
    assert code == 74
    assert "cannot write the output: standard output is closed" in err


def test_a_closed_stderr_keeps_the_exit_code():
    # Bad input is exit 2 whether or not its line can be written; a diagnostic that cannot be written turns a
    # success into 74 (a failed write), never 1 (a gate).
    code, _, _ = sh("kvcalc plan nonexistent.yaml 2>&-")
    assert code == 2
    code, _, _ = sh(f"kvcalc plan {EXAMPLES_DIR}/configs/gemma-3-27b.json 2>/dev/full >/dev/null")
    assert code == 74


@pytest.mark.skipif(not os.path.exists("/proc/kmsg"), reason="no /proc/kmsg")
def test_a_file_that_blocks_is_not_waited_for():
    code, _, err = sh("kvcalc plan /proc/kmsg")
    assert code == 2
    assert len(err.strip().splitlines()) == 1


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "layout.yaml"
    os.mkfifo(fifo)
    code, _, err = sh(f"kvcalc plan {fifo}")
    assert code == 2
    assert "not a regular file" in err


def test_rich_markup_in_a_path_or_a_name_is_text(capsys, tmp_path):
    # "[/]" raised MarkupError (exit 70); "[bold]x[/bold]" changed what the table showed.
    folder = tmp_path / "m[x"
    folder.mkdir()
    path = folder / "[red]a[ b.yaml"
    with open(LLAMA) as fh:
        text = fh.read()
    path.write_text(text.replace("name: Llama-3.1-8B", 'name: "Llama [/] [bold]x[/bold]"', 1))
    code, out, err = run(capsys, "plan", str(path), "--vllm-version", "0.33.0")
    assert code == 0, err
    assert "Llama [/] [bold]x[/bold]" in out
    # The group kind "uniform_type [full_attention + mla]" was eaten as markup (Kimi-K2.5 + EAGLE3's groups).
    code, out, err = run(capsys, "plan", os.path.join(EXAMPLES_DIR, "kimi-k2.5-eagle3-tp4.yaml"))
    assert "[full_attention +" in out


def test_terminal_escapes_in_inputs_reach_stderr_escaped(capsys, tmp_path):
    from kvcalc.cli.console import printable

    assert printable("LMCACHE_\x1b[31mX") == "LMCACHE_\\x1b[31mX"
    assert printable("plain text") == "plain text"


@pytest.mark.parametrize("flag", ["--cpu-bytes", "--max-model-len", "--min-cpu-tokens", "--host-memory",
                                  "--shm-size", "--host-overhead"])
def test_numbers_of_thousands_of_digits_are_bad_input(capsys, flag):
    code, out, err = run(capsys, "plan", LLAMA, "--vllm-version", "0.33.0", "--check", flag, BIG)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("columns", ["²", BIG, "0", "abc"])
def test_an_unusable_columns_is_ignored(columns):
    code, out, err = sh(f"kvcalc plan {LLAMA} --vllm-version 0.33.0", COLUMNS=columns, LINES=columns)
    assert code == 0, err
    assert "Summary" in out


def test_deeply_nested_json_on_a_serve_line(capsys, tmp_path):
    deep = "[" * 3000 + "]" * 3000
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve {tmp_path} --kv-transfer-config '{deep}'")
    assert code == 2
    assert "--kv-transfer-config" in err


@pytest.mark.parametrize("revision", ["/etc/passwd", "../../../etc", "main/../../x"])
def test_a_revision_is_a_ref_name_never_a_path(capsys, tmp_path, revision):
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve org/model --revision {revision}")
    assert code == 2
    assert "--revision: expected a branch, tag or commit hash" in err
    assert "root:" not in err


def test_a_ref_file_that_is_not_a_hash_is_not_echoed(capsys, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    refs = cache / "models--org--model" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("SECRET-TOKEN ../../etc\n" * 1000)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    code, out, err = run(capsys, "plan", "--serve", "vllm serve org/model")
    assert code == 2
    assert "SECRET" not in err


def test_a_sweep_table_stops_at_a_thousand_rows(capsys):
    sizes = ",".join(f"{i + 1}GiB" for i in range(1500))
    code, out, err = run(capsys, "sweep", LLAMA, "--vllm-version", "0.33.0", "--cpu-bytes", sizes)
    assert code == 0, err
    assert "1,500 point(s), the first 1,000 shown" in out
    assert "500 more point(s) not planned" in out
    code, out, err = run(capsys, "sweep", LLAMA, "--vllm-version", "0.33.0", "--cpu-bytes", sizes, "--format", "jsonl")
    assert len(out.splitlines()) == 1500
    assert json.loads(out.splitlines()[-1])["cpu_bytes"] == "1500GiB"


@pytest.mark.parametrize("version", ["0.19.1", "0.22.0", "0.26.0"])
def test_pure_mamba_with_prefix_caching_is_refused_in_plan_and_sweep_alike(capsys, version):
    # A TypeError (exit 70) in the start-up check on every release; the sweep printed numbers for the same point.
    mamba = os.path.join(ROOT_DIR, "tests", "fixtures", "models", "mamba2-2.7b.json")
    args = [mamba, "--max-model-len", "4096", "--enable-prefix-caching", "--cpu-bytes", "8GiB", "--vllm-version",
            version]
    code, out, err = run(capsys, "plan", *args)
    assert code == 2
    assert "mamba_block_size" in err
    code, out, err = run(capsys, "sweep", *args, "--format", "jsonl")
    assert code == 0, err
    assert "mamba_block_size" in json.loads(out)["error"]


def test_every_refusal_has_a_json_document_with_format_json(capsys):
    # Issue 21: bad input, an unmapped model and a start-up refusal gave 0 bytes on stdout although the README
    # promised the document.
    for args in (["plan", "nonexistent.yaml"], ["plan", os.path.join(EXAMPLES_DIR, "qwen3-next-80b-tp4.yaml"),
                                                "--vllm-version", "0.19.1"],
                 ["size", LLAMA, "--cpu-tokens", "0"]):
        code, out, err = run(capsys, *args, "--format", "json")
        assert code == 2, args
        doc = json.loads(out)
        assert doc["error"] == err.strip().splitlines()[-1][len("kvcalc: error: "):], args


def test_nnodes_is_the_whole_worlds_node_count(capsys):
    # Issue 22: vLLM's --nnodes counts the nodes of the whole DP x PP x TP world (engine/arg_utils.py 0.33.0:2399-2446:
    # local_world_size = world // nnodes; DP local = max(local_world // (PP x TP), 1)). -dp 2 -tp 2 --nnodes 2: 4
    # ranks, 2 a node = one whole engine a node, so a node keeps one engine's 64 GiB pool (+ 2 workers x 3 GiB).
    args = ["plan", LLAMA, "--vllm-version", "0.33.0", "--dp", "2", "--tp", "2", "--nnodes", "2", "--cpu-bytes",
            "64GiB", "--check", "--format", "json"]
    code, out, err = run(capsys, *args, "--host-memory", "40GiB")
    gate = {c["name"]: c for c in json.loads(out)["checks"]}["host_memory"]
    assert code == 1
    assert gate["status"] == "fail"
    assert gate["need"] >= 64 * 2 ** 30 + 2 * 3 * 2 ** 30
    # 3 nodes do not divide the world of 4 ranks: vLLM stops ('world_size=4 must be divisible by nnodes=3').
    code, out, err = run(capsys, *[a if a != "2" or i != args.index("--nnodes") + 1 else "3"
                                   for i, a in enumerate(args)], "--host-memory", "400GiB")
    assert code == 2
    assert "a divisor of the world size DP x PP x TP = 4" in err


def test_integers_beyond_a_float_are_bad_input(capsys, tmp_path):
    # Issue 22: 10^400 GiB in kv_offloading_size or an LMCache size was an OverflowError (exit 70).
    big = "9" * 400
    for offload in (f"{{kv_offloading_size: {big}}}", f"{{backend: lmcache, lmcache: {{max_local_cpu_size: {big}}}}}"):
        path = tmp_path / "big.yaml"
        path.write_text(f"model: {{hf_config: {EXAMPLES_DIR}/configs/gemma-3-27b.json}}\noffload: {offload}\n")
        code, out, err = run(capsys, "plan", str(path))
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1, err


def test_a_null_sliding_window_pattern_is_bad_input(capsys, tmp_path):
    # Found by the SGLang helper's fuzz seed: `sliding_window_pattern: null` in a Gemma-3 config was `% None`
    # (exit 70); transformers' class fails on it too, so it is refused as a non-integer.
    with open(os.path.join(EXAMPLES_DIR, "configs", "gemma-3-27b.json")) as fh:
        config = json.load(fh)
    config["text_config"]["sliding_window_pattern"] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2
    assert "sliding_window_pattern: expected an integer" in err


# Issue 34: reliability round four.

MODELS = os.path.join(ROOT_DIR, "tests", "fixtures", "models")


def test_a_block_override_with_a_gpu_named_is_planned(capsys):
    # --num-gpu-blocks-override with --gpu and no budget: the GPU section asked for a budget that is not there
    # (AttributeError, exit 70). The override is the count: 100 blocks on the one worker.
    code, out, err = run(capsys, "plan", os.path.join(EXAMPLES_DIR, "configs", "gemma-3-27b.json"), "--gpu", "H100",
                         "--num-gpu-blocks-override", "100", "--format", "json")
    assert code == 0, err
    blocks = [w["num_blocks"] for w in json.loads(out)["gpu"]["workers"]]
    assert blocks == [100]


def test_a_model_type_that_is_not_a_string_is_bad_input(capsys, tmp_path):
    # model_type: [] with --gpu reached a dict lookup (unhashable list, exit 70).
    with open(os.path.join(MODELS, "deepseek-v3.json")) as fh:
        config = json.load(fh)
    config["model_type"] = []
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run(capsys, "plan", str(path), "--gpu", "H100")
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "model_type []" in err


@pytest.mark.parametrize("layout", ["llama-3.1-8b-lmcache-tp8.yaml", "simple/qwen3-32b-eagle3-pp2-tp2.yaml",
                                    "llama-3.1-8b.yaml"])
def test_a_resident_limit_past_any_host_is_bad_input(capsys, layout):
    # size --resident 1e999: the search's float arithmetic overflowed (exit 70, LMCache and simple), or the native
    # connector's refusal printed a 1,000-digit number.
    code, out, err = run(capsys, "size", os.path.join(EXAMPLES_DIR, layout), "--resident", "1e999")
    assert code == 2
    assert err.strip() == "kvcalc: error: --resident: expected a size of at most 2^62 bytes (4 EiB), got '1e999'"


def test_a_hicache_ratio_past_a_float_is_sglangs_refusal(capsys, tmp_path):
    # --hicache-ratio 1e308: int(device tokens x ratio) is infinity: SGLang 0.5.23 pool_host/base.py:226 raises
    # OverflowError; kvcalc raised the same (exit 70).
    path = tmp_path / "sg.yaml"
    path.write_text(f"engine: sglang\nmodel: {{hf_config: {ROOT_DIR}/tests/fixtures/hf/mixtral-8x7b-v0.1.json}}\n"
                    "parallel: {tensor_parallel_size: 2}\ncache: {max_model_len: 32768}\ngpu: {name: H100}\n"
                    "sglang: {version: '0.5.23', hicache: {enabled: true}}\nhost: {available_memory: 512GiB}\n")
    code, out, err = run(capsys, "plan", str(path), "--hicache-ratio", "1e308")
    assert code == 2
    assert "SGLang 0.5.23 refuses to start" in err
    assert "OverflowError" in err


@pytest.mark.parametrize("version", ["0.19.1", "0.25.0"])
def test_pure_mamba_with_prefix_caching_and_a_budget_is_planned(capsys, version):
    # With prefix caching, vLLM gives an attention-free model's state the block size (MambaModelConfig,
    # model_executor/models/config.py 0.19.1:471): kvcalc left it None and divided by it (TypeError, exit 70) in
    # plan and vllm-args. Mode "all": one 16-token block's state per block of the longest request.
    args = [os.path.join(MODELS, "mamba2-2.7b.json"), "--max-model-len", "4096", "--enable-prefix-caching",
            "--kv-cache-memory", "40GiB", "--vllm-version", version]
    code, out, err = run(capsys, "plan", *args, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["cache"]["mamba_block_size"] == 16
    # vllm-args spells a CPU budget, and the connector's handling of all-Mamba groups is refused as not modelled.
    code, out, err = run(capsys, "vllm-args", *args, "--cpu-bytes", "8GiB")
    assert code == 2
    assert "every layer is Mamba" in err


def _model_dir(tmp_path):
    model = tmp_path / "llama"
    model.mkdir()
    with open(os.path.join(MODELS, "llama-3.1-8b.json")) as fh:
        (model / "config.json").write_text(fh.read())
    return model


def test_a_weights_index_that_contradicts_the_config_is_bad_input(capsys, tmp_path):
    # total_size: 1 was trusted: the weights weighed 1 B and the predicted KV budget took the whole GPU.
    model = _model_dir(tmp_path)
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 1}}))
    code, out, err = run(capsys, "plan", str(model / "config.json"), "--gpu", "H100")
    assert code == 2
    assert "model.safetensors.index.json: metadata.total_size: expected the checkpoint's bytes" in err
    assert err.strip().endswith("got 1")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_weights_index_that_is_not_a_file_is_refused_without_reading(tmp_path, kind):
    # The one read that bypassed the guarded reader: a FIFO hung, /dev/zero read 1.9 GB.
    model = _model_dir(tmp_path)
    index = model / "model.safetensors.index.json"
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    code, _, err = sh(f"kvcalc plan {model}/config.json --gpu H100")
    assert code == 2
    assert "not a regular file" in err


def test_init_writes_an_escape_in_its_header_as_an_escape(capsys, tmp_path):
    # The source path's ESC went raw into the YAML header comment: YAML allows no control character, even in a
    # comment, so `plan` refused the file init wrote.
    folder = tmp_path / "m\x1bx"
    folder.mkdir()
    with open(os.path.join(MODELS, "llama-3.1-8b.json")) as fh:
        (folder / "config.json").write_text(fh.read())
    code, out, err = run(capsys, "init", str(folder / "config.json"))
    assert code == 0, err
    assert "\x1b" not in out
    assert "m\\x1bx" in out.splitlines()[0]
    path = tmp_path / "init.yaml"
    path.write_text(out)
    code, out, err = run(capsys, "plan", str(path), "--vllm-version", "0.33.0")
    assert code == 0, err


def _bounded_run(capsys, *argv, seconds=10.0, peak=64 << 20):
    """One CLI call under a time and a Python-heap bound: (exit code, stderr)."""
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    try:
        code, _, err = run(capsys, *argv)
    finally:
        elapsed = time.perf_counter() - start
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < seconds, elapsed
    assert top < peak, top
    return code, err


def _manifest(tmp_path, container, *others):
    import yaml

    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
              "spec": {"template": {"spec": {"containers": [container], "volumes": [
                  {"name": "cfg", "configMap": {"name": "cm"}}]}}}}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all([*others, deploy]))
    return str(path)


def test_env_entries_that_double_are_refused_before_they_grow(capsys, tmp_path):
    # V1 = $(V0)$(V0), V2 = $(V1)$(V1), …: 2.3 KB of manifest reached 2 GB (MemoryError). A value past Linux's
    # MAX_ARG_STRLEN (131,072 B) cannot reach a container (execve: E2BIG): refused at the entry that passes it,
    # 100 x 2^11 = 204,800 > 131,072 at V11.
    env = [{"name": "V0", "value": "x" * 100}] + [{"name": f"V{i}", "value": f"$(V{i - 1})$(V{i - 1})"}
                                                  for i in range(1, 40)]
    path = _manifest(tmp_path, {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "env": env,
                                "command": ["vllm", "serve", "/m"]})
    code, err = _bounded_run(capsys, "plan", "--k8s", path)
    assert code == 2
    assert "containers[0].env[11].value: expected a value of at most 131,072 bytes" in err


def test_a_mounted_file_expanded_many_times_is_bounded(capsys, tmp_path):
    # "$(cat /etc/cfg/a)" 20,000 times over a 50 KB ConfigMap file: 1 GB of expansion; bounded at 4 MiB in all.
    script = 'X="' + "$(cat /etc/cfg/a)" * 20000 + '"\nexec vllm serve /m'
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "y" * 50000}}
    path = _manifest(tmp_path, {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "command": ["sh", "-c", script],
                                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}, cm)
    code, err = _bounded_run(capsys, "plan", "--k8s", path)
    assert code == 2
    assert "expected a script whose expansions produce at most 4,194,304 bytes" in err


def test_a_large_env_is_not_copied_for_every_command(capsys, tmp_path):
    # 216 KB of variables and 5,000 commands before the server: each command got its own copy (1.37 GB). Only
    # the server's command gets one now.
    env = [{"name": f"V{i}", "value": "x" * 100} for i in range(2000)]
    script = "true\n" * 5000 + "exec vllm serve /nonexistent-model"
    path = _manifest(tmp_path, {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "env": env,
                                "command": ["sh", "-c", script]})
    code, err = _bounded_run(capsys, "plan", "--k8s", path)
    assert code == 2
    assert "nonexistent-model" in err


def test_a_flat_megabyte_of_yaml_is_refused_quickly(capsys, tmp_path):
    # 1 MB of `kN: N` lines: the pure-Python loader took 12-15 s and 357 MB; libyaml reads it, and more than
    # 50,000 nodes are refused before anything is built.
    path = tmp_path / "flat.yaml"
    path.write_text("\n".join(f"k{i}: {i}" for i in range(90000))[:1_000_000])
    code, err = _bounded_run(capsys, "plan", "--k8s", str(path), seconds=5.0)
    assert code == 2
    assert "at most 50,000 YAML nodes" in err


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
def test_the_json_refusal_and_the_bare_help_on_a_stdout_that_fails(redirect):
    # The exit-2 JSON document and bare `kvcalc`'s help were written outside the output guard: a traceback. The
    # refusal keeps its exit code (2, as with a closed stderr); the help that cannot be written is a failed write.
    code, _, err = sh(f"kvcalc plan nonexistent.yaml --format json {redirect}")
    assert code == 2
    assert "Traceback" not in err
    assert "kvcalc: error: cannot write the output" in err
    code, _, err = sh(f"kvcalc {redirect}")
    assert code == 74
    assert "Traceback" not in err
    assert err.strip().startswith("kvcalc: error: cannot write the output")


@pytest.mark.parametrize("args", [["--tp", BIG], ["--gpu", "a" * 5000], ["--" + "a" * 5000],
                                  ["--compare-versions", "a" * 5000]])
def test_a_long_value_is_cut_in_the_error_line_with_its_length(capsys, args):
    # A 5,000-character value came back whole in a 5,000-character error line.
    code, out, err = run(capsys, "plan", LLAMA, *args)
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert len(line) < 500, len(line)
    assert "a" * 300 not in line
    assert "9" * 300 not in line


def test_init_writes_layouts_plan_plans(capsys, tmp_path):
    # init --gpu, and init of an SGLang line, wrote the model's shapes without the config.json the budget prediction
    # weighs: plan refused the file ("the KV budget prediction weighs the model from its config.json"; SGLang: "needs
    # the weights on one GPU"). The GPU may still be given at plan time.
    config = os.path.join(MODELS, "llama-3.1-8b.json")
    code, out, err = run(capsys, "init", config, "--gpu", "H100")
    assert code == 0, err
    assert f'hf_config: "{config}"' in out
    path = tmp_path / "gpu.yaml"
    path.write_text(out)
    code, _, err = run(capsys, "plan", str(path), "--vllm-version", "0.33.0")
    assert code == 0, err
    model = tmp_path / "llama"
    model.mkdir()
    with open(config) as fh:
        (model / "config.json").write_text(fh.read())
    code, out, err = run(capsys, "init", "--serve", f"python -m sglang.launch_server --model-path {model} "
                                                   "--enable-hierarchical-cache")
    assert code == 0, err
    path.write_text(out)
    code, _, err = run(capsys, "plan", str(path), "--gpu", "H100")
    assert code == 0, err


def test_a_size_no_budget_answers_is_a_refusal(capsys):
    # LMCache's "no size fits" and SGLang's unreachable --gpu-tokens printed an answer of none and exited 0.
    code, out, err = run(capsys, "size", os.path.join(EXAMPLES_DIR, "llama-3.1-8b-lmcache-tp8.yaml"), "--resident",
                         "1MiB")
    assert code == 2
    assert "no size fits" in err
    code, out, err = run(capsys, "size", os.path.join(EXAMPLES_DIR, "sglang", "mixtral-8x7b-tp2-hicache.yaml"),
                         "--gpu-tokens", "999999999", "--format", "json")
    assert code == 2
    assert json.loads(out)["refusal"].startswith("no mem_fraction_static up to 0.999 holds 999,999,999 tokens")
