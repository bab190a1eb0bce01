"""The inputs every command reads, the same way: a layout YAML, a config.json or its directory, a hub id in the
local Hugging Face cache, a `vllm serve` line (`--serve '…'` or `-- vllm serve …`), or a Kubernetes manifest
(`--k8s FILE|DIR [--container NAME]`). Exactly one of them."""

from __future__ import annotations

from typing import Any

import typer

from ..vocab.errors import KvcalcError
from .console import err

LAYOUT_HELP = ("layout YAML, a Hugging Face config.json or its directory, or a hub id in the local HF cache; or "
               "`-- vllm serve MODEL ...`")


def serve_option():
    return typer.Option(None, "--serve", help="a `vllm serve MODEL ...` command line, as one string (MODEL: a "
                        "directory or a hub id in the local Hugging Face cache)", rich_help_panel="input")


def k8s_option():
    return typer.Option(None, "--k8s", help="a Kubernetes manifest (or a directory of them): its vLLM container's "
                        "serve line, environment, image release and pod limits", rich_help_panel="input")


def container_option():
    return typer.Option(None, "--container", help="--k8s: the container to plan (NAME or WORKLOAD/NAME)",
                        rich_help_panel="input")


def one_input(layout: str | None, serve: str | None, k8s: str | None, container: str | None) -> None:
    given = [name for name, v in (("a layout", layout), ("--serve / -- vllm serve", serve), ("--k8s", k8s)) if v]
    if len(given) != 1:
        raise KvcalcError("give one input: a layout file (or config.json, model directory, hub id), --serve "
                          "'vllm serve ...' (or -- vllm serve ...), or --k8s FILE" +
                          (f"; got {' and '.join(given)}" if given else ""))
    if container is not None and k8s is None:
        raise KvcalcError("--container picks a container of --k8s FILE")


def load_any(layout: str | None, serve: str | None, k8s: str | None, container: str | None, flags: dict,
             limits: dict | None = None):
    """The validated Layout of the one input given (`limits`: the gates' limits a manifest adds, when asked)."""
    from .options import from_manifest, load_input, split_overrides

    one_input(layout, serve, k8s, container)
    base, overrides = split_overrides(flags)
    if k8s is not None:
        serve, base = from_manifest(k8s, container, overrides, base, {} if limits is None else limits)
    return load_input(layout, serve, overrides, base)


def raw_any(layout: str | None, serve: str | None, k8s: str | None, container: str | None, flags: dict, *,
            merge: bool = True) -> tuple[dict, dict, str, dict[str, Any]]:
    """(the expanded layout dict, its provenance, source, the overrides to validate it with) of the one input given:
    what `init` writes out (`merge`: the overrides expanded into it) and `sweep` plans point by point (not merged:
    each point applies them with its own values)."""
    from ..inputs.layout.read import expand, read_input
    from .options import from_manifest, split_overrides

    one_input(layout, serve, k8s, container)
    base, overrides = split_overrides(flags)
    if k8s is not None:
        serve, base = from_manifest(k8s, container, overrides, base, {})
    if serve is None:
        merged = {**base, **overrides}
        top, origin, source = read_input(layout, overrides=merged if merge else None)
        return top, origin, source, merged
    from ..inputs.serve.vllm import SOURCE, parse, split

    argv = split(serve)
    if "sglang" in serve:  # issue 24: SGLang's server line, read with SGLang's flags (inputs/serve/sglang.py)
        from ..inputs.serve.sglang import is_sglang

        if is_sglang(argv):
            from ..inputs.serve.sglang import SOURCE, parse as parse_sglang  # noqa: F811

            top, from_line, notes = parse_sglang(argv)
    if SOURCE == "vllm serve":
        release = overrides.get("vllm.version", (None, ""))[0]
        top, from_line, notes = parse(argv, release=release if isinstance(release, str) else None)
    for n in notes:
        err(f"note: {n}")
    merged = {**base, **from_line, **overrides}
    expanded, origin = expand(top, source=SOURCE, overrides=merged if merge else None)
    return expanded, origin, SOURCE, merged
