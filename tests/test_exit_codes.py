"""One exit-code policy (README): 0 ok; 1 a --check gate failed or a check found a mismatch; 2 bad input, an
unsupported setting, or a configuration the selected release refuses at start-up; 70 only for real bugs."""

import json
import os

import pytest

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L4 = os.path.join(ROOT, "examples", "llama-4-scout-tp4.yaml")



def test_connector_startup_failure_is_exit_2_with_the_document_on_stdout(capsys):
    # 0.22.1's offloading scheduler asserts FullAttentionSpec for the chunked-local groups of Llama-4 (with the
    # hybrid manager on by default from 0.22.0): vLLM does not start.
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.22.1", "--format", "json")
    assert code == 2
    doc = json.loads(out)
    assert doc["error"].startswith("vLLM 0.22.1 refuses to start the offloading connector: ")
    assert "chunked-local" in doc["offload"]["startup_error"]
    # No counts for a pool that never exists.
    assert doc["offload"]["selected"] is None
    assert doc["offload"]["out_of_bounds"] is None
    assert doc["offload"]["pinned_bytes_per_engine"] is None
    assert doc["offload"]["host"] is None
    errors = [line for line in err.splitlines() if line.startswith("kvcalc: error:")]
    assert errors == [f"kvcalc: error: {L4}: {doc['error']}"]
    assert "warning:" not in err  # said once, as the error


def test_the_table_draws_no_cpu_bars_for_a_release_that_would_not_start(capsys):
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.22.1")
    assert code == 2
    assert "would not start" in out
    assert "CPU resident" not in out
    assert "Memory tiers" not in out


def test_under_check_the_startup_gate_fails_with_exit_1(capsys):
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.22.1", "--check", "--format", "json")
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["startup"]["passed"] is False


def test_the_same_layout_plans_where_the_release_starts(capsys):
    # 0.28.0 accepts chunked-local groups (versions.STEPS offload_refuses_chunked_local).
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.28.0", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert "error" not in doc
    assert doc["offload"]["selected"]["num_blocks_scheduler"] > 0


# ----------------------------------------------------------------------------------------------- silent misreadings

BASE = "model:\n  num_layers: 32\n  num_kv_heads: 8\n  head_size: 128\ncache: {max_model_len: 4096}\n" \
       "offload: {cpu_bytes_to_use: 64G}\n"


def one_error(capsys, tmp_path, text, *flags):
    path = tmp_path / "layout.yaml"
    path.write_text(text)
    code, out, err = run(capsys, "plan", str(path), *flags)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert out == "", err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kvcalc: error: {path}: "), err
    return lines[0]


def test_a_key_given_twice_is_refused_naming_both_lines(capsys, tmp_path):
    # PyYAML keeps the last of two equal keys: num_layers 16 would be planned silently.
    line = one_error(capsys, tmp_path, BASE.replace("  head_size: 128\n", "  head_size: 128\n  num_layers: 16\n"))
    assert "line 5" in line
    assert "'num_layers'" in line
    assert "also on line 2" in line


def test_a_section_given_twice_is_refused(capsys, tmp_path):
    line = one_error(capsys, tmp_path, BASE + "offload: {cpu_bytes_to_use: 1G}\n")
    assert "line 7" in line
    assert "'offload'" in line
    assert "also on line 6" in line


@pytest.mark.parametrize("text, means", [("032", "26"), ("0b101", "5"), ("1:00", "60"), ("0x20", "32")])
def test_yaml_1_1_integers_that_are_not_decimal_are_refused(capsys, tmp_path, text, means):
    line = one_error(capsys, tmp_path, BASE.replace("num_layers: 32", f"num_layers: {text}"))
    assert "line 2" in line
    assert "a decimal integer" in line
    assert f"'{text}'" in line
    assert f"reads it as {means}" in line


def test_integers_longer_than_any_layout_value_are_bad_input_not_a_crash(capsys, tmp_path):
    # Python refuses int() of more than 4,300 digits (ValueError): that must be exit 2, not 70.
    line = one_error(capsys, tmp_path, BASE.replace("num_layers: 32", "num_layers: " + "9" * 5000))
    assert "at most 1000 digits" in line


