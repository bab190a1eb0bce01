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
    # Issue 35: --compare-engines (a plain rich Table split "10,737,418,2" / "40 B"), SGLang's tables, the first
    # screen, the GPU-side size and the listings.
    "plan-engines": ["plan", os.path.join(FIX, "models", "llama-3.1-8b.json"), "--gpu", "H100", "--vllm-version",
                     "0.33.0", "--cpu-bytes", "10G", "--compare-engines"],
    "plan-sglang-engines": ["plan", os.path.join(EX, "sglang", "mixtral-8x7b-tp2-hicache.yaml"), "--compare-engines"],
    "plan-summary": ["plan", os.path.join(FIX, "models", "llama-3.1-8b.json"), "--gpu", "H100", "--vllm-version",
                     "0.19.0", "--max-model-len", "16384", "--summary"],
    "size-gpu": ["size", os.path.join(FIX, "hf", "mixtral-8x7b-v0.1.json"), "--gpu", "L40S", "--vllm-version",
                 "0.19.0", "--concurrency", "4"],
    "versions": ["versions", "--format", "table"],
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


def test_the_engines_table_keeps_its_numbers_whole_at_any_width():
    # --compare-engines drew a plain rich Table: at 80 columns a long refusal squeezed the number columns and rich
    # folded them inside a number. It is a FitTable now: every number whole, or one block per engine.
    import io

    from rich.console import Console

    from kvcalc.report.engines import EngineEntry
    from kvcalc.report.table import Style
    from kvcalc.report.table_engines import engines_table

    entries = [EngineEntry(engine="vllm", version="0.33.0", gpu_tokens=10_737_418_240, host_tokens=1_525_872_000,
                           host_bytes_per_node=10_737_418_240, shm_bytes_per_node=10_737_418_240, refusal=None),
               EngineEntry(engine="sglang", version="0.5.23", gpu_tokens=None, host_tokens=None,
                           host_bytes_per_node=None, shm_bytes_per_node=None,
                           refusal="SGLang's budget starts from the GPU: give --gpu NAME, --gpu-capacity-mib or "
                                   "--gpu-free-memory (SGLang logs it as 'Load weight end. ... mem usage=X GB') or a config.json, "
                                   "and the release you run")]
    for width in (60, 80, 100):
        buf = io.StringIO()
        Console(file=buf, width=width, color_system=None, highlight=False).print(engines_table(entries, Style(plain=True)))
        found = set(NUMBER.findall(buf.getvalue()))
        assert {"10,737,418,240", "1,525,872,000"} <= found, (width, buf.getvalue())
        assert found - {"10,737,418,240", "1,525,872,000", "10", "0.33.0", "0.5.23"} == set(), (width, found)


def test_a_word_wider_than_a_block_keeps_every_line():
    # A value with one word wider than the console (a long path, a long hub id) sent FitTable's per-row block into
    # another vertical layout that printed blank lines: it is now one wrapped "label: value" line, folded only inside that
    # word, and nothing is lost.
    import io

    from rich.console import Console

    from kvcalc.report.engines import EngineEntry
    from kvcalc.report.table import Style
    from kvcalc.report.table_engines import engines_table

    word = "x" * 70
    entry = EngineEntry(engine="sglang", version="0.5.23", gpu_tokens=None, host_tokens=None,
                        host_bytes_per_node=None, shm_bytes_per_node=None, refusal=f"give ({word})")
    buf = io.StringIO()
    Console(file=buf, width=60, color_system=None, highlight=False).print(engines_table([entry], Style(plain=True)))
    text = buf.getvalue()
    assert "".join(text.split()).count(word) == 1
    assert not any(line.strip() == "" for line in text.splitlines())
