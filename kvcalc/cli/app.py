"""The `kvcalc` commands: a thin Typer layer over the pipeline and the tools (console.main runs them)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Literal, Optional

import typer

from ..vocab.errors import KvcalcError, LayoutError, StartupRefusal, UnsupportedError
from ..vocab.units import SIZE_HELP
from .console import console, err, plain
from .options import (OutputFormat, SweepFormat, VersionsFormat, check_thresholds, format_option, layout_flags,
                      layout_overrides, split_overrides)


APP_SETTINGS = dict(
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="vLLM KV cache layout and CPU-offload block counts (old vs fixed formula), computed exactly.",
)
app = typer.Typer(add_completion=True, **APP_SETTINGS)


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"kvcalc {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def root_callback(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="print kvcalc's version and exit")) -> None:
    """kvcalc: vLLM's KV cache and CPU offload pool, before you start the server."""


@app.command()
@layout_flags()
def plan(
    layout: Optional[str] = typer.Argument(None, help="layout YAML (schema v1), a Hugging Face config.json, or its "
                                                      "directory; or `-- vllm serve MODEL ...`"),
    serve: Optional[str] = typer.Option(None, "--serve", help="a `vllm serve MODEL ...` command line, as one string "
                                        "(MODEL: a directory or a hub id in the local Hugging Face cache)",
                                        rich_help_panel="input"),
    fmt: OutputFormat = format_option("table for people, json for pipelines", rich_help_panel="output"),
    verify: bool = typer.Option(False, "--verify", help="rebuild every tensor and layer view on torch's meta device",
                                rich_help_panel="output"),
    compare_versions: Optional[str] = typer.Option(
        None, "--compare-versions", help="comma-separated releases: one column per release", rich_help_panel="release"),
    compare_backends: bool = typer.Option(False, "--compare-backends", help="native and LMCache side by side for the "
                                          "same host budget", rich_help_panel="offload"),
    check: bool = typer.Option(False, "--check", help="exit 1 if a gate fails (reasons on stderr)",
                               rich_help_panel="checks"),
    host_memory: Optional[str] = typer.Option(None, "--host-memory",
                                              help=f"--check: host memory of one node. SIZE: {SIZE_HELP}",
                                              rich_help_panel="checks"),
    min_cpu_tokens: Optional[str] = typer.Option(None, "--min-cpu-tokens",
                                                 help="--check: CPU tokens wanted (2M = 2,097,152; 2m = 2,000,000)",
                                                 rich_help_panel="checks"),
    k8s: Optional[str] = typer.Option(None, "--k8s", help="a Kubernetes manifest: plan its vLLM container's serve "
                                      "line; --check gates the pod's memory limit and /dev/shm", rich_help_panel="input"),
    container: Optional[str] = typer.Option(None, "--container", help="--k8s: the container to plan",
                                            rich_help_panel="input"),
    memory_log: Optional[str] = typer.Option(None, "--kv-cache-memory-from-log",
                                             help="a vLLM startup log: the GPU block count its 'Available KV cache "
                                                  "memory' line (and KV cache size line) pins down",
                                             rich_help_panel="input"),
    shm_size: Optional[str] = typer.Option(None, "--shm-size",
                                           help=f"--check: the node's or pod's /dev/shm size. SIZE: {SIZE_HELP}",
                                           rich_help_panel="checks"),
    flags: dict = None,
) -> None:
    """Rebuild vLLM's KV cache layout and compare the old and fixed CPU-offload block counts."""
    from ..pipeline import plan as make_plan
    from ..report.report import build_report

    base, overrides = split_overrides(flags)
    thresholds = check_thresholds(host_memory, min_cpu_tokens, shm_size)
    grant = None
    if k8s is not None:
        import shlex

        from ..inputs.k8s import read as read_manifest

        if layout is not None or serve is not None:
            raise KvcalcError("--k8s reads the serve line from the manifest: give no layout or --serve with it")
        grant = read_manifest(k8s, container=container)
        if grant.pinned_round_threshold_mb is not None:
            overrides.setdefault("host.pinned_round_threshold_mb", (grant.pinned_round_threshold_mb,
                                                                    "PYTORCH_ALLOC_CONF in the manifest"))
        serve = shlex.join(grant.argv)
        # The pod's grants are the gates' limits, unless given on the command line.
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
    elif container is not None:
        raise KvcalcError("--container picks a container of --k8s FILE")
    loaded = _load_input(layout, serve, overrides, base)
    if memory_log is not None:
        loaded = _gpu_blocks_from_log(loaded, memory_log)
    if check and loaded.offload.cpu_bytes_to_use is None and loaded.offload.backend == "native":
        raise KvcalcError(f"{loaded.source}: --check gates a CPU budget: give --cpu-bytes or --kv-offloading-size "
                          "(or offload.cpu_bytes_to_use)")
    try:
        p = make_plan(loaded)
    except StartupRefusal as e:
        if not check:
            _name_source(e, loaded.source)
            raise
        from ..tools.gates import refused
        from ..report.report import RefusedReport

        checks = refused(loaded.vllm_version, e.one_line())
        if fmt == "json":
            _print_json(RefusedReport(schema_version=1, vllm_version=loaded.vllm_version, source=loaded.source,
                                      checks=checks))
        _report_checks(checks)
        raise typer.Exit(1)
    except KvcalcError as e:
        _name_source(e, loaded.source)
        raise
    gates = None
    if check:
        from ..tools.gates import evaluate

        def gates(gpu, off, parallel, version):
            return evaluate(gpu, off, parallel, version, engines_per_node=loaded.parallel.engines_per_node,
                            shm_checked=p.behaviour.shm_free_space_check,
                            shm_message_named=p.behaviour.shm_message_named, **thresholds)
    releases = None
    if compare_versions is not None:
        from ..pipeline import compare

        versions = [v.strip() for v in compare_versions.split(",") if v.strip()]
        if not versions:
            raise KvcalcError("--compare-versions: expected releases such as 0.19.1,0.20.0,0.33.0")
        try:
            releases = compare(loaded, versions)
        except UnsupportedError as e:
            raise UnsupportedError(f"--compare-versions: {e.one_line()}") from None
    verified = None
    if verify:
        from ..tools.verify import verify_plan

        verified = verify_plan(p)
    backends = None
    if compare_backends:
        from ..pipeline import compare_backends as both
        from ..report.report import backend_entries

        if loaded.offload.backend == "native" and loaded.offload.cpu_bytes_to_use is None:
            raise KvcalcError(f"{loaded.source}: --compare-backends needs a budget: give --cpu-bytes or "
                              "--kv-offloading-size (or an LMCache config)")
        backends = backend_entries(both(loaded))
    report = build_report(p, releases=releases, gates=gates, verify=verified, backends=backends)
    for line in p.notes:
        err(f"note: {line}")
    other = _other_unit_reading(loaded, p)
    if other:
        err(f"note: {other}")
    for line in p.warnings:
        err(f"warning: {line}")
    RENDERERS[fmt](report)
    if check:
        _report_checks(report.checks)
        if not all(c.passed for c in report.checks):
            raise typer.Exit(1)
    elif report.error:
        # The document is on stdout; a release that would not start is exit 2 (README: exit codes).
        raise StartupRefusal(f"{loaded.source}: {report.error}")


