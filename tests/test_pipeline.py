"""Pipeline commands: --check gates and exit codes, size, sweep, vllm-args, check --log, schemas."""

import csv
import io
import json
import os

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES_DIR, run
from kvcalc.cli import main
from kvcalc.inputs.layout.schema import layout_schema
from kvcalc.report.schema import output_schema

GIB = 1 << 30
LOGS = os.path.join(os.path.dirname(__file__), "fixtures", "logs")


def ex(name):
    return os.path.join(EXAMPLES_DIR, name)



# ------------------------------------------------------------------ --check: exit codes and gates


def checks_of(doc):
    return {c["name"]: c for c in doc["checks"]}


def test_check_passes_with_exit_0(capsys):
    code, out, err = run(capsys, "plan", ex("deepseek-v3-tp4.yaml"), "--vllm-version", "0.33.0", "--check",
                         "--format", "json")
    assert code == 0
    checks = checks_of(json.loads(out))
    assert all(c["passed"] is (c["status"] == "pass") for c in checks.values())  # a skipped gate: passed false
    assert {c["status"] for c in checks.values()} <= {"pass", "skipped"}
    # Every gate is reported; the ones nothing asked for are skipped, saying what would turn them on.
    assert set(checks) == {"startup", "out_of_bounds", "zero_cpu_blocks", "cpu_smaller_than_gpu", "host_memory",
                           "shm", "min_cpu_tokens"}
    assert checks["host_memory"]["status"] == "skipped"
    assert "--host-memory" in checks["host_memory"]["reason"]
    assert checks["startup"]["status"] == "pass"
    # A passing --check says which gates ran, on stderr, one line each.
    assert "check passed: startup: vLLM 0.33.0 starts" in err
    assert "check skipped: min_cpu_tokens: no target given" in err
    assert err.strip().splitlines()[-1] == "checks: 4 passed, 3 skipped"


def test_check_fails_on_out_of_bounds_with_exit_1(capsys):
    code, out, err = run(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"), "--check", "--format", "json",
                         "--host-memory", "512GiB", "--min-cpu-tokens", "2M")
    assert code == 1
    checks = checks_of(json.loads(out))
    assert not checks['out_of_bounds']['passed']
    assert '60..3,757' in checks['out_of_bounds']['reason']
    # The old workers hold 60 blocks x 64 tokens = 3,840 tokens < 2M (2,097,152) and < the GPU's 602,368.
    assert not checks['min_cpu_tokens']['passed']
    assert '3,840' in checks['min_cpu_tokens']['reason']
    assert not checks["cpu_smaller_than_gpu"]["passed"]
    assert checks["host_memory"]["passed"]  # 1,095,106,560 B pinned (vector b2) <= 512 GiB
    assert "check failed: out_of_bounds" in err


def test_host_memory_gate_counts_every_replica_on_the_node(capsys):
    # Vector a1: 64 GiB pinned per engine; 4 DP replicas on one node need 256 GiB (the process overhead set to 0
    # here: the next test counts it).
    args = ["plan", ex("llama-3.1-8b.yaml"), "--dp", "4", "--check", "--format", "json", "--host-overhead", "0"]
    code, out, _ = run(capsys, *args, "--host-memory", "255GiB")
    assert code == 1
    assert not checks_of(json.loads(out))['host_memory']['passed']
    code, out, _ = run(capsys, *args, "--host-memory", "256GiB")
    assert code == 0
    code, out, _ = run(capsys, *args, "--host-memory", "128GiB", "--data-parallel-size-local", "2")
    assert code == 0


def test_host_memory_counts_the_process_overhead(capsys):
    # 4 engines of TP 1 = 4 GPU workers x 3 GiB (the estimate, vLLM PR #48436's ~3 GiB a worker beyond its pool)
    # = 12 GiB beside the 256 GiB pool: 268 GiB = 287,762,808,832 B.
    args = ["plan", ex("llama-3.1-8b.yaml"), "--dp", "4", "--check", "--format", "json"]
    code, out, _ = run(capsys, *args, "--host-memory", "267GiB")
    gate = checks_of(json.loads(out))["host_memory"]
    assert code == 1
    assert gate["need"] == 268 * 2 ** 30
    assert gate["margin"] == -(2 ** 30)
    assert gate["limit_from"] == "--host-memory (a node)"
    code, out, _ = run(capsys, *args, "--host-memory", "268GiB")
    assert code == 0
    assert checks_of(json.loads(out))["host_memory"]["margin"] == 0


