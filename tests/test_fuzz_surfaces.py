"""Issue 22: fuzz families for the inputs issue 21 added or extended: serve lines, Kubernetes manifests (shell
scripts, env, volumes), /metrics scrapes, LMCache variables in a manifest, and Hugging Face cache refs. Every case
must end with exit 0, 1 or 2 (never 70, never a traceback), one `kvcalc: error:` line when it fails, within a
time and a memory bound checked per case (tracemalloc's peak: the Python heap, where a YAML or alias bomb, a
4,300-digit int() or an unbounded list would show)."""

import contextlib
import io
import json
import os
import tempfile
import time
import tracemalloc

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES_DIR
from kvcalc.cli import main

WORK = tempfile.mkdtemp(prefix="kvcalc-fuzz-surfaces-")
MODEL_DIR = os.path.join(WORK, "model")
os.makedirs(MODEL_DIR, exist_ok=True)
with open(os.path.join(EXAMPLES_DIR, "configs", "kimi-k2.5.json")) as _fh, \
        open(os.path.join(MODEL_DIR, "config.json"), "w") as _out:
    _out.write(_fh.read())

SECONDS = 10.0  # per case, in-process (a bound: a hang or an unbounded search breaks it)
PEAK_BYTES = 64 << 20  # per case, Python heap peak

WORDS = st.sampled_from([
    "-tp", "4", "--tensor-parallel-size", "--kv-offloading-size", "64", "--kv-transfer-config", "--max-model-len",
    "32k", "auto", "-O3", "--config", "x.yaml", "--enable-prefix-caching", "--no-enable-prefix-caching",
    "--enable-prefix-caching=false", "--block-size", "64", "--model", MODEL_DIR, "--speculative-config",
    '{"method":"ngram"}', '{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}', "--dtype", "bf16",
    "--max_model_len", "1.001k", "9" * 5000, "1e5000", "--", "-", "--x=1", "&&", ";", "|", "$(x)", "${Y}",
    "\x1b[31m", "[/]", "\r\n", "'", '"', "\\", "--revision", "../../etc", "/etc/passwd", "-dp", "2", "--nnodes",
    "3", "--gpu-memory-utilization", "0.9", "--kv-cache-memory-bytes", "40G", "--disable-sliding-window",
])


def run_bounded(args: list[str], env: dict | None = None) -> tuple[int, str, str]:
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert elapsed < SECONDS, (args[:6], elapsed)
    assert peak < PEAK_BYTES, (args[:6], peak)
    return code, out.getvalue(), err.getvalue()


def contract(code: int, out: str, err: str) -> None:
    assert "Traceback" not in err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("kvcalc: error: ")]
        assert len(errors) == 1, err
    for line in err.splitlines():
        assert "\x1b" not in line, line  # terminal escapes from inputs are shown escaped


@given(st.lists(WORDS, max_size=14))
def test_serve_lines(words):
    code, out, err = run_bounded(["plan", "--vllm-version", "0.33.0", "--format", "json", "--", "vllm", "serve",
                                  MODEL_DIR, *words])
    contract(code, out, err)


SCRIPT_PARTS = st.sampled_from([
    "vllm serve MODEL", " -tp 4", " \\\n  --kv-offloading-size 64", "\nset -e\n", "exec ", "X=1 ", " && ", " ; ",
    " | tee /tmp/log", " 2>&1", " &\nwait", " $(hostname)", " ${TP:-4}", " $((2*${N:-2}))", " '", ' "', " #",
    "export A=$(B)", "\r\n", " --max-model-len $LEN", " <<EOF\n", " `x`", " $((1/0))", " ${Z?}", " \"$@\"",
])


@given(st.lists(SCRIPT_PARTS, max_size=10), st.sampled_from(["/bin/sh", "bash"]),
       st.sampled_from([None, "8Gi", "-1Gi", "1e99", 5, "banana"]), st.booleans(),
       st.sampled_from([[], [{"name": "LEN", "value": "4096"}], [{"name": "LEN", "valueFrom": {"fieldRef": {}}}],
                        "notalist", [{"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "valueFrom": {
                            "configMapKeyRef": {"name": "cm", "key": "k"}}}]]))
