"""The inputs' front door: one of five sources -> a validated Layout, the same way for every command and for the
Python API: a layout YAML, a Hugging Face config.json or its directory, a hub id in the local Hugging Face cache, a
vLLM or SGLang server line, or a Kubernetes manifest (its container's line, environment, image and grants).

What the reading decides is said through `say` (one line each, `note: ...` / `warning: ...`, in the order it is
found); the CLI writes them to stderr, the Python API drops them unless given a callable."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..vocab.errors import KvcalcError, LayoutError, known

if TYPE_CHECKING:  # (a typing.Callable[...] alias built at import costs start-up time)
    from typing import Callable

    Say = Callable[[str], None]


def _quiet(line: str) -> None:
    """The default `say`: the Python API's caller did not ask for the notes."""


def one_input(layout: str | None, serve: str | None, k8s: str | None, container: str | None) -> None:
    given = [name for name, v in (("a layout", layout), ("--serve / -- vllm serve", serve), ("--k8s", k8s)) if v]
    if len(given) != 1:
        raise KvcalcError("give one input: a layout file (or config.json, model directory, hub id), --serve "
                          "'vllm serve ...' (or -- vllm serve ...), or --k8s FILE" +
                          (f"; got {' and '.join(given)}" if given else ""))
    if container is not None and k8s is None:
        raise KvcalcError("--container picks a container of --k8s FILE")


def split_overrides(flags: dict, say: Say = _quiet) -> tuple[dict, dict]:
    """(LMCache's own config sources as offload.lmcache.* overrides, the flags' overrides): a serve line's
    kv_connector_extra_config goes between the two, as LMCache applies it after its file and environment."""
    from .values import overrides

    own = overrides(flags)
    server = {} if flags.get("lmcache_server") is None else _server_line(flags["lmcache_server"])
    config, env, env_file = (flags.get(n) for n in ("lmcache_config", "lmcache_env", "lmcache_env_file"))
    if config is None and not env and env_file is None:
        return server, own
    from .layout.lmcache_sources import overrides as lmcache_sources
    from .layout.lmcache_sources import read_env_file

    environ: dict[str, str] = {}
    label = "environment"
    if env:
        environ.update(os.environ)
    if env_file is not None:
        environ.update(read_env_file(env_file))
        label = env_file if not env else f"environment and {env_file}"
    base, notes = lmcache_sources(config_file=config, environ=environ, env_label=label)
    for n in notes:
        say(f"note: {n}")
    which = "--lmcache-config" if config is not None else "--lmcache-env" if env else "--lmcache-env-file"
    base.setdefault("offload.backend", ("lmcache", which))
    return {**base, **server}, own


def _server_line(line: str) -> dict:
    """--lmcache-server: the LMCache MP server's command line, read as its own parser reads it
    (inputs/serve/lmcache_mp.py) -> offload.lmcache_mp.* overrides (kvcalc's own flags win over them)."""
    from .serve.lmcache_mp import parse
    from .serve.vllm import split

    return parse(split(line))