def test_a_config_json_with_a_huge_integer_or_a_repeated_key(capsys, tmp_path):
    for text, needle in (('{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}", "at most 1000 digits"),
                         ('{"model_type": "llama", "num_hidden_layers": 2, "num_hidden_layers": 3}',
                          "num_hidden_layers: expected each key once")):
        path = tmp_path / "config.json"
        path.write_text(text)
        code, out, err = run(capsys, "plan", str(path), "--cpu-bytes", "64G")
        assert code == 2, err
        assert out == "", err
        assert needle in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_exponent_sizes_mean_the_same_with_and_without_the_sign(capsys, tmp_path):
    # YAML 1.1 reads 6.4e+10 as a float and 6.4e10 as a string: both are 64,000,000,000 B.
    got = []
    for text in ("6.4e10", "6.4e+10"):
        path = tmp_path / "layout.yaml"
        path.write_text(BASE.replace("cpu_bytes_to_use: 64G", f"cpu_bytes_to_use: {text}"))
        code, out, err = run(capsys, "plan", str(path), "--format", "json")
        assert code == 0, err
        got.append(json.loads(out)["offload"]["cpu_bytes_to_use"])
    assert got == [64000000000, 64000000000]


def test_skip_layer_indices_outside_the_model_are_refused(capsys, tmp_path):
    # vLLM compares str(layer index) with the list and ignores an index no layer has.
    text = BASE.replace("cache: {max_model_len: 4096}",
                        "cache: {max_model_len: 4096, kv_cache_dtype: fp8, kv_cache_dtype_skip_layers: [32]}")
    line = one_error(capsys, tmp_path, text, "--vllm-version", "0.19.1")
    assert "kv_cache_dtype_skip_layers[0]" in line
    assert "between 0 and 31" in line
    assert "got 32" in line


def test_data_parallel_size_local_must_be_between_1_and_dp(capsys):
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"), "--dp", "2",
                         "--data-parallel-size-local", "-1", "--check", "--host-memory", "1G")
    assert code == 2
    assert "between 1 and 2" in err
    assert "--data-parallel-size-local" in err


def test_compare_versions_refuses_a_release_kvcalc_does_not_model(capsys):
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"),
                         "--compare-versions", "0.19.1,0.40.0")
    assert code == 2
    assert out == ""
    from kvcalc.vocab.releases.vllm import RELEASES  # the newest release read, from the table

    assert err.strip() == ("kvcalc: error: --compare-versions: vLLM 0.40.0 is newer than every release kvcalc read "
                           f"(up to {RELEASES[-1]}); its behaviour is not modelled")


def test_compare_versions_lists_each_release_once(capsys):
    code, out, err = run(capsys, "plan", os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"),
                         "--compare-versions", "0.19.1,0.19.1,0.33.0", "--format", "json")
    assert code == 0
    assert [r["vllm_version"] for r in json.loads(out)["releases"]] == ["0.19.1", "0.33.0"]


# ----------------------------------------------------------------------------------------------- output and terminals

import subprocess  # noqa: E402
import sys  # noqa: E402

LLAMA = os.path.join(ROOT, "examples", "llama-3.1-8b.yaml")


def kvcalc(*args, env=None, **kw):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "kvcalc", *args], cwd=ROOT, env=e, capture_output=True, **kw)


def test_a_closed_pipe_exits_quietly():
    # `kvcalc plan ... | head -1`: the reader leaves; typer turns EPIPE into exit 1, kvcalc into a quiet 0.
    p = subprocess.Popen([sys.executable, "-m", "kvcalc", "plan", LLAMA], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 0
    assert "Error" not in err
    assert "Exception" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_one_line_and_not_an_internal_error():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "kvcalc", "plan", LLAMA, "--format", "json"], cwd=ROOT,
                           stdout=full, stderr=subprocess.PIPE)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 74  # EX_IOERR, not 70
    assert err[-1] == "kvcalc: error: cannot write the output: No space left on device"


