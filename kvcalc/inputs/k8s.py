"""A Kubernetes manifest -> the vLLM container's serve line, its environment and what the pod grants.

Input stage: finds the pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod,
LeaderWorkerSet (leader and worker templates) or KServe InferenceService (predictor) in a multi-document YAML
(a Helm-rendered file with `---` separators and comments included), picks the container that runs `vllm serve`
(or the one `--container` names), and reads its memory limit and the `/dev/shm` emptyDir `sizeLimit`.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from ..vocab.errors import LayoutError
from ..vocab.records import record


@record
class PodGrant:
    source: str  # file: kind/name container
    argv: list  # the serve command line, from `vllm serve` on
    memory_limit: int | None  # resources.limits.memory, bytes
    shm_size_limit: int | None  # the emptyDir (medium: Memory) mounted at /dev/shm: sizeLimit, bytes
    shm_mounted: bool  # an emptyDir is mounted at /dev/shm at all
    pinned_round_threshold_mb: int | None  # PYTORCH_ALLOC_CONF pinned_max_round_threshold_mb
    notes: list
    lmcache_env: dict  # the container's LMCACHE_* variables with a literal value (what LMCache reads)
    use_simple_kv_offload: tuple | None = None  # (VLLM_USE_SIMPLE_KV_OFFLOAD read as vLLM does, its text), or None


# Kubernetes quantities (apimachinery resource.Quantity): binary Ki Mi Gi Ti Pi Ei, decimal k M G T P E, exponent
# forms (1e9), and plain bytes.
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)(?:([eE][0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m))?\s*$")
_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}


DEFAULT_SHM = 64 << 20


def quantity(value: Any, *, source: str, key: str) -> int:
    """A memory quantity in bytes, rounded up as the kubelet does for a fraction of a byte."""
    if isinstance(value, bool):
        raise LayoutError(source, key, "a Kubernetes quantity such as 256Gi", value)
    if isinstance(value, int):
        return value
    m = _QUANTITY.match(str(value))
    if not m or m.group(3) == "m":
        raise LayoutError(source, key, "a Kubernetes memory quantity such as 256Gi or 274877906944", value)
    whole, _, frac = m.group(1).partition(".")
    if m.group(2):
        mult = 10 ** int(m.group(2)[1:])
    else:
        mult = _BINARY.get(m.group(3)) or _DECIMAL.get(m.group(3)) or 1
    scale = 10 ** len(frac)
    return -(-(int(whole) * scale + int(frac or "0")) * mult // scale)


def _pod_specs(doc: dict) -> list[tuple[str, dict]]:
    """(label, pod spec) of every pod template a workload document holds."""
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name", "?")
    spec = doc.get("spec") or {}
    label = f"{kind}/{name}"
    if kind == "Pod":
        return [(label, spec)]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return [(label, ((spec.get("template") or {}).get("spec")) or {})]
    if kind == "CronJob":
        tpl = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {})
        return [(label, tpl.get("spec") or {})]
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        out = []
        for part in ("leaderTemplate", "workerTemplate"):
            if isinstance(lwt.get(part), dict):
                out.append((f"{label} {part}", lwt[part].get("spec") or {}))
        return out
    if kind == "InferenceService":
        pred = spec.get("predictor") or {}
        out = [(f"{label} predictor", pred)] if pred.get("containers") else []
        if isinstance(pred.get("model"), dict):  # predictor.model: one container-like block
            m = dict(pred["model"])
            m.setdefault("name", "kserve-container")
            out.append((f"{label} predictor.model", {"containers": [m], "volumes": pred.get("volumes") or []}))
        return out
    return []


def _serve_argv(container: dict) -> list[str] | None:
    """The container's command + args from `vllm serve` on (a shell -c string is split), or None."""
    parts = [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]
    words: list[str] = []
    for p in parts:
        words += shlex.split(p) if " " in p.strip() else [p]
    for i in range(len(words) - 1):
        if os.path.basename(words[i]) == "vllm" and words[i + 1] == "serve":
            while i and "=" in words[i - 1] and words[i - 1].split("=", 1)[0].isidentifier():
                i -= 1  # `VLLM_USE_SIMPLE_KV_OFFLOAD=1 vllm serve ...` in a shell string: the line's environment
            tail = words[i:]
            for stop in ("&&", ";", "||", "|"):
                if stop in tail:
                    tail = tail[:tail.index(stop)]
            return tail
    for i, w in enumerate(words):  # python -m vllm.entrypoints.openai.api_server --model M ...
        if w == "vllm.entrypoints.openai.api_server":
            return ["vllm", "serve", *words[i + 1:]]
    return None


def _documents(path: str) -> list:
    """The manifest's non-empty YAML documents, read strictly (files.strict_loader)."""
    import yaml

    from .files import MAX_INPUT_BYTES, StrictYAMLError, read_bytes, strict_loader

    raw = read_bytes(path, "a readable Kubernetes manifest")
    if len(raw) > MAX_INPUT_BYTES:
        raise LayoutError(path, "", f"a manifest of at most {MAX_INPUT_BYTES} bytes")
    try:
        return [d for d in yaml.load_all(raw.decode("utf-8", "replace"), Loader=strict_loader(False)) if d]
    except StrictYAMLError as e:
        raise LayoutError(path, f"line {e.line}", e.expected, e.got, detail=e.detail) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise LayoutError(path, f"line {mark.line + 1}" if mark else "", "valid YAML",
                          detail=getattr(e, "problem", None) or "") from None


