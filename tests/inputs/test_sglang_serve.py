"""SGLang's server lines (`python -m sglang.launch_server ...`, `sglang serve ...`) and the real SGLang manifests of
tests/fixtures/k8s/real/sglang-*.yaml (each names its source): SGLang's flag spellings, argparse's abbreviations,
--flag=value, the flags kvcalc refuses, the image tag's release. Expected values are the lines' own."""

import json
import os
import shutil

import pytest

from conftest import run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(HERE, "fixtures", "k8s", "real")
MODELS = os.path.join(HERE, "fixtures", "models")
HF = os.path.join(HERE, "fixtures", "hf")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    cache = tmp_path / "hub"

    def add(repo, config):
        base = cache / f"models--{repo.replace('/', '--')}"
        (base / "snapshots" / "abc").mkdir(parents=True)
        shutil.copy(config, base / "snapshots" / "abc" / "config.json")
        (base / "refs").mkdir()
        (base / "refs" / "main").write_text("abc")

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return add


def plan_json(capsys, *args):
    code, out, err = run(capsys, "plan", "--format", "json", *args)
    assert code == 0, err
    return json.loads(out), err


def test_launch_server_line_with_sglang_spellings(capsys):
    doc, err = plan_json(capsys, "--sglang-version", "0.5.23", "--gpu", "H100", "--", "python3", "-m",
                         "sglang.launch_server", "--model-path", os.path.join(HF, "qwen3-14b.json"), "--tp", "2",
                         "--mem-fraction-static", "0.85", "--context-length", "32768", "--page-size", "16",
                         "--enable-hierarchical-cache", "--hicache-ratio", "2", "--hicache-mem-layout", "layer_first",
                         "--host", "0.0.0.0", "--port", "30000", "--trust-remote-code")
    assert doc["engine"] == "sglang"
    assert doc["parallel"]["tensor_parallel_size"] == 2  # --tp: argparse's abbreviation of --tp-size
    sg = doc["sglang"]
    assert sg["mem_fraction_static"] == 0.85
    assert sg["mem_fraction_static_default"] is False
    assert sg["page_size"] == 16
    assert sg["memory"]["context_length"] == 32768
    assert sg["hicache"]["layout"] == "layer_first"
    assert sg["max_total_num_tokens"] % 16 == 0  # floored to the page
    assert "--host, --port, --trust-remote-code" in err


def test_sglang_serve_form_and_equals_spelling(capsys):
    doc, _ = plan_json(capsys, "--sglang-version", "0.5.23", "--gpu", "H100", "--", "sglang", "serve",
                       f"--model-path={os.path.join(HF, 'qwen3-14b.json')}", "--tensor-parallel-size=4",
                       "--hicache-size=50", "--enable-hicache")
    assert doc["parallel"]["tensor_parallel_size"] == 4
    assert doc["sglang"]["version"] == "0.5.23"
    # Qwen3-14B at TP 4: 40 layers x 2 KV heads x (128 + 128) x 2 B = 40,960 B a token;
    # int(50e9 // 40,960) = 1,220,703 + one padding page.
    assert doc["sglang"]["hicache"]["size_tokens_per_rank"] == 1220704


def test_enable_hicache_is_0_5_23s_spelling(capsys):
    # --enable-hicache is an alias of --enable-hierarchical-cache from 0.5.23 (srt/arg_groups/fields/memory.py);
    # 0.5.22's parser has no such option and stops: 'unrecognized arguments'.
    code, _, err = run(capsys, "plan", "--sglang-version", "0.5.22", "--gpu", "H100", "--", "sglang", "serve",
                       os.path.join(HF, "qwen3-14b.json"), "--enable-hicache")
    assert code == 2
    assert "unrecognized arguments: --enable-hicache" in err
    assert err.strip().count("\n") == 0


@pytest.mark.parametrize("args, needle", [
    (["--speculative-algorithm", "NGRAM"], "its draft pool is not modelled"), (["--enable-lmcache"], "LMCache"),
    (["--tp-sizes", "2"], "unrecognized arguments: --tp-sizes 2"),
    (["--hicache", "2"], "ambiguous option: --hicache could match")])
