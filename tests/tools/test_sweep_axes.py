"""Issue 35 (7): sweep's new max_model_len axis and gpu_tokens column, and the axis's bad-input line.

examples/llama-3.1-8b.yaml: 131,072 B a token (32 layers x K and V x 8 heads x 128 x 2 B), 16-token blocks of
2,097,152 B. GPU: 40 GiB of KV memory / 2 MiB = 20,480 blocks = 327,680 tokens, whatever max_model_len. CPU on the
default release: 100 GiB / 2 MiB = 51,200 blocks = 819,200 tokens."""

import csv
import io
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "examples", "llama-3.1-8b.yaml")


def test_max_model_len_is_an_axis_and_gpu_tokens_a_column(capsys):
    code, out, err = run(capsys, "sweep", LLAMA, "--max-model-len", "8K,128K", "--cpu-bytes", "100G", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["max_model_len"] for r in rows] == ["8K", "128K"]
    assert {r["gpu_tokens"] for r in rows} == {str(40 * 2 ** 30 // 2097152 * 16)} == {"327680"}
    assert {r["cpu_blocks_scheduler"] for r in rows} == {str(100 * 2 ** 30 // 2097152)}
    assert {r["cpu_tokens_safe"] for r in rows} == {"819200"}


def test_a_bad_max_model_len_list_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "sweep", LLAMA, "--max-model-len", "8K,abc", "--format", "csv")
    assert code == 2
    assert out == ""
    assert err.strip().splitlines() == ["kvcalc: error: --max-model-len: expected an integer, or digits with one "
                                        "K/M/G/T (binary) or k/m/g/t (decimal) suffix, got 'abc'"]