def test_gate_limits_without_check_are_a_warning(capsys):
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--vllm-version", "0.33.0", "--host-memory", "1GiB",
                         "--format", "json")
    assert code == 0
    assert "warning: --host-memory set --check's limits; without --check nothing is gated" in err


def test_zero_budget_fails_a_gate(capsys):
    code, out, _ = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--cpu-bytes", "0", "--check", "--format", "json")
    assert code == 1
    assert not checks_of(json.loads(out))['zero_cpu_blocks']['passed']


def test_startup_refusal_is_a_failed_gate_under_check(capsys):
    code, out, err = run(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"), "--vllm-version", "0.19.1", "--check",
                         "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc['checks'][0]['name'] == 'startup'
    assert not doc['checks'][0]['passed']
    jsonschema.validate(doc, output_schema())
    # Without --check the same refusal is an error (exit 2), one line.
    code, out, err = run(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"), "--vllm-version", "0.19.1")
    assert code == 2
    assert out == ''
    assert err.count('\n') == 1


def test_offload_startup_error_is_a_failed_gate(capsys):
    code, out, _ = run(capsys, "plan", ex("qwen3-next-80b-tp4.yaml"), "--no-enable-prefix-caching", "--check",
                       "--format", "json")
    assert code == 1
    assert not checks_of(json.loads(out))['startup']['passed']


def test_bad_threshold_is_usage_error(capsys):
    code, out, err = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--check", "--host-memory", "lots")
    assert code == 2
    assert out == ''
    assert err.count('\n') == 1


# ------------------------------------------------------------------ size


def test_size_per_family(capsys):
    code, out, _ = run(capsys, "size", ex("kimi-k2.5-eagle3-tp4.yaml"), "--cpu-tokens", "2M", "--format", "json")
    assert code == 0
    fams = {r["family"]: r for r in json.loads(out)["families"]}
    # 2M = 2,097,152 tokens = 32,768 blocks of 64. fixed: 32,768 x 18,251,776 (4,562,944 x 4 workers).
    assert fams['fixed']['num_blocks'] == 32768
    assert fams['fixed']['cpu_bytes_to_use'] == 32768 * 18251776
    assert fams["single-alloc"]["cpu_bytes_to_use"] == 32768 * 18251776  # already 4096-aligned
    # old: the worker needs 4,562,944 x 62 x 4 per block, the scheduler 73,728 x 62 x 4: it always counts more,
    # so no budget is given (null) and the note says why.
    assert fams["old"]["aligned_bytes"] == 4562944 * 62 * 4
    assert fams["old"]["cpu_bytes_to_use"] is None
    assert fams['old']['out_of_bounds_at_any_budget']
    assert 'no budget' in fams['old']['note']
    assert not fams["fixed"]["out_of_bounds_at_any_budget"]
    assert int(fams["fixed"]["kv_offloading_size_gib"] * GIB) >= fams["fixed"]["cpu_bytes_to_use"]


def test_size_budget_really_holds_the_target(capsys):
    # Feed the sized budget back into plan: the selected family holds at least the target, one byte less does not.
    code, out, _ = run(capsys, "size", ex("deepseek-v3-tp4.yaml"), "--cpu-blocks", "1000", "--vllm-version",
                       "0.28.0", "--format", "json")
    row = {r["family"]: r for r in json.loads(out)["families"]}["replicated"]
    for budget, enough in ((row["cpu_bytes_to_use"], True), (row["cpu_bytes_to_use"] - 1, False)):
        code, out, _ = run(capsys, "plan", ex("deepseek-v3-tp4.yaml"), "--vllm-version", "0.28.0", "--cpu-bytes",
                           str(budget), "--format", "json")
        sel = json.loads(out)["offload"]["selected"]
        assert (min(sel["num_blocks_workers"]) >= 1000) is enough


def test_size_needs_one_target(capsys):
    code, _, err = run(capsys, "size", ex("deepseek-v3-tp4.yaml"))
    assert code == 2
    assert 'exactly one' in err


# ------------------------------------------------------------------ sweep


def test_sweep_csv_with_invalid_rows(capsys):
    code, out, _ = run(capsys, "sweep", ex("llama-3.1-8b.yaml"), "--tp", "1,2,3", "--cpu-bytes", "16G,64G",
                       "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 6
    good = [r for r in rows if not r["error"]]
    assert {(r["tp"], r["cpu_bytes"], r["cpu_blocks_scheduler"]) for r in good} == {
        ("1", "16G", "8192"), ("1", "64G", "32768"), ("2", "16G", "8192"), ("2", "64G", "32768")}
    bad = [r for r in rows if r["error"]]
    assert len(bad) == 2
    assert all(('num_kv_heads' in r['error'] for r in bad))


def test_sweep_jsonl_versions(capsys):
    code, out, _ = run(capsys, "sweep", ex("kimi-k2.5-eagle3-tp4.yaml"), "--vllm-version", "0.19.1,0.20.0,0.33.0",
                       "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["family"], r["cpu_blocks_worst_worker"], r["out_of_bounds"]) for r in rows] == [
        ("old", 60, True), ("fixed", 3765, False), ("single-alloc", 3765, False)]


def test_sweep_budgets_replace_a_layout_kv_offloading_size(capsys, tmp_path):
    # The layout sets vLLM's --kv-offloading-size; every swept --cpu-bytes replaces it (the exclusive key is dropped
    # for the first budget of each point and stays dropped for the budgets that reuse that point's section).
    text = open(ex("llama-3.1-8b.yaml")).read().replace("cpu_bytes_to_use: 64GiB", "kv_offloading_size: 8")
    layout = tmp_path / "gib.yaml"
    layout.write_text(text)
    code, out, err = run(capsys, "sweep", str(layout), "--tp", "1,2", "--cpu-bytes", "16GiB,64GiB,1GiB",
                         "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    # Llama-3.1-8B: 32 layers x 2 x 16 tokens x 8 heads x 128 x 2 B = 2 MiB a block at TP 1 (at TP 2: 4 heads a
    # rank, world size 2: the same 2 MiB); 16 GiB / 2 MiB = 8,192, 64 GiB -> 32,768, 1 GiB -> 512.
    got = [(r["tp"], r["cpu_bytes_to_use"], r["cpu_blocks_scheduler"], r["error"]) for r in rows]
    assert got == [("1", str(16 * GIB), "8192", ""), ("1", str(64 * GIB), "32768", ""), ("1", str(GIB), "512", ""),
                   ("2", str(16 * GIB), "8192", ""), ("2", str(64 * GIB), "32768", ""), ("2", str(GIB), "512", "")]


def test_sweep_bad_budget_after_a_good_one_names_the_flag(capsys):
    # The second budget reuses the first point's validated layout: its error still names the flag that set it.
    code, out, _ = run(capsys, "sweep", ex("llama-3.1-8b.yaml"), "--cpu-bytes", "16GiB,12XB", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["error"] == ""
    assert "offload.cpu_bytes_to_use (from --cpu-bytes)" in rows[1]["error"]
    assert "'12XB'" in rows[1]["error"]


def test_sweep_table_and_bad_list(capsys):
    code, out, _ = run(capsys, "sweep", ex("llama-3.1-8b.yaml"), "--block-size", "16,32")
    assert code == 0
    assert '2 point(s)' in out
    code, _, err = run(capsys, "sweep", ex("llama-3.1-8b.yaml"), "--tp", "1,x")
    assert code == 2
    assert '--tp' in err


# ------------------------------------------------------------------ vllm-args


def test_vllm_args_both_spellings(capsys):
    code, out, err = run(capsys, "vllm-args", ex("kimi-k2.5-eagle3-tp4.yaml"), "--cpu-bytes", "64G", "--format",
                         "json")
    doc = json.loads(out)
    gib = doc["args_kv_offloading_size"]
    assert gib[gib.index("--kv-offloading-size") + 1] == "64.0"
    js = doc["args_kv_transfer_config"]
    cfg = json.loads(js[js.index("--kv-transfer-config") + 1])
    assert cfg == {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                   "kv_connector_extra_config": {"cpu_bytes_to_use": 64 * GIB}}
    for flag, value in (("--tensor-parallel-size", "4"), ("--block-size", "64"),
                        ("--kv-cache-memory-bytes", str(40 * GIB))):
        assert gib[gib.index(flag) + 1] == value


def test_vllm_args_adds_what_the_release_needs(capsys):
    code, out, err = run(capsys, "vllm-args", ex("qwen3-next-80b-tp4.yaml"), "--vllm-version", "0.21.0")
    assert code == 0
    assert '--no-disable-hybrid-kv-cache-manager' in out
    assert '--enable-prefix-caching' in out
    assert "added --no-disable-hybrid-kv-cache-manager" in err


def test_vllm_args_inexact_gib_and_block_size(capsys):
    code, out, err = run(capsys, "vllm-args", ex("llama-3.1-8b.yaml"), "--cpu-bytes", "64GB",
                         "--offload-block-size", "256", "--format", "json")
    doc = json.loads(out)
    assert doc["args_kv_offloading_size"] is None  # block_size cannot ride on --kv-offloading-size
    js = doc["args_kv_transfer_config"]
    extra = json.loads(js[js.index("--kv-transfer-config") + 1])["kv_connector_extra_config"]
    assert extra == {"cpu_bytes_to_use": 64 * 10**9, "block_size": 256}


def test_gib_spelling_round_trips():
    from kvcalc.backends.native import gib_spelling
    for n in (64 * GIB, 1610612736, 107374182, 64 * 10**9, 12345678901):
        x = gib_spelling(n)
        assert x is None or int(x * (1 << 30)) == n


# ------------------------------------------------------------------ check --log


@pytest.mark.parametrize("layout,log,code", [
    ("llama-3.1-8b.yaml", "llama-3.1-8b-tp1-v0.19.1.log", 0),
    ("gpt-oss-120b.yaml", "gpt-oss-120b-tp2-v0.22.1.log", 0),
    ("kimi-k2.5-eagle3-tp4.yaml", "kimi-k2.5-eagle3-tp4-v0.33.0.log", 0),
    ("kimi-k2.5-eagle3-tp4.yaml", "kimi-k2.5-eagle3-tp4-mismatch.log", 1),
])
def test_check_log(capsys, layout, log, code):
    rc, out, err = run(capsys, "check", ex(layout), "--log", os.path.join(LOGS, log), "--format", "json")
    assert rc == code, err
    doc = json.loads(out)
    assert doc["match"] is (code == 0)
    assert {r["quantity"].split(" (")[0] for r in doc["rows"]} >= {"GPU KV cache size", "maximum concurrency"}
    version = log.split("-v")[-1].removesuffix(".log") if "-v" in log else "0.33.0"
    assert doc["vllm_version"] == version  # taken from the log's version line


def test_check_log_without_kv_lines(capsys, tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("INFO starting\n")
    rc, out, err = run(capsys, "check", ex("llama-3.1-8b.yaml"), "--log", str(p))
    assert rc == 2
    assert 'no KV cache line' in err


# ------------------------------------------------------------------ schemas


@pytest.mark.parametrize("path", sorted(f for f in os.listdir(EXAMPLES_DIR) if f.endswith(".yaml")))
def test_examples_validate_against_layout_schema(path):
    with open(ex(path)) as fh:
        jsonschema.validate(yaml.safe_load(fh), layout_schema())


@pytest.mark.parametrize("args", [
    ["deepseek-v3-tp4.yaml"], ["kimi-k2.5-eagle3-tp4.yaml", "--check", "--compare-versions", "0.19.1,0.33.0"],
    ["qwen3-next-80b-tp4.yaml"], ["gpt-oss-120b.yaml", "--vllm-version", "0.19.1"],
    ["llama-3.1-8b.yaml", "--num-gpu-blocks-override", "1"],  # 0: vLLM refuses (BlockPool asserts),
])
def test_outputs_validate_against_output_schema(capsys, args):
    main(["plan", ex(args[0]), *args[1:], "--format", "json"])
    jsonschema.validate(json.loads(capsys.readouterr().out), output_schema())


def test_schema_command(capsys):
    for kind in ("layout", "output"):
        assert main(["schema", kind]) == 0
        doc = json.loads(capsys.readouterr().out)
        jsonschema.Draft202012Validator.check_schema(doc)
    assert main(["schema", "nonsense"]) == 2


def test_layout_schema_rejects_what_kvcalc_rejects():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"model": {"num_layers": 2, "heads": 4}}, layout_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"model": {"num_layers": 2}, "offload": {"cpu_bytes_to_use": "64g"}}, layout_schema())


def test_layout_schema_names_exactly_the_keys_the_loader_reads():
    # What the loader accepts in each mapping (the keys its unknown-key refusal lists) is what an editor validating
    # with the schema must see, so a key added to one and not the other fails here.
    import re

    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.vocab.errors import LayoutError

    def accepted(section: str) -> set:
        data = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128, "max_position_embeddings": 4096}}
        node = data
        for part in filter(None, section.split(".")):
            node = node.setdefault(part, {"method": "eagle"} if part == "draft" else {})
        node["no_such_key"] = 1
        with pytest.raises(LayoutError) as e:
            layout_from_dict(data)
        assert "unknown key" in str(e.value)
        return set(re.search(r"one of: ([^)]*)\)", str(e.value)).group(1).split(", "))

    props = layout_schema()["properties"]
    assert set(props) == accepted("")
    for section in ("model", "parallel", "cache", "offload", "host", "vllm"):
        assert set(props[section]["properties"]) == accepted(section), section
    assert set(props["model"]["properties"]["draft"]["properties"]) == accepted("model.draft")


# ------------------------------------------------------------------ plain output


def test_piped_table_has_no_box_characters_or_colour(capsys):
    code, out, _ = run(capsys, "plan", ex("kimi-k2.5-eagle3-tp4.yaml"))
    assert code == 0
    assert '\x1b[' not in out
    assert not set(out) & set("─━│┃┏┓┗┛█")
    assert 'Memory tiers' in out
    assert '#' in out


def test_vllm_args_serves_the_model_directory_only(capsys, tmp_path):
    # A model directory's config.json names the model (its directory) ...
    import shutil

    model = tmp_path / "Kimi-K2.5"
    model.mkdir()
    shutil.copy(os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"), model / "config.json")
    code, out, _ = run(capsys, "vllm-args", str(model), "--tp", "4", "--cpu-bytes", "64G")
    assert code == 0
    assert out.startswith(f"vllm serve {model} ")
    # ... a config among unrelated ones does not (vllm serve would get the folder of examples): a placeholder.
    code, out, err = run(capsys, "vllm-args", os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"), "--tp", "4",
                         "--cpu-bytes", "64G")
    assert code == 0
    assert out.startswith("vllm serve <model> ")
    assert "replace <model> with the model to serve" in err
    code, out, _ = run(capsys, "vllm-args", ex("llama-3.1-8b.yaml"))
    assert out.startswith("vllm serve <model> ")


def test_vllm_args_on_an_unsafe_layout_warns_and_exits_1_unless_forced(capsys):
    # Vector b2 on 0.19.1: scheduler 3,758 CPU blocks, workers 60 -> out of bounds.
    code, out, err = run(capsys, "vllm-args", ex("kimi-k2.5-eagle3-tp4.yaml"))
    assert code == 1
    assert out.startswith("vllm serve ")
    assert "warning: unsafe: the scheduler can hand out CPU blocks a worker never allocated" in err
    code, out, err = run(capsys, "vllm-args", ex("kimi-k2.5-eagle3-tp4.yaml"), "--force")
    assert code == 0
    assert "unsafe" in err
    assert "--force to exit 0" not in err


def test_output_schema_rejects_documents_that_do_not_match(capsys):
    # Generated from the report records: every key described, no key unknown, no key missing, types checked.
    code, out, _ = run(capsys, "plan", ex("llama-3.1-8b.yaml"), "--format", "json")
    doc = json.loads(out)
    schema = output_schema()
    jsonschema.validate(doc, schema)
    assert schema["$defs"]["OffloadSection"]["properties"]["cpu_bytes_to_use"]["description"]
    bad_docs = []
    extra = json.loads(out)
    extra["offload"]["surprise"] = 1
    bad_docs.append(("an unknown key", extra))
    missing = json.loads(out)
    del missing["gpu"]["num_blocks"]
    bad_docs.append(("a missing key", missing))
    wrong = json.loads(out)
    wrong["offload"]["selected"]["num_blocks_scheduler"] = "32768"
    bad_docs.append(("a string where an integer belongs", wrong))
    garbage = {"schema_version": 1, "vllm_version": "0.33.0", "checks": "no"}
    bad_docs.append(("garbage", garbage))
    for what, bad in bad_docs:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_layout_schema_describes_every_key():
    def walk(node, path=""):
        for key, sub in node.get("properties", {}).items():
            full = f"{path}.{key}" if path else key
            assert sub.get("description"), f"{full} has no description"
            walk(sub, full)
    walk(layout_schema())


def test_layout_schema_descriptions_belong_to_their_key():
    # The schema's fragments are shared by many keys: a description attached to one key once showed up on every key
    # (and every nested alternative) built from the same fragment (cache.block_size read "GPU blocks per CPU chunk").
    schema = layout_schema()
    cache = schema["properties"]["cache"]["properties"]
    assert cache["block_size"]["description"].startswith("GPU block size in tokens")
    assert cache["mamba_block_size"]["description"] == "Mamba block size in tokens"
    assert cache["max_model_len"]["description"].startswith("the longest request")
    assert "description" not in cache["block_size"]["anyOf"][0]
    assert cache["kv_cache_memory"]["anyOf"][0]["description"].startswith("bytes:")
    assert layout_schema() == schema
