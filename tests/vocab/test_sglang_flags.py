"""vocab/releases/sglang_flags.py (every option of each SGLang release's parser, generated from a dump of the real
parsers) and inputs/serve/sglang_args.py (argparse's reading of a line), checked two ways: against what each
release's own parser answered to a few lines (tests/fixtures/sglang/parse_checks.json, /work/notes/sglang/
parse_check.py: ServerArgs.add_cli_args on argparse.ArgumentParser(prog='sglang serve'), run from each wheel), and
against Python's own argparse given the table's options, on every spelling of every release: exact, abbreviated,
with `=value`, negated, with a bad value."""

import argparse
import json
import os

import pytest

from kvcalc.inputs.serve.sglang_args import read
from kvcalc.vocab.errors import LayoutError
from kvcalc.vocab.releases import SGLANG_RELEASES
from kvcalc.vocab.releases import sglang_flags as sf

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = json.load(open(os.path.join(HERE, "..", "fixtures", "sglang", "parse_checks.json"), encoding="utf-8"))


def test_the_table_holds_every_release():
    assert sf.releases() == SGLANG_RELEASES


def test_option_counts_match_the_dump():
    # gen_flags.py's count per release (argparse actions without -h/--help): 0.5.14 420, 0.5.23 531.
    counts = {r: len({id(i) for s, i in sf.flags_of(r).items() if i.kind != "help"}) for r in ("0.5.14", "0.5.23")}
    assert counts == {"0.5.14": 420, "0.5.23": 531}


@pytest.mark.parametrize("release", sorted(CHECKS["releases"]))
def test_what_each_release_answered(release):
    """The real parser's answer to each line, and kvcalc's."""
    for line, answer in CHECKS["releases"][release].items():
        argv = ["--model-path", "m", *line.split()]
        if "exit" in answer:
            with pytest.raises(LayoutError) as e:
                read(release, argv)
            assert answer["stderr"].split("error: ", 1)[1] in str(e.value), (release, line)
            continue
        opts = read(release, argv)
        for dest, value in answer["parsed"].items():
            got = opts[dest].value if dest in opts else None
            if dest in opts:
                assert repr(got) == value, (release, line, dest)


def _action(parser: argparse.ArgumentParser, info: sf.FlagInfo) -> None:
    spellings = [info.name, *info.aliases]
    kw: dict = {"dest": info.dest}
    if info.kind == "value" and info.extra is None:
        kw.update(nargs=info.nargs, choices=info.choices, type=sf.CONVERTERS[info.type])
    elif info.kind == "store_true":
        kw.update(action="store_true")
    elif info.kind == "bool_optional":
        kw.update(action=argparse.BooleanOptionalAction)
    elif info.kind == "store_const":
        kw.update(action="store_const", const=info.extra)
    elif info.kind == "value" and info.extra is not None:  # DeprecatedStoreConstAction with choices
        const = info.extra

        class StoreConst(argparse.Action):
            def __call__(self, p, namespace, values, option_string=None):
                setattr(namespace, self.dest, const)
        kw.update(action=StoreConst, choices=info.choices)
    elif info.kind == "error":
        message = info.extra

        class Refuse(argparse.Action):
            def __call__(self, p, namespace, values, option_string=None):
                p.error(message)
        kw.update(action=Refuse, nargs=0)
    parser.add_argument(*spellings, **kw)


class Refused(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse's own parser; its error() raises the message instead of printing the usage (which is slow)."""

    def error(self, message):
        raise Refused(message)


def real_parser(release: str) -> argparse.ArgumentParser:
    """Python's argparse, given the release's options in its registration order."""
    parser = Parser(prog="sglang serve", add_help=True)
    seen = set()
    for info in sf.flags_of(release).values():
        if id(info) in seen or info.kind == "help":
            continue
        seen.add(id(info))
        if info.type == "cuda_graph_backend":
            info = sf.FlagInfo(**{**info.__dict__, "type": "str"})
        _action(parser, info)
    return parser


def argparse_answer(parser, argv):
    try:
        ns = parser.parse_args(argv)
    except Refused as e:
        return "error", str(e)
    return "ok", vars(ns)


def lines_for(release: str):
    """Every spelling as given, abbreviated by one character, with `=value`, with a bad value; each switch with an
    attached value."""
    flags = sf.flags_of(release)
    for spelling, info in flags.items():
        if info.kind in ("help", "error"):
            continue
        if info.takes_value:
            good = str(info.choices[0]) if info.choices else {"int": "7", "float": "0.5", "human_readable_int": "2k",
                                                               "json": "{}", "json_list_type": "[]",
                                                               "cuda_graph_config": "{}"}.get(info.type, "x")
            yield [spelling, good]
            yield [f"{spelling}={good}"]
            yield [spelling[:-1], good]
            if info.type in ("int", "float") or info.choices:
                yield [spelling, "nonsense"]
            yield [spelling]
        else:
            yield [spelling]
            yield [spelling[:-1]]
            yield [f"{spelling}=1"]


@pytest.mark.parametrize("release", ["0.5.14", "0.5.15.post1", "0.5.19", "0.5.20", "0.5.22", "0.5.23"])
def test_every_spelling_reads_as_argparse_reads_it(release):
    parser = real_parser(release)
    bad = []
    for extra in lines_for(release):
        argv = ["--model-path", "m", *extra]
        want, value = argparse_answer(parser, argv)
        try:
            opts = read(release, argv)
            got = ("ok", {d: o.value for d, o in opts.items()})
        except LayoutError as e:
            got = ("error", str(e))
        if want != got[0]:
            bad.append((extra, want, value if want == "error" else "", got))
        elif want == "error" and value not in got[1]:
            bad.append((extra, value, got[1]))
        elif want == "ok":
            for dest, v in got[1].items():
                if value[dest] != v:
                    bad.append((extra, dest, value[dest], v))
    assert bad[:5] == []