def _load_input(layout: str | None, serve: str | None, overrides: dict, base: dict | None = None):
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


def _pod_block(pod: dict) -> str:
    """The container's resources and the /dev/shm volume a pod needs for one engine's CPU tier (YAML to paste);
    the memory limit still needs the process's own memory on top (weights staging, CUDA context, Python)."""
    lines = ["# the CPU tier's share; add the process's own memory (a few GiB) to the limit",
             "resources:", "  limits:", f"    memory: {pod['memory_limit']}"]
    if pod["shm_size_limit"]:
        lines += ["volumeMounts:", "  - {name: dshm, mountPath: /dev/shm}",
                  "volumes:", f"  - {{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {pod['shm_size_limit']}}}}}"]
    return "\n".join(lines) + "\n"


def _gpu_blocks_from_log(loaded, log: str):
    """The GPU side of a real start: the block count the log's lines allow (check --log's candidates, the one
    that reproduces every logged number), as num_gpu_blocks_override; the plan itself keeps the layout's release
    and max_model_len."""
    from ..inputs.files import read_bytes
    from ..tools.logcheck import check as check_log
    from ..vocab.records import replace

    text = read_bytes(log, "a readable file").decode("utf-8", "replace")
    if "Available KV cache memory" not in text:
        raise KvcalcError(f"{log}: --kv-cache-memory-from-log: no 'Available KV cache memory' line")
    probe = replace(loaded, cache=replace(loaded.cache, kv_cache_memory=None, num_gpu_blocks_override=None))
    # The block count is the logged run's: its release and max_model_len (when the log names them) decide which
    # candidate reproduces the logged lines.
    result = check_log(probe, text, source=log)
    lo, hi = result["num_gpu_blocks_range"]
    n = result["num_gpu_blocks"]
    pinned = "matched by its KV cache size line" if result["match"] else (
        f"the smallest of {lo:,}..{hi:,} its 0.01 GiB rounding allows" if lo != hi else "exact")
    err(f"note: {n:,} GPU blocks from {log} ({result['memory']}; {pinned})")
    return replace(loaded, cache=replace(loaded.cache, kv_cache_memory=None, num_gpu_blocks_override=n))


