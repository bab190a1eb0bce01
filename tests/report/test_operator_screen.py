"""Issue 35 (1): the first answer, GPU KV tokens and the concurrency for max_model_len, on the first screen and in
--summary, for vLLM and SGLang. Tables on a fixed-width colourless console (a pipe)."""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
MIXTRAL_SGLANG = os.path.join(ROOT, "examples", "sglang", "mixtral-8x7b-tp2-hicache.yaml")


def test_summary_carries_the_gpu_tokens_and_concurrency_of_the_issue(capsys):
    # The issue's command. Llama-3.1-8B: 32 layers x K and V x 8 KV heads x 128 x 2 B (bf16) = 131,072 B a token,
    # 16 tokens a block = 2,097,152 B a block; the README's 29,728 blocks x 16 = 475,648 tokens, and 475,648 /
    # 16,384 = 29.03 requests of max_model_len.
    argv = ["plan", LLAMA, "--gpu", "H100", "--vllm-version", "0.19.0", "--gpu-memory-utilization", "0.95",
            "--max-model-len", "16384"]
    code, out, err = run(capsys, *argv, "--summary")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "GPU KV cache: 475,648 tokens (29,728 blocks) = 29.03 × max_model_len 16,384"
    code, full, _ = run(capsys, *argv)
    assert full.splitlines()[1] == lines[1]  # the first screen of the whole table too


def test_headline_from_a_given_budget_by_hand(capsys):
    # --kv-cache-memory 40GiB: 42,949,672,960 // 2,097,152 = 20,480 blocks x 16 = 327,680 tokens; / 16,384 = 20.00.
    code, out, err = run(capsys, "plan", LLAMA, "--kv-cache-memory", "40GiB", "--max-model-len", "16384",
                         "--vllm-version", "0.19.0", "--summary")
    assert code == 0, err
    assert "GPU KV cache: 327,680 tokens (20,480 blocks) = 20.00 × max_model_len 16,384" in out


def test_headline_says_what_to_give_without_a_gpu(capsys):
    code, out, err = run(capsys, "plan", LLAMA, "--vllm-version", "0.19.0", "--summary")
    assert code == 0, err
    assert out.splitlines()[1] == ("GPU KV cache: not computed: give --gpu NAME (or --gpu-total-memory) to predict "
                                   "the budget, or --kv-cache-memory")


def test_sglang_summary_carries_tokens_and_concurrency(capsys):
    code, out, err = run(capsys, "plan", MIXTRAL_SGLANG, "--format", "json")
    assert code == 0, err
    sg = json.loads(out)["sglang"]
    tokens, ctx = sg["max_total_num_tokens"], sg["memory"]["context_length"]
    code, out, err = run(capsys, "plan", MIXTRAL_SGLANG, "--summary")
    assert code == 0, err
    assert out.splitlines()[1] == f"GPU KV cache: {tokens:,} tokens = {tokens / ctx:,.2f} × context_length {ctx:,}"


def test_the_weights_basis_is_one_word(capsys):
    # The first screen names the weights' basis as gpu.memory.terms does: exact for a bf16 checkpoint, estimate
    # under --quantization fp8 (its scales are approximated).
    for extra, word in (([], "exact"), (["--quantization", "fp8"], "estimate")):
        argv = ["plan", LLAMA, "--gpu", "H100", "--vllm-version", "0.19.0", *extra]
        code, out, err = run(capsys, *argv, "--format", "json")
        assert code == 0, err
        terms = {t["name"]: t["basis"] for t in json.loads(out)["gpu"]["memory"]["terms"]}
        assert terms["weights"] == word
        code, out, err = run(capsys, *argv, "--summary")
        assert f"weights {word}," in " ".join(out.split())
