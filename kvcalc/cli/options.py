"""The commands' options: every layout flag of the key table added to a command as Typer options, the output
formats, LMCache's own config sources, the --check thresholds."""

from __future__ import annotations

from typing import Literal, Optional, get_args

import typer

from ..vocab.errors import KvcalcError, StartupRefusal, UnsupportedError
from .console import err, name_source, print_json, report_checks

# --format values as Literal types, which Typer turns into choices (an Enum class per command costs start-up time).
OutputFormat = Literal["table", "json"]


SweepFormat = Literal["table", "csv", "jsonl"]


VersionsFormat = Literal["table", "json", "markdown"]


OUTPUT_FORMATS = get_args(OutputFormat)


def format_option(help: str = "", **kw):
    return typer.Option("table", "--format", help=help or None, **kw)


class FlagCommand:
    """A command with the layout flags of the key table (vocab/keys.FLAGS) added as Typer options, built when Typer
    first reads its signature (only the command being run is built: start-up time is a target). Only the flags the
    command line uses are built: each Typer option costs ~0.4 M instructions of start-up (31 layout flags ~ 13 M
    of a 432 M budget); help and unknown options build them all."""

    def __init__(self, fn, exclude: tuple[str, ...], lists: bool):
        self.fn, self.exclude, self.lists = fn, exclude, lists
        self.__name__, self.__doc__, self.__module__ = fn.__name__, fn.__doc__, fn.__module__
        self.__globals__ = fn.__globals__
        self.selection: frozenset[str] | None = None  # the flags to build (None: all)
        self.own_selection: frozenset[str] | None = None  # the command's own options to build (None: all)
        self.built_for: tuple | None = None

    def select(self, args: list[str] | None) -> None:
        """Build only the flags `args` spells (each flag costs typer ~0.4 M instructions to build, and a command
        line names few of them): all of them when `args` is None (help, completion) or holds an option no flag of
        this command spells (click's own 'No such option' message, with its suggestions, needs the full list)."""
        from ..vocab.keys import FLAGS

        if args is None:
            self.selection = self.own_selection = None
            return
        spelled = {s: f.name for f in FLAGS.values() if f.name not in self.exclude
                   for pair in f.flag for s in pair.split("/")}
        own = self._own_spellings()
        names, own_names = set(), set()
        for a in args:
            if a == "--":
                break
            word = a.split("=", 1)[0]
            if word in spelled:
                names.add(spelled[word])
            elif word in own:
                own_names.add(own[word])
            elif word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
                self.selection = self.own_selection = None
                return
        self.selection, self.own_selection = frozenset(names), frozenset(own_names)

    def _own_spellings(self) -> dict[str, str]:
        """The command's own options: each spelling (typer's OptionInfo defaults carry them) -> the parameter."""
        import inspect

        return {s: name for name, p in inspect.signature(self.fn).parameters.items()
                for d in (getattr(p.default, "param_decls", None) or ()) for s in d.split("/")}

    @staticmethod
    def _optional(p) -> bool:
        """An own option Typer need not build when the line does not spell it: a plain default, no callback, no
        environment variable (each built option costs ~0.4 M instructions: `plan` has 20 of its own)."""
        info = p.default
        return (type(info).__name__ == "OptionInfo" and info.callback is None and not info.envvar
                and info.default is not ...)

    @property
    def _built(self):
        key = (self.selection, self.own_selection)
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
               for p in inspect.signature(self.fn).parameters.values() if p.name != "flags"
               and (self.own_selection is None or p.name in self.own_selection or not self._optional(p))]
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

    @property  # what Typer reads of a callable, built on first read (a property where functions have a dict)
    def __annotations__(self):  # type: ignore[override]
        return self._built[2]

    def __call__(self, **kwargs):
        import inspect

        from ..vocab.keys import FLAGS

        values = {name: kwargs.pop(name, None) for name, f in FLAGS.items() if name not in self.exclude}
        for name, p in inspect.signature(self.fn).parameters.items():  # the own options not built: their defaults
            if name != "flags" and name not in kwargs and self._optional(p):
                kwargs[name] = p.default.default
        return self.fn(flags=values, **kwargs)


