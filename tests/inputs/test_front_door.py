"""The inputs' one front door (issue 28): the Python API reads every kind of input the CLI reads, into the same
Layout, and says what it decided only when asked."""

import os

import kvcalc
from kvcalc.cli.inputs import load_any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json")
K8S = os.path.join(ROOT, "tests", "fixtures", "k8s", "real", "27-llmd-bench-baseline-args-before-command.yaml")


def test_a_serve_line_is_read_by_the_api_as_the_cli_reads_it():
    line = f"vllm serve {LLAMA} --tensor-parallel-size 2 --kv-offloading-size 64"
    api = kvcalc.load(serve=line)
    cli = load_any(None, line, None, None, {})
    assert api.parallel.tensor_parallel_size == 2  # the line's -tp
    assert api.offload.cpu_bytes_to_use == 64 * (1 << 30)  # --kv-offloading-size is GiB: 64 x 2^30
    assert api == cli


def test_a_manifest_is_read_by_the_api_and_its_notes_are_said_only_when_asked(monkeypatch, tmp_path):
    # The manifest serves meta-llama/Llama-3.1-8B-Instruct: a local HF cache holding its config.
    snap = tmp_path / "models--meta-llama--Llama-3.1-8B-Instruct" / "snapshots" / "x"
    snap.mkdir(parents=True)
    (snap / "config.json").write_bytes(open(LLAMA, "rb").read())
    (tmp_path / "models--meta-llama--Llama-3.1-8B-Instruct" / "refs").mkdir()
    (tmp_path / "models--meta-llama--Llama-3.1-8B-Instruct" / "refs" / "main").write_text("x")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    said: list[str] = []
    limits: dict = {}
    loaded = kvcalc.load(k8s=K8S, say=said.append, limits=limits)
    assert loaded.model.num_layers == 32  # Llama-3.1-8B's 32 decoder layers
    assert any(line.startswith("note: /dev/shm:") for line in said)  # the pod's /dev/shm, named
    assert "shm" in limits  # the pod's grants become the gates' limits
    assert kvcalc.load(k8s=K8S) == loaded  # without `say`, the same layout, nothing printed
