"""The inputs every command reads, the same way: a layout YAML, a config.json or its directory, a hub id in the
local Hugging Face cache, a `vllm serve` line (`--serve '…'` or `-- vllm serve …`), or a Kubernetes manifest
(`--k8s FILE|DIR [--container NAME]`). Exactly one of them."""

from __future__ import annotations

from typing import Any

import typer

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


def load_any(layout: str | None, serve: str | None, k8s: str | None, container: str | None, flags: dict,
             limits: dict | None = None):
    """The validated Layout of the one input given (inputs/sources.load; `limits`: the gates' limits a manifest
    adds, when asked); what the reading decides goes to stderr."""
    from ..inputs.sources import load

    return load(layout, serve=serve, k8s=k8s, container=container, flags=flags, limits=limits, say=err)


def raw_any(layout: str | None, serve: str | None, k8s: str | None, container: str | None, flags: dict, *,
            merge: bool = True) -> tuple[dict, dict, str, dict[str, Any]]:
    """(the expanded layout dict, its provenance, source, the overrides to validate it with) of the one input given
    (inputs/sources.raw): what `init` writes out and `sweep` plans point by point."""
    from ..inputs.sources import raw

    return raw(layout, serve, k8s, container, flags, merge=merge, say=err)