def layout_flags(*, exclude: tuple[str, ...] = (), lists: bool = False):
    """Add every layout flag of the key table (vocab/keys.FLAGS) to a command as Typer options; the command gets them
    as one `flags` dict. With `lists`, sweep axes take comma lists (as strings)."""
    return lambda fn: FlagCommand(fn, exclude, lists)


def layout_overrides(flags: dict) -> dict:
    from ..inputs.sources import split_overrides

    base, own = split_overrides(flags, err)
    return {**base, **own}


MAX_SIZE = 1 << 62  # the largest budget kvcalc accepts (offload.cpu_bytes_to_use's bound)


def size_flag(flag: str, value: str) -> int:
    """A SIZE flag's bytes, or its one-line refusal (the value echoed cut at 40 characters)."""
    from ..vocab.units import SizeError, parse_size

    try:
        n = parse_size(value)
    except SizeError as e:
        raise KvcalcError(f"{flag}: expected {e}, got {value[:40]!r}") from None
    if n > MAX_SIZE:  # 1e999 bytes is no host's: past 2^62 the searches' float arithmetic overflows
        raise KvcalcError(f"{flag}: expected a size of at most 2^62 bytes (4 EiB), got {value[:40]!r}")
    return n


def given_paths(flags: dict) -> frozenset[str]:
    """The layout key paths the command line's own flags set (a log or a scrape does not override them)."""
    from ..vocab.keys import FLAGS

    return frozenset(FLAGS[name].path for name, value in flags.items() if value is not None and FLAGS[name].path)


def check_limits(host_memory: str | None, min_cpu_tokens: str | None, shm_size: str | None,
                 host_overhead: str | None, check: bool, server_memory: str | None = None) -> dict:
    """The gates' limits the flags give (tools/gates.Gates fields); a warning when they are given without --check,
    which alone uses them."""
    out: dict = {}
    if host_memory is None and shm_size is None and host_overhead is None and min_cpu_tokens is None \
            and server_memory is None:
        return out  # the common case: nothing to import (start-up time is a target)
    from ..inputs.values import Reader
    from ..tools.gates import Limit

    if host_memory is not None:
        out["host_memory"] = Limit(value=size_flag("--host-memory", host_memory), source="--host-memory (a node)")
    if server_memory is not None:
        out["server_memory"] = Limit(value=size_flag("--server-memory", server_memory), pod=True,
                                     source="--server-memory (the LMCache server's container)")
    if shm_size is not None:
        out["shm"] = Limit(value=size_flag("--shm-size", shm_size), source="--shm-size")
    if host_overhead is not None:
        out["overhead"] = size_flag("--host-overhead", host_overhead)
    if min_cpu_tokens is not None:
        out["min_cpu_tokens"] = Reader("--min-cpu-tokens", {}).human_int(min_cpu_tokens, "value", minimum=0)
    if out and not check:
        given = [f for f, v in (("--host-memory", host_memory), ("--shm-size", shm_size),
                                ("--host-overhead", host_overhead), ("--min-cpu-tokens", min_cpu_tokens),
                                ("--server-memory", server_memory)) if v]
        err(f"warning: {', '.join(given)} set --check's limits; without --check nothing is gated")
    return out


PANELS = ("input", "parallelism", "cache", "gpu", "offload", "release", "output", "checks")


def grouped_command_class():
    """typer's plain (non-rich) help lists every option in one block; kvcalc's commands group them by the panel
    each option names in the key table (input, parallelism, cache, offload, release, output, checks)."""
    from typer.core import TyperCommand

    class GroupedCommand(TyperCommand):
        def format_options(self, ctx, formatter) -> None:
            args: list = []
            groups: dict[str, list] = {}
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


