"""A Kubernetes manifest -> the vLLM container's serve line, its environment, its image's release and what the pod
grants.

Input stage: finds the pod templates of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod,
LeaderWorkerSet (leader and worker templates) and KServe InferenceService (predictor) documents in a multi-document
YAML (a Helm-rendered file with `---` separators and comments, or a `kind: List`), picks the container that starts
the server (or the one `--container` names; init containers are not servers), reads its command as Kubernetes and
its shell run it (inputs/serve/shell.py), its environment as the kubelet builds it (inputs/k8s/env.py), its memory
limit and request, and what is mounted at /dev/shm.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...vocab.errors import LayoutError, UnsupportedError, known
from ...vocab.records import field, record
from .env import PodEnv, container_env, expect
from .pods import PodTemplate, documents, in_namespace, mounted_files, objects, templates
from ..serve.argv import k8s_expand, shell_script, unwrap, unwrap_env
from ..serve.shell import Command, run_script, split_script
from ..serve.servers import server_of


@record
class ShmGrant:
    """What the container gets at /dev/shm."""

    size: int | None  # bytes; None when the manifest does not say (host /dev/shm, no sizeLimit and no limit)
    how: str  # where the size comes from, for the report and the gate


@record
class ServerGrant:
    """A container that runs LMCache's MP server (`lmcache server ...`): its command line and memory limit."""

    source: str  # file: kind/name container 'name'
    argv: list  # its command, as the kubelet and its shell run it
    memory_limit: int | None  # resources.limits.memory, bytes
    same_pod: bool  # a sidecar of the vLLM container's pod (else another workload's)


@record
class PodGrant:
    source: str  # file: kind/name container 'name'
    argv: list  # the serve command line, from `vllm serve` on
    memory_limit: int | None  # resources.limits.memory, bytes
    memory_request: int | None  # resources.requests.memory, bytes (what the scheduler reserves, not a cap)
    shm: ShmGrant
    gpus: int | None  # resources.limits nvidia.com/gpu (or amd.com/gpu)
    image: str | None
    env: dict  # the server process's variables kvcalc can read
    env_unknown: dict  # variables whose value cannot be read: name -> why
    env_unread: list  # envFrom sources that cannot be read
    notes: list
    # path in the container -> text: the ConfigMaps / Secrets of the manifest it mounts
    files: dict = field(factory=dict)
    lmcache_server: ServerGrant | None = None  # a container of the manifest that runs the LMCache MP server

    @property
    def pinned_round_threshold_mb(self) -> int | None:
        """PYTORCH_ALLOC_CONF's pinned_max_round_threshold_mb: the option itself in the comma-separated
        `key:value` list (torch c10/core/AllocatorConfig.cpp parses that list), not a substring of another key."""
        for item in self.env.get("PYTORCH_ALLOC_CONF", "").split(","):
            key, _, value = item.partition(":")
            if key.strip() == "pinned_max_round_threshold_mb" and value.strip().isascii() \
                    and value.strip().isdigit() and len(value.strip()) <= 12:
                return int(value.strip())
        return None

    @property
    def use_simple_kv_offload(self) -> tuple | None:
        """VLLM_USE_SIMPLE_KV_OFFLOAD as the server process has it (the container's env, an `export`, a
        `VAR=1 vllm serve` prefix), read as vLLM's envs.py does (0.19.0:1666: bool(int(value))): (on, its text), or
        None when unset."""
        from ...vocab.releases.simple import ENV_VAR, env_enabled

        value = self.env.get(ENV_VAR)
        if value is None:
            return None
        try:
            return env_enabled(value), value
        except ValueError:
            raise LayoutError(self.source, f"env {ENV_VAR}", "an integer (vLLM reads bool(int(value)))",
                              value) from None

    @property
    def lmcache_env(self) -> dict:
        """The LMCACHE_* variables LMCache reads in the container."""
        return {k: v for k, v in self.env.items() if k.startswith("LMCACHE_")}


# Kubernetes quantities (apimachinery resource.Quantity): binary Ki Mi Gi Ti Pi Ei, decimal k M G T P E, exponent
# forms (1e9), and plain bytes. Exponents and lengths are bounded: a quantity above 2^63 bytes is no pod's.
_QUANTITY = re.compile(r"^\s*([0-9]{1,30}(?:\.[0-9]{1,30})?)"
                       r"(?:([eE][0-9]{1,2})|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m))?\s*$")
_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
MAX_QUANTITY = 1 << 63