def _the_container(path: str, docs: list, container: str | None) -> tuple[str, dict, dict, list[str]]:
    """(workload label, pod spec, container, serve argv) of the one vLLM container (or the one named)."""
    found = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        for label, pod in _pod_specs(doc):
            for c in pod.get("containers") or []:
                if not isinstance(c, dict):
                    continue
                if container is not None and c.get("name") != container:
                    continue
                argv = _serve_argv(c)
                if argv is not None or container is not None:
                    found.append((label, pod, c, argv))
    if not found:
        what = f"a container named {container!r}" if container else "a container that runs `vllm serve`"
        raise LayoutError(path, "", f"{what} in a Deployment, StatefulSet, Pod, Job, LeaderWorkerSet or "
                                    "InferenceService", detail=f"{len(docs)} document(s) read")
    if len(found) > 1 and container is None:
        names = ", ".join(f"{label} {c.get('name')!r}" for label, _, c, _ in found)
        raise LayoutError(path, "", "one vLLM container (name it with --container)", detail=names[:200])
    label, pod, c, argv = found[0]
    if argv is None:
        raise LayoutError(path, f"{label} container {c.get('name')!r}", "a command that runs `vllm serve`")
    return label, pod, c, argv


def _shm(path: str, pod: dict, c: dict, memory: int | None, notes: list[str]) -> tuple[int | None, bool]:
    """(the /dev/shm size the container gets, whether a memory-backed emptyDir is mounted there)."""
    shm_limit, mounted = None, False
    volumes = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for mount in c.get("volumeMounts") or []:
        if isinstance(mount, dict) and mount.get("mountPath") == "/dev/shm":
            vol = volumes.get(mount.get("name")) or {}
            empty = vol.get("emptyDir")
            if isinstance(empty, dict) and empty.get("medium") == "Memory":
                mounted = True
                if empty.get("sizeLimit") is not None:
                    shm_limit = quantity(empty["sizeLimit"], source=path, key=f"volumes.{mount.get('name')}"
                                                                               ".emptyDir.sizeLimit")
    if not mounted:
        # containerd's CRI and Docker give a container a 64 MiB /dev/shm unless a memory-backed emptyDir is mounted.
        notes.append("no emptyDir (medium: Memory) is mounted at /dev/shm: the container gets the runtime's "
                     "default 64 MiB")
        return DEFAULT_SHM, False
    return (memory if shm_limit is None else shm_limit), True  # no sizeLimit: bounded by the pod's memory


def _env(c: dict, notes: list[str]) -> tuple[int | None, dict]:
    """(PYTORCH_ALLOC_CONF's pinned_max_round_threshold_mb, the LMCACHE_* variables) of the container's env."""
    threshold, lmcache_env = None, {}
    for env in c.get("env") or []:
        if isinstance(env, dict) and env.get("name") == "PYTORCH_ALLOC_CONF" and isinstance(env.get("value"), str):
            m = re.search(r"pinned_max_round_threshold_mb:([0-9]+)", env["value"])
            if m:
                threshold = int(m.group(1))
        if isinstance(env, dict) and isinstance(env.get("name"), str) and env["name"].startswith("LMCACHE_"):
            if isinstance(env.get("value"), (str, int, float)) and not isinstance(env.get("value"), bool):
                lmcache_env[env["name"]] = str(env["value"])
            else:
                notes.append(f"{env['name']} has no literal value (valueFrom): not read")
    return threshold, lmcache_env


def _simple_env(path: str, label: str, c: dict, notes: list[str]) -> tuple | None:
    """VLLM_USE_SIMPLE_KV_OFFLOAD from the container's env, read as envs.py does (0.19.0:1666: bool(int(value)))."""
    from ..vocab.releases.simple import ENV_VAR, env_enabled

    for env in c.get("env") or []:
        if not (isinstance(env, dict) and env.get("name") == ENV_VAR):
            continue
        value = env.get("value")
        if value is None:
            notes.append(f"{ENV_VAR} has no literal value (valueFrom): not read")
            return None
        try:
            return env_enabled(str(value)), str(value)
        except ValueError:
            raise LayoutError(path, f"{label} container {c.get('name')!r} env {ENV_VAR}", "an integer (vLLM reads "
                              "bool(int(value)))", value) from None
    return None


def read(path: str, *, container: str | None = None) -> PodGrant:
    """The vLLM container of a manifest and what its pod grants; refuses a manifest without one, or with two
    (unless `container` names one)."""
    label, pod, c, argv = _the_container(path, _documents(path), container)
    limits = ((c.get("resources") or {}).get("limits") or {})
    memory = quantity(limits["memory"], source=path, key=f"{label}.resources.limits.memory") \
        if limits.get("memory") is not None else None
    notes: list[str] = []
    threshold, lmcache_env = _env(c, notes)
    shm_limit, mounted = _shm(path, pod, c, memory, notes)
    return PodGrant(source=f"{path}: {label} container {c.get('name')!r}", argv=argv, memory_limit=memory,
                    shm_size_limit=shm_limit, shm_mounted=mounted, pinned_round_threshold_mb=threshold, notes=notes,
                    lmcache_env=lmcache_env, use_simple_kv_offload=_simple_env(path, label, c, notes))
