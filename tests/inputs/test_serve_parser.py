"""A serve line read as the selected release's own `vllm serve` parser reads it (issues 21 and 22). Each expected
behaviour cites the release file that decides it (vocab/releases/vllm_flags.py carries the per-release table)."""

import json
import os
import shutil

import pytest

from conftest import EXAMPLES_DIR, run
from inputs.test_serve import fake_cache

CONFIGS = os.path.join(EXAMPLES_DIR, "configs")
KIMI = "moonshotai/Kimi-K2.5"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    fake_cache(root, KIMI, os.path.join(CONFIGS, "kimi-k2.5.json"))
    fake_cache(root, "org/gemma", os.path.join(CONFIGS, "gemma-3-27b.json"))
    fake_cache(root, "org/kimi-eagle3", os.path.join(CONFIGS, "kimi-k2.5-eagle3.json"))
    # refs/v2 -> another snapshot holding the target's own config (not a drafter's).
    base = root / "models--org--kimi-eagle3"
    (base / "refs" / "v2").write_text("feed" * 10)
    (base / "snapshots" / ("feed" * 10)).mkdir()
    shutil.copy(os.path.join(CONFIGS, "kimi-k2.5.json"), base / "snapshots" / ("feed" * 10) / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def plan(capsys, *words, version="0.33.0"):
    code, out, err = run(capsys, "plan", "--vllm-version", version, "--format", "json", "--", "vllm", "serve", *words)
    return code, (json.loads(out) if out.strip() else None), err


@pytest.mark.parametrize("words", [
    ["-O3"], ["-O", "2"], ["--enable-sleep-mode"], ["--prefix-caching-hash-algo", "sha256"],
    ["--mm-processor-cache-gb", "0"], ["--structured-outputs-config", '{"backend": "xgrammar"}'],
    ["--dtype", "auto"], ["--no-trust-remote-code"], ["--enable-prefix"],  # an abbreviation argparse accepts
])
def test_real_flags_vllm_0_33_accepts_are_accepted(capsys, cache, words):
    code, doc, err = plan(capsys, KIMI, *words)
    assert code == 0, err


def test_a_flag_is_known_per_release(capsys, cache):
    # --calculate-kv-scales: in every parser up to 0.27.1, gone in 0.28.0 (issue 21's list); --swap-space up to 0.17.1.
    code, doc, err = plan(capsys, KIMI, "--calculate-kv-scales", version="0.27.1")
    assert code == 0, err
    code, doc, err = plan(capsys, KIMI, "--calculate-kv-scales", version="0.28.0")
    assert code == 2
    assert "--calculate-kv-scales: expected an option of vLLM 0.28.0's `vllm serve`" in err
    # --max-seq-len-to-capture left vLLM in 0.11.0 (0.10.2 engine/arg_utils.py:532): refused with the nearest.
    code, doc, err = plan(capsys, KIMI, "--max-seq-len-to-capture", "8192", version="0.19.1")
    assert code == 2
    assert "--max-seq-len-to-capture: expected an option of vLLM 0.19.1's `vllm serve`" in err
    code, doc, err = plan(capsys, KIMI, "--max-num-seq", "8", "--max-model-lenn", "8", version="0.19.1")
    assert "did you mean --max-model-len?" in err


def test_underscores_and_auto_as_vllm_reads_them(capsys, cache):
    # utils/argparse_utils.py (0.14.0:231-246): --max_model_len is --max-model-len; "auto" (human_readable_int_or_auto)
    code, doc, err = plan(capsys, KIMI, "--max_model_len", "32k", "--kv-cache-memory-bytes", "40G")
    assert code == 0, err
    assert doc["cache"]["max_model_len"] == 32000
    code, doc, err = plan(capsys, KIMI, "--max-model-len", "auto")
    assert code == 0, err
    assert "vLLM lowers max_model_len" in err


def test_human_readable_int_goes_through_a_float_as_vllm_does(capsys, cache):
    # int(float("1.001") * 1000) = int(1000.9999999999999) = 1000: vLLM's own result (kvcalc computed 1001).
    code, doc, err = plan(capsys, KIMI, "--max-model-len", "1.001k")
    assert code == 0, err
    assert doc["cache"]["max_model_len"] == 1000
    code, doc, err = plan(capsys, KIMI, "--max-model-len", "128 K")  # a space: one token vLLM's regex refuses
    assert code == 2


@pytest.mark.parametrize("words, needle", [
    # BooleanOptionalAction refuses an explicit value (argparse.py:2037-2041): both were silently misread.
    (["--enable-prefix-caching=false"], "ignored explicit argument 'false'"),
    (["--disable-hybrid-kv-cache-manager=false"], "ignored explicit argument 'false'"),
    # --model beside a positional: vLLM moves --model to the positional place; the other one is left over.
    (["--model", "org/gemma"], "one positional argument, the model"),
    # Two --config files: utils/argparse_utils.py raises "More than one config file specified!".
    (["--config", "a.yaml", "--config", "b.yaml"], "More than one config file specified"),
    (["--max-num-seqs"], "a value"),
])
def test_what_vllm_refuses_is_refused(capsys, cache, words, needle):
    code, doc, err = plan(capsys, KIMI, *words)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_a_positional_model_wins_over_the_config_files(capsys, cache, tmp_path):
    # `vllm serve A --config f.yaml` with `model: B`: the serve command sets args.model from the positional.
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("model: org/gemma\ntensor_parallel_size: 2\n")
    code, doc, err = plan(capsys, KIMI, "--config", str(cfg))
    assert code == 0, err
    assert doc["model"]["name"].startswith("Kimi")
    assert doc["parallel"]["tensor_parallel_size"] == 2


def test_a_repeated_json_option_replaces_the_earlier_one_whole(capsys, cache):
    # argparse keeps the last value: the first config's block_size must not survive (it did: 32,768 -> 8,192).
    first = '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":' \
            '{"cpu_bytes_to_use":68719476736,"block_size":256}}'
    last = '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":' \
           '{"cpu_bytes_to_use":68719476736}}'
    code, doc, err = plan(capsys, KIMI, "-tp", "4", "--kv-transfer-config", first, "--kv-transfer-config", last)
    assert code == 0, err
    # the GPU block (FLASH_ATTN_MLA's 16 on an H100-class GPU), not the first config's 256
    assert doc["offload"]["block_size"] == 16


def test_the_offloading_size_flag_wins_over_a_transfer_budget(capsys, cache):
    # config/vllm.py _post_init_kv_transfer_config (0.33.0:1167-1175): kv_connector_extra_config.update(
    # {"cpu_bytes_to_use": kv_offloading_size * (1 << 30)}): 8 GiB, not the config's 1 GB.
    cfg = '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":' \
          '{"cpu_bytes_to_use":1000000000}}'
    code, doc, err = plan(capsys, KIMI, "--kv-transfer-config", cfg, "--kv-offloading-size", "8")
    assert code == 0, err
    assert doc["offload"]["cpu_bytes_to_use"] == 8 << 30


@pytest.mark.parametrize("cfg, needle", [
    ('{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}', "cpu_bytes_to_use must be specified"),
    ('{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":'
     '{"cpu_bytes_to_use":"64G"}}', "int() raises on it"),
])
def test_transfer_configs_vllm_stops_at(capsys, cache, cfg, needle):
    code, doc, err = plan(capsys, KIMI, "--kv-transfer-config", cfg)
    assert code == 2
    assert needle in err


def test_the_drafters_own_revision(capsys, cache):
    # --speculative-config's revision names the drafter's snapshot (refs/v2 holds a different config here).
    spec = '{"method":"eagle3","model":"org/kimi-eagle3","num_speculative_tokens":3,"revision":"v2"}'
    code, doc, err = plan(capsys, KIMI, "--speculative-config", spec)
    assert code == 2  # v2's config is the target's own (not an EAGLE3 drafter): proof that v2 was read
    spec = '{"method":"eagle3","model":"org/kimi-eagle3","num_speculative_tokens":3}'
    code, doc, err = plan(capsys, KIMI, "--speculative-config", spec)
    assert code == 0, err


def test_ngram_speculation_has_no_kv_layers(capsys, cache):
    code, doc, err = plan(capsys, KIMI, "--speculative-config", '{"method":"ngram","num_speculative_tokens":4}')
    assert code == 0, err


@pytest.mark.parametrize("line, engine", [
    ("trtllm-serve org/gemma", "TensorRT-LLM"),
])
def test_another_servers_line_is_named(capsys, cache, line, engine):
    code, out, err = run(capsys, "plan", "--serve", line)
    assert code == 2
    assert f"starts {engine}, not vLLM" in err


def test_an_sglang_line_is_planned_by_sglangs_rules(capsys, cache):
    # issue 24: SGLang's server line is read with SGLang's own flags (inputs/serve/sglang.py), not refused.
    line = "python -m sglang.launch_server --model-path org/gemma --tp 2"
    code, out, err = run(capsys, "plan", "--serve", line)
    assert code == 2
    assert "SGLang's budget starts from the GPU" in err
    code, out, err = run(capsys, "plan", "--format", "json", "--gpu", "H100", "--weights-bytes", "10G", "--serve", line)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["engine"] == "sglang"
    assert doc["parallel"]["tensor_parallel_size"] == 2


def test_crlf_continuations_in_a_serve_string(capsys, cache):
    code, out, err = run(capsys, "plan", "--vllm-version", "0.33.0", "--format", "json", "--serve",
                         f"vllm serve {KIMI} \\\r\n  -tp 4\r\n")
    assert code == 0, err
    assert json.loads(out)["parallel"]["tensor_parallel_size"] == 4