def test_manifests(parts, shell, limit, host_ipc, env):
    script = "".join(parts).replace("MODEL", MODEL_DIR)
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "command": [shell, "-c"], "args": [script],
                 "env": env}
    if limit is not None:
        container["resources"] = {"limits": {"memory": limit}}
    pod = {"containers": [container], "hostIPC": host_ipc}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"template": {"spec": pod}}}
    path = os.path.join(WORK, "m.yaml")
    with open(path, "w") as fh:
        yaml.safe_dump(doc, fh)
    code, out, err = run_bounded(["plan", "--k8s", path, "--check", "--cpu-bytes", "8GiB", "--format", "json"])
    contract(code, out, err)
    if code == 0:
        # No gate passes on a value kvcalc could not read: an unknown gate fails the run.
        assert all(c["status"] in ("pass", "skipped") for c in json.loads(out)["checks"])


LABELS = st.sampled_from(['num_gpu_blocks="9412"', 'num_gpu_blocks="' + "9" * 5000 + '"', 'block_size="64"',
                          'cpu_num_chunks="3765"', 'engine="0"', 'x="\\"', 'a=b', '', 'cpu_kv_cache_size_bytes="-1"'])


@given(st.lists(st.tuples(st.sampled_from(["vllm:cache_config_info", "vllm:kv_offload_config_info", "\ufeffvllm:x",
                                           "garbage line"]), st.lists(LABELS, max_size=4)), max_size=5))
def test_metrics(series):
    text = "".join(f"{name}{{{','.join(labels)}}} 1.0\n" for name, labels in series)
    path = os.path.join(WORK, "scrape.prom")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    code, out, err = run_bounded(["check", os.path.join(EXAMPLES_DIR, "kimi-k2.5-eagle3-tp4.yaml"), "--metrics", path,
                                  "--vllm-version", "0.33.0", "--format", "json"])
    contract(code, out, err)


@given(st.sampled_from(["main", "v1", "refs/pr/1", "../x", "/etc/passwd", "a" * 300, "main/../../x"]),
       st.sampled_from(["0123abcd" * 5, "", "SECRET ../x\n" * 100, "\xff\xfe", "abc"]))
def test_hub_cache_refs(revision, ref_text):
    cache = os.path.join(WORK, "hub")
    refs = os.path.join(cache, "models--org--m", "refs")
    os.makedirs(refs, exist_ok=True)
    if revision.isalnum() and len(revision) < 100:
        with open(os.path.join(refs, revision), "w", encoding="latin-1") as fh:
            fh.write(ref_text)
    code, out, err = run_bounded(["plan", "--format", "json", "--", "vllm", "serve", "org/m", "--revision", revision],
                                 env={"HF_HUB_CACHE": cache})
    contract(code, out, err)
    assert "SECRET" not in err


# Issue 34: the shell's control flow, Kubernetes env expansion, and the guarded reads.

FLOW_PARTS = st.sampled_from([
    "if [ -f /etc/x ]; then ", "; fi", "\nfi\n", "( ", " )", "{ ", "; }", " && ", " || ", "; ", "\n", " | cat",
    " &\nwait\n", "set -a\n", "set +a\n", 'set -- "$@" --kv-offloading-size 64\n', "shift\n", "shift 9\n",
    "export LMCACHE_MAX_LOCAL_CPU_SIZE=10", "LMCACHE_MAX_LOCAL_CPU_SIZE=20", "unset LMCACHE_MAX_LOCAL_CPU_SIZE",
    "export PYTORCH_ALLOC_CONF=pinned_max_round_threshold_mb:64", "for i in 1 2; do ", "; done", "while false; do ",
    'case "$ROLE" in a) ', " ;; esac", "test -f /x", "true", "false", ":", "env -i ", "env -u LMCACHE_CHUNK_SIZE ",
    "then ", "else ", "elif ", "do ", "esac", "!", "exec ", "vllm serve MODEL -tp 4 --kv-transfer-config "
    "'{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}'", ' "$@"', " $1", " ${X:-1}",
])


def _manifest_doc(container: dict, *others) -> str:
    pod = {"containers": [container], "volumes": [{"name": "cfg", "configMap": {"name": "cm"}}]}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"template": {"spec": pod}}}
    path = os.path.join(WORK, "flow.yaml")
    with open(path, "w") as fh:
        yaml.safe_dump_all([*others, doc], fh)
    return path


def _gates_hold(code: int, out: str) -> None:
    if code == 0:  # no gate passes on a value kvcalc could not read: an unknown gate fails the run
        assert all(c["status"] in ("pass", "skipped") for c in json.loads(out)["checks"])


# The CI profile's count, capped: each case plans a manifest (the three families stay within a few minutes).
NEW_FAMILY = settings(max_examples=min(settings().max_examples, 800))


