"""kvcalc against SGLang's own code on an AMD GPU, executed: tests/fixtures/sglang/rocm_vectors.json (its "how" says
how: each release's ServerArgs resolution with is_hip() true and rocminfo's Pool 1 mocked, and for 0.5.23 its pool
configurators). Each vector's flags are read as an SGLang server line by kvcalc's own reader, on the vector's GPU
by name, with its assumed free memory and weights pinned where it ran the pools; every output it holds is compared:
mem_fraction_static (the aiter backend's x 0.85 included), chunked prefill, the attention backend, the page, the
decode graphs' max batch, the prefill graph's backend, and the tokens, requests and budget of the pool step."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from kvcalc import load
from kvcalc.engines.sglang import build_stage
from kvcalc.engines.sglang.memory import gpu_defaults
from kvcalc.vocab.releases import SGLANG_RELEASES
from kvcalc.vocab.releases.sglang import behaviour_for

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "sglang")
DATA = json.load(open(os.path.join(FIXTURES, "rocm_vectors.json"), encoding="utf-8"))
VECTORS = DATA["vectors"]


def layout_of(v: dict):
    inp = v["inputs"]
    line = ["python", "-m", "sglang.launch_server", "--model-path", os.path.join(FIXTURES, inp["model"]),
            *inp["flags"]]
    flags = {"sglang_version": v["release"], "gpu": inp["gpu"]["name"]}
    if "pre_model_load_free_mib" in inp:
        flags["gpu_free_memory"] = f"{inp['pre_model_load_free_mib']}MiB"
        flags["weights_bytes"] = f"{inp['weights_mib_per_rank']}MiB"
    layout = load(serve=shlex.join(line), flags=flags)
    assert layout.sglang.capacity_mib == inp["gpu"]["rocminfo_pool1_mib"], "rocminfo's Pool 1 as SGLang reads it"
    return layout


@pytest.mark.parametrize("v", VECTORS, ids=[v["id"] for v in VECTORS])
def test_rocm_vector(v):
    layout, b, want = layout_of(v), behaviour_for(v["release"]), v["outputs"]
    gpu = build_stage(layout, b).gpu
    assert gpu.mem_fraction_static == want["mem_fraction_static"], "mem_fraction_static (the same float arithmetic)"
    assert gpu.attention_backend == want["attention_backend"], "attention_backend"
    assert gpu.page_size == want["page_size"], "page_size"
    chunked, max_bs = gpu_defaults(layout.sglang, b, layout.parallel.tensor_parallel_size)
    # DP attention divides the resolved chunk (parallel_hook.py:326-336 @0.5.23)
    assert chunked // layout.sglang.attn_dp_size == want["chunked_prefill_size"], "chunked_prefill_size"
    assert max_bs == want["decode_max_bs"], "decode max_bs"
    if gpu.reserve is not None:
        assert gpu.reserve.prefill_graphs.backend == want["prefill_graph_backend"], "prefill graph backend"
    if "max_total_num_tokens" in want:
        assert gpu.max_total_num_tokens == want["max_total_num_tokens"], "max_total_num_tokens"
        assert gpu.max_running_requests == want["max_running_requests"], "max_running_requests"
        assert gpu.budget_bytes == want["budget_bytes"][0], "the KV budget (stage 0)"


def test_every_amd_row_plans_sglang(capsys):
    """--gpu accepts every AMD row for SGLang (issue 29): the default fraction from rocminfo's Pool 1 MiB."""
    from kvcalc.cli import main
    from kvcalc.vocab.devices import DEVICES

    rows = [d for d in DEVICES if d.rocm]
    assert len(rows) == 7, "MI210, MI250X, MI300X, MI308X, MI325X, MI350X, MI355X"
    for d in rows:
        code = main(["plan", "tests/fixtures/models/llama-3.1-8b.json", "--engine", "sglang", "--gpu", d.aliases[0],
                     "--weights-bytes", "16G", "--format", "json"])
        out = capsys.readouterr().out
        assert code == 0, d.name
        doc = json.loads(out)
        mem = doc["sglang"]["memory"]
        assert mem["capacity_mib"] == d.smi_mib, d.name
        assert mem["attention_backend"] == "aiter", d.name
        # Llama-3.1-8B's 131,072-token context: the default x 0.85 (attention_hook.py:243-269 @0.5.23)
        assert mem["aiter_factor"] == 0.85, d.name


def test_every_release_read_is_executed_on_rocm():
    assert sorted({v["release"] for v in VECTORS}) == sorted(SGLANG_RELEASES), "a ROCm vector per release"


def test_a_draft_on_rocm_is_refused_by_name(capsys):
    from kvcalc.cli import main

    code = main(["plan", "--serve", "python -m sglang.launch_server --model-path tests/fixtures/sglang/models/"
                 "llama-3.1-8b --speculative-algorithm EAGLE3 --speculative-draft-model-path "
                 "tests/fixtures/sglang/models/eagle3-llama3.1-8b --speculative-eagle-topk 1", "--gpu", "mi300x",
                 "--weights-bytes", "16G"])
    err = capsys.readouterr().err
    assert code == 2, "unsupported: exit 2"
    assert "SGLang on AMD Instinct MI300X (ROCm) with a speculative draft" in err, err


def test_mla_without_a_config_is_refused_on_rocm():
    """The MLA backend on ROCm follows the config's KV heads: a layout that states only the latent dims cannot say
    which (exit 2, not a guess)."""
    from kvcalc import layout_from_dict
    from kvcalc.vocab.errors import UnsupportedError

    layout = layout_from_dict({"engine": "sglang", "model": {"name": "DeepSeek-V3", "num_layers": 61,
                                                             "dtype": "bfloat16", "kv_lora_rank": 512,
                                                             "qk_rope_head_dim": 64},
                               "parallel": {"tensor_parallel_size": 8}, "cache": {"max_model_len": 131072},
                               "gpu": {"name": "MI300X"}, "sglang": {"weights_bytes": "80GiB"}})
    with pytest.raises(UnsupportedError, match="follows the config's KV heads"):
        build_stage(layout, behaviour_for("0.5.23"))
