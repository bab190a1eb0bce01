"""Real public manifests (tests/fixtures/k8s/real: each file's header names its repository, path and commit) read
as Kubernetes and their shells run them (issue 21). Expected values come from the manifests' own text (quoted in
each test), never from kvcalc's output."""

import json
import os
import shutil

import pytest

from conftest import run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(HERE, "fixtures", "k8s", "real")
SHARED_MODELS = os.path.join(HERE, "fixtures", "models")  # copies of ../shared/models
HF = os.path.join(HERE, "fixtures", "hf")


def real(name):
    return os.path.join(REAL, name)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hugging Face cache holding the configs the manifests name (refs/main -> one snapshot)."""
    cache = tmp_path / "hub"

    def add(repo, config):
        snap = cache / f"models--{repo.replace('/', '--')}" / "snapshots" / "abc"
        snap.mkdir(parents=True)
        shutil.copy(config, snap / "config.json")
        (cache / f"models--{repo.replace('/', '--')}" / "refs").mkdir()
        (cache / f"models--{repo.replace('/', '--')}" / "refs" / "main").write_text("abc")

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return add


def read(name, **kw):
    from kvcalc.inputs.k8s.manifest import read as read_manifest

    return read_manifest(real(name), **kw)


def flag(argv, name):
    """The value a flag has on the serve line (`--x v` or `--x=v`)."""
    for i, w in enumerate(argv):
        if w == name:
            return argv[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    raise AssertionError(f"{name} not in {argv}")


def test_leaderworkerset_script_arithmetic_and_injected_group_size():
    # llm-d wide-EP decode: `--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))` with leaderWorkerTemplate
    # `size: 2` (LeaderWorkerSet's webhook sets LWS_GROUP_SIZE to it) and env DP_SIZE_LOCAL "8": 2 x 8 = 16;
    # `--tensor-parallel-size $TP_SIZE` with env TP_SIZE "1"; the JSON of --kv_transfer_config spans lines.
    g = read("08-llmd-wide-ep-lws-decode.yaml")
    assert flag(g.argv, "--data-parallel-size") == "16"
    assert flag(g.argv, "--tensor-parallel-size") == "1"
    assert flag(g.argv, "--data-parallel-size-local") == "8"
    assert json.loads(flag(g.argv, "--kv_transfer_config")) == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    # START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL )) on the worker: LWS_WORKER_INDEX is known only when
    # the pod runs, so the rank is unknown and said so (the flag does not change the KV cache).
    assert flag(g.argv, "--data-parallel-start-rank") == "${START_RANK}"
    assert any("--data-parallel-start-rank" in n for n in g.notes)
    # sizeLimit: 2Gi on the emptyDir at /dev/shm; limits.memory 512Gi.
    assert g.shm.size == 2 << 30
    assert g.memory_limit == 512 << 30


def test_dollar_paren_model_id_from_the_container_env(hub, capsys):
    # GKE sample: args `--model=$(MODEL_ID)` with env MODEL_ID "google/gemma-3-27b-it", `--tensor-parallel-size=8`.
    hub("google/gemma-3-27b-it", os.path.join(SHARED_MODELS, "gemma-3-27b.json"))
    g = read("22-gke-gemma3-dollar-paren-model-id.yaml")
    assert flag(g.argv, "--model") == "google/gemma-3-27b-it"
    # Its --swap-space left vLLM's parser after 0.17.1 (vocab/releases/vllm_flags): 0.33.0 stops at it, as vLLM does.
    code, out, err = run(capsys, "plan", "--k8s", real("22-gke-gemma3-dollar-paren-model-id.yaml"),
                         "--vllm-version", "0.33.0", "--format", "json")
    assert code == 2
    assert "--swap-space: expected an option of vLLM 0.33.0's `vllm serve`" in err
    code, out, err = run(capsys, "plan", "--k8s", real("22-gke-gemma3-dollar-paren-model-id.yaml"),
                         "--vllm-version", "0.17.1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    with open(os.path.join(SHARED_MODELS, "gemma-3-27b.json")) as fh:
        layers = json.load(fh)["text_config"]["num_hidden_layers"]
    assert doc["model"]["num_layers"] == layers
    assert doc["parallel"]["tensor_parallel_size"] == 8
    # The image (a Vertex build tagged by date) names no release: the flag's release is used and said so.
    assert doc["vllm_version_from"] == "--vllm-version"
    assert doc["vllm_version"] == "0.17.1"
    assert "not in kvcalc's image table" in err


def test_no_release_in_a_digest_pinned_image_refuses_to_gate(hub, capsys):
    # kubernetes/examples: image vllm/vllm-openai@sha256:05a31dc4… (a digest names no release).
    hub("google/gemma-3-1b-it", os.path.join(HF, "gemma-3-1b.json"))
    path = real("29-k8s-examples-digest-pinned.yaml")
    code, out, err = run(capsys, "plan", "--k8s", path, "--cpu-bytes", "4GiB", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["vllm_version_from"] == "default"
    assert "pinned by digest only" in err
    assert "warning: no vLLM release named" in err
    code, out, err = run(capsys, "plan", "--k8s", path, "--cpu-bytes", "4GiB", "--check", "--format", "json")
    assert code == 2
    assert "--check gates one vLLM release and none is named" in err
    code, out, err = run(capsys, "plan", "--k8s", path, "--cpu-bytes", "4GiB", "--check", "--vllm-version", "0.33.0",
                         "--format", "json")
    assert code == 0, err


def test_an_image_tag_below_the_modelled_releases_is_refused(capsys):
    # LWS sample on vllm/vllm-openai:v0.8.5: that release is what runs, and kvcalc models 0.14.0 on.
    code, out, err = run(capsys, "plan", "--k8s", real("11-lws-gpu-ray-multinode.yaml"))
    assert code == 2
    assert "image vllm/vllm-openai:v0.8.5: vLLM 0.8.5" in err
    assert len(err.strip().splitlines()) == 1


def test_a_memory_request_without_a_limit_is_not_a_gate_that_passes(hub, capsys):
    # llm-d benchmark baseline: requests memory "40Gi", no memory limit; emptyDir sizeLimit 8Gi at /dev/shm.
    hub("meta-llama/Llama-3.1-8B-Instruct", os.path.join(SHARED_MODELS, "llama-3.1-8b.json"))
    path = real("27-llmd-bench-baseline-args-before-command.yaml")
    g = read("27-llmd-bench-baseline-args-before-command.yaml")
    assert g.memory_limit is None
    assert g.memory_request == 40 << 30
    assert g.shm.size == 8 << 30
    code, out, err = run(capsys, "plan", "--k8s", path, "--vllm-version", "0.33.0", "--cpu-bytes", "4GiB", "--check",
                         "--format", "json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 1
    assert checks["host_memory"]["status"] == "unknown"
    assert "requests.memory 42,949,672,960 B" in checks["host_memory"]["reason"]
    assert checks["shm"]["limit"] == 8 << 30
    # --host-memory names the node's memory instead: the gate is evaluated.
    code, out, err = run(capsys, "plan", "--k8s", path, "--vllm-version", "0.33.0", "--cpu-bytes", "4GiB", "--check",
                         "--host-memory", "256GiB", "--format", "json")
    assert code == 0, err


def test_a_configmap_in_another_file_of_the_directory(hub, capsys):
    # RHAIIS: `--model=$(MODEL_NAME)` with MODEL_NAME from configMapKeyRef vllm-config, which the companion file
    # defines (MODEL_NAME: "Qwen/Qwen3-Coder-30B-A3B-Instruct"); `kubectl apply -f DIR` reads both.
    from kvcalc.inputs.k8s.manifest import read as read_manifest

    with pytest.raises(Exception, match="from ConfigMap 'vllm-config' key 'MODEL_NAME', not in this manifest"):
        read_manifest(os.path.join(REAL, "rhaiis", "32-rhaiis-configmapkeyref-tp4.yaml"))
    g = read_manifest(os.path.join(REAL, "rhaiis"))
    assert flag(g.argv, "--model") == "Qwen/Qwen3-Coder-30B-A3B-Instruct"
    assert flag(g.argv, "--tensor-parallel-size") == "4"
    assert g.memory_limit == 128 << 30
    assert g.memory_request == 32 << 30


def test_a_command_substitution_of_an_operator_file_is_named(capsys):
    # LMCache operator: --kv-transfer-config "$(cat /etc/lmcache/kv-transfer-config.json)" from ConfigMap
    # my-cache-connection, which the operator creates (not in the manifest): the value cannot be read.
    code, out, err = run(capsys, "plan", "--k8s", real("30-lmcache-operator-cat-configmap-kvconfig.yaml"))
    assert code == 2
    assert "--kv-transfer-config: expected a value kvcalc can read" in err
    assert "/etc/lmcache/kv-transfer-config.json is not a file of this manifest" in err


def test_a_configmap_file_read_by_cat_when_the_manifest_holds_it(tmp_path):
    # The same container with the ConfigMap it mounts added to the manifest: $(cat FILE) is its data.
    from kvcalc.inputs.k8s.manifest import read as read_manifest

    with open(real("30-lmcache-operator-cat-configmap-kvconfig.yaml")) as fh:
        text = fh.read()
    cm = ('{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}')
    text += ("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: my-cache-connection}\n"
             f"data:\n  kv-transfer-config.json: '{cm}'\n")
    path = tmp_path / "with-cm.yaml"
    path.write_text(text)
    g = read_manifest(str(path))
    assert flag(g.argv, "--kv-transfer-config") == cm


def test_hostipc_without_a_mount_is_the_nodes_dev_shm_of_unknown_size():
    # SGLang's own sample sets hostIPC: true and mounts nothing at /dev/shm; the vLLM docs' ROCm sample sets both,
    # and the emptyDir (sizeLimit "8Gi") mounted at /dev/shm is what the container sees.
    from kvcalc.inputs.k8s.manifest import read as read_manifest
    from kvcalc.vocab.errors import KvcalcError

    g = read_manifest(real("sglang-03-official-hostipc.yaml"))  # SGLang is planned from issue 24 on
    assert g.argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert g.shm.size is None  # hostIPC, nothing mounted at /dev/shm: the node's, of unknown size
    del KvcalcError
    g = read("14-vllm-docs-rocm-hostipc-and-shm.yaml")
    assert g.shm.size == 8 << 30
    assert g.gpus == 1  # amd.com/gpu: 1


@pytest.mark.parametrize("name, needle", [
    # git merge-conflict markers left in a committed manifest (llm-d, stored copy): not YAML.
    ("09-llmd-wide-ep-decode-CONFLICT-MARKERS-digest.yaml", "line 49: expected valid YAML"),
    # `env:` twice in one container (a kustomize patch): the API server's decoder refuses it too.
    ("06-llmd-patch-lmcache-dup-env.yaml", "line 33: expected each key once in a mapping, got 'env'"),
    # args only, on an image whose ENTRYPOINT kvcalc does not know.
    ("26-llmd-bench-decoder-bare-pod.yaml", "gives args only, and kvcalc does not know the ENTRYPOINT of image "
                                            "'quay.io/llm-d/llm-d-dev:vllm-nixl-0.0.6'"),
])
def test_real_manifests_kvcalc_cannot_plan_say_why_in_one_line(capsys, name, needle):
    code, out, err = run(capsys, "plan", "--k8s", real(name))
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1