@pytest.mark.parametrize("columns", ["0", "1", "abc"])
def test_an_unusable_columns_falls_back_to_a_sane_width(columns):
    r = kvcalc("plan", LLAMA, env={"COLUMNS": columns})
    assert r.returncode == 0
    lines = r.stdout.decode().splitlines()
    assert len(lines) > 20
    assert "Verdict" in r.stdout.decode()


def test_version_and_short_help(capsys):
    from kvcalc import __version__

    code, out, err = run(capsys, "--version")
    assert (code, out) == (0, f"kvcalc {__version__}\n")
    code, out, err = run(capsys, "-h")
    assert code == 0
    assert out.startswith("Usage: kvcalc")
    code, out, err = run(capsys, "plan", "-h")
    assert code == 0
    assert "--vllm-version" in out


def test_fifo_and_stdin_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "layout.yaml"
    os.mkfifo(fifo)
    r = kvcalc("plan", str(fifo), timeout=30)  # opening a FIFO would block forever
    assert r.returncode == 2
    assert r.stderr.decode().strip() == (f"kvcalc: error: {fifo}: expected a readable layout file (not a regular file "
                                         "(a FIFO, socket or device))")
    r = kvcalc("check", LLAMA, "--log", str(fifo), timeout=30)
    assert r.returncode == 2
    assert "not a regular file" in r.stderr.decode()
    r = kvcalc("plan", "-", timeout=30)
    assert r.returncode == 2
    assert "standard input is not read" in r.stderr.decode()


def test_escape_sequences_in_input_are_echoed_escaped(capsys, tmp_path):
    path = tmp_path / "layout.yaml"
    path.write_text('model:\n  num_layers: 2\n  "\\e[31mred\\e[0m": 1\n')
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2
    assert "\x1b" not in err
    assert "got '\\x1b[31mred\\x1b[0m' (unknown key)" in err


def test_a_file_that_is_no_layout_is_not_echoed_whole(capsys, tmp_path):
    path = tmp_path / "shadow"
    path.write_text("root:x:0:0:root:/root:/bin/bash" + "x" * 200 + "\n")
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2
    assert len(err) < 200
    assert "root:x:0:0" not in err


# ----------------------------------------------------------------------------------------------- bounded work

def test_check_log_plans_a_bounded_number_of_times(monkeypatch, tmp_path):
    # One layer, 1 KV head of 64: a 4,096 B block, so 0.01 GiB of logged rounding allows 2,622 block counts.
    # Matching them must not plan the model once per candidate (it did: minutes for a 3-line log).
    import kvcalc.tools.logcheck as lc
    from kvcalc.inputs.layout.read import layout_from_dict

    calls = []
    real = lc.plan
    monkeypatch.setattr(lc, "plan", lambda layout, *a, **k: calls.append(1) or real(layout, *a, **k))
    layout = layout_from_dict({"model": {"num_layers": 1, "num_kv_heads": 1, "head_size": 64},
                               "cache": {"max_model_len": 4096}, "offload": {"cpu_bytes_to_use": "1G"},
                               "vllm": {"version": "0.19.1"}}, source="t.yaml")
    # 10.00 GiB logged: [9.995, 10.005] GiB // 4,096 B. The tokens line names the top count (x 16 tokens a
    # block), so every candidate below it is tried first.
    from fractions import Fraction
    from math import ceil, floor

    n_lo = ceil(Fraction(9995, 1000) * (1 << 30)) // 4096
    n_hi = floor(Fraction(10005, 1000) * (1 << 30)) // 4096
    assert n_hi - n_lo + 1 == 2622
    text = (f"Available KV cache memory: 10.00 GiB\nGPU KV cache size: {n_hi * 16:,} tokens\n")
    result = lc.check(layout, text, source="t.log")
    assert result["num_gpu_blocks_range"] == [n_lo, n_hi]
    assert result["match"] is True
    assert len(calls) <= 4  # the two ends of the range, the base plan, the matching one