def plan_or_refusal(loaded, check: bool, fmt: str):
    """The plan; or, when the selected release refuses the layout at start-up under --check, the failed startup
    gate (stdout: the refused report as JSON) and exit 1."""
    from ..pipeline import plan as make_plan

    try:
        return make_plan(loaded)
    except StartupRefusal as e:
        from ..tools.loading import loading_advice

        advice = loading_advice(loaded, e)  # a model that does not load: the TP x PP that does (issue 35)
        if advice:
            e.args = (f"{e.one_line()} {advice}",)
        if not check:
            name_source(e, loaded.source)
            raise
        from ..report.optional import RefusedReport
        from ..tools.gates import refused

        from ..engines.base import engine

        door = engine(loaded.engine)
        version = door.release(loaded)
        checks = refused(version, e.one_line(), door.title)
        if fmt == "json":
            print_json(RefusedReport(schema_version=1, vllm_version=version, source=loaded.source, checks=checks,
                                     engine=loaded.engine))
        report_checks(checks)
        raise typer.Exit(1) from None
    except KvcalcError as e:
        name_source(e, loaded.source)
        raise


def gate(p, loaded, limits: dict):
    """Every gate over the plan (tools/gates), with the limits the flags and the manifest gave."""
    from ..tools.gates import Gates, evaluate, unreadable_env, workers_on_node

    limits.pop("grant", None)
    unreadable = unreadable_env(p.pool, limits.pop("env_unknown", {}), limits.pop("env_unread", []))
    return evaluate(p.pool, None if p.logs is None else p.logs.kv_cache_size_tokens, p.behaviour.version,
                    Gates(unreadable=unreadable, weights_per_worker=offloaded_host_bytes(p, loaded), **limits),
                    engines_per_node=loaded.parallel.engines_per_node,
                    workers_per_node=workers_on_node(loaded.parallel), shm_checked=p.behaviour.shm_free_space_check,
                    shm_message_named=p.behaviour.shm_message_named,
                    engine=p.title)


def offloaded_host_bytes(p, loaded) -> int:
    """--cpu-offload-gb's host bytes on one worker: with a predicted budget, each offloaded parameter's pinned
    allocation as torch's caching host allocator rounds it (uva.py: p.data.to("cpu").pin_memory(); 0.14.0
    torch.empty_strided(pin_memory=True): backends/formulas.pinned_resident, as the KV pool's); else the flag's."""
    params = getattr(getattr(p, "memory", None), "offloaded_params", ())  # an engine without a predicted budget: none
    if not params:
        return loaded.host.cpu_offload_bytes
    from ..backends.formulas import pinned_resident

    return sum(pinned_resident(n, p.behaviour, loaded.host.pinned_round_threshold_mb) for n in params)


def releases_of(loaded, compare_versions: str | None):
    """--compare-versions: the same layout on each release (a Plan or that release's refusal)."""
    if compare_versions is None:
        return None
    from ..pipeline import compare

    versions = [v.strip() for v in compare_versions.split(",") if v.strip()]
    if not versions:
        raise KvcalcError("--compare-versions: expected releases such as 0.19.1,0.20.0,0.33.0")
    try:
        return compare(loaded, versions)
    except UnsupportedError as e:
        raise UnsupportedError(f"--compare-versions: {e.one_line()}") from None


def verified(p):
    from ..tools.verify import verify_plan

    return verify_plan(p)


def backends_of(loaded):
    """--compare-backends: every backend's pool for this layout's budget."""
    from ..pipeline import compare_backends as every_backend, require
    from ..report.report import backend_entries

    require(loaded, "compare-backends", "--compare-backends")
    if not loaded.offload.budget_given:
        raise KvcalcError(f"{loaded.source}: --compare-backends needs a budget: give --cpu-bytes or "
                          "--kv-offloading-size (or an LMCache config, or the LMCache server's --lmcache-server)")
    return backend_entries(every_backend(loaded))


def engines_of(loaded):
    """--compare-engines: the layout planned by vLLM's and by SGLang's rules (pipeline.compare_engines)."""
    from ..pipeline import compare_engines
    from ..report.engines import engine_entries

    return engine_entries(compare_engines(loaded))
