"""The README's usage commands run as written (pipes to jq dropped), so they never rot."""

import os
import re
import shlex

import pytest

from kvcalc.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def usage_commands():
    """Every `kvcalc ...` line of every untagged code block (the yaml blocks are layouts and a CI job sketch; the
    set-up block's install lines are run by CI itself)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    cmds = []
    fence = None  # the opening fence's tag while inside a block
    for line in text.splitlines():
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            continue
        if fence != "":
            continue
        line = line.split("|")[0].strip()
        line = re.sub(r"^python -m kvcalc ", "kvcalc ", line)
        if line.startswith("kvcalc "):
            cmds.append(shlex.split(line)[1:])
    return cmds


def test_readme_has_usage_commands():
    assert len(usage_commands()) >= 20


@pytest.mark.parametrize("args", usage_commands(), ids=lambda a: " ".join(a[:2]))
def test_readme_command_runs(args, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    if "--verify" in args:
        pytest.importorskip("torch")
    if "--plot" in args:  # the README's picture is committed: a run writes its own copy elsewhere
        pytest.importorskip("matplotlib")
        at = args.index("--plot") + 1
        args = [*args[:at], str(tmp_path / os.path.basename(args[at])), *args[at + 1:]]
    if ">" in args:  # a redirect: run the command, keep its output here
        args = args[: args.index(">")]
    assert main(args) == 0, capsys.readouterr().err
    assert capsys.readouterr().out


def test_readme_families_table_is_the_family_records():
    # The README's table is generated from versions.FAMILIES (`kvcalc versions --format markdown`).
    from kvcalc.report.commands import families_markdown

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert families_markdown() in text


def test_readme_architectures_table_is_the_architecture_records():
    # The README's supported-architectures table is generated from the architecture table (`kvcalc models --format
    # markdown`).
    from kvcalc.inputs.arch.models import architectures_markdown

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert architectures_markdown() in text
