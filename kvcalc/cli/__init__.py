"""The `kvcalc` command: a thin Typer layer over the tools and the pipeline."""

from .main import main

__all__ = ["main"]
