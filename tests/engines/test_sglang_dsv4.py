"""DeepSeek-V4 on SGLang 0.5.23 (engines/sglang/dsv4.py), held out from the 141 executed vectors: the released
DeepSeek-V4-Flash-0731 and DeepSeek-V4-Pro configs (tests/fixtures/dsv4/, sources in its SOURCES.md: Flash's ratio-0
sliding-only layers, Pro's 61 layers, which the executed vectors' synthetic config has neither of) through SGLang
0.5.23's own code on CPU with the device queries mocked: ServerArgs resolution, then KVCacheConfigurator's budget and
DSV4PoolConfigurator.calculate_pool_sizes (the research harness's sgrun.py pools23:size_pools, wheels of
sglang==0.5.23). The free memory before the load and the weights per rank are the inputs given to both; every
other number below is what SGLang's code printed. Refusals are kvcalc's by name where it executed nothing."""

from __future__ import annotations

import os

import pytest

from kvcalc import load
from kvcalc.engines.sglang import build_stage
from kvcalc.pipeline import plan
from kvcalc.vocab.errors import StartupRefusal, UnsupportedError
from kvcalc.vocab.releases.sglang import behaviour_for

HERE = os.path.dirname(os.path.abspath(__file__))
DSV4 = os.path.join(HERE, "..", "fixtures", "dsv4")
FLASH = os.path.join(DSV4, "DeepSeek-V4-Flash-0731.config.json")
PRO = os.path.join(DSV4, "DeepSeek-V4-Pro.config.json")
SYNTH = os.path.join(HERE, "..", "fixtures", "sglang", "models", "deepseek-v4-flash")

# (id, config, gpu, TP, extra flags, free MiB before the load, weights MiB a rank) -> SGLang 0.5.23's own figures:
# (mem_fraction_static, budget bytes, full, swa, c4, c128, c4 state, c128 state, max_running_requests)
EXECUTED = [
    ("flash-h200", FLASH, "H200", 8, [], 142600, 19070,
     (0.897, 114129318707, 15721216, 1572096, 3930304, 122822, 49128, 32896, 256)),
    ("flash-b200", FLASH, "B200", 8, [], 182000, 19070,
     (0.852, 142600044544, 19738624, 1973760, 4934656, 154208, 61680, 32896, 256)),
    ("flash-mrr128", FLASH, "H200", 8, ["--max-running-requests", "128"], 142600, 19070,
     (0.902, 114876953395, 16016128, 1601536, 4004032, 125126, 50048, 16512, 128)),
    ("flash-swa0.3", FLASH, "H200", 8, ["--swa-full-tokens-ratio", "0.3"], 142600, 19070,
     (0.897, 114129318707, 8276224, 2482688, 2069056, 64658, 77584, 32896, 256)),
    ("flash-swa0.00002", FLASH, "H200", 8, ["--swa-full-tokens-ratio", "0.00002"], 142600, 19070,
     (0.897, 114129318707, 28568320, 512, 7142080, 223190, 16, 32896, 256)),
    ("pro-h200", PRO, "H200", 8, [], 142600, 110000,
     (0.897, 18782303027, 1440512, 143872, 360128, 11254, 4496, 32896, 256)),
]


def _layout(config, gpu, tp, extra, free_mib, weights_mib, version="0.5.23"):
    line = f"python -m sglang.launch_server --model-path {config} --tp-size {tp} " + " ".join(extra)
    return load(serve=line, flags={"sglang_version": version, "gpu": gpu, "gpu_free_memory": f"{free_mib}MiB",
                                   "weights_bytes": f"{weights_mib}MiB"})


