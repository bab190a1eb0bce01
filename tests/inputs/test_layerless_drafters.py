"""ngram / suffix drafting (vLLM 0.33.0 config/speculative.py:74-82): no draft model, no KV layers, but a speculative
config all the same: num_speculative_tokens rows in a Mamba conv state, and 0.20-0.21's 'align' default."""

import os

from kvcalc.cli import main
from kvcalc.inputs.serve.vllm import load_serve
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.pipeline import plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEMOTRON = os.path.join(ROOT, "examples", "configs", "nemotron-h-8b.json")


def layout(method="ngram", version="0.21.0", tokens=3):
    return layout_from_dict({
        "model": {"hf_config": NEMOTRON, "draft": {"method": method, "num_speculative_tokens": tokens}},
        "cache": {"kv_cache_memory": "40GiB", "max_model_len": 8192, "enable_prefix_caching": True,
                  "hybrid_kv_cache_manager": "on"},
        "offload": {"cpu_bytes_to_use": "64GiB"}, "vllm": {"version": version}})


def test_ngram_adds_no_layer_but_speculative_rows():
    # Nemotron-H-8B with 3 speculative tokens (mamba_utils.py:186-211): conv (4 - 1 + 3) x (8,192 + 2 x 8 x 128)
    # bf16 = 122,880 B; SSM 128 x 64 x 128 float32 = 4,194,304 B.
    p = plan(layout())
    names = [n for n, _ in p.layers.stages[0].layers]
    assert len(names) == 4 + 24  # the target's attention and Mamba layers, no draft layer
    mamba = next(s for _, s in p.layers.stages[0].layers if s.kind == "mamba")
    assert mamba.shapes[0] == (6, 10240)
    assert mamba.real_page_size_bytes == 122_880 + 4_194_304


def test_ngram_is_a_speculative_config_for_the_mamba_default():
    # 0.20.0 - 0.21.0 model_executor/models/config.py:352-361: 'align' with any speculative config; 0.22.0: 'all'.
    assert plan(layout(version="0.21.0")).layers.mamba_cache_mode == "align"
    assert plan(layout(version="0.22.0")).layers.mamba_cache_mode == "all"


def test_suffix_from_a_serve_line():
    lay, _ = load_serve(["vllm", "serve", NEMOTRON, "--speculative-config",
                         '{"method": "suffix", "num_speculative_tokens": 2}', "--enable-prefix-caching"])
    assert lay.model.draft.method == "suffix"
    assert lay.model.draft.num_layers == 0
    assert lay.model.draft.num_speculative_tokens == 2


def test_ngram_with_draft_layers_is_one_line(tmp_path, capsys):
    path = tmp_path / "layout.yaml"
    path.write_text(f"model: {{hf_config: {NEMOTRON}, draft: {{method: ngram, num_layers: 1}}}}\n"
                    "offload: {cpu_bytes_to_use: 64GiB}\n")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "model.draft.num_layers" in err
    assert "no draft model" in err
