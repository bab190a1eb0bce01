"""Real vLLM start-up logs held out of every fit (issue 30). First 0.25.1 logs on an NVIDIA GB10 (DGX Spark, the other
campaigns' subset): sostrowsk/dgx-spark-local-llm @a30decd7f6de661dac6971b785159d92b2d3d2dd, excerpts in
tests/fixtures/logs/gb10/ (headers name each file). The checkpoints are quantized (NVFP4, AWQ INT4); their
architecture is the base model's public config.json, and with the KV cache dtype auto the quantization does not
change the KV bytes. Every expected number below is the one the log prints."""

import json
import os

from kvcalc.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF = os.path.join(ROOT, "tests", "fixtures", "hf")
LOGS = os.path.join(ROOT, "tests", "fixtures", "logs", "gb10")
GEMMA = os.path.join(HF, "gemma-4-26b-a4b.json")
QWEN = os.path.join(HF, "qwen3.6-35b-a3b-mtp.json")


def rows(capsys, argv):
    code = main(argv)
    doc = json.loads(capsys.readouterr().out)
    return code, doc, {r["quantity"]: r for r in doc["rows"]}


def test_gemma4_26b_a4b_nvfp4_on_gb10_logs_3912140_tokens_at_84_68_gib(capsys):
    log = os.path.join(LOGS, "gemma-4-26b-a4b-nvfp4-gb10-tp1-v0.25.1-excerpt.log")
    code, doc, by = rows(capsys, ["check", GEMMA, "--log", log, "--gpu", "gb10", "--format", "json"])
    assert code == 0
    assert doc["match"] is True
    assert by["GPU KV cache size (tokens)"]["predicted"] == "3,912,140"  # logged "GPU KV cache size: 3,912,140"
    assert by["maximum concurrency (262,144 tokens)"]["predicted"] == "14.92x"  # logged "... request: 14.92x"
    assert by["attention backend"]["predicted"].startswith("TRITON_ATTN")  # logged TRITON_ATTN backend


def test_gemma4_26b_a4b_awq_int4_on_gb10_logs_3875400_tokens_at_83_89_gib(capsys):
    # The same model at fp16 (the log's dtype=torch.float16): 2 bytes per element as bf16.
    log = os.path.join(LOGS, "gemma-4-26b-a4b-awq-int4-gb10-tp1-v0.25.1-excerpt.log")
    code, doc, by = rows(capsys, ["check", GEMMA, "--log", log, "--gpu", "gb10", "--format", "json"])
    assert code == 0
    assert doc["match"] is True
    assert by["GPU KV cache size (tokens)"]["predicted"] == "3,875,400"  # logged "GPU KV cache size: 3,875,400"
    assert by["maximum concurrency (262,144 tokens)"]["predicted"] == "14.78x"  # logged "... request: 14.78x"


QWEN_LOG = os.path.join(LOGS, "qwen3.6-35b-a3b-nvfp4-mtp-gb10-tp1-v0.25.1-excerpt.log")


def test_qwen3_6_nvfp4_with_mtp_takes_the_logged_three_speculative_tokens(capsys):
    # The log's non-default args: 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}. Three tokens
    # add three conv rows to each Gated-DeltaNet state (conv_kernel - 1 + num_spec, mamba_utils.py @0.25.1:213-227),
    # which moves vLLM's hybrid attention block to the logged "Setting attention block size to 1072 tokens"
    # (one token would give a smaller page: 1056).
    code, doc, by = rows(capsys, ["check", QWEN, "--log", QWEN_LOG, "--gpu", "gb10", "--speculative", "mtp",
                                  "--format", "json"])
    assert code == 0
    assert doc["match"] is True
    assert by["attention block size (hybrid alignment)"]["predicted"] == "1072"  # logged block size 1072
    assert by["GPU KV cache size (tokens)"]["predicted"] == "3,366,051"  # logged "GPU KV cache size: 3,366,051"
    assert by["maximum concurrency (262,144 tokens)"]["predicted"] == "12.84x"  # logged "... request: 12.84x"
    assert any("num_speculative_tokens 3" in n for n in doc["notes"])  # the note names what the log set


def test_qwen3_6_nvfp4_with_mtp_from_its_serve_line(capsys):
    argv = ["check", "--log", QWEN_LOG, "--gpu", "gb10", "--format", "json", "--", "vllm", "serve", QWEN,
            "--max-model-len", "262144", "--gpu-memory-utilization", "0.85", "--max-num-seqs", "32",
            "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}']
    code, doc, by = rows(capsys, argv)
    assert code == 0
    assert doc["match"] is True
    assert by["GPU KV cache size (tokens)"]["predicted"] == "3,366,051"  # logged "GPU KV cache size: 3,366,051"


def test_a_logged_mtp_drafter_in_the_args_dict_is_refused_without_a_draft_layout(capsys):
    # The drafter's KV layers count in the logged numbers: a layout without one must not be compared (exit 2, one
    # line naming the log and the drafter), whether the log gives the speculative config as the non-default args'
    # dict (this log) or as the engine line's SpeculativeConfig(...) text.
    assert main(["check", QWEN, "--log", QWEN_LOG, "--gpu", "gb10"]) == 2
    err = capsys.readouterr().err
    assert "mtp drafter" in err
    assert "qwen3.6-35b-a3b-nvfp4-mtp-gb10" in err


def test_qwen3_vl_30b_a3b_fp8_on_rtx_6000_ada_with_a_kv_connector_logs_111376_tokens(capsys):
    # ai-dynamo/dynamo vllm.txt @386a9ac (vLLM 0.15.1, eager, DynamoConnector): 10.2 GiB, and the KVBM worker's
    # "num_device_blocks=6961, page_size=16" = 111,376 tokens; the connector turns the hybrid manager off.
    cfg = os.path.join(HF, "qwen3-vl-30b-a3b.json")
    log = os.path.join(ROOT, "tests", "fixtures", "logs", "formats",
                       "qwen3-vl-30b-a3b-fp8-rtx6000ada-tp1-eager-kvconnector-v0.15.1-excerpt.log")
    code, doc, by = rows(capsys, ["check", cfg, "--log", log, "--gpu", "rtx6000-ada", "--format", "json"])
    assert code == 0
    assert doc["match"] is True
    assert by["GPU KV cache size (tokens)"]["predicted"] == "111,376"  # logged "GPU KV cache size: 111,376"
    assert by["maximum concurrency (16,384 tokens)"]["predicted"] == "6.80x"  # logged "... request: 6.80x"


def test_qwen3_6_27b_fp8_on_h100_eager_logs_block_784_and_292522_tokens(capsys):
    # phivan3008/meeting-translator vllm_serve.log @d57f674 (vLLM 0.27.1, H100, eager, utilization 0.88): 41.03 GiB,
    # "Setting attention block size to 784 tokens", 292,522 tokens. The layout is nvidia/Qwen3.6-27B-NVFP4's config
    # (the same architecture; the KV bytes do not depend on how the weights are quantized).
    cfg = os.path.join(HF, "qwen3.6-27b-nvfp4.json")
    log = os.path.join(ROOT, "tests", "fixtures", "logs", "formats", "qwen3.6-27b-fp8-h100-tp1-eager-v0.27.1-excerpt.log")
    code, doc, by = rows(capsys, ["check", cfg, "--log", log, "--gpu", "h100", "--format", "json"])
    assert code == 0
    assert doc["match"] is True
    assert by["attention block size (hybrid alignment)"]["predicted"] == "784"  # logged block size 784
    assert by["GPU KV cache size (tokens)"]["predicted"] == "292,522"  # logged "GPU KV cache size: 292,522"
