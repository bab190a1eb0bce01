"""Issue 34: vLLM's and SGLang's config validation that the startup gate passed. Each refusal is the engine's own
message (engines/vllm/rules.py, engines/sglang/plan.py cite the source lines)."""

import json
import os
import shutil

import pytest

from conftest import ROOT_DIR, run

HF = os.path.join(ROOT_DIR, "tests", "fixtures", "hf")
MODELS = os.path.join(ROOT_DIR, "tests", "fixtures", "models")


@pytest.mark.parametrize("version", ["0.14.0", "0.19.1", "0.33.0"])
def test_tp_that_does_not_divide_the_attention_heads_is_refused(capsys, version):
    # Qwen2-7B: 28 attention heads, 4 KV heads. TP 8 replicates the KV heads (8 % 4 == 0), but 28 % 8 != 0: vLLM's
    # verify_with_parallel_config stops (config/model.py 0.33.0:1557-1563). TP 4 divides both.
    config = os.path.join(HF, "qwen2-7b.json")
    code, out, err = run(capsys, "plan", config, "--tp", "8", "--vllm-version", version, "--cpu-bytes", "8GiB",
                         "--check", "--format", "json")
    assert code == 1
    startup = {c["name"]: c for c in json.loads(out)["checks"]}["startup"]
    assert startup["status"] == "fail"
    assert "Total number of attention heads (28) must be divisible by tensor parallel size (8)." in startup["reason"]
    code, out, err = run(capsys, "plan", config, "--tp", "4", "--vllm-version", version)
    assert code == 0, err


def test_max_num_seqs_above_max_num_batched_tokens_is_refused(capsys):
    # config/scheduler.py verify_max_model_len (0.33.0:331-336): both given, 512 sequences in a 256-token step.
    # With max_num_seqs left to vLLM's default, vLLM lowers it to max_num_batched_tokens (engine/arg_utils.py
    # 0.33.0:3232-3234): no refusal.
    config = os.path.join(MODELS, "llama-3.1-8b.json")
    code, out, err = run(capsys, "plan", config, "--max-num-seqs", "512", "--max-num-batched-tokens", "256",
                         "--max-model-len", "4096")
    assert code == 2
    assert "max_num_batched_tokens (256) must be greater than or equal to max_num_seqs (512)." in err
    code, out, err = run(capsys, "plan", config, "--max-num-seqs", "256", "--max-num-batched-tokens", "256",
                         "--max-model-len", "4096")
    assert code == 0, err
    code, out, err = run(capsys, "plan", config, "--max-num-batched-tokens", "256", "--max-model-len", "4096")
    assert code == 0, err


def test_sglang_context_length_past_the_derived_one_is_refused(capsys, tmp_path):
    # srt/configs/model_config.py:1290-1314 @0.5.23: Llama-3.1-8B's derived context length is
    # max_position_embeddings 131,072 (no rope_scaling in the fixture): --context-length 200,000 is a ValueError.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(MODELS, "llama-3.1-8b.json"), model / "config.json")
    line = f"python -m sglang.launch_server --model-path {model} --context-length"
    code, out, err = run(capsys, "plan", "--serve", f"{line} 200000", "--gpu", "H100")
    assert code == 2
    assert ("User-specified context_length (200000) is greater than the derived context_length (131072)"
            in err)
    assert "vLLM" not in err
    code, out, err = run(capsys, "plan", "--serve", f"{line} 131072", "--gpu", "H100")
    assert code == 0, err


def test_chunked_prefill_off_with_a_step_shorter_than_the_context_is_refused(capsys, tmp_path):
    # config/scheduler.py verify_max_model_len (0.33.0:317-329): without chunked prefill a 32,768-token prompt must
    # fit one 8,192-token step. Read from a serve line's --no-enable-chunked-prefill as from kvcalc's flag.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(MODELS, "llama-3.1-8b.json"), model / "config.json")
    line = f"vllm serve {model} --no-enable-chunked-prefill --max-num-batched-tokens 8192 --max-model-len"
    code, out, err = run(capsys, "plan", "--serve", f"{line} 32768", "--vllm-version", "0.33.0")
    assert code == 2
    assert "max_num_batched_tokens (8192) is smaller than max_model_len (32768)." in err
    code, out, err = run(capsys, "plan", "--serve", f"{line} 8192", "--vllm-version", "0.33.0")
    assert code == 0, err
    code, out, err = run(capsys, "plan", str(model / "config.json"), "--no-enable-chunked-prefill",
                         "--max-num-batched-tokens", "8192", "--max-model-len", "32768", "--cpu-bytes", "8GiB",
                         "--vllm-version", "0.33.0", "--check", "--format", "json")
    assert code == 1
    assert {c["name"]: c for c in json.loads(out)["checks"]}["startup"]["status"] == "fail"


def test_max_model_len_past_the_derived_maximum_is_refused(capsys, tmp_path):
    # config/model.py _get_and_verify_max_len (0.33.0:2657-2683): Llama-3.1-8B's max_position_embeddings 131,072
    # (no rope parameters in the fixture) is the ceiling; VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in the server's
    # environment lets it pass (vLLM warns).
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(MODELS, "llama-3.1-8b.json"), model / "config.json")
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve {model} --max-model-len 131073")
    assert code == 2
    assert ("User-specified max_model_len (131073) is greater than the derived max_model_len "
            "(max_position_embeddings=131072 or model_max_length=None in model's config.json)") in err
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in err
    code, out, err = run(capsys, "plan", "--serve", f"vllm serve {model} --max-model-len 131072")
    assert code == 0, err
    code, out, err = run(capsys, "plan", "--serve",
                         f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {model} --max-model-len 200000")
    assert code == 0, err


def test_a_rope_factor_scales_the_derived_maximum(capsys, tmp_path):
    # A linear rope factor 4 over max_position_embeddings 4,096: vLLM's derived maximum is 4,096 x 4.0 = 16384.0
    # (config/model.py 0.33.0:2599-2634 multiplies by the float factor).
    with open(os.path.join(MODELS, "llama-3.1-8b.json")) as fh:
        config = json.load(fh)
    config.update(max_position_embeddings=4096, rope_scaling={"rope_type": "linear", "factor": 4.0})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run(capsys, "plan", str(path), "--max-model-len", "16384")
    assert code == 0, err
    code, out, err = run(capsys, "plan", str(path), "--max-model-len", "16385")
    assert code == 2
    assert "(max_position_embeddings=16384.0 or model_max_length=None" in err
