"""The LMCache MP server's command line (`lmcache server ...`, `python -m lmcache.v1.multiprocess.http_server ...`,
`python -m lmcache.v1.multiprocess.server ...`) read as LMCache 0.5.6's own parser reads it: its options as data
(vocab/releases/lmcache_mp_flags.py), Python 3.11's argparse rules (argparse.py _parse_optional: every token
classified first, so an ambiguous abbreviation is refused before any value; `--x=v` and `--x v`; unique prefixes;
a token starting with "-" is an option unless it is a negative number; nargs "*" takes arguments up to the next
option; the last of a repeated option wins, an append option collects), and argparse's messages for what it refuses
(exit 2): an option it does not have, a missing value, a value its type() or choices refuse, an explicit value on
a switch. -> the offload.lmcache_mp section.
"""

from __future__ import annotations

import os
import re

from ...vocab.errors import LayoutError
from ...vocab.releases.lmcache_mp_flags import FLAGS

SOURCE = "--lmcache-server"
# The command forms: (the words that start it, the parser's prog, whether it has the P2P / HTTP groups).
FORMS = ((("lmcache", "server"), "lmcache server", True),
         (("-m", "lmcache.v1.multiprocess.http_server"), "http_server.py", True),
         (("-m", "lmcache.v1.multiprocess.server"), "server.py", False))
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse.py _negative_number_matcher


def _options(http: bool) -> dict[str, tuple]:
    """Every spelling of the form's parser -> its row (lmcache_mp_flags.FLAGS)."""
    return {s: row for row in FLAGS if http or row[6] != "http" for s in row[0]}


def _fail(prog: str, flag: str, expected: str, got, message: str, source: str = SOURCE) -> LayoutError:
    return LayoutError(source, flag, f"{expected} (LMCache's parser: \"{prog}: error: {message}\")", got)


def split_command(argv: list[str]) -> tuple[list[str], str, bool]:
    """(the arguments after the command words, the parser's prog, P2P/HTTP groups) of a server line; a line that does
    not start the MP server is refused."""
    for i in range(len(argv)):
        base = os.path.basename(argv[i])
        for words, prog, http in FORMS:
            n = len(words)
            first = base if words[0] == "lmcache" else argv[i]
            if (first, *argv[i + 1:i + n]) == words and (words[0] != "-m" or i > 0):
                return argv[i + n:], prog, http
    raise LayoutError(SOURCE, "", "an LMCache MP server command: `lmcache server ...` or `python -m "
                                  "lmcache.v1.multiprocess.http_server ...` (or `.server`)", " ".join(argv)[:60])


def _classify(args: list[str], opts: dict[str, tuple], prog: str) -> list[tuple | None]:
    """argparse's first pass: per token, (row, spelling, attached value) for an option, ("?", token) for an option it
    does not know, None for an argument; an ambiguous abbreviation is refused here, before any value is read."""
    out: list[tuple | None] = []
    for a in args:
        if not a or a[0] != "-" or a == "-" or a == "--":
            out.append(None if a != "--" else ("--",))
            continue
        if a in opts:
            out.append((opts[a], a, None))
            continue
        name, eq, value = a.partition("=")
        if eq and name in opts:
            out.append((opts[name], name, value))
            continue
        found = [s for s in opts if s.startswith(name) and name.startswith("--")]  # the parser's order
        if len(found) > 1:
            raise _fail(prog, name, "one option (an abbreviation argparse can resolve)", a,
                        f"ambiguous option: {name} could match {', '.join(found)}")
        if found:
            out.append((opts[found[0]], found[0], value if eq else None))
        elif _NEGATIVE.match(a) or " " in a:
            out.append(None)
        else:
            out.append(("?", a))
    return out


def _convert(row: tuple, spelling: str, text: str, prog: str):
    spellings, _, _, typ, _, choices, _ = row
    label = "/".join(spellings)
    try:
        value = {"int": int, "float": float}.get(typ, str)(text)
    except ValueError:
        raise _fail(prog, spelling, f"a value {typ}() reads", text,
                    f"argument {label}: invalid {typ} value: {text!r}") from None
    if choices is not None and value not in choices:
        raise _fail(prog, spelling, f"one of {', '.join(choices)}", text,
                    f"argument {label}: invalid choice: {text!r} (choose from {', '.join(map(repr, choices))})")
    return value


def parse(line: list[str], source: str = SOURCE) -> dict[str, tuple]:
    """The server line -> {"offload.lmcache_mp": ({dest: value}, where it came from)}; `source` names the line in
    errors and provenance (--lmcache-server, or a manifest's container)."""
    try:
        return _parse(line, source)
    except LayoutError as e:
        if source == SOURCE:
            raise
        raise LayoutError(source, e.key, e.expected, e.got, detail=e.detail) from None


def _parse(line: list[str], source: str) -> dict[str, tuple]:
    args, prog, http = split_command(line)
    opts = _options(http)
    kinds = _classify(args, opts, prog)
    values: dict[str, object] = {}
    unknown: list[str] = []
    i = 0
    while i < len(args):
        k = kinds[i]
        if k is None or k[0] == "?":
            unknown.append(args[i])
            i += 1
            continue
        if k[0] == "--":  # everything after "--" is an argument, which this parser takes none of
            unknown += args[i + 1:]
            break
        row, spelling, attached = k
        i = _consume(row, spelling, attached, args, kinds, i + 1, values, prog)
    if unknown:
        # cli/main.py:39: the top-level parser reports what its subparser left (argparse: 'unrecognized arguments')
        top = "lmcache" if prog == "lmcache server" else prog
        raise _fail(top, unknown[0], "an option of the LMCache server's parser", unknown[0],
                    f"unrecognized arguments: {' '.join(unknown)}")
    # The whole section: a command line is all the server is told (a layout's own section is replaced, kvcalc's flags
    # for single options still win over it).
    return {"offload.lmcache_mp": (values, source)}


def _consume(row: tuple, spelling: str, attached, args: list[str], kinds: list, i: int, values: dict,
             prog: str) -> int:
    """One option's values into `values`; the index after them."""
    spellings, dest, kind, _, _, _, _ = row
    label = "/".join(spellings)
    if kind in ("bool_optional", "store_true", "help"):
        if attached is not None:
            raise _fail(prog, spelling, "no value (a switch)", attached,
                        f"argument {label}: ignored explicit argument {attached!r}")
        if kind == "help":
            raise LayoutError(SOURCE, spelling, "the server's settings (-h / --help prints its help and exits)")
        values[dest] = not spelling.startswith("--no-")
        return i
    if kind == "star":
        got = [] if attached is None else [attached]
        while attached is None and i < len(args) and kinds[i] is None:
            got.append(args[i])
            i += 1
        values[dest] = [_convert(row, spelling, t, prog) for t in got]
        return i
    if attached is None:
        if i >= len(args) or kinds[i] is not None:
            raise _fail(prog, spelling, "a value", None, f"argument {label}: expected one argument")
        attached, i = args[i], i + 1
    value = _convert(row, spelling, attached, prog)
    values[dest] = [*values.get(dest, []), value] if kind == "append" else value
    return i