def _other_unit_reading(loaded, p) -> str | None:
    """units.md: a budget in a decimal unit (64GB = 64 x 10^9) gets a note with the binary reading's CPU count
    when it differs (64GB -> 30,517 blocks; 64GiB would give 32,768), the one vLLM's GiB flag would give."""
    import re

    from ..pipeline import plan as make_plan
    from ..vocab.records import replace
    from ..vocab.units import parse_size

    src = (loaded.offload.cpu_bytes_source or "").split(" (")[0]  # "64GB (--cpu-bytes)" -> "64GB"
    m = re.fullmatch(r"\s*([0-9][0-9_]*(?:\.[0-9_]*)?)\s*([KMGTPkmgtp])[Bb]\s*", src)
    r = p.offload.results.get(p.selected)
    if not m or r is None or p.offload.startup_error:
        return None
    binary = parse_size(f"{m.group(1)}{m.group(2).upper()}iB")
    alt = make_plan(replace(loaded, offload=replace(loaded.offload, cpu_bytes_to_use=binary)))
    n, n_alt = r.scheduler.num_blocks, alt.offload.results[alt.selected].scheduler.num_blocks
    if n == n_alt:
        return None
    unit = "chunks" if r.chunks else "blocks"
    return (f"{src.strip()} is decimal ({loaded.offload.cpu_bytes_to_use:,} B) -> {n:,} CPU {unit}; "
            f"{m.group(1)}{m.group(2).upper()}iB ({binary:,} B) would give {n_alt:,}")


def _name_source(e: KvcalcError, source: str) -> None:
    """Name the file for refusals raised deep in the core (startup rules, unsupported settings). A LayoutError
    names its own file already (the layout, or the log / scrape it was reading)."""
    if not isinstance(e, LayoutError) and not str(e).startswith(source):
        e.args = (f"{source}: {e}",)


@contextmanager
def _naming(source: str):
    """Refusals raised inside the block name the layout file."""
    try:
        yield
    except KvcalcError as e:
        _name_source(e, source)
        raise


def _report_checks(checks) -> None:
    for c in checks:
        if not c.passed:
            err(f"check failed: {c.name}: {c.reason}")


@app.command()
@layout_flags()
def init(
    config: Optional[str] = typer.Argument(None, help="a Hugging Face config.json, or its directory"),
    serve: Optional[str] = typer.Option(None, "--serve", help="a `vllm serve MODEL ...` line instead: each field's "
                                        "comment names the flag it came from", rich_help_panel="input"),
    flags: dict = None,
) -> None:
    """Write the layout YAML a config.json (or a vllm serve line) maps to, with where each value came from."""
    from ..inputs.yaml_layout import expand, read_input
    from ..inputs.validate import validate
    from ..report.yaml import render

    overrides = layout_overrides(flags)
    if (config is None) == (serve is None):
        raise KvcalcError("kvcalc init reads a config.json (or its directory), or --serve 'vllm serve ...': one of them")
    if serve is not None:
        from ..inputs.serve import SOURCE, parse, split

        base, from_line, notes = parse(split(serve))
        for n in notes:
            err(f"note: {n}")
        merged = {**from_line, **overrides}
        top, origin = expand(base, source=SOURCE, overrides=merged)
        source = SOURCE
        overrides = merged
    else:
        if not (os.path.isdir(config) or config.endswith(".json")):
            raise KvcalcError(f"{config}: kvcalc init reads a Hugging Face config.json or a directory holding one")
        top, origin, source = read_input(config, overrides=overrides)
    # Refuse here what `plan` would refuse about the model; the CPU budget may be filled in later.
    validate(top, source=source, overrides=overrides)
    what = "config key (or vllm serve flag)" if serve is not None else "config key"
    text = render(top, origin, header=f"kvcalc layout (schema v1), written by `kvcalc init` from {source}\n"
                                      f"Each comment names the {what} a value came from.")
    if "offload" not in top:
        text += ("# offload:\n#   cpu_bytes_to_use: 64GiB  # the CPU budget of one engine (without it `kvcalc plan` "
                 "shows the GPU side only)\n")
    sys.stdout.write(text)


