"""The tokens each tier holds, as a chart (issue 35): the series a `sweep` (or `plan --compare-versions` /
`--compare-engines`) gives, drawn as plain-text bars here (`--chart`) or as an SVG / PNG by report/plot.py
(`--plot FILE`, matplotlib). Pure: rows and reports in, records and lines out.

A sweep's x axis is the first axis that varies other than the release (the budget, the utilization, TP,
max_model_len, ...); every other varying axis, the release first, names a series; each series is drawn twice, the
GPU tier's tokens (the KV cache size the engine logs) and the CPU tier's (the tokens every worker holds)."""

from __future__ import annotations

from ..vocab.records import field, record

TIERS = (("gpu", "GPU tokens", "gpu_tokens"), ("cpu", "CPU tokens", "cpu_tokens_safe"))
GROUP_FIRST = ("vllm_version",)  # a release is a series, not the x axis, when another axis varies too


@record
class Series:
    """One line of the chart: a tier of one group (a release, an engine, a combination of the other axes)."""

    tier: str = field("gpu | cpu")
    group: str = field("the release / engine / other axes it is planned at ('' when nothing else varies)")
    values: tuple[int | None, ...] = field("tokens at each x value (None: that point was refused)")

    @property
    def label(self) -> str:
        name = dict((t, title) for t, title, _ in TIERS)[self.tier]
        return f"{name}, {self.group}" if self.group else name

    @property
    def gid(self) -> str:
        """The SVG element id of its line (tests read it back)."""
        return f"{self.tier}:{self.group}" if self.group else self.tier


@record
class Chart:
    title: str = field("what was planned")
    x_label: str = field("the axis along x")
    x: tuple[str, ...] = field("the x values, as given")
    series: tuple[Series, ...] = field("every line")


def _spelled(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def sweep_chart(rows: list[dict], axes: list[str], source: str) -> Chart:
    """The chart of a sweep's rows; `axes`: the sweep axes given (in column order)."""
    varying = [a for a in axes if len({r[a] for r in rows}) > 1]
    x_axis = next((a for a in varying if a not in GROUP_FIRST), varying[0] if varying else None)
    groups = [a for a in sorted(varying, key=lambda a: a not in GROUP_FIRST) if a != x_axis]
    xs = list(dict.fromkeys(_spelled(r[x_axis]) for r in rows)) if x_axis else [""]

    def group_of(r: dict) -> str:
        return ", ".join(("vLLM " if a == "vllm_version" else f"{a} ") + _spelled(r[a]) for a in groups)

    names = list(dict.fromkeys(group_of(r) for r in rows))
    series = []
    for tier, _, column in TIERS:
        if all(r.get(column) is None for r in rows):
            continue
        for g in names:
            at = {_spelled(r[x_axis]) if x_axis else "": r.get(column) for r in rows if group_of(r) == g}
            series.append(Series(tier=tier, group=g, values=tuple(at.get(x) for x in xs)))
    return Chart(title=f"Tokens each tier holds: sweep of {source}", x_label=x_axis or "", x=tuple(xs),
                 series=tuple(series))


def compare_chart(report) -> Chart | None:
    """--compare-versions (x: the releases) or --compare-engines (x: the engines): GPU and CPU tokens."""
    if report.releases is not None:
        xs = [r.vllm_version for r in report.releases]
        gpu = [getattr(r, "kv_cache_size_tokens", None) for r in report.releases]
        cpu = [r.offload.cpu_tokens_safe if getattr(r, "offload", None) else None for r in report.releases]
        label = "vLLM release"
    elif report.engines is not None:
        xs = [f"{e.engine} {e.version}".strip() for e in report.engines]
        gpu = [e.gpu_tokens for e in report.engines]
        cpu = [e.host_tokens for e in report.engines]
        label = "engine"
    else:
        return None
    series = tuple(Series(tier=t, group="", values=tuple(v)) for t, v in (("gpu", gpu), ("cpu", cpu))
                   if any(x is not None for x in v))
    return Chart(title=f"Tokens each tier holds: {report.model.name}", x_label=label, x=tuple(xs), series=series)


def text_chart(chart: Chart, width: int = 40) -> list[str]:
    """Plain-text bars: one block per x value, one bar per series, scaled to the largest value."""
    top = max((v for s in chart.series for v in s.values if v), default=0)
    labels = [s.label for s in chart.series]
    pad = max((len(x) for x in labels), default=0)
    out = [chart.title]
    for i, x in enumerate(chart.x):
        out.append(f"{chart.x_label} {x}".strip() if chart.x_label else x)
        for s in chart.series:
            v = s.values[i]
            if v is None:
                out.append(f"  {s.label.ljust(pad)}  refused")
                continue
            n = (v * width + top - 1) // top if top and v else 0  # ceiling: a non-zero value shows a cell
            out.append(f"  {s.label.ljust(pad)}  {('#' * n).ljust(width, '.')}  {v:,}")
    return out
