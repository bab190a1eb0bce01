"""The `kvcalc` command: a thin Typer layer over the tools and the pipeline."""

from .app import main

__all__ = ["main"]
