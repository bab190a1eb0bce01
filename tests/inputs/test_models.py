"""The architecture table against vLLM's registries, and `kvcalc models`."""

import json

import pytest

from kvcalc.cli import main
from kvcalc.inputs.arch.index import READERS, arch_index
from kvcalc.vocab.releases.archs import registry_of
from kvcalc.vocab.releases.vllm import RELEASE_TUPLES

# vLLM 0.33.0 model_executor/models/registry.py: the count of each dict (124 text generation, 127 multimodal,
# 68 speculative decoding), and the 23 _TRANSFORMERS_SUPPORTED_MODELS.
COUNTS_033 = {"t": 124, "m": 127, "s": 68, "T": 23}


def test_registry_listing_of_0_33_0_has_the_registry_counts():
    listed = registry_of((0, 33, 0))
    counts = {letter: sum(1 for v in listed.values() if v == letter) for letter in COUNTS_033}
    assert counts == COUNTS_033


def test_every_0_33_0_architecture_is_mapped_or_listed_with_a_reason():
    index = arch_index()
    missing = sorted(name for name, letter in registry_of((0, 33, 0)).items() if letter != "p" and name not in index)
    assert missing == []
    without_reason = sorted(r.name for r in index.values() if not r.mapped and not r.reason)
    assert without_reason == []


def test_every_mapped_row_has_its_reader():
    index = arch_index()
    readers = {r.reader for r in index.values() if r.mapped} - {"wrapper", "draft_eagle", "draft_eagle3", "draft_mtp"}
    assert readers - set(READERS) == set()


def test_every_wrapper_names_a_language_model_row():
    index = arch_index()
    bad = sorted(r.name for r in index.values() if r.reader == "wrapper" and r.inner not in index)
    assert bad == []


@pytest.mark.parametrize("release", RELEASE_TUPLES, ids=lambda r: ".".join(map(str, r)))
def test_models_answers_every_release(release, capsys):
    version = ".".join(map(str, release))
    assert main(["models", "--vllm-version", version, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vllm_version"] == version
    assert sum(c["total"] for c in doc["counts"].values()) == len(doc["architectures"])
    assert len(doc["architectures"]) == len(registry_of(release))


def test_models_json_entries(capsys):
    assert main(["models", "--vllm-version", "0.33.0", "--format", "json"]) == 0
    doc = {r["architecture"]: r for r in json.loads(capsys.readouterr().out)["architectures"]}
    assert doc["MixtralForCausalLM"]["status"] == "mapped"
    assert doc["MixtralForCausalLM"]["vllm_class"] == "mixtral.MixtralForCausalLM"
    assert doc["BertModel"]["status"] == "no KV cache"
    assert doc["WhisperForConditionalGeneration"]["status"] == "refused by vLLM"
    assert "scheduler.py" in doc["WhisperForConditionalGeneration"]["reason"]
    assert doc["Step5ForCausalLM"]["status"] == "not modelled"


def test_models_on_an_old_release_says_what_0_33_0_dropped(capsys):
    # BaichuanForCausalLM is in 0.14.0's registry and in 0.33.0's _PREVIOUSLY_SUPPORTED_MODELS (served up to 0.23.0).
    assert main(["models", "--vllm-version", "0.14.0", "--format", "json"]) == 0
    doc = {r["architecture"]: r for r in json.loads(capsys.readouterr().out)["architectures"]}
    assert doc["BaichuanForCausalLM"]["status"] == "not read"
    assert "0.23.0" in doc["BaichuanForCausalLM"]["reason"]


def test_models_refuses_a_release_kvcalc_did_not_read(capsys):
    assert main(["models", "--vllm-version", "0.13.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "0.13" in err


@pytest.mark.parametrize("config,must", [
    ({"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper"}, "KV connectors"),
    ({"architectures": ["Step5ForCausalLM"], "model_type": "step5"}, "CircularBufferSpec"),
    ({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}, "--draft-config"),
])
def test_refused_architectures_name_their_reason(config, must, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["plan", str(path), "--cpu-bytes", "64G"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert must in err


def test_unmapped_architecture_planned_from_the_layouts_keys(tmp_path, capsys):
    # Step5ForCausalLM is not modelled; with num_layers and the shapes beside hf_config the plan is the layout's:
    # 24 full layers of 8 KV heads x 128, bf16 from the config: a 16-token page is 16 x 2 x 8 x 128 x 2 = 65,536 B.
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Step5ForCausalLM"], "model_type": "step5",
                                                      "torch_dtype": "bfloat16", "max_position_embeddings": 4096}))
    layout = tmp_path / "layout.yaml"
    layout.write_text("model: {hf_config: ./config.json, num_layers: 24, num_kv_heads: 8, head_size: 128}\n"
                      "cache: {block_size: 16, kv_cache_memory: 40GiB}\noffload: {cpu_bytes_to_use: 64GiB}\n")
    assert main(["plan", str(layout), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["layer_kinds"] == {"full_attention": 24}
    assert "kvcalc does not map this config" in doc["model"]["layer_kinds_from"]
    assert doc["cache"]["max_model_len"] == 4096
    assert doc["gpu"]["groups"][0]["page_size_bytes"] == 16 * 2 * 8 * 128 * 2


def test_unmapped_architecture_without_the_keys_is_one_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Step5ForCausalLM"]}))
    layout = tmp_path / "layout.yaml"
    layout.write_text("model: {hf_config: ./config.json, num_kv_heads: 8}\noffload: {cpu_bytes_to_use: 64GiB}\n")
    assert main(["plan", str(layout)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "give num_layers" in err