@pytest.mark.parametrize("case", EXECUTED, ids=lambda c: c[0])
def test_dsv4_pools_match_sglangs_own_configurator(case):
    _, config, gpu, tp, extra, free_mib, weights_mib, want = case
    mfs, budget, full, swa, c4, c128, c4_state, c128_state, reqs = want
    g = build_stage(_layout(config, gpu, tp, extra, free_mib, weights_mib), behaviour_for("0.5.23")).gpu
    assert g.configurator == "DSV4PoolConfigurator"
    assert g.mem_fraction_static == mfs, "mem_fraction_static"
    assert g.budget_bytes == budget, "the budget"
    assert g.max_total_num_tokens == full, "full tokens"
    assert g.swa_max_total_num_tokens == swa, "SWA tokens"
    d = g.dsv4
    assert (d.c4_max_total_num_tokens, d.c128_max_total_num_tokens) == (c4, c128), "c4 / c128 tokens"
    assert (d.c4_state_pool_size, d.c128_state_pool_size) == (c4_state, c128_state), "compress state pools"
    assert g.max_running_requests == reqs, "max_running_requests"


def test_flash_coefficient_is_sglangs_logged_one():
    # SGLang logs 'DSV4 memory calculation: ... bytes_per_full_token=7086.75, ... c128_state_fixed=2.53 GB' for
    # Flash-0731 at TP 8 on H200 (256 requests): 0.1 x (585 x 43 + 8 / 256 x 10,240 x 21) + 21 x (585 / 4 + 132 /
    # 4) + 20 x 864 / 128 = 7,086.75; c128 state ceil((257 x 128 + 129) / 128) x 128 rows x 4,096 B x 20 layers.
    g = build_stage(_layout(FLASH, "H200", 8, [], 142600, 19070), behaviour_for("0.5.23")).gpu
    assert g.dsv4.bytes_per_full_token == 7086.75, "bytes a full token"
    assert g.dsv4.fixed_bytes == (-(-(257 * 128 + 129) // 128) * 128) * 4096 * 20, "the c128 state bytes"


def test_dsv4_before_0523_is_refused_by_name():
    with pytest.raises(UnsupportedError, match="SGLang 0.5.22's DeepSeek-V4 pools"):
        plan(_layout(SYNTH, "H200", 8, [], 142600, 19070, version="0.5.22"))


@pytest.mark.parametrize("extra, named", [
    (["--pp-size", "2"], "PP"), (["--enable-hierarchical-cache"], "HiCache"),
    (["--max-total-tokens", "100000"], "--max-total-tokens"), (["--page-size", "128"], "--page-size 128"),
    (["--kv-cache-dtype", "bf16"], "--kv-cache-dtype")])
def test_unexecuted_dsv4_deployments_are_refused_by_name(extra, named):
    with pytest.raises(UnsupportedError, match="DeepSeek-V4 on SGLang with") as e:
        plan(_layout(SYNTH, "H200", 8, extra, 142600, 19070))
    assert named in str(e.value)


def test_a_v41_config_is_refused_by_name(tmp_path):
    # DeepSeek-V4.1 (model_type deepseek_v41) sizes its SWA pool from the request cap and may pick V4.1 layouts.
    import json

    with open(FLASH, encoding="utf-8") as fh:
        config = json.load(fh)
    config["model_type"] = "deepseek_v41"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedError, match="model_type deepseek_v41"):
        plan(_layout(str(tmp_path), "H200", 8, [], 142600, 19070))


def test_not_enough_memory_is_sglangs_refusal():
    # 20,000 MiB free, 19,070 of them weights: 0.897's budget is 930 - 20,000 x 0.103 MiB < 0: SGLang's refusal.
    with pytest.raises(StartupRefusal, match="Loaded weights leave no GPU memory"):
        plan(_layout(FLASH, "H200", 8, [], 20000, 19070))


def test_an_swa_pool_below_one_request_is_sglangs_refusal():
    # --swa-full-tokens-ratio 0.00001: int(28,568,320 x 0.00001) = 285, floored to the page: 256 <= 128 + 256.
    # SGLang 0.5.23 executed says exactly this (validate_swa_pool_size).
    with pytest.raises(StartupRefusal, match=r"ValueError: SWA pool \(256 tokens\) cannot hold even one request: "
                                             r"the prefill admission floor is sliding_window_size \(128\) \+ "
                                             r"page_size \(256\)\. Increase --swa-full-tokens-ratio"):
        plan(_layout(FLASH, "H200", 8, ["--swa-full-tokens-ratio", "0.00001"], 142600, 19070))
