"""Golden output of the table view, rendered on a 100-column colourless console.

The golden files pin layout and wording; their numbers are the ones the vector tests derive independently
(kimi = vector b2, qwen3-next = vector e1). Regenerate after a deliberate change with KVCALC_UPDATE_GOLDEN=1.
"""

import io
import os

import pytest
from rich.console import Console

from conftest import EXAMPLES_DIR
from kvcalc import load_layout, plan
from kvcalc.report.table import render
from kvcalc.vocab.records import replace
from kvcalc.report.report import build_report

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")


def rendered(example: str) -> str:
    report = build_report(plan(load_layout(os.path.join(EXAMPLES_DIR, example))))
    report = replace(report, source=example)  # the absolute path differs per checkout
    buf = io.StringIO()
    console = Console(file=buf, width=100, color_system=None, force_terminal=False, highlight=False, emoji=False,
                      legacy_windows=False)
    for item in render(report):
        console.print(item)
    return buf.getvalue()


@pytest.mark.parametrize("example", ["kimi-k2.5-eagle3-tp4.yaml", "qwen3-next-80b-tp4.yaml"])
def test_table_golden(example):
    path = os.path.join(GOLDEN, example.replace(".yaml", ".txt"))
    text = rendered(example)
    if os.environ.get("KVCALC_UPDATE_GOLDEN"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(path, encoding="utf-8") as fh:
        assert text == fh.read()


def test_golden_numbers_are_the_vectors():
    text = rendered("kimi-k2.5-eagle3-tp4.yaml")
    for number in ("9,412", "602,368", "4.60x", "3,758", "3,765", "YES ids 60–3,757", "1,131,610,112"):
        assert number in text


def test_output_does_not_depend_on_where_the_checkout_is(tmp_path):
    # CI clones the repository elsewhere: a plan of the same files must print the same table there (the drafter's
    # provenance once named the absolute config path, so the table wrapped differently in a longer checkout).
    import shutil

    deep = tmp_path / ("a-much-longer-checkout-directory-name" * 2) / "examples"
    shutil.copytree(EXAMPLES_DIR, deep)
    name = "kimi-k2.5-from-config-eagle3-tp4.yaml"

    def table(directory):
        report = replace(build_report(plan(load_layout(os.path.join(directory, name)))), source=name)
        buf = io.StringIO()
        console = Console(file=buf, width=100, color_system=None, force_terminal=False, highlight=False)
        for item in render(report):
            console.print(item)
        return buf.getvalue()

    here, there = table(EXAMPLES_DIR), table(str(deep))
    assert "drafter config configs/kimi-k2.5-eagle3.json: num_hidden_layers" in here
    assert here == there
