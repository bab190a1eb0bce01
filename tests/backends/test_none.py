"""No KV connector (issue 19): no CPU budget, no connector and no LMCache key is vLLM without a connector, whose
hybrid KV cache manager is on (config/vllm.py: only a connector, KV events or chunked-local + EAGLE turn it off)."""

import json
import os
import shutil

import pytest

from conftest import run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import KvcalcError, StartupRefusal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF = os.path.join(ROOT, "tests", "fixtures", "hf")
GEMMA12 = os.path.join(HF, "gemma-3-12b-it.json")
GIB = 1 << 30
# 47.72 GiB, as the real 0.19.0 start logged it (tests/fixtures/logs/gemma-3-12b-it-h100-tp1-v0.19.0-debug-excerpt.log)
LOGGED = int(4772 * GIB // 100)


def _gemma(*flags):
    return ["plan", GEMMA12, "--vllm-version", "0.19.0", "--max-model-len", "8192", "--no-enable-prefix-caching",
            "--kv-cache-memory", str(LOGGED), *flags, "--format", "json"]


def test_gemma_3_12b_without_a_connector_runs_the_hybrid_manager(capsys):
    # Gemma-3-12B: 40 sliding + 8 full layers, 8 KV heads of 256, bf16: one layer's 16-token page is
    # 16 x 8 x 256 x 2 (K, V) x 2 B = 131,072 B. Hybrid manager on: 6 groups of 8 layers (5 sliding, 1 full) share
    # 8 tensors, so blocks = 51,238,959,841 // 131,072 // 8 = 48,865; vLLM logs 48,865 // 6 groups x 16 =
    # 130,304 tokens, the real log's "GPU KV cache size: 130,304 tokens".
    code, out, err = run(capsys, *_gemma())
    assert code == 0, err
    doc = json.loads(out)
    assert LOGGED == 51_238_959_841
    assert doc["cache"]["hybrid_kv_cache_manager"] is True
    assert doc["gpu"]["num_blocks"] == 51_238_959_841 // 131_072 // 8 == 48_865
    assert len(doc["gpu"]["groups"]) == 6
    assert doc["gpu"]["kv_cache_size_tokens"] == 48_865 // 6 * 16 == 130_304
    assert doc["offload"] is None
    assert doc["offload_reason"].startswith("no KV connector")
    assert "error" not in doc


def test_gemma_3_12b_with_the_connector_named_folds_the_sliding_layers(capsys):
    # With --offload-backend native (the connector, no budget) 0.19.0 turns the hybrid manager off: all 48 layers are
    # full attention, 48 x 131,072 = 6,291,456 B a block, 51,238,959,841 // 6,291,456 = 8,144 blocks (the issue's
    # 8,143 - 8,145 across the 0.01 GiB rounding).
    code, out, err = run(capsys, *_gemma("--offload-backend", "native"))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["cache"]["hybrid_kv_cache_manager"] is False
    assert doc["gpu"]["num_blocks"] == 51_238_959_841 // (48 * 131_072) == 8_144
    assert doc["offload"]["cpu_bytes_to_use"] is None


def test_falcon_h1_serve_line_without_a_connector_is_not_refused(capsys, tmp_path):
    # The command: `vllm serve <Falcon-H1 dir> --kv-cache-memory-bytes 20G` on 0.22.1 names no connector;
    # vLLM runs the hybrid manager and starts. Naming the OffloadingConnector (no budget) plans the connector.
    model = tmp_path / "falcon-h1"
    model.mkdir()
    shutil.copy(os.path.join(HF, "falcon-h1-7b.json"), model / "config.json")
    code, out, err = run(capsys, "plan", "--vllm-version", "0.22.1", "--format", "json", "--", "vllm", "serve",
                         str(model), "--kv-cache-memory-bytes", "20G")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["offload"] is None
    assert doc["cache"]["hybrid_kv_cache_manager"] is True
    assert "refuses" not in err
    transfer = json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both"})
    code, out, err = run(capsys, "plan", "--vllm-version", "0.22.1", "--format", "json", "--", "vllm", "serve",
                         str(model), "--kv-cache-memory-bytes", "20G", "--kv-transfer-config", transfer)
    # ... but with no budget vLLM stops at start-up (issue 22): CPUOffloadingSpec raises on a falsy
    # cpu_bytes_to_use (v1/kv_offload/cpu/spec.py:25-29 @0.22.0).
    assert code == 2
    assert "cpu_bytes_to_use must be specified in kv_connector_extra_config" in err


BASE = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128, "max_position_embeddings": 4096}}


