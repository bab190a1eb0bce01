"""The `kvcalc` commands: a thin Typer layer over the pipeline and the tools (console.main runs them)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Literal, Optional

import typer

from ..vocab.errors import KvcalcError, StartupRefusal, known
from ..vocab.units import SIZE_HELP
from .console import (RENDERERS, console, err, naming, plain, print_json, print_summary, report_checks,
                      write_sweep)
from .drawing import chart_option, check_drawing, draw, plot_option
from .inputs import LAYOUT_HELP, container_option, k8s_option, load_any, raw_any, serve_option
from .options import (OutputFormat, SweepFormat, VersionsFormat, backends_of, check_limits, engines_of,
                      format_option, gate, given_paths, layout_flags, plan_or_refusal, releases_of, size_flag,
                      verified)

if TYPE_CHECKING:
    from collections.abc import Iterable


APP_SETTINGS: dict[str, Any] = dict(
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
    layout: Optional[str] = typer.Argument(None, help=LAYOUT_HELP),
    serve: Optional[str] = serve_option(),
    fmt: OutputFormat = format_option("table for people, json for pipelines", rich_help_panel="output"),
    verify: bool = typer.Option(False, "--verify", help="rebuild every tensor and layer view on torch's meta device",
                                rich_help_panel="output"),
    summary: bool = typer.Option(False, "--summary", help="the table's first screen only: the title, Summary, GPU "
                                 "lines and Verdict (and the Checks with --check)", rich_help_panel="output"),
    compare_versions: Optional[str] = typer.Option(
        None, "--compare-versions", help="comma-separated releases: one column per release", rich_help_panel="release"),
    compare_backends: bool = typer.Option(False, "--compare-backends", help="native, LMCache, the LMCache MP server "
                                          "and simple side by side for the same host budget",
                                          rich_help_panel="offload"),
    compare_engines: bool = typer.Option(False, "--compare-engines", help="vLLM and SGLang side by side on the same "
                                         "model, GPUs and host", rich_help_panel="release"),
    plot: Optional[str] = plot_option(" (with --compare-versions or --compare-engines)"),
    chart: bool = chart_option(" (with --compare-versions or --compare-engines)"),
    check: bool = typer.Option(False, "--check", help="exit 1 if a gate fails (reasons on stderr)",
                               rich_help_panel="checks"),
    host_memory: Optional[str] = typer.Option(None, "--host-memory",
                                              help=f"--check: host memory of one node. SIZE: {SIZE_HELP}",
                                              rich_help_panel="checks"),
    min_cpu_tokens: Optional[str] = typer.Option(None, "--min-cpu-tokens",
                                                 help="--check: CPU tokens wanted (2M = 2,097,152; 2m = 2,000,000)",
                                                 rich_help_panel="checks"),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    memory_log: Optional[str] = typer.Option(None, "--kv-cache-memory-from-log",
                                             help="a vLLM startup log: the GPU block count its 'Available KV cache "
                                                  "memory' line (and KV cache size line) pins down",
                                             rich_help_panel="input"),
    shm_size: Optional[str] = typer.Option(None, "--shm-size",
                                           help=f"--check: the node's or pod's /dev/shm size. SIZE: {SIZE_HELP}",
                                           rich_help_panel="checks"),
    host_overhead: Optional[str] = typer.Option(None, "--host-overhead",
                                                help="--check: host memory a node needs besides the CPU pool (default: "
                                                     f"an estimate of 3 GiB per GPU worker). SIZE: {SIZE_HELP}",
                                                rich_help_panel="checks"),
    server_memory: Optional[str] = typer.Option(None, "--server-memory",
                                                help="--check: the memory limit of the LMCache MP server's container "
                                                     f"(its pinned L1 must fit). SIZE: {SIZE_HELP}",
                                                rich_help_panel="checks"),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """Rebuild vLLM's KV cache layout and compare the old and fixed CPU-offload block counts."""
    from ..pipeline import decimal_budget_note
    from ..report import build_report

    if summary and fmt != "table":
        raise KvcalcError("--summary shortens the table (--format table): the JSON document is always whole")
    drawn = check_drawing(plot, chart, fmt, compare_versions is not None or compare_engines)
    limits = check_limits(host_memory, min_cpu_tokens, shm_size, host_overhead, check, server_memory)
    loaded = load_any(layout, serve, k8s, container, flags, limits)
    if memory_log is not None:
        from ..inputs.files import read_bytes
        from ..tools.logcheck import gpu_blocks_from_log

        from ..inputs.files import decode

        text = decode(read_bytes(memory_log, "a readable file"), memory_log)
        loaded, note = gpu_blocks_from_log(loaded, text, memory_log, given_paths(flags))
        err(f"note: {note}")
    if check:
        from ..engines.base import engine

        engine(loaded.engine).checkable(loaded)
    p = plan_or_refusal(loaded, check, fmt)
    checks = None
    if check:
        checks = gate(p, loaded, limits)
    report = build_report(p, releases=releases_of(loaded, compare_versions), checks=checks,
                          verify=verified(p) if verify else None,
                          backends=backends_of(loaded) if compare_backends else None, limits=limits,
                          engines=engines_of(loaded) if compare_engines else None)
    for line in p.notes:
        err(f"note: {line}")
    other = decimal_budget_note(p)
    if other:
        err(f"note: {other}")
    for line in p.warnings:
        err(f"warning: {line}")
    (print_summary if summary else RENDERERS[fmt])(report)
    if drawn:
        from ..report.chart import compare_chart

        draw(compare_chart(report), plot, chart)
    if check:
        report_checks(report.checks)
        if any(c.status in ("fail", "unknown") for c in report.checks):  # a skipped gate fails nothing
            raise typer.Exit(1)
    elif report.error:
        # The document is on stdout; a release that would not start is exit 2 (README: exit codes).
        e = StartupRefusal(f"{loaded.source}: {report.error}")
        e.document_printed = fmt == "json"  # the report, with its `error`, is the document
        raise e


