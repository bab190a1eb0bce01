"""No number is cut at any console width (issue 21: `size` printed `655,360,000,00` at 80 columns and dropped its
last columns). Each command's table at 60, 80, 100 and 140 columns (COLUMNS, a pipe: colourless): every line fits
the width, no cell ends in an ellipsis, and every number it prints is a number the same command prints at 400
columns, where nothing needs to wrap (a number folded across two lines would leave a piece that is not)."""

import os
import re

import pytest

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
KIMI = os.path.join(EX, "kimi-k2.5-eagle3-tp4.yaml")
LLAMA = os.path.join(EX, "llama-3.1-8b.yaml")
FIX = os.path.join(ROOT, "tests", "fixtures")

COMMANDS = {
    "plan": ["plan", KIMI],
    "plan-compare": ["plan", os.path.join(EX, "gpt-oss-120b.yaml"), "--kv-offloading-size", "64",
                     "--compare-versions", "0.19.1,0.20.0,0.28.0,0.33.0"],
    "plan-backends": ["plan", os.path.join(EX, "llama-3.1-8b-lmcache-tp8.yaml"), "--compare-backends"],
    "plan-simple": ["plan", os.path.join(EX, "simple", "qwen3-32b-eagle3-pp2-tp2.yaml"), "--vllm-version",
                    "0.32.0"],
    "plan-gpu": ["plan", os.path.join(FIX, "models", "llama-3.1-8b.json"), "--gpu", "H100", "--vllm-version",
                 "0.19.0", "--max-model-len", "16384", "--cpu-bytes", "655360000000"],
    "plan-check": ["plan", os.path.join(EX, "deepseek-v3-tp4.yaml"), "--vllm-version", "0.33.0", "--check",
                   "--host-memory", "512GiB", "--shm-size", "64MiB"],
    "size": ["size", KIMI, "--cpu-tokens", "2M"],
    "size-resident": ["size", os.path.join(EX, "deepseek-v3-tp4.yaml"), "--vllm-version", "0.19.1", "--resident",
                      "200G"],
    "sweep": ["sweep", LLAMA, "--tp", "1,2,4,8", "--cpu-bytes", "16G,655360000000", "--vllm-version",
              "0.19.1,0.33.0", "--format", "table"],
    "check-log": ["check", LLAMA, "--log", os.path.join(FIX, "logs", "llama-3.1-8b-tp1-v0.19.1.log")],
    "check-metrics": ["check", KIMI, "--metrics", os.path.join(FIX, "metrics", "kimi-k2.5-eagle3-tp4-v0.33.0.prom"),
                      "--vllm-version", "0.33.0"],
}
NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def table(capsys, monkeypatch, argv, width):
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, err = run(capsys, *argv)
    assert code in (0, 1), err
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_number_is_cut_at_any_width(capsys, monkeypatch, name):
    argv = COMMANDS[name]
    wide = table(capsys, monkeypatch, argv, 400)
    numbers = set(NUMBER.findall(wide))
    for width in (60, 80, 100, 140):
        out = table(capsys, monkeypatch, argv, width)
        too_long = [line for line in out.splitlines() if len(line) > width]
        assert too_long == [], f"{name} at {width} columns"
        assert "…" not in out, f"{name} at {width} columns: a cell cut with an ellipsis"
        pieces = sorted(set(NUMBER.findall(out)) - numbers)
        assert pieces == [], f"{name} at {width} columns: numbers cut"


def test_size_at_80_columns_keeps_every_family_and_its_budget(capsys, monkeypatch):
    # The case: 80 columns dropped `safe?` and cut the budgets. Kimi-K2.5 + EAGLE3 at TP 4 holding 2M
    # tokens: 2,097,152 / 64 tokens a block = 32,768 CPU blocks; a block is the GPU page of the UniformType group,
    # 4,562,944 B (vector b2), on each of the 4 workers: 32,768 x 4,562,944 x 4 = 598,074,195,968 B.
    out = table(capsys, monkeypatch, COMMANDS["size"], 80)
    for family in ("old", "fixed", "packed", "config", "replicated", "single-alloc"):
        assert re.search(rf"^{family} ", out, re.M), family
    assert out.count("598,074,195,968") == 5  # every family but old, whose note says no budget helps
    assert "out of bounds at any budget" in out
