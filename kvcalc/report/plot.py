"""`--plot FILE`: a chart (report/chart.py) as an SVG or PNG through matplotlib, the optional `plot` extra
(`pip install 'kvcalc[plot]'`). Imported only when a plot is asked for: no other command pays for matplotlib.

The SVG keeps its text as text (svg.fonttype none) and names each line by its series (`gpu:vLLM 0.19.1`,
`cpu:...`: Series.gid), so a reader (or a test) finds a series and its points without looking at pixels; its
output is the same on every run (no date, a fixed hash salt)."""

from __future__ import annotations

from ..vocab.errors import KvcalcError
from .chart import Chart

FORMATS = (".svg", ".png")
STYLE = {"gpu": "-", "cpu": "--"}
MARKER = {"gpu": "o", "cpu": "s"}


def check_path(path: str) -> None:
    """Refuse a --plot path kvcalc cannot write a format for, before anything is planned."""
    if not path.lower().endswith(FORMATS):
        raise KvcalcError(f"--plot: expected a file name ending in .svg or .png, got {path!r}")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise KvcalcError("--plot: expected matplotlib (the plot extra: pip install 'kvcalc[plot]'), got none "
                          "installed; --chart prints the same chart as text") from None
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kvcalc"})
    import matplotlib.pyplot as plt

    return plt


def write_plot(chart: Chart, path: str) -> None:
    check_path(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    positions = list(range(len(chart.x)))
    colours: dict[str, str] = {}
    for s in chart.series:
        ys = [float("nan") if v is None else v for v in s.values]
        colour = colours.setdefault(s.group, f"C{len(colours) % 10}")
        (line,) = ax.plot(positions, ys, STYLE[s.tier], marker=MARKER[s.tier], color=colour, label=s.label)
        line.set_gid(s.gid)
    ax.set_xticks(positions)
    ax.set_xticklabels(chart.x)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel("tokens")
    top = max((v for s in chart.series for v in s.values if v), default=1)
    ax.set_ylim(0, top * 1.08)
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title(chart.title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    try:
        fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as e:
        raise KvcalcError(f"--plot: expected a file kvcalc can write, got {path!r} ({e.strerror or e})") from None
    finally:
        plt.close(fig)
