"""Issue 35 (3): vllm-args prints the whole command line, every given flag it does not change kept as written and
the ones it adds, changes or drops marked on the comment line below; vllm-args --k8s patches only a grant that is
short, never lowering one that suffices."""

import json
import os
import shutil

import pytest

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "examples", "configs")
SERVE = os.path.join(ROOT, "tests", "fixtures", "serve", "kimi-k2.5-eagle3-tp4.sh")
RHAIIS = os.path.join(ROOT, "tests", "fixtures", "k8s", "real", "rhaiis")
GIB = 1 << 30


def _cache(root, repo: str, config: str) -> None:
    """A local Hugging Face cache entry: refs/main -> one snapshot holding `config` as config.json."""
    base = root / ("models--" + repo.replace("/", "--"))
    (base / "snapshots" / "s").mkdir(parents=True)
    shutil.copy(config, base / "snapshots" / "s" / "config.json")
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text("s")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    _cache(tmp_path, "moonshotai/Kimi-K2.5", os.path.join(CONFIGS, "kimi-k2.5.json"))
    _cache(tmp_path, "org/kimi-eagle3", os.path.join(CONFIGS, "kimi-k2.5-eagle3.json"))
    # The RHAIIS manifest serves Qwen3-Coder-30B-A3B-Instruct (qwen3_moe, the same decoder as Qwen3-30B-A3B: the
    # real public Qwen3-30B-A3B config stands in for it here).
    _cache(tmp_path, "Qwen/Qwen3-Coder-30B-A3B-Instruct", os.path.join(ROOT, "tests", "fixtures", "hf",
                                                                        "qwen3-30b-a3b.json"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))


def test_the_whole_line_keeps_every_flag_it_does_not_change(capsys, hub):
    with open(SERVE) as fh:
        line = fh.read()
    code, out, err = run(capsys, "vllm-args", "--serve", line, "--vllm-version", "0.19.1", "--force")
    assert code == 0, err
    first, mark = out.splitlines()[:2]
    assert first.startswith("vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size=4 --block-size 64 "
                            "--kv-cache-memory-bytes 40G --max-model-len 128K ")  # as written: the same values
    assert """--speculative-config '{"method": "eagle3", "model": "org/kimi-eagle3", "num_speculative_tokens": 1}'""" \
        in first
    assert "--trust-remote-code --port 8000 --served-model-name kimi" in first
    assert first.endswith(" --kv-offloading-size 64.0")
    assert "kv_connector" not in first  # the given --kv-transfer-config gives way to the flag's spelling ...
    assert mark.startswith("# kvcalc: added ")
    assert "dropped --kv-transfer-config" in mark  # ... and the comment says so
    assert "add --speculative-config" not in err  # the line keeps its drafter: no note asks for it
    # The lines run as given: planned back, each the plan of the fixture's own line (the budget's spelling apart).
    code, a, err = run(capsys, "plan", "--serve", line, "--vllm-version", "0.19.1", "--format", "json")
    assert code == 0, err
    for command in out.splitlines()[0::2]:
        code, b, err = run(capsys, "plan", "--serve", command, "--vllm-version", "0.19.1", "--format", "json")
        assert code == 0, err
        for key in ("gpu", "cache", "parallel", "model"):
            assert json.loads(a)[key] == json.loads(b)[key], key
        assert {**json.loads(a)["offload"], "cpu_bytes_source": None} == {**json.loads(b)["offload"],
                                                                           "cpu_bytes_source": None}


def test_a_changed_value_is_put_in_place_and_marked(capsys, hub):
    line = ("vllm serve moonshotai/Kimi-K2.5 -tp 4 --max_model_len 128K --enable-expert-parallel --trust-remote-code "
            "--block-size 64 --kv-cache-memory-bytes 40G --kv-offloading-size 64")
    code, out, err = run(capsys, "vllm-args", "--serve", line, "--max-model-len", "64K", "--vllm-version", "0.22.1",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    flag_line = next(c for c in doc["commands"] if c["spelling"] == "kv_offloading_size")
    assert flag_line["line_given"] is True
    assert flag_line["command"].startswith("vllm serve moonshotai/Kimi-K2.5 -tp 4 --max-model-len 65536 "
                                           "--enable-expert-parallel --trust-remote-code --block-size 64 ")
    assert flag_line["changed"] == [{"flag": "--max-model-len 65536", "was": "--max_model_len 128K"}]
    assert "--kv-offloading-size 64" in flag_line["command"]  # given as 64: kvcalc's 64.0 is the same value
    config_line = next(c for c in doc["commands"] if c["spelling"] == "kv_transfer_config")
    assert config_line["dropped"] == ["--kv-offloading-size 64"]  # it would win over the config (vLLM)


def test_a_layout_file_has_no_line_to_keep(capsys):
    code, out, err = run(capsys, "vllm-args", os.path.join(ROOT, "examples", "llama-3.1-8b.yaml"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [c["line_given"] for c in doc["commands"]] == [False, False]
    assert doc["commands"][0]["command"] == "vllm serve <model> " + " ".join(doc["args_kv_offloading_size"])


def _patch(capsys, budget: str):
    code, out, err = run(capsys, "vllm-args", "--k8s", RHAIIS, "--vllm-version", "0.33.0", "--cpu-bytes", budget,
                         "--format", "json")
    assert code == 0, err
    return json.loads(out)["manifest_patch"]


def test_k8s_patches_only_what_is_short(capsys, hub):
    # The RHAIIS manifest grants a 128Gi memory limit and a 16Gi memory-backed /dev/shm at TP 4. On 0.33.0 a 32 GiB
    # budget is one /dev/shm region of about 32 GiB (whole chunks of it, no more than the budget): /dev/shm is
    # short; memory needs the region + 4 workers x 3 GiB = about 44 GiB, and 128Gi suffices: it is kept.
    patch = _patch(capsys, "32G")
    assert 31 * GIB < patch["needs_shm_bytes"] <= 32 * GIB
    assert patch["needs_memory_bytes"] == patch["needs_shm_bytes"] + 4 * 3 * GIB
    assert patch["memory_enough"] is True
    assert patch["shm_enough"] is False
    assert patch["patch_needed"] is True
    yaml = patch["yaml"]
    assert "memory limit 128 GiB (enough: keep it)" in yaml
    assert "memory:" not in yaml  # never lowered
    assert "sizeLimit: 32Gi" in yaml


def test_k8s_with_every_grant_enough_patches_nothing(capsys, hub):
    patch = _patch(capsys, "8G")
    assert patch["patch_needed"] is False
    assert "nothing to patch" in patch["yaml"]
    assert "containers:" not in patch["yaml"]