def test_refused_flags_name_themselves(capsys, args, needle):
    code, _, err = run(capsys, "plan", "--gpu", "H100", "--", "python", "-m", "sglang.launch_server",
                       "--model-path", os.path.join(HF, "qwen3-14b.json"), *args)
    assert code == 2
    assert needle in err
    assert err.strip().count("\n") == 0


def test_llmd_hicache_patch_args(capsys, hub):
    # llm-d's SGLang patch (sglang-05-llmd-hicache-patch.yaml) gives args only, all --flag=value: TP 2, page 64,
    # mem_fraction_static 0.9, HiCache 200 GB a rank (decimal): 2 ranks pin 400 GB.
    hub("Qwen/Qwen3-32B", os.path.join(MODELS, "qwen3-32b.json"))
    import yaml

    with open(os.path.join(REAL, "sglang-05-llmd-hicache-patch.yaml"), encoding="utf-8") as fh:
        args = yaml.safe_load(fh)["spec"]["template"]["spec"]["containers"][0]["args"]
    # (the stored Qwen3-32B config states no vocabulary: the weights are pinned, 32.8e9 x 2 B / TP 2 = 30.5 GiB)
    doc, _ = plan_json(capsys, "--sglang-version", "0.5.23", "--gpu", "H100", "--weights-bytes", "30.5GiB", "--",
                       "python", "-m", "sglang.launch_server", *args)
    h = doc["sglang"]["hicache"]
    assert doc["sglang"]["page_size"] == 64
    assert doc["sglang"]["mem_fraction_static"] == 0.9
    assert h["size_gb"] == 200
    assert 200e9 <= h["bytes_per_rank"] < 200e9 + 64 * h["pools"][0]["bytes_per_token"] * 2
    assert h["bytes_per_engine"] == 2 * h["bytes_per_rank"]


def test_official_manifest_plans_sglang(capsys, hub):
    # sgl-project/sglang's k8s sample: python3 -m sglang.launch_server --model-path
    # meta-llama/Meta-Llama-3.1-8B-Instruct, no --tp (1), image lmsysorg/sglang:latest (no release in the tag).
    hub("meta-llama/Meta-Llama-3.1-8B-Instruct", os.path.join(MODELS, "llama-3.1-8b.json"))
    doc, err = plan_json(capsys, "--k8s", os.path.join(REAL, "sglang-03-official-hostipc.yaml"), "--gpu", "H100")
    assert doc["engine"] == "sglang"
    assert doc["parallel"]["tensor_parallel_size"] == 1
    assert "its tag names no SGLang release" in err
    assert "no SGLang release named" in err


def test_gke_manifest_long_tp_spelling():
    # GKE's sample: args ["--model-path", "gs://...", ..., "--tp-size", "8", "--context-length", "8192"] on image
    # dganochenko/sglang:v0.5.5 (older than kvcalc's releases).
    from kvcalc.inputs.k8s.manifest import read

    g = read(os.path.join(REAL, "sglang-02-gke-flow-args-tp8.yaml"))
    assert g.argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert g.argv[g.argv.index("--tp-size") + 1] == "8"
    assert g.argv[g.argv.index("--context-length") + 1] == "8192"


def test_lmcache_sglang_manifest_is_refused(capsys, hub):
    # LMCache's SGLang sample runs --enable-lmcache: LMCache's SGLang connector is not modelled.
    code, _, err = run(capsys, "plan", "--k8s", os.path.join(REAL, "sglang-01-lmcache-configmap.yaml"),
                       "--gpu", "H100")
    assert code == 2
    assert "--enable-lmcache" in err or "Hugging Face cache" in err


