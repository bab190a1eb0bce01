"""LMCache settings a pod gets from a ConfigMap or Secret (issue 22): they reach the plan when the manifest holds the
object, and a gate that depends on one kvcalc cannot read is `unknown`, never `pass`.

The pod is llm-d's real LMCache patch (tests/fixtures/k8s/real/06-llmd-patch-lmcache-dup-env.yaml: Qwen/Qwen3-32B,
--tensor-parallel-size=2, LMCACHE_MAX_LOCAL_CPU_SIZE "100.0"), read with its second `env:` (the one YAML keeps),
the variable moved into a ConfigMap / Secret, the memory limit set to 150Gi and vLLM's image named (the patch
leaves it to its kustomize base); its `--max-num-seq 1024` (no KV cache setting) is dropped. Qwen3-32B: 64 layers, 8 KV heads of
128, bf16; at TP 2 a chunk is 2 x 64 x 256 x 4 x 128 x 2 = 33,554,432 B; 100 GiB = 107,374,182,400 B per rank ->
3,200 chunks = 819,200 tokens; 2 ranks pin 200 GiB = 214,748,364,800 B > 150Gi = 161,061,273,600 B. LMCache's
default (5 GiB per rank, 10 GiB) would pass the same limit: a variable kvcalc misses would pass the gate.
"""

import base64
import json
import os
import shutil

import pytest
import yaml

from conftest import GIB, run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(HERE, "fixtures", "k8s", "real", "06-llmd-patch-lmcache-dup-env.yaml")
POOL = 2 * 100 * GIB


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hugging Face cache holding Qwen/Qwen3-32B's config (refs/main -> one snapshot)."""
    repo = tmp_path / "hub" / "models--Qwen--Qwen3-32B"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    shutil.copy(os.path.join(HERE, "fixtures", "models", "qwen3-32b.json"), repo / "snapshots" / "abc" / "config.json")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))