def test_a_grid_larger_than_max_points_is_refused_before_planning(capsys):
    # 101 x 100 x 100 = 1,010,000 points > the default 1,000,000 (and 8 > --max-points 7).
    code, out, err = run(capsys, "sweep", LLAMA, "--tp", ",".join(str(i) for i in range(1, 102)),
                         "--block-size", ",".join(str(16 * i) for i in range(1, 101)),
                         "--cpu-bytes", ",".join(f"{i}G" for i in range(1, 101)), "--format", "csv")
    assert code == 2
    assert out == ""
    assert err.strip() == "kvcalc: error: sweep: the grid has 1,010,000 points, more than --max-points 1,000,000"
    code, out, err = run(capsys, "sweep", LLAMA, "--tp", "1,2", "--cpu-bytes", "1G,2G,4G,8G", "--max-points", "7")
    assert code == 2
    assert "the grid has 8 points, more than --max-points 7" in err


def test_superscript_digits_in_a_sweep_list_are_bad_input(capsys):
    code, out, err = run(capsys, "sweep", LLAMA, "--tp", "²")
    assert code == 2
    assert err.strip() == "kvcalc: error: --tp: expected a comma-separated list of integers, got '²'"


@pytest.mark.parametrize("value", ['"8"', "-1", "0", "NaN"])
def test_an_invalid_max_position_embeddings_is_named_as_invalid(capsys, tmp_path, value):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, '
                    f'"num_key_value_heads": 8, "hidden_size": 1024, "max_position_embeddings": {value}}}')
    code, out, err = run(capsys, "plan", str(path), "--cpu-bytes", "1G")
    assert code == 2
    assert f"{path}: max_position_embeddings: expected a positive integer, got" in err


def test_gpt_oss_yaml_and_config_agree_on_head_replication(capsys):
    # The config path states no replication for gpt-oss; the example YAML says so too: --tp 16 refused by both.
    for src in (os.path.join(ROOT, "examples", "gpt-oss-120b.yaml"),
                os.path.join(ROOT, "tests", "fixtures", "models", "gpt-oss-120b.json")):
        code, out, err = run(capsys, "plan", src, "--tp", "16", "--cpu-bytes", "64G")
        assert code == 2, (src, err)
        assert "does not replicate heads" in err, (src, err)