@app.command()
def versions(fmt: VersionsFormat = format_option("markdown: the README's families table"),
             show_boundaries: bool = typer.Option(False, "--boundaries", help="every behaviour flag: its value, the "
                                                  "first and last release it holds for, and the file that shows it")
             ) -> None:
    """The vLLM release families kvcalc models, what changed in each, and which releases were read."""
    from ..vocab.releases.vllm import DEFAULT_VERSION, boundaries, families_markdown, releases_table

    if show_boundaries:
        rows = boundaries()
        if fmt == "json":
            import json

            sys.stdout.write(json.dumps({"boundaries": rows}, indent=2) + "\n")
            return
        from rich import box
        from rich.table import Table

        t = Table(title="Behaviour boundaries (each verified in the releases' wheels)", title_justify="left",
                  box=None if plain() else box.HEAVY_HEAD)
        for col in ("flag", "value", "first", "last", "evidence"):
            t.add_column(col, overflow="fold")
        for r in rows:
            t.add_row(r["flag"], str(r["value"]), r["first"] or "", r["last"] or "", r["evidence"])
        console(160).print(t)
        return
    if fmt == "markdown":
        sys.stdout.write(families_markdown())
        return
    rows = releases_table()
    if fmt == "json":
        import json

        from ..vocab.releases.lmcache import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES

        sys.stdout.write(json.dumps({"default_version": DEFAULT_VERSION, "families": rows,
                                     "lmcache": {"default_version": DEFAULT_LMCACHE_VERSION,
                                                 "releases_read": list(LMCACHE_RELEASES)}}, indent=2) + "\n")
        return
    from rich import box
    from rich.table import Table

    t = Table(title=f"vLLM families (default --vllm-version {DEFAULT_VERSION})", title_justify="left",
              box=None if plain() else box.HEAVY_HEAD)
    for col in ("family", "releases", "CPU count", "what to do", "read"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["family"], r["versions"], r["formula"], r["action"], ", ".join(r["releases_read"]))
    console(120).print(t)
    from ..vocab.releases.lmcache import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES

    sys.stdout.write(f"LMCache releases read (--lmcache-version, default {DEFAULT_LMCACHE_VERSION}): "
                     f"{', '.join(LMCACHE_RELEASES)}\n")


