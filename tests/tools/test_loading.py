"""Issue 35 (2): a model that does not load gets the smallest TP x PP that does, from `plan` (beside the engine's
own refusal) and from `size --concurrency` / `--gpu-tokens` starting from a layout that does not load.

The weights, by hand from the real public configs in tests/fixtures/hf (bf16, untied embeddings):
- Mixtral-8x7B-v0.1: per layer q/o 2 x 4096^2 + k/v 2 x 4096 x 1024 + 8 experts x 3 x 4096 x 14336 + router
  4096 x 8 = 1,451,261,952 parameters; x 32 layers + 2 x 32,000 x 4096 (embedding, LM head) =
  46.70 G parameters = 93.4 GB = 87.0 GiB. On one L40S (torch total 44.39 GiB, vocab/devices.py; vLLM 0.19.0's
  default utilization 0.9 requests 39.95 GiB) nothing is left; at TP 2 (or PP 2) each GPU holds ~43.5 GiB, still
  more than 39.95; at TP 4 ~21.75 GiB leaves ~17 GiB: TP 4 x PP 1 is the smallest (4 GPUs, TP before PP).
- Qwen3-14B: per layer q/o 2 x 5120^2 + k/v 2 x 5120 x 1024 + MLP 3 x 5120 x 17408 = 330.3 M; x 40 + 2 x 151,936
  x 5120 = 14.77 G parameters = 27.5 GiB, more than an A10 (22.06 GiB total, 19.85 requested at 0.9); at TP 2
  13.76 GiB a GPU loads.
"""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIXTRAL = os.path.join(ROOT, "tests", "fixtures", "hf", "mixtral-8x7b-v0.1.json")
QWEN14 = os.path.join(ROOT, "tests", "fixtures", "hf", "qwen3-14b.json")
GIB = 1 << 30
MIXTRAL_PARAMS = 32 * (2 * 4096 ** 2 + 2 * 4096 * 1024 + 8 * 3 * 4096 * 14336 + 4096 * 8) + 2 * 32000 * 4096


def test_hand_figures():
    assert round(MIXTRAL_PARAMS * 2 / GIB, 1) == 87.0
    assert MIXTRAL_PARAMS * 2 / 2 / GIB > 0.9 * 44.39  # TP 2 does not load
    assert MIXTRAL_PARAMS * 2 / 4 / GIB < 0.9 * 44.39 - 5  # TP 4 leaves room for the activation and KV


def test_plan_names_the_smallest_tp_pp_that_loads(capsys):
    code, out, err = run(capsys, "plan", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[-1]
    assert "No available memory for the cache blocks" in line  # vLLM's own message stays
    assert "the weights take 87.0" in line
    assert "of the 39.95 GiB vLLM requests" in line
    assert "the smallest TP × PP that starts it on this GPU with these settings is TP 4 × PP 1" in line
    assert line.endswith("--tensor-parallel-size 4")


def test_plan_json_error_carries_the_advice(capsys):
    code, out, err = run(capsys, "plan", QWEN14, "--gpu", "A10", "--vllm-version", "0.19.0", "--format", "json")
    assert code == 2
    doc = json.loads(out)
    assert doc["exit_code"] == 2
    assert "is TP 2 × PP 1" in doc["error"]


def test_the_check_gate_carries_the_advice(capsys):
    code, out, err = run(capsys, "plan", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0", "--check",
                         "--cpu-bytes", "16G", "--format", "json")
    assert code == 1
    startup = next(c for c in json.loads(out)["checks"] if c["name"] == "startup")
    assert startup["status"] == "fail"
    assert "TP 4 × PP 1" in startup["reason"]


def test_size_from_a_layout_that_does_not_load(capsys):
    for target in (["--concurrency", "4"], ["--gpu-tokens", "100K"]):
        code, out, err = run(capsys, "size", MIXTRAL, "--gpu", "L40S", "--vllm-version", "0.19.0", *target,
                             "--format", "json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["gpu_memory_utilization"] is None
        assert doc["utilization_note"].startswith("the model does not load at this TP x PP even at utilization 1.0")
        assert doc["smallest_parallel"]["tensor_parallel_size"] == 4
        assert doc["smallest_parallel"]["pipeline_parallel_size"] == 1
    code, out, err = run(capsys, "size", QWEN14, "--gpu", "A10", "--vllm-version", "0.19.0", "--concurrency", "1")
    assert code == 0, err
    assert "smallest TP x PP at the layout's utilization: TP 2 x PP 1" in out


def test_sglang_size_names_the_tp_pp_that_holds_it(capsys):
    # No --mem-fraction-static holds the target at TP 1: size has no answer (exit 2, issue 34), and its refusal names
    # the smallest TP x PP that holds it (issue 35).
    code, out, err = run(capsys, "size", MIXTRAL, "--engine", "sglang", "--gpu", "L40S", "--concurrency", "4",
                         "--format", "json")
    assert code == 2, err
    assert "TP 4 x PP 1 holds it" in err
    doc = json.loads(out)  # the answer's document, refusal and all
    assert doc["mem_fraction_static"] is None
    assert doc["smallest_parallel"]["tensor_parallel_size"] == 4


def test_sglang_plan_names_it_too(capsys):
    code, out, err = run(capsys, "plan", MIXTRAL, "--engine", "sglang", "--gpu", "L40S")
    assert code == 2
    # Issue 31: 87.00 GiB of weights against 44.02 GiB free is SGLang running out of memory loading them (its
    # KV-sizing refusal would name a fraction over 1); the advice follows it on the same line.
    assert "exceed the free GPU memory before the load" in err
    assert "is TP 4 × PP 1" in err


def test_another_refusal_gets_no_parallelism_advice(capsys):
    # A budget the flag gives (no prediction) too small for one request: more GPUs would not change the flag.
    code, out, err = run(capsys, "plan", QWEN14, "--kv-cache-memory", "1MiB", "--vllm-version", "0.19.0")
    assert code == 2
    assert "No available memory" in err or "To serve at least one request" in err
    assert "kvcalc:" not in err.split("error:", 1)[1]
