"""`--plot FILE` and `--chart` (issue 35): the tokens each tier holds as a picture (report/plot.py, matplotlib: the
optional plot extra, imported only here and only when asked) or as plain-text bars on stdout (report/chart.py)."""

from __future__ import annotations

import sys

import typer

from ..vocab.errors import KvcalcError


def plot_option(when: str = ""):
    return typer.Option(None, "--plot", help=f"write the GPU and CPU tokens as a chart to FILE (.svg or .png; needs "
                        f"the plot extra: pip install 'kvcalc[plot]'){when}", rich_help_panel="output")


def chart_option(when: str = ""):
    return typer.Option(False, "--chart", help=f"print the GPU and CPU tokens as plain-text bars after the table{when}",
                        rich_help_panel="output")


def check_drawing(plot: str | None, chart: bool, fmt: str, comparing: bool = True) -> bool:
    """Refuse a drawing the command cannot make, before anything is planned; whether one is asked for."""
    if plot is None and not chart:
        return False
    flag = "--plot" if plot is not None else "--chart"
    if not comparing:
        raise KvcalcError(f"{flag}: expected --compare-versions or --compare-engines beside it (a plan of one "
                          "release has nothing to draw along an axis; `kvcalc sweep` draws one), got neither")
    if chart and fmt != "table":
        raise KvcalcError(f"--chart: expected --format table (the bars are for people), got --format {fmt}")
    if plot is not None:
        from ..report.plot import check_path

        check_path(plot)
    return True


def draw(chart, plot: str | None, text: bool) -> None:
    if chart is None:
        return
    if text:
        from ..report.chart import text_chart

        sys.stdout.write("\n".join(text_chart(chart)) + "\n")
    if plot is not None:
        from ..report.plot import write_plot

        write_plot(chart, plot)
