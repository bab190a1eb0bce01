"""Issue 35 (4): check --metrics accepts a GPU-only scrape (no KV connector: no vllm:kv_offload_config_info) and,
with --gpu, predicts num_gpu_blocks and compares it instead of copying it from the scrape.

The scrape (tests/fixtures/metrics/llama-3.1-8b-h100-tp1-v0.19.0-gpu-only.prom) carries the real start of
llama-3.1-8b-h100-tp1-v0.19.0-debug.log: "GPU KV cache size: 476,016 tokens" in 16-token blocks, one group (rule
L1: tokens = blocks x 16) = 29,751 blocks. Llama-3.1-8B's block is 32 layers x K and V x 8 heads x 128 x 2 B x 16 =
2,097,152 B, so the log's "Available KV cache memory: 58.11 GiB" allows 58.11 x 2^30 / 2,097,152 = 29,752 (the
GiB rounded to 0.01): the prediction must land near 29,751, and a 2% tolerance is 2% of the predicted count."""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRAPE = os.path.join(ROOT, "tests", "fixtures", "metrics", "llama-3.1-8b-h100-tp1-v0.19.0-gpu-only.prom")
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
RUN = ["--vllm-version", "0.19.0", "--max-model-len", "16384", "--no-enable-prefix-caching"]


def test_hand_figures():
    assert 476016 // 16 == 29751
    assert round(58.11 * 2 ** 30 / 2097152) == 29752


def test_a_gpu_only_scrape_is_accepted(capsys):
    code, out, err = run(capsys, "check", LLAMA, "--metrics", SCRAPE, *RUN, "--format", "json")
    assert code == 0, err
    rows = {r["label"]: r for r in json.loads(out)["rows"]}
    assert set(rows) == {"num_gpu_blocks", "block_size"}  # vllm:cache_config_info alone
    assert rows["block_size"]["expected"] == "16"
    assert rows["num_gpu_blocks"]["from_scrape"] is True  # without a GPU or KV memory: taken, and said so


def test_with_a_gpu_the_block_count_is_predicted_and_compared(capsys):
    code, out, err = run(capsys, "check", LLAMA, "--metrics", SCRAPE, *RUN, "--gpu", "H100",
                         "--gpu-memory-utilization", "0.95", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    row = next(r for r in doc["rows"] if r["label"] == "num_gpu_blocks")
    assert row["from_scrape"] is False
    assert row["found"] == "29751"
    predicted = int(row["expected"])
    assert predicted != 29751  # a prediction, not the scrape's number copied
    assert abs(predicted - 29751) <= row["tolerance"]
    assert row["tolerance"] == -(-predicted * 2 // 100)
    assert doc["match"] is True
    code, out, err = run(capsys, "check", LLAMA, "--metrics", SCRAPE, *RUN, "--gpu", "H100",
                         "--gpu-memory-utilization", "0.95")
    assert f"(predicted: within ±{row['tolerance']:,})" in out


def test_a_prediction_far_from_the_scrape_fails(capsys):
    # The same scrape against an A100-80GB at the default 0.9: a smaller device total and utilization, a budget
    # several GiB short of the H100 run's: more than 2% fewer blocks.
    code, out, err = run(capsys, "check", LLAMA, "--metrics", SCRAPE, *RUN, "--gpu", "A100-80GB")
    assert code == 1
    assert "label num_gpu_blocks: expected" in err