@app.command("vllm-args")
@layout_flags()
def vllm_args(
    layout: str = typer.Argument(..., help="layout YAML, a Hugging Face config.json, or its directory"),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    force: bool = typer.Option(False, "--force", help="exit 0 even when kvcalc calls the layout unsafe (out of "
                                                      "bounds, or vLLM would not start)", rich_help_panel="output"),
    k8s: bool = typer.Option(False, "--k8s", help="also print the pod's resources block: memory limit and the "
                                                  "/dev/shm emptyDir, in Gi", rich_help_panel="output"),
    flags: dict = None,
) -> None:
    """The exact vLLM flags for this layout, in both spellings of the CPU budget, ready to paste."""
    import shlex

    from ..inputs.yaml_layout import load_layout
    from ..tools.vllm_args import build, startable_plan

    loaded = load_layout(layout, overrides=layout_overrides(flags))
    with _naming(loaded.source):
        doc = build(*startable_plan(loaded))
    if fmt == "json":
        _print_json(doc)
    else:
        # A model directory's config.json names the model to serve (its directory); any other file does not
        # (examples/configs/jamba-1.5-mini.json sits among unrelated configs): a placeholder then.
        if os.path.basename(loaded.source) == "config.json":
            model = shlex.quote(os.path.dirname(loaded.source) or ".")
        else:
            model = "<model>"
            if loaded.source.endswith(".json"):
                doc["notes"].append(f"replace <model> with the model to serve ({loaded.source} is not a model "
                                    "directory's config.json)")
        for key in ("args_kv_offloading_size", "args_kv_transfer_config"):
            if doc[key]:
                sys.stdout.write(f"vllm serve {model} " + " ".join(shlex.quote(a) for a in doc[key]) + "\n")
        if doc["lmcache_yaml"]:
            sys.stdout.write("# LMCache config (the file LMCACHE_CONFIG_FILE names):\n" + doc["lmcache_yaml"])
            sys.stdout.write("# or as environment variables:\n" + "\n".join(doc["lmcache_env"]) + "\n")
        if k8s and doc["pod"]:
            sys.stdout.write(_pod_block(doc["pod"]))
    for n in doc["notes"]:
        err(f"note: {n}")
    unsafe = ("vLLM would not start with this layout" if not doc["starts"] else
              "the scheduler can hand out CPU blocks a worker never allocated (out of bounds)"
              if doc["out_of_bounds"] else None)
    if unsafe:
        err(f"warning: unsafe: {unsafe}; `kvcalc plan` shows why" + ("" if force else " (--force to exit 0)"))
        if not force:
            raise typer.Exit(1)


@app.command("size")
@layout_flags(exclude=("cpu_bytes", "kv_offloading_size"))
def size_cmd(
    layout: str = typer.Argument(..., help="layout YAML, a Hugging Face config.json, or its directory"),
    cpu_tokens: Optional[str] = typer.Option(None, "--cpu-tokens", help="tokens to hold (2M = 2,097,152)",
                                             rich_help_panel="offload"),
    cpu_blocks: Optional[int] = typer.Option(None, "--cpu-blocks", help="CPU blocks (chunks from 0.26) to hold",
                                             rich_help_panel="offload"),
    resident: Optional[str] = typer.Option(None, "--resident", help="the largest budget whose resident host memory "
                                           f"(one node) stays under this. SIZE: {SIZE_HELP}", rich_help_panel="offload"),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    flags: dict = None,
) -> None:
    """The smallest cpu_bytes_to_use that holds --cpu-tokens (or --cpu-blocks), or the largest whose resident host
    memory fits --resident, for every vLLM family, with the resident bytes and /dev/shm it implies."""
    from ..inputs.values import Reader
    from ..inputs.yaml_layout import load_layout
    from ..tools.sizing import size
    from ..vocab.units import SizeError, parse_size

    if [cpu_tokens, cpu_blocks, resident].count(None) != 2:
        raise KvcalcError("give exactly one of --cpu-tokens, --cpu-blocks or --resident")
    tokens = None if cpu_tokens is None else Reader("--cpu-tokens", {}).human_int(cpu_tokens, "", minimum=1)
    if cpu_blocks is not None and cpu_blocks < 1:
        raise KvcalcError("--cpu-blocks: expected a positive integer")
    limit = None
    if resident is not None:
        try:
            limit = parse_size(resident)
        except SizeError as e:
            raise KvcalcError(f"--resident: expected {e}, got {resident!r}") from None
    loaded = load_layout(layout, overrides=layout_overrides(flags))
    if loaded.offload.backend == "lmcache":
        return _size_lmcache(loaded, tokens, cpu_blocks, limit, fmt)
    loaded = _with_a_budget(loaded)  # sizing needs no budget
    rows = size(loaded, tokens=tokens, blocks=cpu_blocks, resident=limit)
    # The selected release's answer (it stands for its own family) at the top level; every family under `families`.
    own = next(r for r in rows if r.vllm_version == loaded.vllm_version)
    if own.startup_error and "more than a budget kvcalc accepts" in own.startup_error:
        raise KvcalcError(f"{loaded.source}: vLLM {own.vllm_version}: {own.startup_error}")
    if fmt == "json":
        from ..vocab.records import to_json

        answer = {k: v for k, v in to_json(own).items() if k != "family"}
        _print_json({"schema_version": 1, "source": loaded.source, "target_tokens": tokens,
                     "target_blocks": cpu_blocks, "target_resident_bytes": limit, "family": own.family,
                     **answer, "families": rows})
        return

    from ..report.table import Style, render_sizing

    console(140).print(render_sizing(rows, tokens, cpu_blocks, limit, Style(plain=plain())))


