"""Issue 35 (7): `sweep --plot FILE` / `--chart` and `plan --compare-versions` / `--compare-engines --plot`: the
tokens the GPU and CPU tiers hold as the swept axis changes, per release or engine. The SVG is read back as XML:
each series is the element its id names (`gpu:vLLM 0.19.1`), its points are checked against values derived by hand
(through the one linear map from tokens to the axis that every point of every series shares), its labels as text.

Llama-3.1-8B (examples/llama-3.1-8b.yaml: 40 GiB of KV memory, 16-token blocks): a token is 32 layers x K and V x 8
heads x 128 x 2 B = 131,072 B, a block 2,097,152 B. GPU: 40 GiB / 2 MiB = 20,480 blocks = 327,680 tokens on every
release and budget. CPU: 0.19.1's old formula C // (page 65,536 x 32 tensors x world 1) blocks of 16 tokens, 0.33.0's
chunks of one 2 MiB block (4,096-aligned already): 16G -> 8,192 blocks = 131,072 tokens (one 131,072-token request),
32G -> 262,144, 64G -> 524,288."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA = os.path.join(ROOT, "examples", "llama-3.1-8b.yaml")
SWEEP = ["sweep", LLAMA, "--cpu-bytes", "16G,32G,64G", "--vllm-version", "0.19.1,0.33.0"]
GIB = 1 << 30
GPU = 40 * GIB // (32 * 2 * 8 * 128 * 2 * 16) * 16
CPU = [c * GIB // (65536 * 32) * 16 for c in (16, 32, 64)]
SVG = "{http://www.w3.org/2000/svg}"


def test_hand_figures():
    assert GPU == 327680
    assert CPU == [131072, 262144, 524288]


def points(svg_path: str) -> dict[str, list[tuple[float, float]]]:
    """Series id -> the (x, y) vertices of its line's path."""
    root = ET.parse(svg_path).getroot()
    out = {}
    for g in root.iter(f"{SVG}g"):
        gid = g.get("id", "")
        if gid.startswith(("gpu", "cpu")):
            d = next(g.iter(f"{SVG}path")).get("d")
            nums = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d)]
            out[gid] = list(zip(nums[0::2], nums[1::2]))
    return out


def texts(svg_path: str) -> str:
    return " ".join("".join(t.itertext()) for t in ET.parse(svg_path).getroot().iter(f"{SVG}text"))


def test_a_sweep_plot_carries_each_series_values(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "sweep.svg")
    code, out, err = run(capsys, *SWEEP, "--plot", path)
    assert code == 0, err
    found = points(path)
    assert sorted(found) == ["cpu:vLLM 0.19.1", "cpu:vLLM 0.33.0", "gpu:vLLM 0.19.1", "gpu:vLLM 0.33.0"]
    want = {"gpu:vLLM 0.19.1": [GPU] * 3, "gpu:vLLM 0.33.0": [GPU] * 3, "cpu:vLLM 0.19.1": CPU, "cpu:vLLM 0.33.0": CPU}
    # One linear map tokens -> y for the whole axis, from two hand values; every other point must sit on it.
    (_, y_lo), (_, y_hi) = found["cpu:vLLM 0.19.1"][0], found["cpu:vLLM 0.19.1"][2]
    scale = (y_hi - y_lo) / (CPU[2] - CPU[0])
    for gid, values in want.items():
        xy = found[gid]
        assert len(xy) == 3, gid
        for (_, y), v in zip(xy, values):
            assert y == pytest.approx(y_lo + (v - CPU[0]) * scale, abs=0.01), gid
        xs = [x for x, _ in xy]
        assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # the three budgets, evenly along x
    labels = texts(path)
    for text in ("GPU tokens, vLLM 0.19.1", "CPU tokens, vLLM 0.33.0", "cpu_bytes", "16G", "64G", "tokens"):
        assert text in labels, text


def test_the_same_chart_as_text(capsys):
    code, out, err = run(capsys, *SWEEP, "--chart")
    assert code == 0, err
    chart = out[out.index("Tokens each tier holds"):].splitlines()
    assert chart[1] == "cpu_bytes 16G"
    assert chart[2].split()[-1] == f"{GPU:,}"
    assert chart[4].startswith("  CPU tokens, vLLM 0.19.1")
    assert chart[4].split()[-1] == f"{CPU[0]:,}"
    # Bars scale to the largest value (524,288 = 40 cells): 131,072 is a quarter.
    assert chart[4].count("#") == 10
    assert chart[-1].count("#") == 40


def test_plan_compare_plots_releases_and_engines(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "versions.png")
    code, out, err = run(capsys, "plan", LLAMA, "--compare-versions", "0.19.1,0.33.0", "--plot", path)
    assert code == 0, err
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    path = str(tmp_path / "engines.svg")
    code, out, err = run(capsys, "plan", LLAMA, "--compare-engines", "--gpu", "H100", "--plot", path)
    assert code == 0, err
    assert set(points(path)) == {"gpu", "cpu"}  # the layout has a CPU budget (64G): both tiers
    assert "engine" in texts(path)


@pytest.mark.parametrize("argv,flag,expected", [
    (SWEEP + ["--plot", "chart.pdf"], "--plot", "a file name ending in .svg or .png, got 'chart.pdf'"),
    (SWEEP + ["--chart", "--format", "csv"], "--chart", "--format table"),
    (["plan", LLAMA, "--plot", "x.svg"], "--plot", "--compare-versions or --compare-engines"),
    (["plan", LLAMA, "--compare-versions", "0.19.1", "--chart", "--format", "json"], "--chart", "--format table"),
])
def test_bad_drawing_flags_are_one_line_exit_2(capsys, argv, flag, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kvcalc: error: {flag}: expected ")
    assert expected in lines[0]


def test_without_matplotlib_the_plot_is_refused_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    code, out, err = run(capsys, *SWEEP, "--plot", str(tmp_path / "x.svg"))
    assert code == 2
    assert "--plot: expected matplotlib (the plot extra: pip install 'kvcalc[plot]')" in err


def test_a_sweep_without_a_plot_does_not_import_matplotlib():
    code = ("import sys, kvcalc.cli as c; c.main(['sweep', 'examples/llama-3.1-8b.yaml', '--tp', '1,2', "
            "'--format', 'csv']); sys.stderr.write(str('matplotlib' in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stderr.strip().endswith("False")


def test_the_readme_picture_is_what_its_command_draws(capsys, tmp_path, monkeypatch):
    # docs/sweep-kimi-cpu-budget.svg is committed: the README's command, run now, draws the same series.
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(ROOT)  # the title names the input as the README's command does
    path = str(tmp_path / "again.svg")
    code, out, err = run(capsys, "sweep", "examples/kimi-k2.5-eagle3-tp4.yaml", "--cpu-bytes",
                         "32G,64G,128G,256G", "--vllm-version", "0.19.1,0.33.0", "--plot", path)
    assert code == 0, err
    committed = points(os.path.join(ROOT, "docs", "sweep-kimi-cpu-budget.svg"))
    assert sorted(committed) == ["cpu:vLLM 0.19.1", "cpu:vLLM 0.33.0", "gpu:vLLM 0.19.1", "gpu:vLLM 0.33.0"]
    for gid, xy in points(path).items():
        assert [c for p in committed[gid] for c in p] == pytest.approx([c for p in xy for c in p], abs=0.01), gid
