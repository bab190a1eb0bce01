"""Plans read from Kubernetes manifests (issue 12, part 3): the vLLM container's serve line, and gates on what the
pod grants. Numbers: Kimi-K2.5 (61 MLA layers, page 64 x 576 x 2 = 73,728 B) at TP 4 on 0.33.0 stores each chunk
once (kv_tp_replicas = 4): 73,728 x 61 = 4,497,408 B (4096-aligned); 64 GiB // that = 15,279 chunks in one
/dev/shm region of 15,279 x 4,497,408 B."""

import json
import os
import shutil

import pytest

from conftest import EXAMPLES_DIR, run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
K8S = os.path.join(HERE, "fixtures", "k8s")
REGION = (64 << 30) // 4497408 * 4497408



def manifest(tmp_path, name, **subst):
    model = tmp_path / "kimi-k2.5"
    model.mkdir(exist_ok=True)
    shutil.copy(os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"), model / "config.json")
    with open(os.path.join(K8S, name)) as fh:
        text = fh.read().replace("/models/kimi-k2.5", str(model))
    for old, new in subst.items():
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_helm_rendered_deployment(capsys, tmp_path):
    path = manifest(tmp_path, "deployment-helm.yaml")
    code, out, err = run(capsys, "plan", "--k8s", path, "--check", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert REGION == 15279 * 4497408
    sel = doc["offload"]["selected"]
    assert sel["num_blocks_scheduler"] == 15279
    assert sel["replicated"] is True
    assert doc["offload"]["host"]["shm_bytes_per_engine"] == REGION
    checks = {c["name"]: c for c in doc["checks"]}
    # The pod's memory limit (96Gi) and /dev/shm sizeLimit (80Gi) are the gates' limits.
    assert checks["host_memory"]["passed"]
    assert f"{96 << 30:,} B" in checks["host_memory"]["reason"]
    assert checks["shm"]["passed"]
    assert doc["parallel"]["tensor_parallel_size"] == 4
    # PYTORCH_ALLOC_CONF's pinned_max_round_threshold_mb:1024 reaches the plan: on ROCm (private pinned tensors in
    # 0.33.0) the rounding rule is that threshold.
    code, out, err = run(capsys, "plan", "--k8s", path, "--platform", "rocm", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["host"]["pinned_rounding"] == "threshold:1024"


def test_a_pod_that_grants_too_little_fails_its_gates(capsys, tmp_path):
    path = manifest(tmp_path, "deployment-helm.yaml", **{"sizeLimit: 80Gi": "sizeLimit: 32Gi",
                                                        "memory: 96Gi": "memory: 48Gi"})
    code, out, err = run(capsys, "plan", "--k8s", path, "--check", "--format", "json")
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    # 0.33.0's own preflight refuses a region larger than /dev/shm ("Insufficient space in /dev/shm for ...").
    assert checks["startup"]["passed"] is False
    assert "Insufficient space in /dev/shm" in checks["startup"]["reason"]
    assert checks["shm"]["passed"] is False


def test_leaderworkerset_and_inferenceservice(capsys, tmp_path):
    # Neither mounts /dev/shm (the next test); --shm-size on the command line overrides the runtime default.
    for name, limit in (("lws.yaml", 200 * 10 ** 9), ("inferenceservice.yaml", 1 << 40)):
        path = manifest(tmp_path, name)
        code, out, err = run(capsys, "plan", "--k8s", path, "--check", "--shm-size", "80G", "--format", "json")
        assert code == 0, (name, err)
        doc = json.loads(out)
        assert doc["offload"]["selected"]["num_blocks_scheduler"] == 15279
        assert f"{limit:,} B" in {c["name"]: c for c in doc["checks"]}["host_memory"]["reason"], name


def test_no_emptydir_at_dev_shm_means_the_runtime_default(capsys, tmp_path):
    path = manifest(tmp_path, "lws.yaml")
    code, out, err = run(capsys, "plan", "--k8s", path, "--check", "--format", "json")
    assert "nothing mounted at /dev/shm: the runtime's default 64 MiB" in err
    # lws.yaml mounts none: 64 MiB, far below the region; 0.33.0 refuses at start-up.
    assert code == 1
    assert not {c["name"]: c for c in json.loads(out)["checks"]}["shm"]["passed"]


@pytest.mark.parametrize("name, flags, needle", [
    ("no-vllm.yaml", [], "a container that runs `vllm serve`"),
    ("deployment-helm.yaml", ["--container", "nope"], "a container named 'nope'"),
    ("deployment-helm.yaml", ["--container", "sidecar"], "a command that runs `vllm serve`"),
])
def test_bad_manifests_are_one_line_exit_2(capsys, tmp_path, name, flags, needle):
    path = manifest(tmp_path, name)
    code, out, err = run(capsys, "plan", "--k8s", path, *flags)
    assert code == 2, err
    assert out == "", err
    assert needle in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_quantities():
    from kvcalc.inputs.k8s.manifest import quantity

    assert quantity("96Gi", source="m", key="k") == 96 << 30
    assert quantity("200G", source="m", key="k") == 200 * 10 ** 9
    assert quantity("1.5Gi", source="m", key="k") == 3 << 29
    assert quantity("1e9", source="m", key="k") == 10 ** 9
    assert quantity(1024, source="m", key="k") == 1024
    with pytest.raises(Exception, match="a Kubernetes memory quantity"):
        quantity("100m", source="m", key="k")  # milli: no byte count


def test_vllm_args_prints_the_pod_block(capsys):
    # DeepSeek-V3 TP 4 on 0.33.0, 64 GiB: stored once, 15,279 chunks x 4,497,408 B = 68,715,896,832 B, just under
    # 64 Gi: the region and the memory limit are 64Gi (whole Gi, rounded up).
    import yaml

    code, out, err = run(capsys, "vllm-args", os.path.join(EXAMPLES_DIR, "deepseek-v3-tp4.yaml"), "--vllm-version",
                         "0.33.0", "--pod")
    assert code == 0, err
    block = yaml.safe_load("\n".join(line for line in out.splitlines() if not line.startswith("vllm serve")))
    assert -(-REGION // (1 << 30)) == 64
    assert block["resources"]["limits"]["memory"] == "64Gi"
    assert block["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}]
    assert block["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


@pytest.mark.parametrize("kind", ["StatefulSet", "Job", "DaemonSet"])
def test_other_workload_kinds_hold_the_same_pod_template(capsys, tmp_path, kind):
    path = manifest(tmp_path, "deployment-helm.yaml", **{"kind: Deployment": f"kind: {kind}"})
    code, out, err = run(capsys, "plan", "--k8s", path, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["selected"]["num_blocks_scheduler"] == 15279


def test_a_bare_pod(capsys, tmp_path):
    # The Deployment's pod template as a Pod of its own.
    import yaml

    with open(manifest(tmp_path, "deployment-helm.yaml")) as fh:
        docs = list(yaml.safe_load_all(fh))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kimi"}, "spec": docs[1]["spec"]["template"]["spec"]}
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    code, out, err = run(capsys, "plan", "--k8s", str(path), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["selected"]["num_blocks_scheduler"] == 15279


# Issue 34: what the cluster, not the manifest, decides.

LMCACHE_TRANSFER = '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'


def _deployment(tmp_path, args, *, env_from=None, volumes=(), mounts=(), others=(), namespace=None):
    """A Deployment running `vllm serve KIMI ARGS` (the Kimi-K2.5 config), with the given extra objects."""
    import yaml

    model = tmp_path / "kimi-k2.5"
    model.mkdir(exist_ok=True)
    shutil.copy(os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json"), model / "config.json")
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "command": ["vllm", "serve", str(model), *args],
                 "resources": {"limits": {"memory": "512Gi", "nvidia.com/gpu": 4}},
                 "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}, *mounts]}
    if env_from is not None:
        container["envFrom"] = env_from
    meta = {"name": "vllm", **({"namespace": namespace} if namespace else {})}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {"template": {"spec": {
        "containers": [container],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "200Gi"}}, *volumes]}}}}
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump_all([*others, deploy]))
    return str(path)


def _gates(capsys, path):
    code, out, err = run(capsys, "plan", "--k8s", path, "--check", "--format", "json")
    doc = json.loads(out)
    return code, doc, {c["name"]: c for c in doc.get("checks", [])}, err


def test_an_optional_env_from_the_manifest_does_not_hold_makes_the_pool_gates_unknown(capsys, tmp_path):
    # envFrom with optional: true was skipped when the manifest did not hold it: the pod starts without it, but the
    # cluster may hold it and its LMCACHE_* variables would set LMCache's pool. Unknown, as a non-optional one is.
    path = _deployment(tmp_path, ["-tp", "4", "--kv-transfer-config", LMCACHE_TRANSFER],
                       env_from=[{"configMapRef": {"name": "lmcache-env", "optional": True}}])
    code, doc, gates, err = _gates(capsys, path)
    assert gates["host_memory"]["status"] == "unknown"
    assert "ConfigMap 'lmcache-env' (envFrom, optional) is not in this manifest" in gates["host_memory"]["reason"]
    assert code == 1


def _cm(name, data, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_a_configmap_of_another_namespace_is_not_the_pods(capsys, tmp_path):
    # ConfigMaps were looked up by name alone: one in namespace `other` fed a pod in namespace `serving`. The pod
    # cannot reference it: its variables are unread, the pool gates unknown. In the pod's namespace it is read.
    env_from = [{"configMapRef": {"name": "lmcache-env"}}]
    args = ["-tp", "4", "--kv-transfer-config", LMCACHE_TRANSFER]
    elsewhere = _cm("lmcache-env", {"LMCACHE_MAX_LOCAL_CPU_SIZE": "20"}, namespace="other")
    path = _deployment(tmp_path, args, env_from=env_from, others=[elsewhere], namespace="serving")
    code, doc, gates, err = _gates(capsys, path)
    assert gates["host_memory"]["status"] == "unknown"
    assert code == 1
    mine = _cm("lmcache-env", {"LMCACHE_MAX_LOCAL_CPU_SIZE": "20"}, namespace="serving")
    path = _deployment(tmp_path, args, env_from=env_from, others=[elsewhere, mine], namespace="serving")
    code, doc, gates, err = _gates(capsys, path)
    assert doc["offload"]["lmcache"]["max_local_cpu_size"] == 20
    assert gates["host_memory"]["status"] == "pass"


def test_a_containers_config_file_is_the_configmap_mounted_there_not_this_machines(capsys, tmp_path):
    # --config PATH in a container was read from this machine's PATH: here a file saying TP 8 on this machine while
    # the ConfigMap mounted at PATH in the container says TP 4. Without a mount at PATH it is refused (exit 2), as
    # LMCACHE_CONFIG_FILE is.
    local = tmp_path / "etc"
    local.mkdir()
    (local / "config.yaml").write_text("tensor-parallel-size: 8\n")
    args = ["--config", str(local / "config.yaml"), "--kv-offloading-size", "64"]
    path = _deployment(tmp_path, args)
    code, out, err = run(capsys, "plan", "--k8s", path)
    assert code == 2
    assert "--config: expected a file the manifest mounts in the container" in err
    cm = _cm("vllm-config", {"config.yaml": "tensor-parallel-size: 4\n"})
    path = _deployment(tmp_path, args, others=[cm], volumes=[{"name": "cfg", "configMap": {"name": "vllm-config"}}],
                       mounts=[{"name": "cfg", "mountPath": str(local)}])
    code, out, err = run(capsys, "plan", "--k8s", path, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["parallel"]["tensor_parallel_size"] == 4


def test_a_setting_the_scripts_control_flow_decides_makes_its_gates_unknown(capsys, tmp_path):
    # `test -f X && export LMCACHE_…` was read as straight-line code: planned on 100 GiB, passed. Whether it runs is
    # the file's: the pool gates are unknown. The same export unconditionally is read (Kimi-K2.5 is MLA: LMCache
    # stores on the first rank only, 100 GiB past a 64 GiB limit).
    import yaml

    path = _deployment(tmp_path, [])
    doc = list(yaml.safe_load_all(open(path)))
    container = doc[-1]["spec"]["template"]["spec"]["containers"][0]
    serve = " ".join(container["command"]) + f" -tp 4 --kv-transfer-config '{LMCACHE_TRANSFER}'"
    container["resources"]["limits"]["memory"] = "64Gi"
    for script, status in ((f"test -f /etc/lmcache/on && export LMCACHE_MAX_LOCAL_CPU_SIZE=100\nexec {serve}",
                            "unknown"),
                           (f"export LMCACHE_MAX_LOCAL_CPU_SIZE=100\nexec {serve}", "fail")):
        container["command"], container["args"] = ["/bin/sh", "-c"], [script]
        with open(path, "w") as fh:
            yaml.safe_dump_all(doc, fh)
        code, out, gates, err = _gates(capsys, path)
        assert gates["host_memory"]["status"] == status, script
        assert code == 1