def manifest(tmp_path, env_from=None, value_from=None, objects=()):
    with open(REAL) as fh:
        doc = yaml.safe_load(fh)  # the duplicate `env:` -> the later one, as the patch's author meant
    c = doc["spec"]["template"]["spec"]["containers"][0]
    assert c["env"][0] == {"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": "100.0"}  # the real manifest's value
    c["env"] = c["env"][1:]
    if value_from is not None:
        c["env"].insert(0, {"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "valueFrom": value_from})
    if env_from is not None:
        c["envFrom"] = env_from
    c["resources"] = {"limits": {"memory": "150Gi"}}
    c["image"] = "vllm/vllm-openai:v0.33.0"  # the patch leaves the image to its kustomize base
    i = c["args"].index("--max-num-seq")  # argparse's abbreviation of --max-num-seqs, which kvcalc does not read
    c["args"][i:i + 2] = []
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump_all([*objects, doc]))
    return str(path)


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(name, data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def plan(capsys, path):
    code, out, err = run(capsys, "plan", "--k8s", path, "--vllm-version", "0.33.0", "--check", "--format", "json")
    doc = json.loads(out)
    return code, doc, {c["name"]: c for c in doc["checks"]}, err


@pytest.mark.parametrize("env_from, value_from, objects", [
    ([{"configMapRef": {"name": "lmcache"}}], None, [configmap("lmcache", {"LMCACHE_MAX_LOCAL_CPU_SIZE": "100.0"})]),
    ([{"prefix": "LMCACHE_", "configMapRef": {"name": "lmcache"}}], None,
     [configmap("lmcache", {"MAX_LOCAL_CPU_SIZE": "100.0"})]),
    ([{"secretRef": {"name": "lmcache"}}], None, [secret("lmcache", {"LMCACHE_MAX_LOCAL_CPU_SIZE": "100.0"})]),
    (None, {"configMapKeyRef": {"name": "lmcache", "key": "size"}}, [configmap("lmcache", {"size": "100.0"})]),
    (None, {"secretKeyRef": {"name": "lmcache", "key": "size"}}, [secret("lmcache", {"size": "100.0"})]),
], ids=["envFrom-configMapRef", "envFrom-prefix", "envFrom-secretRef", "valueFrom-configMapKeyRef",
        "valueFrom-secretKeyRef"])
def test_an_lmcache_variable_from_the_manifests_configmap_reaches_the_plan(hub, capsys, tmp_path, env_from,
                                                                            value_from, objects):
    code, doc, checks, err = plan(capsys, manifest(tmp_path, env_from, value_from, objects))
    lmc = doc["offload"]["lmcache"]
    assert lmc["pool_bytes_per_engine"] == POOL
    assert lmc["stages"][0]["chunks_per_rank"] == 3200
    assert lmc["tokens_per_engine"] == 819200
    assert lmc["config_from"]["max_local_cpu_size"] == "LMCACHE_MAX_LOCAL_CPU_SIZE (the manifest's env)"
    assert checks["host_memory"]["status"] == "fail"
    assert checks["host_memory"]["limit"] == 150 * GIB
    assert code == 1


@pytest.mark.parametrize("env_from, value_from, needle", [
    (None, {"configMapKeyRef": {"name": "elsewhere", "key": "size"}},
     "LMCACHE_MAX_LOCAL_CPU_SIZE (from ConfigMap 'elsewhere' key 'size', not in this manifest)"),
    ([{"configMapRef": {"name": "elsewhere"}}], None, "ConfigMap 'elsewhere' (envFrom) is not in this manifest"),
    ([{"secretRef": {"name": "elsewhere"}}], None, "Secret 'elsewhere' (envFrom) is not in this manifest"),
], ids=["valueFrom-missing", "envFrom-configMap-missing", "envFrom-secret-missing"])
def test_an_lmcache_variable_kvcalc_cannot_read_makes_host_memory_unknown(hub, capsys, tmp_path, env_from,
                                                                          value_from, needle):
    # LMCache's default would be 10 GiB, under the 150Gi limit: the gate must not pass on it.
    code, doc, checks, err = plan(capsys, manifest(tmp_path, env_from, value_from))
    assert checks["host_memory"]["status"] == "unknown"
    assert needle in checks["host_memory"]["reason"]
    assert code == 1
    assert "check not evaluated: host_memory" in err
    # Every gate that reads the pool's figures is unknown too: min_cpu_tokens would pass on the default as well.
    code, doc, checks, err = plan(capsys, manifest(tmp_path, env_from, value_from))
    for gate in ("zero_cpu_blocks", "out_of_bounds", "cpu_smaller_than_gpu"):
        assert checks[gate]["status"] in ("unknown", "skipped"), gate
    assert checks["zero_cpu_blocks"]["status"] == "unknown"


def test_lmcache_config_file_from_a_mounted_configmap(hub, capsys, tmp_path):
    # LMCACHE_CONFIG_FILE names a path in the container: the file is the ConfigMap the manifest mounts there
    # (max_local_cpu_size: 100.0, as the real patch's variable), never a file of that name on this machine.
    cm = configmap("lmcache-config", {"lmcache.yaml": "max_local_cpu_size: 100.0\n"})
    path = manifest(tmp_path, objects=[cm])
    with open(path) as fh:
        docs = list(yaml.safe_load_all(fh))
    pod = docs[-1]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    c["env"].insert(0, {"name": "LMCACHE_CONFIG_FILE", "value": "/etc/lmcache/lmcache.yaml"})
    c.setdefault("volumeMounts", []).append({"name": "lmc", "mountPath": "/etc/lmcache"})
    pod.setdefault("volumes", []).append({"name": "lmc", "configMap": {"name": "lmcache-config"}})
    with open(path, "w") as fh:
        yaml.safe_dump_all(docs, fh)
    code, doc, checks, err = plan(capsys, path)
    assert doc["offload"]["lmcache"]["pool_bytes_per_engine"] == POOL
    # Without the ConfigMap in the manifest, the path is refused (exit 2), not read from this machine.
    with open(path, "w") as fh:
        yaml.safe_dump_all(docs[1:], fh)
    code, out, err = run(capsys, "plan", "--k8s", path, "--vllm-version", "0.33.0")
    assert code == 2
    assert "LMCACHE_CONFIG_FILE: expected a file the manifest mounts" in err