@app.command()
@layout_flags()
def init(
    config: Optional[str] = typer.Argument(None, help="a Hugging Face config.json, its directory, or a hub id in the "
                                                      "local HF cache; or `-- vllm serve MODEL ...`"),
    serve: Optional[str] = serve_option(),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """Write the layout YAML a config.json (or a vllm serve line, or a manifest) maps to, with where each value came
    from."""
    from ..inputs.layout.validate import validate
    from ..report.yaml import render

    if config is not None and not (os.path.isdir(config) or config.endswith(".json") or not os.path.exists(config)):
        raise KvcalcError(f"{config}: kvcalc init reads a Hugging Face config.json, a directory holding one or a hub "
                          "id")
    top, origin, source, overrides = raw_any(config, serve, k8s, container, flags)
    # Refuse here what `plan` would refuse about the model; the CPU budget may be filled in later.
    laid = validate(top, source=source, overrides=overrides)
    if laid.weights is not None and top.get("__config__"):
        # The layout weighs the model (a predicted KV budget, SGLang's budget): it keeps the config.json it weighs.
        top["model"] = {"hf_config": top["__config__"][0], **top["model"]}
        origin["model.hf_config"] = "the config.json the KV budget prediction weighs"
    what = "config key" if config is not None else f"config key (or {source} flag)"
    text = render(top, origin, header=f"kvcalc layout (schema v1), written by `kvcalc init` from {source}\n"
                                      f"Each comment names the {what} a value came from.")
    from ..engines.base import engine
    from ..vocab.keys import KEY

    hint = engine(top.get("engine", KEY["engine"].default)).init_hint  # (its host pool's section, the hint)
    if hint is not None and hint[0] not in top:
        text += hint[1]
    sys.stdout.write(text)


@app.command()
def versions(fmt: VersionsFormat = format_option("markdown: the README's families table"),
             show_boundaries: bool = typer.Option(False, "--boundaries", help="every behaviour flag: its value, the "
                                                  "first and last release it holds for, and the file that shows it")
             ) -> None:
    """The vLLM release families kvcalc models, what changed in each, and which releases were read."""
    from ..report.commands import versions_output

    width, parts = versions_output(fmt, show_boundaries, plain())
    for part in parts:
        if isinstance(part, str) and fmt == "table":  # a sentence under the table: wrapped at the console's width
            from rich.text import Text

            part = Text(part.rstrip("\n"))
        sys.stdout.write(part) if isinstance(part, str) else console(width).print(part)


@app.command()
def models(vllm_version: Optional[str] = typer.Option(None, "--vllm-version", help="the release whose registry to "
                                                      "list (default 0.33.0)"),
           fmt: VersionsFormat = format_option("markdown: the README's supported-architectures table")) -> None:
    """Every architecture a vLLM release's registry lists: mapped (the KV layers kvcalc reads), or not and why."""
    from ..inputs.arch.models import architectures_markdown, models as listing
    from ..vocab.releases.vllm import DEFAULT_VERSION

    if fmt == "markdown":
        sys.stdout.write(architectures_markdown())
        return
    doc = listing(vllm_version or DEFAULT_VERSION)
    if fmt == "json":
        print_json(doc)
        return
    from ..report.commands import models_counts_line, render_models

    console(160).print(render_models(doc, plain()))
    sys.stdout.write(models_counts_line(doc))


@app.command("vllm-args")
@layout_flags()
def vllm_args(
    layout: Optional[str] = typer.Argument(None, help=LAYOUT_HELP),
    serve: Optional[str] = serve_option(),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    force: bool = typer.Option(False, "--force", help="exit 0 even when kvcalc calls the layout unsafe (out of "
                                                      "bounds, or vLLM would not start)", rich_help_panel="output"),
    pod: bool = typer.Option(False, "--pod", help="also print the pod's resources block: memory limit and the "
                                                  "/dev/shm emptyDir, in Gi", rich_help_panel="output"),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """The exact vLLM flags for this layout, in both spellings of the CPU budget, ready to paste; with --k8s, the
    patch the manifest needs (its container's memory limit and /dev/shm)."""
    from ..tools.vllm_args import build, startable_plan

    limits: dict = {}
    loaded = load_any(layout, serve, k8s, container, flags, limits)
    from ..tools.serve_line import commands

    with naming(loaded.source):
        doc = build(*startable_plan(loaded))
        doc["commands"] = commands(doc, loaded)
    grant = limits.get("grant")
    if grant is not None:
        from ..report.pod_patch import manifest_patch
        from ..tools.gates import OVERHEAD_PER_WORKER, workers_on_node

        doc["manifest_patch"] = manifest_patch(grant, doc["pod"], OVERHEAD_PER_WORKER * workers_on_node(
            loaded.parallel))
    if fmt == "json":
        print_json(doc)
    else:
        from ..report.commands import vllm_args_text

        sys.stdout.write(vllm_args_text(doc, loaded.source, pod))
        if doc.get("manifest_patch"):
            sys.stdout.write(doc["manifest_patch"]["yaml"])
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
    layout: Optional[str] = typer.Argument(None, help=LAYOUT_HELP),
    serve: Optional[str] = serve_option(),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    cpu_tokens: Optional[str] = typer.Option(None, "--cpu-tokens", help="tokens to hold (2M = 2,097,152)",
                                             rich_help_panel="offload"),
    cpu_blocks: Optional[int] = typer.Option(None, "--cpu-blocks", help="CPU blocks (chunks from 0.26) to hold",
                                             rich_help_panel="offload"),
    resident: Optional[str] = typer.Option(None, "--resident", help="the largest budget whose resident host memory "
                                           f"(one node) stays under this. SIZE: {SIZE_HELP}",
                                           rich_help_panel="offload"),
    gpu_tokens: Optional[str] = typer.Option(None, "--gpu-tokens", help="GPU KV tokens to hold (2M = 2,097,152)",
                                             rich_help_panel="gpu"),
    concurrency: Optional[float] = typer.Option(None, "--concurrency", help="max_model_len requests held at once",
                                                rich_help_panel="gpu"),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """The smallest cpu_bytes_to_use that holds --cpu-tokens (or --cpu-blocks), or the largest whose resident host
    memory fits --resident, for every vLLM family, with the resident bytes and /dev/shm it implies."""
    from ..inputs.values import Reader
    from ..backends.base import SizeTarget
    from ..tools.sizing import size

    if [cpu_tokens, cpu_blocks, resident, gpu_tokens, concurrency].count(None) != 4:
        raise KvcalcError("give exactly one of --cpu-tokens, --cpu-blocks, --resident, --gpu-tokens or --concurrency")
    if gpu_tokens is not None or concurrency is not None:
        from .gpu_size import size_gpu_command

        size_gpu_command(load_any(layout, serve, k8s, container, flags), gpu_tokens, concurrency, fmt)
        return
    tokens = None if cpu_tokens is None else Reader("--cpu-tokens", {}).human_int(cpu_tokens, "", minimum=1)
    if cpu_blocks is not None and cpu_blocks < 1:
        raise KvcalcError("--cpu-blocks: expected a positive integer")
    limit = None if resident is None else size_flag("--resident", resident)
    loaded = load_any(layout, serve, k8s, container, flags)
    target = SizeTarget(tokens=tokens, units=cpu_blocks, resident=limit)
    answer = size(loaded, target)
    if answer.refusal:
        e = KvcalcError(f"{loaded.source}: {answer.refusal}")
        if fmt == "json":  # the answer's document, with no size in it, then the refusal (exit 2)
            print_json(answer.document(loaded.source, target))
            e.document_printed = True
        raise e
    if fmt == "json":
        print_json(answer.document(loaded.source, target))
        return
    from ..report.table import Style
    from ..report.table_size import render_size

    console(140).print(render_size(answer, target, Style(plain=plain())))


@app.command()
@layout_flags(lists=True)
def sweep(
    layout: Optional[str] = typer.Argument(None, help=LAYOUT_HELP),
    serve: Optional[str] = serve_option(),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    fmt: SweepFormat = format_option(rich_help_panel="output"),
    max_points: int = typer.Option(1_000_000, "--max-points", min=1,
                                   help="refuse a grid of more points than this, before planning any",
                                   rich_help_panel="output"),
    plot: Optional[str] = plot_option(),
    chart: bool = chart_option(),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """One plan per combination of the list-valued flags; invalid combinations are rows with their error."""
    from ..tools.sweep import COLUMNS, SHOWN, grid, run

    from ..vocab.keys import FLAGS, SWEEP_AXES

    def values(name: str, text: str | None) -> list | None:
        if text is None:
            return None
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if FLAGS[name].cli_type is int:
            if not parts or not all(p.isascii() and p.isdigit() for p in parts):  # not '²', which isdigit()
                raise KvcalcError(f"{FLAGS[name].named}: expected a comma-separated list of integers, got {text!r}")
            return [int(p) for p in parts]
        if FLAGS[name].cli_type is float:
            try:
                numbers = [float(p) for p in parts]
            except ValueError:
                numbers = []
            if not numbers:
                raise KvcalcError(f"{FLAGS[name].named}: expected a comma-separated list of numbers, got {text!r}")
            return numbers
        if FLAGS[name].kind == "human":  # --max-model-len 8K,32K: each read as vLLM's human_readable_int
            from ..inputs.values import Reader

            for p in parts or [text]:
                Reader(FLAGS[name].named, {}).human_int(p, "", minimum=1)
        return parts

    axes = {f.name: values(f.name, flags.pop(f.name)) for f in SWEEP_AXES}
    total = 1
    for v in axes.values():
        total *= len(v) if v else 1
    if total > max_points:
        raise KvcalcError(f"sweep: the grid has {total:,} points, more than --max-points {max_points:,}")
    top, _, source, base = raw_any(layout, serve, k8s, container, flags, merge=False)
    if axes.get("cpu_bytes"):
        # The axis is the budget: a serve line's or manifest's own budget gives way, as a layout file's does.
        for path in ("offload.cpu_bytes_to_use", "offload.kv_offloading_size"):
            base.pop(path, None)
    drawn = check_drawing(plot, chart, fmt)
    points = grid(axes)  # lazy: the first row is out before the cross product is walked
    rows: Iterable[dict] = run(top, source, points, base)
    held = list(rows) if drawn else []  # a chart needs every row: held (the grid is bounded by --max-points)
    rows = held or rows
    if total > 200 and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import track

        rows = track(rows, total=total, description="sweep", console=Console(stderr=True), transient=True)
    write_sweep(rows, fmt, source, total, [c for c in COLUMNS if c in SHOWN or axes.get(c)])
    if drawn:
        from ..report.chart import sweep_chart

        draw(sweep_chart(held, [c for c in COLUMNS if axes.get(c)], source), plot, chart)


@app.command("check")
@layout_flags()
def check_cmd(
    layout: Optional[str] = typer.Argument(None, help=LAYOUT_HELP),
    serve: Optional[str] = serve_option(),
    k8s: Optional[str] = k8s_option(),
    container: Optional[str] = container_option(),
    log: Optional[str] = typer.Option(None, "--log", help="a vLLM startup log", rich_help_panel="input"),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="a Prometheus scrape of vLLM's /metrics (0.33: "
                                          "vllm:kv_offload_config_info, vllm:cache_config_info)",
                                          rich_help_panel="input"),
    fmt: OutputFormat = format_option(rich_help_panel="output"),
    *, flags: dict,  # the layout flags (cli/options.layout_flags passes them)
) -> None:
    """Compare the numbers kvcalc predicts with the ones a real vLLM server logged (--log) or publishes on
    /metrics (--metrics); exit 1 on a mismatch."""
    from ..inputs.files import decode, read_bytes

    if log is None and metrics is None:
        raise KvcalcError("check: give --log LOG or --metrics FILE")
    if log is not None and metrics is not None:
        raise KvcalcError("check: give --log or --metrics, one at a time")
    loaded = load_any(layout, serve, k8s, container, flags)
    source = log if log is not None else known(metrics, "--metrics")
    text = decode(read_bytes(source, "a readable file"), source)
    if metrics is not None:
        from ..tools.metricscheck import check as check_metrics

        with naming(loaded.source):
            result = check_metrics(loaded, text, source=metrics)
        for n in result["notes"]:
            err(f"note: {n}")
        if fmt == "json":
            print_json(result)
        else:
            from ..report.commands import render_metrics_check

            console(120).print(render_metrics_check(result, metrics, loaded.source))
        for r in result["rows"]:
            if not r["match"]:
                err(f"check failed: {metrics} line {r['line']}: {r['series']} label {r['label']}: expected "
                     f"{r['expected']!r}, found {r['found']!r}")
        if not result["match"]:
            raise typer.Exit(1)
        return
    log = source  # not --metrics: --log
    from ..tools.logcheck import check

    with naming(loaded.source):
        result = check(loaded, text, source=log, version_given=flags["vllm_version"] is not None,
                       given=given_paths(flags))
    for n in result["notes"]:
        err(f"note: {n}")
    if fmt == "json":
        print_json(result)
    else:
        from ..report.commands import render_log_check

        console(120).print(render_log_check(result, log, loaded.source))
    if not result["rows"]:
        e = KvcalcError(f"{log}: no KV cache line found (GPU KV cache size / Maximum concurrency)")
        e.document_printed = fmt == "json"
        raise e
    if not result["match"]:
        err(f"check failed: {log} does not match the prediction for {loaded.source}")
        raise typer.Exit(1)


@app.command()
def schema(kind: Literal["layout", "output"] = typer.Argument(
        ..., help="layout (the YAML input) or output (the JSON output)")) -> None:
    """Print the JSON Schema of the layout YAML or of every JSON document kvcalc prints."""
    import json

    from ..inputs.layout.schema import layout_schema
    from ..tools.schemas import every_output_schema

    doc = layout_schema() if kind == "layout" else every_output_schema()  # every JSON document kvcalc prints
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