def _with_a_budget(loaded):
    """A native layout without a CPU budget, planned with a budget of 0 (for commands whose answer needs none)."""
    if loaded.offload.backend != "native" or loaded.offload.cpu_bytes_to_use is not None:
        return loaded
    from ..vocab.records import replace

    return replace(loaded, offload=replace(loaded.offload, cpu_bytes_to_use=0, cpu_bytes_source="0"))


def _size_lmcache(loaded, tokens, chunks, limit, fmt) -> None:
    from ..tools.sizing import size_lmcache

    row = size_lmcache(loaded, tokens=tokens, blocks=chunks, resident=limit)
    if fmt == "json":
        _print_json({"schema_version": 1, "source": loaded.source, "backend": "lmcache", "target_tokens": tokens,
                     "target_chunks": chunks, "target_resident_bytes": limit, "lmcache": row})
        return
    from ..report.table import Style, render_lmcache_sizing

    console(140).print(render_lmcache_sizing(row, tokens, chunks, limit, Style(plain=plain())))


@app.command()
@layout_flags(lists=True)
def sweep(
    layout: str = typer.Argument(..., help="layout YAML, a Hugging Face config.json, or its directory"),
    fmt: SweepFormat = format_option(rich_help_panel="output"),
    max_points: int = typer.Option(1_000_000, "--max-points", min=1,
                                   help="refuse a grid of more points than this, before planning any",
                                   rich_help_panel="output"),
    flags: dict = None,
) -> None:
    """One plan per combination of the list-valued flags; invalid combinations are rows with their error."""
    from ..inputs.yaml_layout import read_input
    from ..tools.sweep import COLUMNS, grid, run

    from ..vocab.keys import FLAGS, SWEEP_AXES

    def values(name: str, text: str | None) -> list | None:
        if text is None:
            return None
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if FLAGS[name].cli_type is int:
            if not parts or not all(p.isascii() and p.isdigit() for p in parts):  # not '²', which isdigit()
                raise KvcalcError(f"{FLAGS[name].named}: expected a comma-separated list of integers, got {text!r}")
            return [int(p) for p in parts]
        return parts

    axes = {f.name: values(f.name, flags.pop(f.name)) for f in SWEEP_AXES}
    base = layout_overrides(flags)
    total = 1
    for v in axes.values():
        total *= len(v) if v else 1
    if total > max_points:
        raise KvcalcError(f"sweep: the grid has {total:,} points, more than --max-points {max_points:,}")
    top, _, source = read_input(layout)
    points = grid(axes)  # lazy: the first row is out before the cross product is walked
    rows = run(top, source, points, base)
    if total > 200 and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import track

        rows = track(rows, total=total, description="sweep", console=Console(stderr=True), transient=True)
    if fmt == "jsonl":
        import json

        for row in rows:
            sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")
    elif fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    else:
        from rich.console import Console
        from rich.table import Table

        shown = [c for c in COLUMNS if c in ("family", "cpu_blocks_scheduler", "cpu_blocks_worst_worker",
                                               "out_of_bounds", "unused_bytes", "error") or axes.get(c)]
        t = Table(box=None, title=f"sweep of {source}: {total} point(s)", title_justify="left")
        for c in shown:
            t.add_column(c, overflow="fold")
        for row in rows:
            t.add_row(*("" if row[c] is None else (f"{row[c]:,}" if isinstance(row[c], int) and not
                                                    isinstance(row[c], bool) else str(row[c])) for c in shown))
        console(140).print(t)