def test_plan_without_a_cpu_budget_plans_the_gpu_side(capsys, tmp_path):
    # Dense 32 layers, 40 GiB: 40 GiB // (32 x 65,536 B) = 20,480 GPU blocks; no budget -> CPU figures null.
    path = tmp_path / "layout.yaml"
    path.write_text("model:\n  num_layers: 32\n  num_kv_heads: 8\n  head_size: 128\n"
                    "cache: {max_model_len: 4096, kv_cache_memory: 40GiB}\n")
    code, out, err = run(capsys, "plan", str(path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gpu"]["num_blocks"] == 40 * (1 << 30) // (32 * 65536) == 20480
    assert doc["gpu"]["workers"][0]["bytes_per_block"] == 32 * 65536
    # No budget, no connector, no LMCache key: vLLM without a KV connector (issue 19): no offload section.
    assert doc["offload"] is None
    assert doc["offload_reason"].startswith("no KV connector")
    assert "note: no KV connector" in err
    code, out, err = run(capsys, "plan", str(path))
    assert code == 0
    assert "CPU offload: none (no KV connector" in out
    assert "Memory tiers" not in out
    # Naming the connector without a budget keeps today's plan: the connector configured, CPU figures null.
    code, out, err = run(capsys, "plan", str(path), "--offload-backend", "native", "--format", "json")
    assert code == 0, err
    off = json.loads(out)["offload"]
    assert off["cpu_bytes_to_use"] is None
    assert off["selected"] is None
    assert off["host"] is None
    assert off["old"] is None
    assert off["fixed"] is None
    assert off["out_of_bounds"] is None
    assert "no CPU budget given" in err
    # What needs a budget says so, exit 2.
    code, out, err = run(capsys, "plan", str(path), "--check", "--vllm-version", "0.33.0")
    assert code == 2
    assert "--check gates a CPU budget" in err
    code, out, err = run(capsys, "vllm-args", str(path))
    assert code == 2
    assert "vllm-args spells the CPU budget" in err
    # A sweep without a budget axis has the GPU columns only.
    code, out, err = run(capsys, "sweep", str(path), "--tp", "1,2", "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["gpu_num_blocks"] for r in rows] == [20480, 40960]
    assert all(r["cpu_blocks_scheduler"] is None and r["error"] is None for r in rows)


def test_check_metrics_takes_the_budget_from_the_scrape_when_the_layout_has_none(capsys, tmp_path):
    # cpu_kv_cache_size_bytes = 3,765 chunks x 18,251,776 B: as a budget it buys the same 3,765 chunks.
    import yaml

    with open(os.path.join(ROOT, "examples", "kimi-k2.5-eagle3-tp4.yaml")) as fh:
        data = yaml.safe_load(fh)
    del data["offload"]
    path = tmp_path / "kimi.yaml"
    path.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "check", str(path), "--metrics",
                         os.path.join(ROOT, "tests", "fixtures", "metrics", "kimi-k2.5-eagle3-tp4-v0.33.0.prom"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    assert f"cpu_bytes_to_use {3765 * 18251776:,} taken from the scrape" in err


@pytest.mark.parametrize("key, value, limit", [("model.num_layers", 2049, "between 1 and 2048"),
                                               ("parallel.pipeline_parallel_size", 65, "between 1 and 64")])
def test_layouts_past_the_cost_bounds_are_refused(capsys, tmp_path, key, value, limit):
    section, name = key.split(".")
    data = {"model": {"num_layers": 2048, "num_kv_heads": 8, "head_size": 128}, "cache": {"max_model_len": 16}}
    data.setdefault(section, {})[name] = value
    path = tmp_path / "layout.yaml"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2
    assert key in err
    assert limit in err
    assert f"got {value}" in err


def test_size_answers_for_the_selected_release_at_the_top_level(capsys):
    # Llama-3.1-8B on its example's 0.22.1, 2M tokens: 2,097,152 / 16 = 131,072 blocks of 32 x 65,536 B = 2 MiB:
    # 274,877,906,944 B (256 GiB).
    code, out, err = run(capsys, "size", LLAMA, "--cpu-tokens", "2M", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["vllm_version"], doc["family"]) == ("0.22.1", "fixed")
    assert doc["num_blocks"] == 2097152 // 16 == 131072
    assert doc["cpu_bytes_to_use"] == 131072 * 32 * 65536 == 274877906944
    assert doc["kv_offloading_size_gib"] == 256.0
    assert doc["tokens"] == 2097152
    assert [f["family"] for f in doc["families"]] == ["old", "fixed", "packed", "config", "replicated", "single-alloc"]


def test_size_prints_no_budget_where_none_helps(capsys):
    # Vector b2 on 0.19.1 (old): the scheduler's bytes per block (18,284,544) are smaller than the workers'
    # (1,131,610,112): every budget is out of bounds -> null and the reason.
    code, out, err = run(capsys, "size", os.path.join(ROOT, "examples", "kimi-k2.5-eagle3-tp4.yaml"),
                         "--cpu-tokens", "2M", "--format", "json")
    doc = json.loads(out)
    assert doc["vllm_version"] == "0.19.1"
    assert doc["cpu_bytes_to_use"] is None
    assert doc["num_blocks"] is None
    assert doc["out_of_bounds_at_any_budget"] is True
    assert "no budget fixes" in doc["note"]


def test_size_refuses_a_target_whose_budget_plan_would_refuse(capsys):
    # 4 x 10^18 tokens x 2 MiB / 16 is far above the 2^62 B a budget may be.
    code, out, err = run(capsys, "size", LLAMA, "--cpu-tokens", "4000000000000000000")
    assert code == 2
    assert out == ""
    assert "more than a budget kvcalc accepts (4,611,686,018,427,387,904 B, 2^62)" in err


def test_plan_help_groups_its_options(capsys):
    code, out, err = run(capsys, "plan", "--help")
    assert code == 0
    sections = [line.rstrip(":") for line in out.splitlines() if line.startswith("Options: ")]
    assert sections == [f"Options: {p}" for p in ("input", "parallelism", "cache", "gpu", "offload", "release",
                                                   "output", "checks", "help")]
    # The release help is generated from the read releases (versions.RELEASES), default shown.
    from kvcalc.vocab.releases.vllm import DEFAULT_VERSION, RELEASES

    assert f"{RELEASES[0]} to {RELEASES[-1]} (default {DEFAULT_VERSION})" in " ".join(out.split())


@pytest.mark.parametrize("change, key, needle", [
    # transformers 5.24.0 FalconH1Config.validate_architecture: intermediate = mamba_d_ssm (or expand x hidden).
    ({"mamba_d_ssm": None, "mamba_expand": 2, "mamba_n_heads": 25}, "mamba_n_heads", "a divisor of the Mamba "
                                                                                      "intermediate size 6144"),
    ({"mamba_d_head": 64}, "mamba_d_head", "= the Mamba intermediate size 3072"),
])
def test_falcon_h1_configs_its_class_refuses_are_refused(capsys, tmp_path, change, key, needle):
    with open(os.path.join(ROOT, "tests", "fixtures", "hf", "falcon-h1-7b.json")) as fh:
        cfg = json.load(fh)
    cfg.update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, err = run(capsys, "plan", str(path), "--cpu-bytes", "1G")
    assert code == 2, err
    assert f"{path}: {key}: expected" in err, err
    assert needle in err, err


MAMBA1 = {"kind": "mamba1", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16, "mamba_d_conv": 4}


def _jamba(mamba):
    return {"model": {"num_layers": 8, "num_kv_heads": 8, "head_size": 128,
                      "layer_pattern": ["mamba"] * 4 + ["full_attention"] + ["mamba"] * 3, "mamba": mamba},
            "parallel": {"tensor_parallel_size": 2}, "cache": {"max_model_len": 4096, "enable_prefix_caching": True},
            "offload": {"cpu_bytes_to_use": "16G"}}


def test_mamba_fields_under_other_configs_names_mean_the_same(capsys, tmp_path):
    # transformers MambaConfig spells mamba_expand / mamba_d_state / mamba_d_conv as expand / state_size /
    # conv_kernel: the same layout, the same plan.
    outs = []
    for mamba in (MAMBA1, {"kind": "mamba1", "hidden_size": 4096, "expand": 2, "state_size": 16, "conv_kernel": 4,
                           "intermediate_size": 8192}):
        path = tmp_path / "layout.yaml"
        path.write_text(json.dumps(_jamba(mamba)))
        code, out, err = run(capsys, "plan", str(path), "--format", "json")
        assert code == 0, err
        doc = json.loads(out)
        outs.append((doc["gpu"]["groups"], doc["offload"]["selected"]["num_blocks_scheduler"]))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("mamba, key, needle", [
    ({**MAMBA1, "expand": 3}, "model.mamba.expand", "the value of model.mamba.mamba_expand (2)"),
    ({**MAMBA1, "intermediate_size": 4096}, "model.mamba.intermediate_size", "mamba_expand x hidden_size = 8192"),
])
def test_mamba_fields_that_contradict_are_refused(capsys, tmp_path, mamba, key, needle):
    path = tmp_path / "layout.yaml"
    path.write_text(json.dumps(_jamba(mamba)))
    code, out, err = run(capsys, "plan", str(path))
    assert code == 2, err
    assert f"{key}: expected" in err, err
    assert needle in err, err


def test_a_decimal_budget_gets_the_binary_readings_count(capsys):
    # units.md: 64GB = 64 x 10^9 B -> 64,000,000,000 // 2,097,152 = 30,517 blocks; 64GiB -> 32,768.
    code, out, err = run(capsys, "plan", LLAMA, "--cpu-bytes", "64GB", "--format", "json")
    assert code == 0
    assert json.loads(out)["offload"]["selected"]["num_blocks_scheduler"] == 64 * 10**9 // 2097152 == 30517
    assert ("note: 64GB is decimal (64,000,000,000 B) -> 30,517 CPU blocks; 64GiB (68,719,476,736 B) would give "
            "32,768") in err
    code, out, err = run(capsys, "plan", LLAMA, "--cpu-bytes", "64GiB", "--format", "json")
    assert "is decimal" not in err


@pytest.mark.parametrize("text, needle", [
    ("Available KV cache memory: 1.2.3 GiB\n", "line 1: expected a number of GiB such as 37.79, got '1.2.3'"),
    ("Available KV cache memory: 40.00 GiB\nMaximum concurrency for 0 tokens per request: 2.50x\n",
     "line 2: expected a max_model_len of at least 1 token, got '0'"),
    ("GPU KV cache size: 1,2,3,4 tokens\n", "line 1: expected a token count such as 602,368, got '1,2,3,4'"),
])
def test_malformed_log_numbers_are_bad_input_naming_the_log_line(capsys, tmp_path, text, needle):
    log = tmp_path / "vllm.log"
    log.write_text(text)
    code, out, err = run(capsys, "check", LLAMA, "--log", str(log))
    assert code == 2  # was 70 (ValueError, ZeroDivisionError)
    assert err.strip() == f"kvcalc: error: {log}: {needle}"


def test_the_first_screen_at_80_columns_answers_the_question():
    # Vector b2 on 0.19.1: within 20 lines, the release, both formulas' counts (3,758 / 60 and 3,765 / 3,765),
    # tokens held, out-of-bounds and the verdict with what to do.
    r = kvcalc("plan", os.path.join(ROOT, "examples", "kimi-k2.5-eagle3-tp4.yaml"), env={"COLUMNS": "80"})
    first = r.stdout.decode().splitlines()[:20]
    text = "\n".join(first)
    assert all(len(line) <= 80 for line in first)
    assert "vLLM 0.19.1" in first[0]
    for needle in ("3,758", "60", "3,765", "CPU tokens held", "out of bounds", "YES", "Verdict: UNSAFE",
                   "Upgrading to vLLM ≥ 0.20.0"):
        assert needle in text, needle


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_cannot_encode_the_output_gets_ascii(encoding):
    r = kvcalc("plan", os.path.join(ROOT, "examples", "kimi-k2.5-eagle3-tp4.yaml"),
               env={"PYTHONIOENCODING": encoding})
    assert r.returncode == 0, r.stderr.decode(encoding, "replace")
    text = r.stdout.decode("ascii")  # raises if anything beyond ASCII got through
    assert "Upgrading to vLLM >= 0.20.0" in text
    assert "TP 4 x PP 1" in text


def test_an_empty_log_path_is_bad_input_not_a_crash(capsys):
    # `check --log ''` read the path as absent (`log or metrics`) and failed opening None (exit 70, found by mypy).
    code, out, err = run(capsys, "check", os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"), "--log", "")
    assert code == 2
    assert "expected a readable file" in err


def test_a_config_whose_model_type_is_no_string_is_bad_input_not_a_crash(capsys, tmp_path):
    # A model_type list reached the weights' rule table as a key (TypeError: unhashable, exit 70; found by mypy).
    # No rule takes it; the architecture row (architectures: LlamaForCausalLM, as vLLM picks the class) is weighed
    # by params.py's count instead (weights_generic.py): the same budget as the untouched config.
    with open(os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    config["model_type"] = ["llama"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run(capsys, "plan", str(path), "--gpu", "H100", "--max-model-len", "8192")
    assert code == 0
    _, plain, _ = run(capsys, "plan", os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json"),
                      "--gpu", "H100", "--max-model-len", "8192")
    line = next(x for x in plain.splitlines() if "KV budget predicted" in x)
    assert line in out