@pytest.mark.parametrize("offload, backend", [
    ({}, "none"),
    ({"cpu_bytes_to_use": "1GiB"}, "native"),
    ({"kv_offloading_size": 1}, "native"),
    ({"block_size": 16}, "native"),  # a connector setting configures the connector
    ({"backend": "native"}, "native"),
    ({"backend": "none"}, "none"),
])
def test_which_connector_a_layout_means(offload, backend):
    lay = layout_from_dict({**BASE, "offload": offload} if offload else BASE)
    assert lay.offload.backend == backend


def test_an_offload_setting_with_backend_none_is_refused():
    with pytest.raises(KvcalcError, match=r"offload.cpu_bytes_to_use: expected no offloading setting with "
                                          r"offload.backend none"):
        layout_from_dict({**BASE, "offload": {"backend": "none", "cpu_bytes_to_use": "1GiB"}})


def test_forcing_the_hybrid_manager_on_needs_no_connector_support():
    # 0.19.1 refuses HMA forced on with the OffloadingConnector (it supports HMA from 0.21.0); without a connector
    # vLLM accepts it.
    sliding = {"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128, "sliding_window": 1024,
                         "layer_pattern": ["sliding_attention", "full_attention"],
                         "max_position_embeddings": 8192},
               "cache": {"hybrid_kv_cache_manager": "on", "kv_cache_memory": "1GiB"}, "vllm": {"version": "0.19.1"}}
    assert plan(layout_from_dict(sliding)).hma_enabled is True
    with pytest.raises(StartupRefusal, match="OffloadingConnector does not support it before 0.21.0"):
        plan(layout_from_dict({**sliding, "offload": {"cpu_bytes_to_use": "1GiB"}}))


def test_forcing_it_on_where_vllm_disables_it_is_vllms_refusal():
    # Chunked-local attention with an EAGLE drafter: vLLM's need_disable_hybrid_kv_cache_manager is set, and
    # --no-disable-hybrid-kv-cache-manager raises "Hybrid KV cache manager was explicitly enabled but is not
    # supported in this configuration." (config/vllm.py:1246-1254 @0.19.0).
    lay = {"model": {"num_layers": 4, "num_kv_heads": 8, "head_size": 128, "attention_chunk_size": 8192,
                     "layer_pattern": ["chunked_attention", "full_attention"], "max_position_embeddings": 8192,
                     "draft": {"method": "eagle", "num_kv_heads": 8, "head_size": 128}},
           "cache": {"hybrid_kv_cache_manager": "on", "kv_cache_memory": "1GiB"}, "vllm": {"version": "0.22.1"}}
    with pytest.raises(StartupRefusal, match="Hybrid KV cache manager was explicitly enabled but is not supported"):
        plan(layout_from_dict(lay))
    auto = {**lay, "cache": {"kv_cache_memory": "1GiB"}}
    p = plan(layout_from_dict(auto))
    assert p.hma_enabled is False
    assert "EAGLE" in p.hma_reason


def test_check_metrics_without_a_connector_plans_the_one_the_scrape_shows(capsys, tmp_path):
    # A layout with no budget, a 0.33.0 scrape with vllm:kv_offload_config_info: the server ran the connector.
    import yaml

    with open(os.path.join(ROOT, "examples", "kimi-k2.5-eagle3-tp4.yaml")) as fh:
        data = yaml.safe_load(fh)
    del data["offload"]
    path = tmp_path / "kimi.yaml"
    path.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "check", str(path), "--metrics",
                         os.path.join(ROOT, "tests", "fixtures", "metrics", "kimi-k2.5-eagle3-tp4-v0.33.0.prom"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    assert "planned with vLLM's offloading connector" in err
