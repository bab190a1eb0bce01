"""--engine sglang end to end: the JSON contract, the table, --compare-engines, one-line refusals, and a vLLM plan
that loads none of SGLang's modules."""

import json

import pytest
import os
import subprocess
import sys

from conftest import EXAMPLES_DIR, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
GIB = 1 << 30


def plan_json(capsys, *args):
    code, out, err = run(capsys, "plan", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def test_json_has_engine_and_sglang_section(capsys):
    doc, _ = plan_json(capsys, LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                       "--sglang-version", "0.5.23", "--enable-hierarchical-cache", "--hicache-ratio", "2",
                       "--host-available", "1TiB")
    assert doc["engine"] == "sglang"
    sg = doc["sglang"]
    assert sg["version"] == "0.5.23"
    # H100 TP 1 default: reserve 512 + 8,192 x 1.5 + 1/8 x 1,024 + 256 x 2 + 58 prefill graphs x 8 = 13,904 MiB,
    # round((81,559 - 13,904) / 81,559, 3) = 0.83.
    assert sg["mem_fraction_static"] == 0.83
    assert sg["mem_fraction_static_default"] is True
    # Llama-3.1-8B: 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B a token.
    assert sg["cell_size_bytes"] == [{"pp_rank": 0, "full": 131072, "swa": 0, "total": 131072, "draft": 0}]
    assert sg["page_size"] == 1
    tokens = sg["max_total_num_tokens"]
    hi = sg["hicache"]
    assert hi["enabled"] is True
    # --hicache-ratio 2 multiplies tokens: int(tokens x 2) + one padding page.
    assert hi["size_tokens_per_rank"] == tokens * 2 + 1
    assert hi["bytes_per_rank"] == (tokens * 2 + 1) * 131072
    # (1 TiB - 10 GiB) // 1 rank per host.
    assert hi["guard_bytes_per_rank"] == (1 << 40) - 10 * GIB
    assert "gpu" not in doc


def test_vllm_documents_name_their_engine(capsys):
    doc, _ = plan_json(capsys, os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml"))
    assert doc["engine"] == "vllm"


def test_table(capsys):
    code, out, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23")
    assert code == 0, err
    assert "max_total_num_tokens" in out
    assert "HiCache" in out


def test_summary_is_the_title_bar_and_verdict(capsys):
    code, out, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23", "--summary")
    assert code == 0, err
    assert "SGLang 0.5.23" in out
    assert "Verdict: SGLang 0.5.23" in out
    assert "max_total_num_tokens" not in out  # the pool table is the full table's


def test_compare_engines(capsys):
    doc, _ = plan_json(capsys, LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                       "--sglang-version", "0.5.23", "--enable-hierarchical-cache", "--hicache-size", "100",
                       "--compare-engines")
    engines = {e["engine"]: e for e in doc["engines"]}
    assert set(engines) == {"vllm", "sglang"}
    assert engines["sglang"]["gpu_tokens"] == doc["sglang"]["max_total_num_tokens"]
    # --hicache-size 100: int(100e9 // 131,072) = 762,939 + one padding page.
    assert engines["sglang"]["host_tokens"] == 762940
    assert engines["sglang"]["shm_bytes_per_node"] == 0
    assert engines["vllm"]["refusal"] is None


def test_hicache_size_refuses_a_fraction(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--enable-hierarchical-cache")
    assert code == 0, err
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "tests", "fixtures", "sglang", "layouts",
                                                     "hicache-size-fraction.yaml"))
    assert code == 2
    assert err.count("\n") == 1
    assert "sglang.hicache.size" in err


def test_unknown_release_is_refused(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.1")
    assert code == 2
    assert "--sglang-version" in err
    assert err.count("\n") == 1


def test_vllm_key_is_refused_with_sglangs_name(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--kv-cache-memory", "40GiB")
    assert code == 2
    assert "sglang.mem_fraction_static" in err
    assert err.count("\n") == 1


def test_host_guard_refusal_is_exit_2(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23",
                       "--enable-hierarchical-cache", "--hicache-size", "200", "--host-available", "100GB")
    assert code == 2
    assert "Not enough host memory available. Requesting 200.00 GB" in err


def test_cgroup_headroom_bounds_the_host_pool(capsys):
    # 1 TiB available, but a 64 GiB container using 4 GiB: 0.5.23 checks --hicache-size 100 against
    # min(1 TiB, 64 - 4 GiB) - the 10 GiB reserve = 50 GiB = 53.69 GB (host_memory.py, pool_host/base.py).
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23",
                       "--enable-hierarchical-cache", "--hicache-size", "100", "--host-available", "1TiB",
                       "--host-cgroup-limit", "64GiB", "--host-cgroup-usage", "4GiB")
    assert code == 2, err
    assert "Requesting 100.00 GB but only have 53.69 GB free" in err


def test_cgroup_usage_without_a_limit_is_bad_input(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23",
                       "--enable-hierarchical-cache", "--host-cgroup-usage", "4GiB")
    assert code == 2, err
    assert err.strip().count("\n") == 0
    assert "host.cgroup_limit" in err
    assert "memory.max" in err


def test_a_vllm_plan_imports_no_sglang_module():
    # vocab/keys_sglang.py is the sglang section's rows of the one key table every command reads (pure data).
    code = ("import sys, kvcalc.cli as c; c.main(['plan', 'examples/llama-3.1-8b.yaml', '--format', 'json']); "
            "sys.stderr.write(repr(sorted(m for m in sys.modules if ('sglang' in m or 'hicache' in m) "
            "and m != 'kvcalc.vocab.keys_sglang')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stderr.strip().endswith("[]")


def test_size_cpu_tokens_answers_hicache_size(capsys):
    code, out, err = run(capsys, "size", LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23", "--cpu-tokens", "2M", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    # 2M = 2,097,152 tokens x 131,072 B = 274.88e9 B: the smallest whole decimal GB is 275.
    assert doc["hicache_size_gb"] == 275
    assert doc["tokens_per_rank"] >= 2097152
    # The ratio multiplies the GPU pool's tokens: 2,097,152 / max_total_num_tokens, up to the next thousandth.
    gpu, _ = plan_json(capsys, LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                       "--sglang-version", "0.5.23")
    tokens = gpu["sglang"]["max_total_num_tokens"]
    assert doc["hicache_ratio"] == -(-2097152 * 1000 // tokens) / 1000


def test_size_gpu_tokens_answers_mem_fraction_static(capsys):
    code, out, err = run(capsys, "size", LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23", "--gpu-tokens", "300000", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    k = doc["mem_fraction_static"]
    assert doc["max_total_num_tokens"] >= 300000
    below, _ = plan_json(capsys, LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23", "--mem-fraction-static", str(round(k - 0.001, 3)))
    assert below["sglang"]["max_total_num_tokens"] < 300000


def test_sweep_rows_read_the_hicache_pool(capsys):
    code, out, err = run(capsys, "sweep", LLAMA, "--engine", "sglang", "--gpu", "H100", "--max-model-len", "16384",
                         "--sglang-version", "0.5.23", "--tp", "1,2", "--enable-hierarchical-cache", "--hicache-size",
                         "50", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["family"] for r in rows] == ["hicache", "hicache"]
    # int(50e9 // bytes per token) + one padding page per rank; TP 2 halves the bytes, doubles the tokens.
    assert rows[0]["cpu_tokens_safe"] == int(50e9 // 131072) + 1
    assert rows[1]["cpu_tokens_safe"] == int(50e9 // 65536) + 1
    assert rows[1]["resident_bytes_per_node"] == 2 * (int(50e9 // 65536) + 1) * 65536


SGLANG_FLAGS = [k for k in __import__("kvcalc.vocab.keys", fromlist=["FLAGS"]).FLAGS.values()
                if k.path.startswith(("sglang.", "host.cgroup_")) or k.path in ("engine", "host.available_memory")]


def test_every_sglang_flag_is_in_the_readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    missing = [k.flag[0] for k in SGLANG_FLAGS if k.flag[0] not in text]
    assert missing == []


@pytest.mark.parametrize("key", [k for k in SGLANG_FLAGS if k.cli_type is not bool], ids=lambda k: k.flag[0])
def test_every_sglang_flag_refuses_a_bad_value_in_one_line(capsys, key):
    bad = {"int": "-3", "number": "-1", "fraction": "1.5", "size": "12 parsecs", "choice": "nonsense",
           "str": None, "ints": "1,x", "path": "/no/such/draft"}[key.kind]
    if bad is None:  # a free string (--hicache-storage-backend): named, never refused
        return
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23",
                       "--enable-hierarchical-cache", key.flag[0], bad)
    assert code == 2, err
    assert err.strip().count("\n") == 0
    assert key.flag[0] in err or key.path in err  # the flag
    assert "expected" in err  # what it takes
    assert bad in err  # what was given


@pytest.mark.parametrize("extra", [
    ["vllm-args", LLAMA], ["check", LLAMA, "--log", os.path.join(ROOT, "tests/fixtures/logs/llama-3.1-8b-tp1-v0.19.1.log")],
    ["plan", LLAMA, "--verify"], ["plan", LLAMA, "--compare-versions", "0.19.1,0.33.0"],
    ["plan", LLAMA, "--compare-backends"]], ids=lambda e: " ".join(e[:1] + e[2:3]))
def test_vllm_only_operations_refuse_an_sglang_layout(capsys, extra):
    code, _, err = run(capsys, *extra, "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23")
    assert code == 2, err
    assert "planned by SGLang's rules" in err
    assert err.strip().count("\n") == 0


def test_a_capacity_below_the_baseline_is_refused(capsys):
    code, _, err = run(capsys, "plan", LLAMA, "--engine", "sglang", "--gpu-capacity-mib", "1", "--sglang-version",
                       "0.5.23")
    assert code == 2
    assert "no free GPU memory before the weights load" in err


def test_init_from_an_sglang_line_writes_its_engine(capsys, tmp_path):
    line = ["--", "python", "-m", "sglang.launch_server", "--model-path", LLAMA, "--tp", "2",
            "--enable-hierarchical-cache", "--hicache-size", "50"]
    code, out, err = run(capsys, "init", *line)
    assert code == 0, err
    assert 'engine: "sglang"  # sglang serve' in out
    assert "size: 50  # --hicache-size" in out
    assert "cpu_bytes_to_use" not in out  # vLLM's offload hint is not SGLang's
    path = tmp_path / "sg.yaml"
    path.write_text(out)
    code, out, err = run(capsys, "plan", str(path), "--gpu", "H100", "--weights-bytes", "16G", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["sglang"]["hicache"]["size_gb"] == 50


def test_sweep_reads_an_sglang_line(capsys):
    line = f"python -m sglang.launch_server --model-path {LLAMA} --enable-hierarchical-cache --hicache-size 30"
    code, out, err = run(capsys, "sweep", "--serve", line, "--gpu", "H100", "--weights-bytes", "16G", "--tp", "1,2",
                         "--format", "csv")
    assert code == 0, err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))  # by name: issue 35 added the max_model_len axis column
    assert [r["family"] for r in rows] == ["hicache", "hicache"]


SG_MODELS = os.path.join(ROOT, "tests", "fixtures", "sglang", "models")


def test_weights_over_the_free_memory_say_so(capsys):
    # DeepSeek-R1 (FP8, 671B) at TP 8 on H100: 78.75 GiB of weights a GPU (issue 30's FP8 rules) against 77.15 GiB
    # free. SGLang runs out of memory loading them; its KV-sizing refusal would name a fraction over 1, which no flag
    # gives.
    code, _, err = run(capsys, "plan", os.path.join(SG_MODELS, "deepseek-r1", "config.json"), "--engine", "sglang",
                       "--gpu", "H100", "--tp", "8", "--sglang-version", "0.5.23")
    assert code == 2
    assert "the weights (78.75 GiB a GPU, estimate) exceed the free GPU memory before the load (77.15 GiB)" in err
    assert "above 1.0" not in err
    assert err.strip().count("\n") == 0


def test_gemma3_without_vocab_size_takes_transformers_default(capsys, tmp_path):
    # Gemma-3's released text_config omits vocab_size: transformers' Gemma3TextConfig fills in 262,208, which SGLang
    # and vLLM read; the weights are weighed with it instead of asking for --weights-bytes.
    with open(os.path.join(ROOT, "tests", "fixtures", "hf", "gemma-3-12b-it.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    del config["text_config"]["vocab_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    doc, _ = plan_json(capsys, str(path), "--engine", "sglang", "--gpu", "H100", "--sglang-version", "0.5.23")
    full, _ = plan_json(capsys, os.path.join(ROOT, "tests", "fixtures", "hf", "gemma-3-12b-it.json"), "--engine",
                        "sglang", "--gpu", "H100", "--sglang-version", "0.5.23")
    assert doc["sglang"]["memory"]["weights_bytes"] == full["sglang"]["memory"]["weights_bytes"]


@pytest.mark.parametrize("model, layout, needle", [
    ("deepseek-r1", "page_first_kv_split", "crashes building the host pool: AttributeError: 'NoneType' object has "
                                           "no attribute 'index_layer_indices'"),
    ("deepseek-r1", "page_head", "ValueError: Unsupported layout: page_head"),
    ("llama-3.1-8b", "page_first_kv_split", "ValueError: Unsupported layout: page_first_kv_split")])
def test_hicache_layouts_sglang_cannot_build(capsys, model, layout, needle):
    # Executed at 0.5.23 (a real device pool and SGLang's own host pool per layout): MLA + page_first_kv_split crashes
    # on CUDA (pool_host/mla.py:355), MLA refuses page_head, MHA page_first_kv_split.
    tp = "8" if model == "deepseek-r1" else "1"
    code, _, err = run(capsys, "plan", "--sglang-version", "0.5.23", "--gpu", "H200", "--weights-bytes", "80GiB",
                       "--", "python", "-m", "sglang.launch_server", "--model-path", os.path.join(SG_MODELS, model),
                       "--tp-size", tp, "--enable-hierarchical-cache", "--hicache-mem-layout", layout)
    assert code == 2
    assert needle in err
    assert err.strip().count("\n") == 0


def test_a_pods_memory_limit_is_the_cgroups_memory_max(capsys, tmp_path):
    # --k8s: the container's limits.memory 64Gi is its cgroup's memory.max; SGLang 0.5.23 checks --hicache-size 100
    # against min(1 TiB available, 64 GiB - 0 used) - the 10 GiB reserve = 54 GiB = 57.98 GB (host_memory.py).
    model = os.path.join(SG_MODELS, "llama-3.1-8b")
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sg}\nspec:\n  containers:\n  - name: sglang\n"
        "    image: lmsysorg/sglang:v0.5.23\n"
        f"    command: [python3, -m, sglang.launch_server, --model-path, {model}, --enable-hierarchical-cache, "
        "--hicache-size, '100']\n    resources:\n      limits: {memory: 64Gi, nvidia.com/gpu: 1}\n")
    code, _, err = run(capsys, "plan", "--k8s", str(pod), "--gpu", "H100", "--host-available", "1TiB")
    assert code == 2, err
    assert "Requesting 100.00 GB but only have 57.98 GB free" in err
