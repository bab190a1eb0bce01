"""The first screen of `kvcalc plan` (issue 21): the old / fixed columns each on its own release, a release that
refuses shown by its refusal, the Summary in GiB, the Verdict's pod memory and /dev/shm, --summary. Tables on a
fixed-width colourless console (COLUMNS, a pipe)."""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
GPT_OSS = os.path.join(EX, "gpt-oss-120b.yaml")
L4 = os.path.join(EX, "llama-4-scout-tp4.yaml")
KIMI = os.path.join(EX, "kimi-k2.5-eagle3-tp4.yaml")


def table(capsys, monkeypatch, *argv, width=80):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run(capsys, *argv)
    return code, out, err


def test_old_and_fixed_columns_agree_with_the_release_by_release_table(capsys, monkeypatch):
    # The issue's gpt-oss case: the old column was the old formula on 0.33.0's layout (hybrid manager on, 2 groups:
    # 116,508 blocks, 1,864,128 tokens) while the release-by-release table's 0.19.1 said half. Now the old column
    # is 0.19.1 planned whole: the hybrid manager is off with a connector before 0.22.0, the sliding layers fold
    # into one group of 36 full-attention layers, 36 tensors of a 16,384 B page (16 tokens x 4 heads at TP 2 x
    # 64 x 2 x 2 B): page x len(tensors) x world = 16,384 x 36 x 2 = 1,179,648 B -> 68,719,476,736 // 1,179,648
    # = 58,254 blocks of 16 tokens = 932,064 tokens.
    argv = ["plan", GPT_OSS, "--vllm-version", "0.33.0", "--kv-offloading-size", "64",
            "--compare-versions", "0.19.1,0.23.0,0.33.0"]
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    off = doc["offload"]
    by_release = {r["vllm_version"]: r["offload"] for r in doc["releases"]}
    assert off["old"]["vllm_version"] == "0.19.1"
    assert off["old"]["num_blocks_scheduler"] == 68719476736 // (16384 * 36 * 2) == 58254
    assert off["old"]["cpu_tokens_safe"] == 58254 * 16 == 932064
    assert off["old"]["cpu_tokens_safe"] == by_release["0.19.1"]["cpu_tokens_safe"]
    assert off["fixed"]["vllm_version"] == "0.23.0"
    assert off["fixed"]["cpu_tokens_safe"] == by_release["0.23.0"]["cpu_tokens_safe"]
    assert off["selected"]["cpu_tokens_safe"] == by_release["0.33.0"]["cpu_tokens_safe"]
    code, out, err = table(capsys, monkeypatch, *argv, width=100)
    summary = out.split("Verdict:")[0]
    assert "old 0.19.1" in summary
    assert "fixed 0.23.0" in summary
    assert "932,064" in summary
    assert "1,864,128" not in out  # the old formula on 0.33.0's layout is no column any more


def test_a_release_that_refuses_shows_its_refusal_not_numbers(capsys, monkeypatch):
    # Llama-4-Scout's chunked-local groups on 0.28.0 start; 0.23.0 (the fixed column) runs the hybrid manager with
    # the connector and its offloading scheduler asserts on them at start-up (STEPS offload_refuses_chunked_local).
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.28.0", "--format", "json")
    assert code == 0, err
    off = json.loads(out)["offload"]
    assert off["fixed"] is None
    assert off["errors"]["fixed"].startswith("vLLM 0.23.0 would not start the offloading connector: ")
    assert "chunked-local" in off["errors"]["fixed"]
    code, out, err = table(capsys, monkeypatch, "plan", L4, "--vllm-version", "0.28.0", width=100)
    summary = out.split("Verdict:")[0].splitlines()
    head = next(i for i, line in enumerate(summary) if "fixed 0.23.0" in line)
    column = summary[head].index("fixed 0.23.0")
    cells = [line[column:column + 12].strip() for line in summary[head + 1:head + 6]]
    assert cells[:4] == ["—", "—", "—", "—"]
    assert cells[4].startswith("refused")
    assert any(line.startswith("fixed 0.23.0: vLLM 0.23.0 would not start the offloading connector") for line in summary)
