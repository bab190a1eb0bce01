"""The inputs: the only package that reads files. One front door, `load`, reads any input into a validated Layout
(inputs/sources.py); its wings: layout/ (the YAML layout, its schema and validation), hf/ (config.json, the HF cache,
weights), arch/ (the architecture table), serve/ (server lines, argv, shell), k8s/ (manifests), logs/ (start-up
logs). Importing this package imports none of them (start-up time is a target)."""

from __future__ import annotations


def load(layout: str | None = None, **kw):
    """Any input -> its validated Layout: a layout YAML, a config.json or model directory, a hub id in the local HF
    cache (`layout`), a vLLM or SGLang server line (`serve=`), a Kubernetes manifest (`k8s=`, `container=`); kvcalc's
    layout flags by name in `flags=`; `say=print` shows the notes. See inputs/sources.load."""
    from .sources import load as load_any

    return load_any(layout, **kw)