def from_manifest(k8s: str, container: str | None, overrides: dict, base: dict, limits: dict,
                  say: Say = _quiet) -> tuple[str, dict]:
    """--k8s: the container's server line, and LMCache's variables from its env (`base` with them under it); the
    pod's grants become the gates' limits unless given on the command line (`limits`, `overrides` set)."""
    import shlex

    from ..vocab.limits import Limit
    from .k8s.manifest import read as read_manifest

    grant = read_manifest(k8s, container=container)
    _release_of_image(grant, overrides, base, say)
    if grant.pinned_round_threshold_mb is not None:
        overrides.setdefault("host.pinned_round_threshold_mb", (grant.pinned_round_threshold_mb,
                                                                "PYTORCH_ALLOC_CONF in the manifest"))
    if grant.memory_limit is not None:
        limits.setdefault("host_memory", Limit(value=grant.memory_limit, pod=True,
                                               source=f"the pod's memory limit ({grant.source})"))
        # the container's cgroup memory.max: SGLang's HiCache sizes its host pool within its headroom
        base = {"host.cgroup_limit": (grant.memory_limit, f"the pod's memory limit ({grant.source})"), **base}
    else:
        asked = ("" if grant.memory_request is None else
                 f"; requests.memory {grant.memory_request:,} B is what the scheduler reserves, not a cap")
        limits.setdefault("host_memory", Limit(value=None, pod=True, source=f"the container sets no memory limit"
                                                                            f"{asked}: pass --host-memory"))
    limits.setdefault("shm", Limit(value=grant.shm.size, source=f"/dev/shm: {grant.shm.how}"))
    limits["env_unknown"], limits["env_unread"] = grant.env_unknown, grant.env_unread
    limits["grant"] = grant  # vllm-args --k8s writes the manifest's patch from it
    say(f"note: /dev/shm: {grant.shm.how}")
    for src in grant.env_unread:
        say(f"note: {src}: its variables are not read")
    for n in grant.notes:
        say(f"note: {n}")
    if "VLLM_USE_SIMPLE_KV_OFFLOAD" in grant.env_unknown:
        say(f"warning: VLLM_USE_SIMPLE_KV_OFFLOAD: {grant.env_unknown['VLLM_USE_SIMPLE_KV_OFFLOAD']}: which connector "
            "--kv-offloading-size starts (Simple or the OffloadingConnector) cannot be read; planned as unset")
    if grant.use_simple_kv_offload is not None:
        # The container's VLLM_USE_SIMPLE_KV_OFFLOAD decides what its --kv-offloading-size starts (the serve line's
        # own assignments, then kvcalc's flags, override it).
        on, text = grant.use_simple_kv_offload
        base = {"offload.use_simple_kv_offload": (on, f"VLLM_USE_SIMPLE_KV_OFFLOAD={text} (the manifest's env)"),
                **base}
    if grant.lmcache_server is not None:
        base = _server_container(grant.lmcache_server, base, limits, say)
    from .serve.engine_env import read_switches

    def fail(var: str, value: str) -> Exception:
        return LayoutError(grant.source, f"env {var}", "an integer (vLLM reads bool(int(value)))", value)

    switches: dict = {}
    read_switches(grant.env, switches, "the manifest's env", fail)
    base = {**switches, **base}  # under the serve line's own assignments and kvcalc's flags
    if grant.lmcache_env:
        # The container's LMCACHE_* variables are what LMCache reads there (under --lmcache-config / -env).
        from .layout.lmcache_sources import overrides as lmcache_sources

        pod_env, pod_notes = lmcache_sources(environ=grant.lmcache_env, env_label="the manifest's env",
                                             files=grant.files)
        base = {**pod_env, **base}
        for n in pod_notes:
            say(f"note: {n}")
    return shlex.join(grant.argv), base


def _server_container(srv, base: dict, limits: dict, say: Say) -> dict:
    """A container of the manifest that runs LMCache's MP server: its command line sets the server's settings (under
    --lmcache-server and kvcalc's flags); as a sidecar of the vLLM pod its memory limit is the server's gate limit
    (tools/gates.py: its pinned L1 is charged to its own container)."""
    from ..vocab.limits import Limit
    from .serve.lmcache_mp import parse

    say(f"note: the LMCache MP server: {srv.source}")
    if srv.same_pod:
        limits.setdefault("server_memory", Limit(
            value=srv.memory_limit, pod=True, source=f"the LMCache server container's memory limit ({srv.source})"
            if srv.memory_limit is not None else f"{srv.source} sets no memory limit: pass --server-memory"))
    else:
        say(f"note: the LMCache server runs in another workload ({srv.source}): its memory is gated with "
            "--server-memory, not the vLLM pod's limit")
    return {**parse(srv.argv, srv.source), **base}


def _release_of_image(grant, overrides: dict, base: dict, say: Say) -> None:
    """The image tag's engine release (and LMCache's), under the flags: the container's own server decides which
    release table reads the tag (serve/servers.line_reader)."""
    if grant.image is None:
        return
    from .serve.servers import line_reader

    line_reader(" ".join(grant.argv[:3]), grant.argv).image_release(grant.image, overrides, base, say,
                                                                    where=grant.source)


