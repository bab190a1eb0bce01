"""One exit-code policy (README): 0 ok; 1 a --check gate failed or a check found a mismatch; 2 bad input, an
unsupported setting, or a configuration the selected release refuses at start-up; 70 only for real bugs."""

import json
import os

from kvcalc.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L4 = os.path.join(ROOT, "examples", "llama-4-scout-tp4.yaml")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


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
    assert doc["offload"]["pinned_bytes_per_engine"] is None and doc["offload"]["host"] is None
    errors = [line for line in err.splitlines() if line.startswith("kvcalc: error:")]
    assert errors == [f"kvcalc: error: {L4}: {doc['error']}"]
    assert "warning:" not in err  # said once, as the error


def test_the_table_draws_no_cpu_bars_for_a_release_that_would_not_start(capsys):
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.22.1")
    assert code == 2
    assert "would not start" in out
    assert "CPU resident" not in out and "Memory tiers" not in out


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
