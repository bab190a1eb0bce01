"""The commands' options: every layout flag of the key table added to a command as Typer options, the output
formats, LMCache's own config sources, the --check thresholds."""

from __future__ import annotations

import os
from typing import Literal, Optional, get_args

import typer

from ..vocab.errors import KvcalcError
from .console import err

# --format values as Literal types, which Typer turns into choices (an Enum class per command costs start-up time).
OutputFormat = Literal["table", "json"]


SweepFormat = Literal["table", "csv", "jsonl"]


VersionsFormat = Literal["table", "json", "markdown"]


OUTPUT_FORMATS = get_args(OutputFormat)


def format_option(help: str = "", **kw):
    return typer.Option("table", "--format", help=help or None, **kw)


class FlagCommand:
    """A command with every layout flag of the key table (vocab/keys.FLAGS) added as Typer options, built when Typer
    first reads its signature (only the command being run is built: start-up time is a target)."""

    def __init__(self, fn, exclude: tuple[str, ...], lists: bool):
        self.fn, self.exclude, self.lists = fn, exclude, lists
        self.__name__, self.__doc__, self.__module__ = fn.__name__, fn.__doc__, fn.__module__
        self.__globals__ = fn.__globals__
        self.selection: frozenset[str] | None = None  # the flags to build (None: all)
        self.built_for: tuple | None = None

    def select(self, args: list[str] | None) -> None:
        """Build only the flags `args` spells (each flag costs typer ~0.4 M instructions to build, and a command
        line names few of them): all of them when `args` is None (help, completion) or holds an option no flag of
        this command spells (click's own 'No such option' message, with its suggestions, needs the full list)."""
        from ..vocab.keys import FLAGS

        if args is None:
            self.selection = None
            return
        spelled = {s: f.name for f in FLAGS.values() if f.name not in self.exclude
                   for pair in f.flag for s in pair.split("/")}
        # The command's own options (typer's OptionInfo defaults carry their spellings).
        own = {d for p in self.fn.__defaults__ or () for d in (getattr(p, "param_decls", None) or ())}
        names = set()
        for a in args:
            if a == "--":
                break
            word = a.split("=", 1)[0]
            if word in spelled:
                names.add(spelled[word])
            elif word.startswith("-") and len(word) > 1 and word not in own and not word[1:2].isdigit():
                self.selection = None
                return
        self.selection = frozenset(names)

    @property
    def _built(self):
        key = (self.selection,)
        if self.built_for is None or self.built_for[0] != key:
            self.built_for = (key, self._build())
        return self.built_for[1]

    def _build(self):
        import inspect

        from ..vocab.keys import FLAGS

        chosen = [f for f in FLAGS.values() if f.name not in self.exclude
                  and (self.selection is None or f.name in self.selection)]
        # The annotations are strings (postponed evaluation): evaluate each distinct one once (typing.get_type_hints
        # compiles a ForwardRef per parameter, ~30 us each, and start-up time is a target).
        seen: dict[str, object] = {}
        hints = {}
        for key, ann in self.fn.__annotations__.items():
            if isinstance(ann, str):
                if ann not in seen:
                    seen[ann] = eval(ann, self.fn.__globals__)  # noqa: S307 - kvcalc's own annotations
                ann = seen[ann]
            hints[key] = ann
        own = [p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(self.fn).parameters.values() if p.name != "flags"]
        added = []
        for f in chosen:
            listed = self.lists and f.sweep
            added.append(inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str if listed else f.cli_type],
                default=typer.Option(None, *f.flag, help=f"comma list. {f.help}" if listed else f.help,
                                     rich_help_panel=f.panel)))
        params = own + added
        return chosen, inspect.Signature(params), {p.name: p.annotation for p in params}

    @property
    def __signature__(self):
        return self._built[1]

    @property
    def __annotations__(self):
        return self._built[2]

    def __call__(self, **kwargs):
        from ..vocab.keys import FLAGS

        values = {name: kwargs.pop(name, None) for name, f in FLAGS.items() if name not in self.exclude}
        return self.fn(flags=values, **kwargs)


def layout_flags(*, exclude: tuple[str, ...] = (), lists: bool = False):
    """Add every layout flag of the key table (vocab/keys.FLAGS) to a command as Typer options; the command gets them
    as one `flags` dict. With `lists`, sweep axes take comma lists (as strings)."""
    return lambda fn: FlagCommand(fn, exclude, lists)