def read_line(serve: str, overrides: dict, base: dict | None, say: Say):
    """A server line -> its validated Layout, read with its own server's flags (serve/servers.line_reader)."""
    from ..vocab.records import replace
    from .serve.line import as_line
    from .serve.servers import line_reader
    from .serve.vllm import split

    serve = as_line(serve)
    argv = split(serve)
    loaded, notes = line_reader(serve, argv).load_line(argv, overrides=overrides, base=base)
    for n in notes:
        say(f"note: {n}")
    return replace(loaded, serve_argv=tuple(argv))


def load_input(layout: str | None, serve: str | None, overrides: dict, base: dict | None = None,
               say: Say = _quiet):
    """The layout a command plans: a layout file / config.json / model directory, or a server line. `base`:
    LMCache's file and environment (a serve line's kv_connector_extra_config overrides them)."""
    from .layout.read import load_layout

    if (layout is None) == (serve is None):
        raise KvcalcError("give a layout file (or config.json, or model directory), or --serve / -- vllm serve ..., "
                          "one of them")
    if layout is not None:
        return load_layout(layout, overrides={**(base or {}), **overrides})
    return read_line(known(serve, "the server line"), overrides, base, say)  # no layout: a line (checked above)


def load(layout: str | None = None, *, serve: str | None = None, k8s: str | None = None,
         container: str | None = None, flags: dict | None = None, limits: dict | None = None,
         say: Say = _quiet):
    """The validated Layout of the one input given. `flags`: kvcalc's layout flags by name (vocab/keys.FLAGS, as
    the CLI gets them: {"tensor_parallel_size": "2", ...}); `limits`: filled with the gates' limits a manifest's
    pod grants (tools/gates.Gates fields), when given."""
    one_input(layout, serve, k8s, container)
    base, overrides = split_overrides(flags or {}, say)
    if k8s is None:
        return load_input(layout, serve, overrides, base, say)
    got = {} if limits is None else limits
    serve, base = from_manifest(k8s, container, overrides, base, got, say)
    with _mounted(got["grant"].files):
        return load_input(layout, serve, overrides, base, say)


@contextmanager
def _mounted(files: dict):
    """While a manifest's serve line is read: its --config is a file the container mounts (serve/vllm_args.py)."""
    from .serve.vllm_args import CONTAINER_FILES

    token = CONTAINER_FILES.set(dict(files))
    try:
        yield
    finally:
        CONTAINER_FILES.reset(token)


def raw(layout: str | None, serve: str | None, k8s: str | None, container: str | None, flags: dict, *,
        merge: bool = True, say: Say = _quiet) -> tuple[dict, dict, str, dict[str, Any]]:
    """(the expanded layout dict, its provenance, source, the overrides to validate it with) of the one input given:
    what `init` writes out (`merge`: the overrides expanded into it) and `sweep` plans point by point (not merged:
    each point applies them with its own values)."""
    from .layout.read import read_input

    one_input(layout, serve, k8s, container)
    base, overrides = split_overrides(flags, say)
    if k8s is not None:
        got: dict = {}
        serve, base = from_manifest(k8s, container, overrides, base, got, say)
        with _mounted(got["grant"].files):
            return _raw_line(serve, overrides, base, merge, say)
    if serve is None:
        merged = {**base, **overrides}
        top, origin, source = read_input(known(layout, "the layout"), overrides=merged if merge else None)  # one_input
        return top, origin, source, merged
    return _raw_line(serve, overrides, base, merge, say)


def _raw_line(serve: str, overrides: dict, base: dict, merge: bool, say: Say) -> tuple[dict, dict, str, dict]:
    from .layout.read import expand
    from .serve.line import as_line
    from .serve.servers import line_reader
    from .serve.vllm import split

    serve = as_line(serve)
    argv = split(serve)
    reader = line_reader(serve, argv)
    release = overrides.get(reader.RELEASE_KEY, (None, ""))[0]
    top, from_line, notes = reader.parse(argv, release=release if isinstance(release, str) else None)
    for n in notes:
        say(f"note: {n}")
    merged = {**base, **from_line, **overrides}
    expanded, origin = expand(top, source=reader.SOURCE, overrides=merged if merge else None)
    return expanded, origin, reader.SOURCE, merged