def test_cuda_graph_max_bs_per_release(capsys):
    # --cuda-graph-max-bs is a deprecated alias of --cuda-graph-max-bs-decode in 0.5.14 - 0.5.19 (DeprecatedAlias
    # StoreAction, srt/server_args.py:3928 @0.5.19); 0.5.20 dropped it and argparse's prefix matching refuses the
    # line (parse_checks.json, each release's own parser).
    line = ["--", "python", "-m", "sglang.launch_server", "--model-path", os.path.join(HF, "qwen3-14b.json"),
            "--cuda-graph-max-bs", "64"]
    doc, err = plan_json(capsys, "--sglang-version", "0.5.19", "--gpu", "H100", *line)
    assert doc["sglang"]["memory"]["reserve"]["cuda_graph_max_bs"] == 64
    assert "--cuda-graph-max-bs is deprecated" in err
    code, _, err = run(capsys, "plan", "--sglang-version", "0.5.20", "--gpu", "H100", *line)
    assert code == 2
    assert ("ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
            "--cuda-graph-max-bs-prefill") in err
    assert err.strip().count("\n") == 0


@pytest.mark.parametrize("extra", [["--no-enable-tf32-matmul"], ["--sampling-backend", "pytorch"],
                                   ["--enable-lean-attention"],
                                   ["--enable-quant-communications"]])
def test_switches_and_negations_are_read_as_the_parser_reads_them(capsys, extra):
    # BooleanOptionalAction's --no- forms, valued options and store_true switches of 0.5.23's parser.
    doc, err = plan_json(capsys, "--sglang-version", "0.5.23", "--gpu", "H100", "--", "sglang", "serve",
                         os.path.join(HF, "qwen3-14b.json"), *extra)
    assert doc["engine"] == "sglang"
    assert extra[0] in err  # listed among the flags that do not change the KV pools


def test_a_switch_given_a_value_is_refused_in_sglangs_words(capsys):
    code, _, err = run(capsys, "plan", "--sglang-version", "0.5.23", "--gpu", "H100", "--", "sglang", "serve",
                       os.path.join(HF, "qwen3-14b.json"), "--enable-lora=1")
    assert code == 2
    assert "argument --enable-lora: ignored explicit argument '1'" in err
    assert err.strip().count("\n") == 0


def test_a_bad_value_is_refused_in_sglangs_words(capsys):
    code, _, err = run(capsys, "plan", "--sglang-version", "0.5.23", "--gpu", "H100", "--", "sglang", "serve",
                       os.path.join(HF, "qwen3-14b.json"), "--hicache-size", "1.5")
    assert code == 2
    assert "argument --hicache-size: invalid int value: '1.5'" in err
    assert err.strip().count("\n") == 0


@pytest.mark.parametrize("flag", ["--enable-hierarchical-cache=false", "--disable-cuda-graph=0"])
def test_a_switch_given_a_value_is_refused_as_sglangs_parser_does(capsys, tmp_path, flag):
    # Issue 34: `--enable-hierarchical-cache=false` was read as the switch on (HiCache planned). A bool field is
    # argparse's store_true (srt/arg_groups/arg_utils.py:393-395 @0.5.23), which stops on an explicit value.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(MODELS, "llama-3.1-8b.json"), model / "config.json")
    code, out, err = run(capsys, "plan", "--serve", f"python -m sglang.launch_server --model-path {model} {flag}")
    assert code == 2
    assert f"ignored explicit argument '{flag.split('=')[1]}'" in err


@pytest.mark.parametrize("flags, said", [("--tp 2 --nnodes 3", "tp_size must be divisible by number of nodes"),
                                         ("--tp 2 --dp 2 --nnodes 2", "multi-node data-parallel replicas")])
def test_sglangs_node_rules_are_sglangs_not_vllms(capsys, tmp_path, flags, said):
    # Issue 34: an SGLang line's --nnodes was refused with vLLM's rule and words ('world_size=2 must be divisible
    # by nnodes=3'); SGLang's own are srt/arg_groups/validation_hook.py:179-181 and :199-202 @0.5.23.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(MODELS, "llama-3.1-8b.json"), model / "config.json")
    code, out, err = run(capsys, "plan", "--serve", f"python -m sglang.launch_server --model-path {model} {flags}",
                         "--gpu", "H100")
    assert code == 2
    assert said in err
    assert "vLLM" not in err