@NEW_FAMILY
@given(st.lists(FLOW_PARTS, max_size=16), st.lists(st.sampled_from(["--seed", "1", "-tp", "2", "x"]), max_size=4))
def test_shell_control_flow(parts, params):
    script = "".join(parts).replace("MODEL", MODEL_DIR)
    path = _manifest_doc({"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "command": ["/bin/sh", "-c"],
                          "args": [script, "sh", *params], "env": [{"name": "ROLE", "value": "a"}],
                          "resources": {"limits": {"memory": "64Gi"}}})
    code, out, err = run_bounded(["plan", "--k8s", path, "--check", "--format", "json"])
    contract(code, out, err)
    _gates_hold(code, out)


@NEW_FAMILY
@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=4),
       st.sampled_from(["x", "x" * 1000, "$(V0)", "$$(V0)", "$(NOPE)"]), st.integers(min_value=0, max_value=3000),
       st.sampled_from(["", "$(cat /etc/cfg/a)", "${V0}", "$V1$V1"]))
def test_env_expansion(chain, repeats, seed, cats, piece):
    # $(V) chains that repeat the entry before (doubling and more) and a script that expands a mounted file or a
    # variable thousands of times: refused at their bounds, never grown without one.
    env = [{"name": "V0", "value": seed}] + [{"name": f"V{i}", "value": f"$(V{i - 1})" * repeats}
                                             for i in range(1, chain + 1)]
    script = f'X="{piece * cats}"\nexec vllm serve {MODEL_DIR} --kv-offloading-size 8'
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "y" * 4096}}
    path = _manifest_doc({"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", "command": ["sh", "-c", script],
                          "env": env, "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}, cm)
    code, out, err = run_bounded(["plan", "--k8s", path, "--format", "json"])
    contract(code, out, err)


GUARDED = st.sampled_from(["fifo", "zero", "dir", "big", "bad", "deep", "total1", "totalneg", "totalstr", "ok",
                           "missing"])


def _place(path: str, kind: str) -> None:
    """Put something at `path`: a FIFO, a symlink to /dev/zero, a directory, or a file of some content."""
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.remove(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "big":  # past the index reader's 64 MiB cap: written once, reached through a symlink
        big = os.path.join(WORK, "big.json")
        if not os.path.exists(big):
            with open(big, "w") as fh:
                fh.write('{"metadata": {"total_size": 1}, "pad": "' + "x" * (65 << 20) + '"}')
        os.symlink(big, path)
    elif kind != "missing":
        text = {"bad": "{not json", "deep": "[" * 100000, "total1": '{"metadata": {"total_size": 1}}',
                "totalneg": '{"metadata": {"total_size": -5}}', "totalstr": '{"metadata": {"total_size": "9"}}',
                "ok": '{"metadata": {"total_size": 16060522496}}'}[kind]
        with open(path, "w") as fh:
            fh.write(text)


@NEW_FAMILY
@given(GUARDED, st.sampled_from(["index", "log", "metrics", "config", "lmcache"]))
def test_guarded_reads(kind, where):
    # Every file kvcalc reads goes through the guarded reader (inputs/files.py): no FIFO waited on, no device read,
    # no file read past its cap, whatever the path names.
    model = os.path.join(WORK, "guarded-model")
    os.makedirs(model, exist_ok=True)
    with open(os.path.join(EXAMPLES_DIR, "configs", "gemma-3-27b.json")) as fh, \
            open(os.path.join(model, "config.json"), "w") as out:
        out.write(fh.read())
    target = os.path.join(WORK, f"guarded-{where}")
    _place(os.path.join(model, "model.safetensors.index.json") if where == "index" else target, kind)
    args = {"index": ["plan", os.path.join(model, "config.json"), "--gpu", "H100"],
            "log": ["check", os.path.join(model, "config.json"), "--log", target],
            "metrics": ["check", os.path.join(model, "config.json"), "--metrics", target],
            "config": ["plan", "--", "vllm", "serve", model, "--config", target + ".yaml"],
            "lmcache": ["plan", os.path.join(model, "config.json"), "--lmcache-config", target]}[where]
    if where == "config":
        _place(target + ".yaml", kind)
    code, out, err = run_bounded(args + ["--vllm-version", "0.33.0", "--format", "json"])
    contract(code, out, err)
    _place(os.path.join(model, "model.safetensors.index.json"), "missing")