def split_overrides(flags: dict) -> tuple[dict, dict]:
    """(LMCache's own config sources as offload.lmcache.* overrides, the flags' overrides): a serve line's
    kv_connector_extra_config goes between the two, as LMCache applies it after its file and environment."""
    from ..inputs.values import overrides

    own = overrides(flags)
    config, env, env_file = (flags.get(n) for n in ("lmcache_config", "lmcache_env", "lmcache_env_file"))
    if config is None and not env and env_file is None:
        return {}, own
    from ..inputs.lmcache_sources import overrides as lmcache_sources
    from ..inputs.lmcache_sources import read_env_file

    environ: dict[str, str] = {}
    label = "environment"
    if env:
        environ.update(os.environ)
    if env_file is not None:
        environ.update(read_env_file(env_file))
        label = env_file if not env else f"environment and {env_file}"
    base, notes = lmcache_sources(config_file=config, environ=environ, env_label=label)
    for n in notes:
        err(f"note: {n}")
    which = "--lmcache-config" if config is not None else "--lmcache-env" if env else "--lmcache-env-file"
    base.setdefault("offload.backend", ("lmcache", which))
    return base, own


def layout_overrides(flags: dict) -> dict:
    base, own = split_overrides(flags)
    return {**base, **own}


def check_thresholds(host_memory: str | None, min_cpu_tokens: str | None, shm_size: str | None) -> dict:
    from ..inputs.values import Reader
    from ..vocab.units import SizeError, parse_size

    out: dict = {}
    for key, flag, value in (("host_memory", "--host-memory", host_memory), ("shm_size", "--shm-size", shm_size)):
        if value is None:
            continue
        try:
            out[key] = parse_size(value)
        except SizeError as e:
            raise KvcalcError(f"{flag}: expected {e}, got {value!r}") from None
    if min_cpu_tokens is not None:
        out["min_cpu_tokens"] = Reader("--min-cpu-tokens", {}).human_int(min_cpu_tokens, "value", minimum=0)
    return out


PANELS = ("input", "parallelism", "cache", "gpu", "offload", "release", "output", "checks")


def grouped_command_class():
    """typer's plain (non-rich) help lists every option in one block; kvcalc's commands group them by the panel
    each option names in the key table (input, parallelism, cache, offload, release, output, checks)."""
    from typer.core import TyperCommand

    class GroupedCommand(TyperCommand):
        def format_options(self, ctx, formatter) -> None:
            args, groups = [], {}
            for param in self.get_params(ctx):
                rv = param.get_help_record(ctx)
                if rv is None:
                    continue
                if param.param_type_name == "argument":
                    args.append(rv)
                else:
                    groups.setdefault(getattr(param, "rich_help_panel", None) or "help", []).append(rv)
            if args:
                with formatter.section("Arguments"):
                    formatter.write_dl(args)
            order = [p for p in PANELS if p in groups] + sorted(set(groups) - set(PANELS))
            for panel in order:
                with formatter.section(f"Options: {panel}"):
                    formatter.write_dl(groups[panel])

    return GroupedCommand


def from_manifest(k8s: str, container: str | None, overrides: dict, base: dict, thresholds: dict) -> tuple[str, dict]:
    """--k8s: the vLLM container's serve line, and LMCache's variables from its env (`base` with them under it);
    the pod's grants become the gates' limits unless given on the command line (`thresholds`, `overrides` set)."""
    import shlex

    from ..inputs.k8s import read as read_manifest

    grant = read_manifest(k8s, container=container)
    if grant.pinned_round_threshold_mb is not None:
        overrides.setdefault("host.pinned_round_threshold_mb", (grant.pinned_round_threshold_mb,
                                                                "PYTORCH_ALLOC_CONF in the manifest"))
    if grant.memory_limit is not None:
        thresholds.setdefault("host_memory", grant.memory_limit)
    thresholds.setdefault("shm_size", grant.shm_size_limit)
    for n in grant.notes:
        err(f"note: {n}")
    if grant.lmcache_env:
        # The container's LMCACHE_* variables are what LMCache reads there (under --lmcache-config / -env).
        from ..inputs.lmcache_sources import overrides as lmcache_sources

        pod_env, pod_notes = lmcache_sources(environ=grant.lmcache_env, env_label="the manifest's env")
        base = {**pod_env, **base}
        for n in pod_notes:
            err(f"note: {n}")
    return shlex.join(grant.argv), base


def load_input(layout: str | None, serve: str | None, overrides: dict, base: dict | None = None):
    """The layout a command plans: a layout file / config.json / model directory, or a `vllm serve` line.
    `base`: LMCache's file and environment (a serve line's kv_connector_extra_config overrides them)."""
    from ..inputs.yaml_layout import load_layout

    if (layout is None) == (serve is None):
        raise KvcalcError("give a layout file (or config.json, or model directory), or --serve / -- vllm serve ..., "
                          "one of them")
    if layout is not None:
        return load_layout(layout, overrides={**(base or {}), **overrides})
    from ..inputs.serve import load_serve, split

    loaded, notes = load_serve(split(serve), overrides=overrides, base=base)
    for n in notes:
        err(f"note: {n}")
    return loaded
