"""Issue 21: every command reads the same inputs (a layout or config.json, a hub id in the HF cache, a `vllm serve`
line as `--serve` or `-- vllm serve`, a manifest with `--k8s`), and each gives the answer the equivalent layout
gives. Kimi-K2.5 at TP 4 with 64 GiB on 0.33.0: 15,279 chunks (tests/inputs/test_k8s.py derives it by hand)."""

import csv
import io
import json
import os

import pytest

from conftest import EXAMPLES_DIR, run
from inputs.test_k8s import manifest
from inputs.test_serve import fake_cache

KIMI = "moonshotai/Kimi-K2.5"
LINE = ["vllm", "serve", KIMI, "-tp", "4", "--kv-offloading-size", "64", "--block-size", "64",
        "--max-model-len", "32768"]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    fake_cache(tmp_path / "hub", KIMI, os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))


def test_size_from_a_serve_line_a_manifest_and_a_hub_id(capsys, tmp_path, hub):
    answers = []
    for args in (["--", *LINE], ["--k8s", manifest(tmp_path, "deployment-helm.yaml")], [KIMI, "--tp", "4",
                                                                                     "--block-size", "64"]):
        code, out, err = run(capsys, "size", *args if args[0] != "--" else [], "--vllm-version", "0.33.0",
                             "--cpu-blocks", "15279", "--format", "json", *(args if args[0] == "--" else []))
        assert code == 0, (args, err)
        answers.append(json.loads(out)["cpu_bytes_to_use"])
    # The same model and parallelism through three inputs: one answer.
    assert len(set(answers)) == 1, answers


def test_sweep_from_a_serve_line(capsys, hub):
    code, out, err = run(capsys, "sweep", "--vllm-version", "0.33.0", "--cpu-bytes", "32GiB,64GiB", "--format", "csv",
                         "--", *LINE)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["cpu_blocks_scheduler"] for r in rows] == [str(15279 // 2), "15279"]
    assert rows[0]["tp"] == ""  # tp comes from the line, not an axis
    assert rows[1]["cpu_bytes"] == "64GiB"


def test_init_and_vllm_args_from_a_serve_line_and_a_manifest(capsys, tmp_path, hub):
    code, out, err = run(capsys, "init", "--", *LINE)
    assert code == 0, err
    assert "tensor_parallel_size: 4  # -tp" in out
    path = manifest(tmp_path, "deployment-helm.yaml")
    code, out, err = run(capsys, "vllm-args", "--k8s", path, "--format", "json")
    assert code == 0, err
    patch = json.loads(out)["manifest_patch"]
    # Resident region 15,279 x 4,497,408 B + 4 workers x 3 GiB; the manifest grants 96Gi and an 80Gi /dev/shm.
    assert patch["needs_memory_bytes"] == 15279 * 4497408 + 4 * 3 * 2 ** 30
    assert patch["memory_enough"] is True
    assert patch["needs_shm_bytes"] == 15279 * 4497408


def test_one_input_at_a_time(capsys, tmp_path, hub):
    code, out, err = run(capsys, "size", os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml"), "--cpu-tokens", "1M",
                         "--", *LINE)
    assert code == 2
    assert "give one input" in err
