"""`kvcalc check --metrics`: a /metrics scrape against the prediction.

Expected values are test vector (b2): Kimi-K2.5 + EAGLE3 at TP 4, block 64, 40 GiB of KV memory a rank, 64 GiB of
CPU budget on 0.33.0: 9,412 GPU blocks; 3,765 chunks of 18,251,776 B (one block a chunk) = 68,717,936,640 B; one
KV-cache group of block 64, so cdiv(131,072, 64) = 2,048 chunks a request and 3,765 x 131,072 // 2,048 = 240,960
tokens (v1/kv_offload/cpu/common.py _kv_cache_size_tokens).
"""

import json
import os

import pytest

from conftest import EXAMPLES_DIR as EXAMPLES, run
from kvcalc.vocab.errors import LayoutError
from kvcalc.inputs.layout.read import load_layout
from kvcalc.tools.metricscheck import parse

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
METRICS = os.path.join(HERE, "fixtures", "metrics")
KIMI = os.path.join(EXAMPLES, "kimi-k2.5-eagle3-tp4.yaml")



def test_scrape_matches_vector_b2(capsys):
    code, out, err = run(capsys, "check", KIMI, "--metrics", os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    got = {(r["series"], r["label"]): (r["expected"], r["found"]) for r in doc["rows"]}
    want = {("vllm:cache_config_info", "num_gpu_blocks"): "9412",
            ("vllm:cache_config_info", "block_size"): "64",
            ("vllm:kv_offload_config_info", "cpu_num_chunks"): "3765",
            ("vllm:kv_offload_config_info", "cpu_blocks_per_chunk"): "1",
            ("vllm:kv_offload_config_info", "cpu_kv_cache_size_bytes"): str(3765 * 18251776),
            ("vllm:kv_offload_config_info", "cpu_kv_cache_size_tokens"): str(3765 * 131072 // 2048)}
    assert got == {k: (v, v) for k, v in want.items()}
    assert doc["match"] is True
    assert doc["vllm_version"] == "0.33.0"


def test_a_mismatch_exits_1_and_names_each_label(capsys):
    # The mismatch fixture carries the old-s count (3,758, vector b2) for the CPU tier.
    code, out, err = run(capsys, "check", KIMI, "--metrics", os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-mismatch.prom"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 1
    bad = {r["label"]: r["found"] for r in json.loads(out)["rows"] if not r["match"]}
    assert bad == {"cpu_num_chunks": "3758", "cpu_kv_cache_size_bytes": str(3758 * 18251776),
                   "cpu_kv_cache_size_tokens": str(3758 * 64)}
    failed = [line for line in err.splitlines() if line.startswith("check failed:")]
    assert len(failed) == 3
    assert "cpu_num_chunks: expected '3765', found '3758'" in err


def test_the_offload_series_needs_a_release_that_publishes_it(capsys):
    # The example selects 0.19.1; vllm:kv_offload_config_info exists from 0.33.0 (CPUOffloadingInfo).
    code, out, err = run(capsys, "check", KIMI, "--metrics", os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom"))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "0.33.0 or later" in err
    assert "'0.19.1'" in err


@pytest.mark.parametrize("name, text, needle", [
    ("json.prom", '{"num_gpu_blocks": 9412}\n', "a Prometheus sample line"),
    ("empty.prom", "", "0 sample line(s)"),
    ("other.prom", "up 1\nprocess_cpu_seconds_total 3.5\n", "2 sample line(s)"),
    ("nobrace.prom", "vllm:cache_config_info 1.0\n", "with its labels in braces"),
    ("open.prom", 'vllm:cache_config_info{block_size="64} 1.0\n', "unterminated value"),
    ("unterminated.prom", 'vllm:cache_config_info{block_size="64,x="1"} 1.0\n', "well-formed labels"),
    ("noquote.prom", "vllm:cache_config_info{block_size=64} 1.0\n", "no quoted value"),
])
def test_text_that_is_no_scrape_is_one_line_exit_2(capsys, tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(capsys, "check", KIMI, "--metrics", str(path), "--vllm-version", "0.33.0")
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"kvcalc: error: {path}")
    assert needle in lines[0]


def test_label_escapes_are_read_as_the_exposition_format_writes_them():
    text = 'vllm:cache_config_info{a="x\\"y",b="back\\\\slash",c="two\\nlines",engine="1"} 1\n'
    (line, labels), = parse(text, source="s.prom")["vllm:cache_config_info"]
    assert line == 1
    assert labels == {"a": 'x"y', "b": "back\\slash", "c": "two\nlines", "engine": "1"}


def test_gpu_blocks_come_from_the_scrape_when_the_layout_has_no_kv_memory(capsys, tmp_path):
    # Without kv_cache_memory the GPU count is taken from the scrape (9,412), and the CPU tier still follows from
    # the budget: the same 3,765 chunks, since the CPU count does not depend on the GPU count.
    import yaml

    with open(KIMI) as fh:
        data = yaml.safe_load(fh)
    del data["cache"]["kv_cache_memory"]
    path = tmp_path / "kimi.yaml"
    path.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "check", str(path), "--metrics",
                         os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom"), "--vllm-version", "0.33.0",
                         "--format", "json")
    assert code == 0, err
    assert "num_gpu_blocks 9,412 taken from the scrape" in err
    rows = {r["label"]: r["expected"] for r in json.loads(out)["rows"]}
    assert rows["cpu_num_chunks"] == "3765"


def test_a_scrape_with_only_the_cache_series_compares_it():
    from kvcalc.tools.metricscheck import check

    text = 'vllm:cache_config_info{block_size="64",engine="0",num_gpu_blocks="9412"} 1.0\n'
    layout = load_layout(KIMI, overrides={"vllm.version": ("0.26.0", "--vllm-version")})
    result = check(layout, text, source="s.prom")
    assert [(r["label"], r["expected"]) for r in result["rows"]] == [("num_gpu_blocks", "9412"), ("block_size", "64")]
    assert result["match"] is True


def test_raises_layout_error_for_the_api():
    with pytest.raises(LayoutError):
        parse("", source="s.prom")


def test_a_scrape_without_the_offload_series_is_a_mismatch_when_the_layout_offloads(capsys, tmp_path):
    # A 0.33.0 server without an offloading connector publishes vllm:cache_config_info only: the layout's CPU
    # tier is not running there.
    with open(os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom")) as fh:
        lines = [line for line in fh if "kv_offload_config_info" not in line]
    path = tmp_path / "no-offload.prom"
    path.write_text("".join(lines))
    code, out, err = run(capsys, "check", KIMI, "--metrics", str(path), "--vllm-version", "0.33.0", "--format", "json")
    assert code == 1
    rows = json.loads(out)["rows"]
    missing = [r for r in rows if r["label"] == "(series)"]
    assert missing[0]["found"] == "absent: offloading is not on"
    assert missing[0]["match"] is False


def test_values_taken_from_the_scrape_are_marked_and_prove_nothing(capsys, tmp_path):
    # Without KV memory in the layout, num_gpu_blocks comes from the scrape: its row is marked from_scrape; the
    # block_size and the CPU tier's rows are still predictions.
    import yaml

    with open(KIMI) as fh:
        layout = yaml.safe_load(fh)
    layout["cache"].pop("kv_cache_memory", None)
    path = tmp_path / "no-kv-memory.yaml"
    path.write_text(yaml.safe_dump(layout))
    code, out, err = run(capsys, "check", str(path), "--metrics", os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    rows = {r["label"]: r for r in json.loads(out)["rows"]}
    assert rows["num_gpu_blocks"]["from_scrape"] is True
    assert rows["block_size"]["from_scrape"] is False
    assert rows["cpu_num_chunks"]["from_scrape"] is False


def test_a_byte_order_mark_does_not_hide_a_mismatch(capsys, tmp_path):
    # Issue 22: a BOM before the first series made its name unreadable and the mismatch vanished (exit 0).
    with open(os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-mismatch.prom"), encoding="utf-8") as fh:
        series = [line for line in fh if line.startswith("vllm:")]
    # The offload series first, where the mark would sit in front of its name.
    text = "".join(sorted(series, key=lambda line: not line.startswith("vllm:kv_offload_config_info")))
    assert text.startswith("vllm:kv_offload_config_info")
    path = tmp_path / "bom.prom"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, out, err = run(capsys, "check", KIMI, "--metrics", str(path), "--vllm-version", "0.33.0", "--format", "json")
    assert code == 1
    path.write_bytes(b"\xff" + text.encode())  # not UTF-8 at all: refused, not read with replacement characters
    code, out, err = run(capsys, "check", KIMI, "--metrics", str(path), "--vllm-version", "0.33.0")
    assert code == 2
    assert "byte 0: expected UTF-8 text" in err


def test_a_scrape_names_no_release(capsys, tmp_path):
    # vLLM's /metrics carries no version (0.33.0 v1/metrics/loggers.py): a layout naming none is refused.
    import yaml

    with open(KIMI) as fh:
        layout = yaml.safe_load(fh)
    layout.pop("vllm", None)
    path = tmp_path / "no-version.yaml"
    path.write_text(yaml.safe_dump(layout))
    code, out, err = run(capsys, "check", str(path), "--metrics", os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom"))
    assert code == 2
    assert "a scrape names none, give --vllm-version" in err


def test_a_label_given_twice_is_no_scrape(capsys, tmp_path):
    # Issue 34: `num_gpu_blocks="1",num_gpu_blocks="9412"` kept the last value and the check "matched". Prometheus
    # refuses a sample whose label is given twice: exit 2, the line and the label named.
    with open(os.path.join(METRICS, "kimi-k2.5-eagle3-tp4-v0.33.0.prom")) as fh:
        text = fh.read()
    doubled = text.replace('num_gpu_blocks="9412"', 'num_gpu_blocks="1",num_gpu_blocks="9412"', 1)
    assert doubled != text
    path = tmp_path / "twice.prom"
    path.write_text(doubled)
    code, out, err = run(capsys, "check", KIMI, "--metrics", str(path), "--vllm-version", "0.33.0")
    assert code == 2
    assert "label 'num_gpu_blocks' given twice" in err