DEFAULT_SHM = 64 << 20
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
# The servers kvcalc plans: vLLM's `vllm serve` and SGLang's `python -m sglang.launch_server` / `sglang serve`
# (inputs/serve/sglang.py). Other servers: named in the refusal rather than misread as a malformed vLLM line.
PLANNED = ("vLLM", "SGLang")


def quantity(value: Any, *, source: str, key: str) -> int:
    """A memory quantity in bytes, rounded up as the kubelet does for a fraction of a byte."""
    if isinstance(value, bool) or (isinstance(value, int) and value < 0):
        raise LayoutError(source, key, "a Kubernetes quantity such as 256Gi", value)
    if isinstance(value, int):
        if value >= MAX_QUANTITY:
            raise LayoutError(source, key, "a quantity below 2^63 bytes", f"{str(value)[:20]}...")
        return value
    m = _QUANTITY.match(str(value)) if isinstance(value, (str, float)) else None
    if not m or m.group(3) == "m":
        raise LayoutError(source, key, "a Kubernetes memory quantity such as 256Gi or 274877906944",
                          str(value)[:40] if isinstance(value, (str, float)) else type(value).__name__)
    whole, _, frac = m.group(1).partition(".")
    if m.group(2):
        mult = 10 ** int(m.group(2)[1:])
    else:
        mult = _BINARY.get(m.group(3)) or _DECIMAL.get(m.group(3)) or 1
    scale = 10 ** len(frac)
    out = -(-(int(whole) * scale + int(frac or "0")) * mult // scale)
    if out >= MAX_QUANTITY:
        raise LayoutError(source, key, "a quantity below 2^63 bytes", str(value)[:40])
    return out


def _argv(source: str, key: str, c: dict) -> list[str]:
    """command + args; without `command`, the image's ENTRYPOINT (vocab/releases/images.py) runs the args."""
    from ...vocab.releases.images import entrypoint

    words: list[str] = []
    if c.get("command") is None and isinstance(c.get("image"), str):
        words += entrypoint(c["image"])
        args = c.get("args")
        if words and isinstance(args, list) and [str(a) for a in args[:2]] in (["vllm", "serve"], ["serve"]):
            raise LayoutError(source, f"{key}.args", "the model and flags only (the image's ENTRYPOINT is already "
                                                     f"`{' '.join(words)}`)", " ".join(map(str, args[:3])),
                              detail="vLLM exits with 'unrecognized arguments: serve'")
    for part in ("command", "args"):
        items = expect(c.get(part), list, source, f"{key}.{part}", "a list of strings")
        for j, w in enumerate(items):
            if not isinstance(w, str):
                raise LayoutError(source, f"{key}.{part}[{j}]", "a string (quote numbers in YAML)",
                                  w if isinstance(w, (int, float, bool)) else type(w).__name__)
            words.append(w)
    return words


def _expanded(source: str, key: str, word: str, values: dict) -> str:
    from ..serve.argv import ExpansionTooLong
    from ..serve.shell import MAX_SCRIPT

    try:
        return k8s_expand(word, values, MAX_SCRIPT)
    except ExpansionTooLong:
        raise LayoutError(source, key, f"a word of at most {MAX_SCRIPT:,} characters after $(VAR) expansion",
                          f"more than {MAX_SCRIPT:,}") from None


def _commands(source: str, key: str, argv: list[str], env: PodEnv, files: dict, wanted=None) -> list[Command]:
    """The commands the container runs: one (the exec form), or a `sh -c` script's (those `wanted` takes: by
    default the ones that start a server)."""
    unknown = {n: why for n, why in env.unknown.items()}
    expanded = [_expanded(source, f"{key} command", w, env.values) for w in argv]
    script = shell_script(expanded)
    if script is None:
        missing = {f"$({n})": why for n, why in unknown.items() if any(f"$({n})" in w for w in expanded)}
        return [Command(words=tuple(expanded), unknown=missing, env=dict(env.values), env_unknown=dict(env.unknown))]
    text, params = script
    # Kubernetes leaves $(NAME) of an unreadable variable as written; the shell would then run NAME.
    for name in unknown:
        text = text.replace(f"$({name})", "${" + name + "}")
    return run_script(split_script(source, f"{key} script", text), env.values, unknown, params, files,
                      wanted=wanted or _starts_server, source=source, key=f"{key} script")


def _starts_server(words: tuple) -> bool:
    return server_of(unwrap(words)[0]) is not None


@record
class _Found:
    label: str
    pod: dict
    container: dict
    command: Command | None
    engine: str | None
    start: int
    env: PodEnv
    files: dict


def _servers(source: str, tpl: PodTemplate, c: dict, objs: dict, j: int) -> _Found:
    label, pod = tpl.label, tpl.spec
    objs = in_namespace(objs, tpl.namespace)
    key = f"{label} containers[{j}]"
    env = container_env(source, key, c, objs, tpl.env, tpl.unknown)
    hits = []
    files = mounted_files(source, pod, c, objs)
    for cmd in _commands(source, key, _argv(source, key, c), env, files):
        words, _ = unwrap(cmd.words)
        got = server_of(words)
        if got is not None:
            hits.append((cmd, got))
    vllm = [h for h in hits if h[1][0] == "vLLM"]
    if len(vllm) > 1:
        raise UnsupportedError(f"{source}: {label} container {c.get('name')!r}: {len(vllm)} `vllm serve` commands in "
                               "one container; kvcalc plans one engine per container")
    if vllm or hits:
        cmd, (engine, start) = (vllm or hits)[0]
        return _Found(label=label, pod=pod, container=c, command=cmd, engine=engine, start=start, env=env,
                      files=files)
    return _Found(label=label, pod=pod, container=c, command=None, engine=None, start=0, env=env, files=files)


def _the_container(path: str, docs: list[dict], container: str | None) -> _Found:
    """The one container that starts vLLM (or the one named: NAME, or WORKLOAD/NAME)."""
    objs = objects(path, docs)
    want_workload, _, want = (container or "").rpartition("/")
    found: list[_Found] = []
    for doc in docs:
        for tpl in templates(path, doc):
            label, pod = tpl.label, tpl.spec
            containers = expect(pod.get("containers"), list, path, f"{label}.containers", "a list of containers")
            names = [c.get("name") for c in containers if isinstance(c, dict)]
            dup = sorted({n for n in names if names.count(n) > 1 and n is not None})
            if dup:
                raise LayoutError(path, f"{label}.containers", "unique container names (the API server refuses "
                                                               "duplicates)", dup[0])
            for j, c in enumerate(containers):
                c = expect(c, dict, path, f"{label}.containers[{j}]", "a container (a mapping)")
                if container is not None and (c.get("name") != want or
                                              (want_workload and label.split()[0].split("/")[-1] != want_workload)):
                    continue
                hit = _servers(path, tpl, c, objs, j)
                if hit.engine is not None or container is not None:
                    found.append(hit)
    vllm = [f for f in found if f.engine in PLANNED or container is not None]
    if not vllm:
        other = [f for f in found if f.engine]
        if other:
            f = other[0]
            raise UnsupportedError(f"{path}: {f.label} container {f.container.get('name')!r} runs {f.engine}, not "
                                   "vLLM or SGLang: kvcalc plans `vllm serve` and `python -m sglang.launch_server`")
        what = f"a container named {container!r}" if container else "a container that runs `vllm serve`"
        raise LayoutError(path, "", f"{what} in a pod template (Deployment, StatefulSet, Pod, Job, LeaderWorkerSet, "
                                    "InferenceService, or a custom resource's)", detail=_why_none(docs))
    if len(vllm) > 1:
        listed = ", ".join(f"{f.label} {f.container.get('name')!r}" for f in vllm)
        raise LayoutError(path, "", "one vLLM container (name it with --container NAME or WORKLOAD/NAME)",
                          detail=listed[:200])
    hit = vllm[0]
    if hit.engine is None:
        raise LayoutError(path, f"{hit.label} container {hit.container.get('name')!r}",
                          "a command that runs `vllm serve`")
    if hit.engine not in PLANNED:
        raise UnsupportedError(f"{path}: {hit.label} container {hit.container.get('name')!r} runs {hit.engine}, not "
                               "vLLM or SGLang: kvcalc plans `vllm serve` and `python -m sglang.launch_server`")
    return hit


def _why_none(docs: list[dict]) -> str:
    """What the manifest holds instead: a container whose image's entrypoint kvcalc does not know, or no pod
    template at all."""
    from ...vocab.releases.images import entrypoint

    for doc in docs:
        for tpl in templates("", doc):
            for c in tpl.spec.get("containers") or []:
                if isinstance(c, dict) and c.get("command") is None and c.get("args") and \
                        not entrypoint(str(c.get("image"))):
                    return (f"{tpl.label} container {c.get('name')!r} gives args only, and kvcalc does not know the "
                            f"ENTRYPOINT of image {c.get('image')!r}: plan its line with --serve 'vllm serve …'")
    kinds = sorted({str(d.get("kind")) for d in docs})
    return f"{len(docs)} object(s) read ({', '.join(kinds)[:120]}), none with a container that starts vLLM"


def _mount_path(value) -> str:
    return os.path.normpath(value) if isinstance(value, str) and value.startswith("/") else str(value)


def _shm(path: str, label: str, pod: dict, c: dict, memory: int | None) -> ShmGrant:
    """What the container has at /dev/shm."""
    volumes: dict = {}
    for j, v in enumerate(expect(pod.get("volumes"), list, path, f"{label}.volumes", "a list of volumes")):
        v = expect(v, dict, path, f"{label}.volumes[{j}]", "a volume (a mapping)")
        if v.get("name") in volumes:
            raise LayoutError(path, f"{label}.volumes", "unique volume names (the API server refuses duplicates)",
                              v.get("name"))
        volumes[v.get("name")] = v
    mounts = [expect(m, dict, path, f"{label} volumeMounts[{j}]", "a volume mount")
              for j, m in enumerate(expect(c.get("volumeMounts"), list, path, f"{label} volumeMounts", "a list"))]
    at_shm = [m for m in mounts if _mount_path(m.get("mountPath")) == "/dev/shm"]
    if len(at_shm) > 1:
        raise LayoutError(path, f"{label} volumeMounts", "one mount at /dev/shm (the API server refuses two)",
                          len(at_shm))
    if at_shm:
        name = at_shm[0].get("name")
        vol = volumes.get(name)
        if vol is None:
            raise LayoutError(path, f"{label} volumeMounts", "a volume the pod defines", name)
        return _volume_shm(path, label, name, vol, memory)
    if pod.get("hostIPC") is True:
        # containerd CRI: a sandbox in the node's IPC namespace bind-mounts the node's /dev/shm.
        return ShmGrant(size=None, how="the node's /dev/shm (hostIPC: true), size unknown: pass --shm-size")
    # containerd's CRI and Docker give a container a 64 MiB /dev/shm unless something is mounted there.
    return ShmGrant(size=DEFAULT_SHM, how="nothing mounted at /dev/shm: the runtime's default 64 MiB")


def _volume_shm(path: str, label: str, name, vol: dict, memory: int | None) -> ShmGrant:
    if "hostPath" in vol:
        host = expect(vol["hostPath"], dict, path, f"{label}.volumes.{name}.hostPath", "a mapping")
        return ShmGrant(size=None, how=f"hostPath {host.get('path')} from the node, size unknown: pass --shm-size")
    if "emptyDir" not in vol:
        return ShmGrant(size=None, how=f"volume {name!r} is not an emptyDir, size unknown: pass --shm-size")
    empty = expect(vol["emptyDir"], dict, path, f"{label}.volumes.{name}.emptyDir", "a mapping")
    if empty.get("medium") != "Memory":
        return ShmGrant(size=None, how=f"emptyDir {name!r} on the node's disk (no medium: Memory), size unknown: "
                                       "pass --shm-size")
    if empty.get("sizeLimit") is not None:
        size = quantity(empty["sizeLimit"], source=path, key=f"{label}.volumes.{name}.emptyDir.sizeLimit")
        return ShmGrant(size=size, how=f"emptyDir {name!r} (medium: Memory) sizeLimit {empty['sizeLimit']}")
    if memory is not None:
        # kubelet (SizeMemoryBackedVolumes): a memory-backed emptyDir without sizeLimit is sized to the pod's
        # memory limit.
        return ShmGrant(size=memory, how=f"emptyDir {name!r} (medium: Memory) without sizeLimit: the pod's memory "
                                         "limit")
    return ShmGrant(size=None, how=f"emptyDir {name!r} (medium: Memory) with no sizeLimit and no memory limit: the "
                                   "node's allocatable memory, size unknown: pass --shm-size")


def _resources(path: str, label: str, c: dict) -> tuple[int | None, int | None, int | None]:
    """(limits.memory, requests.memory, GPUs) of the container."""
    res = expect(c.get("resources"), dict, path, f"{label}.resources", "a mapping")
    limits = expect(res.get("limits"), dict, path, f"{label}.resources.limits", "a mapping")
    requests = expect(res.get("requests"), dict, path, f"{label}.resources.requests", "a mapping")
    memory = [None if part.get("memory") is None else
              quantity(part["memory"], source=path, key=f"{label}.resources.{name}.memory")
              for name, part in (("limits", limits), ("requests", requests))]
    gpus = None
    for res_name in ("nvidia.com/gpu", "amd.com/gpu"):
        if limits.get(res_name) is not None:
            value = limits[res_name]
            if isinstance(value, str) and value.isdigit():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value > 1 << 16:
                raise LayoutError(path, f"{label}.resources.limits.{res_name}", "a whole number of GPUs", value)
            gpus = value
    return memory[0], memory[1], gpus


def _check_refs(path: str, label: str, argv: list[str], unknown: dict) -> list[str]:
    """Refuse a serve-line value kvcalc needs that holds an unreadable reference; notes for the others."""
    from ..serve.vllm import changes_kv

    notes = []
    for j, word in enumerate(argv):
        refs = [r for r in unknown if r in word]
        if not refs:
            continue
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
        elif j and argv[j - 1].startswith("-") and "=" not in argv[j - 1]:
            flag = argv[j - 1]
        else:
            flag = "MODEL"
        if flag == "MODEL" or changes_kv(flag):
            raise LayoutError(path, f"{label} {flag}", "a value kvcalc can read", word,
                              detail=f"{refs[0]}: {unknown[refs[0]]}")
        notes.append(f"{flag} {word}: {unknown[refs[0]]} (the flag does not change the KV cache)")
    return notes


def _starts_lmcache_server(words: tuple) -> bool:
    """A script's command that starts LMCache's MP server (serve/lmcache_mp.split_command reads it)."""
    from ..serve.lmcache_mp import split_command

    try:
        split_command(list(unwrap(words)[0]))
    except LayoutError:
        return False
    return True


def _lmcache_server(path: str, docs: list[dict], hit: _Found) -> ServerGrant | None:
    """The first container of the manifest (the vLLM pod's first) whose command starts LMCache's MP server."""
    from ..serve.lmcache_mp import split_command

    objs = objects(path, docs)
    tpls = sorted((tpl for doc in docs for tpl in templates(path, doc)), key=lambda t: t.spec is not hit.pod)
    for tpl in tpls:
        for j, c in enumerate(tpl.spec.get("containers") or []):
            if not isinstance(c, dict) or c is hit.container:
                continue
            key = f"{tpl.label} containers[{j}]"
            env = container_env(path, key, c, objs, tpl.env, tpl.unknown)
            for cmd in _commands(path, key, _argv(path, key, c), env, mounted_files(path, tpl.spec, c, objs),
                                 wanted=_starts_lmcache_server):
                words = list(unwrap(cmd.words)[0])
                try:
                    split_command(words)
                except LayoutError:
                    continue
                label = f"{tpl.label} container {c.get('name')!r}"
                return ServerGrant(source=f"{path}: {label}", argv=words, memory_limit=_resources(path, label, c)[0],
                                   same_pod=tpl.spec is hit.pod)
    return None


def read(path: str, *, container: str | None = None) -> PodGrant:
    """The vLLM container of a manifest and what its pod grants; refuses a manifest without one, or with two
    (unless `container` names one)."""
    docs = documents(path)
    hit = _the_container(path, docs, container)
    c, cmd = hit.container, known(hit.command, "the server's command")  # a container that runs a server has one
    label = f"{hit.label} container {c.get('name')!r}"
    words, added, cleared, removed = unwrap_env(cmd.words)
    argv = ["vllm", "serve", *words[hit.start:]]
    if hit.engine == "SGLang":  # SGLang's line, in its own spellings (inputs/serve/sglang.py)
        rest = words[hit.start:]
        argv = ["python3", "-m", "sglang.launch_server", *(rest[1:] if rest[:1] == ["serve"] else rest)]
    notes = _check_refs(path, label, argv, cmd.unknown)
    env = hit.env
    memory, request, gpus = _resources(path, label, c)
    if memory is None and request is not None:
        notes.append(f"{label} requests {request:,} B of memory and sets no limit: the request is what the "
                     "scheduler reserves, not a cap")
    image = c.get("image") if isinstance(c.get("image"), str) else None
    return PodGrant(source=f"{path}: {label}", argv=argv, memory_limit=memory, memory_request=request,
                    shm=_shm(path, label, hit.pod, c, memory), gpus=gpus, image=image,
                    env={**({} if cleared else {k: v for k, v in cmd.env.items() if k not in removed}), **added},
                    env_unknown={} if cleared else {k: v for k, v in cmd.env_unknown.items() if k not in removed},
                    env_unread=[] if cleared else list(env.unread),
                    notes=notes + env.notes, files=hit.files, lmcache_server=_lmcache_server(path, docs, hit))