@app.command("check")
@layout_flags()
def check_cmd(
    layout: str = typer.Argument(..., help="layout YAML, a Hugging Face config.json, or its directory"),
    log: Optional[str] = typer.Option(None, "--log", help="a vLLM startup log", rich_help_panel="input"),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="a Prometheus scrape of vLLM's /metrics (0.33: "
                                          "vllm:kv_offload_config_info, vllm:cache_config_info)",
                                          rich_help_panel="input"),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    flags: dict = None,
) -> None:
    """Compare the numbers kvcalc predicts with the ones a real vLLM server logged (--log) or publishes on
    /metrics (--metrics); exit 1 on a mismatch."""
    from ..inputs.files import read_bytes
    from ..inputs.yaml_layout import load_layout

    if log is None and metrics is None:
        raise KvcalcError("check: give --log LOG or --metrics FILE")
    if log is not None and metrics is not None:
        raise KvcalcError("check: give --log or --metrics, one at a time")
    vllm_version = flags["vllm_version"]
    loaded = load_layout(layout, overrides=layout_overrides(flags))
    if loaded.offload.backend == "lmcache" and metrics is not None:
        raise UnsupportedError(f"{loaded.source}: check --metrics compares the native connector's "
                               "vllm:kv_offload_config_info; LMCache publishes its own metrics")
    if log is not None:
        loaded = _with_a_budget(loaded)  # the log's lines are the GPU side's: no CPU budget is needed to match them
    source = log or metrics
    text = read_bytes(source, "a readable file").decode("utf-8", "replace")
    if metrics is not None:
        from ..tools.metricscheck import check as check_metrics

        with _naming(loaded.source):
            result = check_metrics(loaded, text, source=metrics)
        for n in result["notes"]:
            err(f"note: {n}")
        if fmt == "json":
            _print_json(result)
        else:
            from rich.table import Table

            t = Table(box=None, title=f"{metrics} against {loaded.source} (vLLM {result['vllm_version']})",
                      title_justify="left")
            for c in ("series", "engine", "label", "predicted", "scraped", "match"):
                t.add_column(c, overflow="fold")
            for r in result["rows"]:
                t.add_row(r["series"], r["engine"], r["label"], r["expected"], str(r["found"]),
                          "yes" if r["match"] else "NO")
            console(120).print(t)
        for r in result["rows"]:
            if not r["match"]:
                err(f"check failed: {metrics} line {r['line']}: {r['series']} label {r['label']}: expected "
                     f"{r['expected']!r}, found {r['found']!r}")
        if not result["match"]:
            raise typer.Exit(1)
        return
    from ..tools.logcheck import check

    if vllm_version is not None:
        text = "\n".join(line for line in text.splitlines() if "version" not in line)
    with _naming(loaded.source):
        result = check(loaded, text, source=log)
    if fmt == "json":
        _print_json(result)
    else:
        from rich.table import Table

        t = Table(box=None, title=f"{log} against {loaded.source} (vLLM {result['vllm_version']}; memory: "
                                  f"{result['memory']})", title_justify="left")
        for c in ("quantity", "predicted", "logged", "match"):
            t.add_column(c)
        for r in result["rows"]:
            t.add_row(r["quantity"], r["predicted"], r["logged"], {True: "yes", False: "NO"}[r["match"]])
        console(120).print(t)
    if not result["rows"]:
        raise KvcalcError(f"{log}: no KV cache line found (GPU KV cache size / Maximum concurrency)")
    if not result["match"]:
        err(f"check failed: {log} does not match the prediction for {loaded.source}")
        raise typer.Exit(1)


@app.command()
def schema(kind: Literal["layout", "output"] = typer.Argument(
        ..., help="layout (the YAML input) or output (the JSON output)")) -> None:
    """Print the JSON Schema of the layout YAML or of the JSON output."""
    import json

    from ..inputs.schema import layout_schema
    from ..report.schema import output_schema

    doc = layout_schema() if kind == "layout" else output_schema()
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _print_table(report) -> None:
    from ..report.table import Style, render, render_comparison

    style = Style(plain=plain())
    out = console(100)
    for item in render(report, style):
        out.print(item)
    if report.releases is not None:
        out.print(render_comparison(report, style))
    if report.verify is not None:
        out.print(report.verify.summary)


def _print_json(report) -> None:
    from ..report.json import render

    sys.stdout.write(render(report))


# Every --format value maps to exactly one renderer (a test walks the enum).
RENDERERS = {"table": _print_table, "json": _print_json}
