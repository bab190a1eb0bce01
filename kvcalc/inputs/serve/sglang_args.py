"""An SGLang server line read as the selected release's own parser reads it (vocab/releases/sglang_flags.py: every
option of each release's `ServerArgs.add_cli_args` on `argparse.ArgumentParser(prog="sglang serve")`): the
command's own rewrites first (`sglang serve MODEL` -> `--model-path MODEL` and `--model-type X` taken out,
sglang/cli/serve.py:30-66 @0.5.23; `python -m sglang.launch_server` passes argv as it is, launch_server.py:81), then
argparse (Python 3.11 argparse.py: abbreviations, `=value`, nargs, types, choices, the last occurrence winning).
What the release refuses is refused with SGLang's own words, `sglang serve: error: ...` (exit 2)."""

from __future__ import annotations

from typing import Any

from ...vocab.errors import LayoutError
from ...vocab.records import record

PROG = "sglang serve"


def fail(key: str, expected: str, got: Any = None, detail: str = "") -> LayoutError:
    """A server line's bad input, named as SGLang's program."""
    return LayoutError(PROG, key, expected, got, detail=detail)


@record
class Option:
    """One option as argparse leaves it: its dest, the value (a list for nargs + / *; None for a switch), the
    spelling written."""

    dest: str
    spelling: str
    value: Any
    deprecated: bool = False


def _error(release: str, flag: str, message: str, given: Any = None):
    return fail(flag[:60], f"a line SGLang {release} accepts ('{PROG}: error: {message}')", given)


def _negative_number(text: str) -> bool:
    """argparse's _negative_number_matcher '^-\\d+$|^-\\d*\\.\\d+$': such a token is a value (no SGLang option
    looks like a negative number)."""
    import re

    return bool(re.fullmatch(r"-\d+|-\d*\.\d+", text))


def _is_value(text: str) -> bool:
    """argparse.py:2239-2251: a token that is not an option string: no leading '-', '-' alone, a negative number,
    or one with a space."""
    return not text.startswith("-") or text == "-" or _negative_number(text) or " " in text


def serve_args(words: list[str]) -> tuple[list[str], str | None]:
    """The arguments a `sglang serve ...` line hands prepare_server_args, and its --model-type (cli/serve.py:30-66
    @0.5.23: --model-type X taken out, a first positional argument becomes --model-path)."""
    backend, out, i = None, [], 0
    while i < len(words):
        a = words[i]
        if a == "--model-type":
            if i + 1 >= len(words):
                raise fail("--model-type", "a value (sglang serve: 'Error: --model-type requires a value.')")
            backend, i = words[i + 1], i + 2
            continue
        if a.startswith("--model-type="):
            backend, i = a.split("=", 1)[1], i + 1
            continue
        out.append(a)
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", out[0], *out[1:]]
    return out, backend


def read(release: str, args: list[str]) -> dict[str, Option]:
    """{dest: Option} of a line's arguments as the release's parser leaves them; what it refuses raises (exit 2)."""
    from ...vocab.releases import sglang_flags as sf

    opts: dict[str, Option] = {}
    extras: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            extras += args[i + 1:]
            break
        if _is_value(a):
            extras.append(a)
            i += 1
            continue
        try:
            m = sf.resolve(release, a)
        except ValueError as e:  # ambiguous abbreviation
            raise _error(release, a.split("=", 1)[0], str(e)) from None
        if m is None:
            extras.append(a)
            i += 1
            continue
        i = _take(release, m, args, i, opts)
    if "model_path" not in opts:  # argparse.py:2208-2222, before the extras (parse_args, :1876-1881)
        raise _error(release, "--model-path", "the following arguments are required: --model-path/--model")
    if extras:
        hint = next((sf.closest(release, e) for e in extras if e.startswith("--")), None)
        raise fail(extras[0].split("=", 1)[0][:60], f"an option of SGLang {release}'s server ('{PROG}: error: "
                   f"unrecognized arguments: {' '.join(extras)[:80]}')",
                   detail=f"did you mean {hint}?" if hint else "")
    return opts


def _values(release: str, m, args: list[str], i: int) -> tuple[list[str], int]:
    """The value tokens option `m` (at args[i]) consumes, and the index after them (argparse.py:2134-2170
    consume_optional; nargs None: one, '+': one or more, '*': any, '?': at most one)."""
    info = m.info
    if m.value is not None:
        return [m.value], i + 1
    j, values = i + 1, []
    while j < len(args) and _is_value(args[j]) and args[j] != "--":
        values.append(args[j])
        j += 1
        if info.nargs is None or info.nargs == "?":
            break
    if not values and info.nargs in (None, "+"):
        what = "expected one argument" if info.nargs is None else "expected at least one argument"
        raise _error(release, m.spelling, f"argument {_names(info)}: {what}")
    return values, j


def _names(info) -> str:
    """How argparse names an option in its messages: its spellings joined by '/' (argparse.py:738-748)."""
    return "/".join((info.name, *info.aliases, *info.negatives))


def _take(release: str, m, args: list[str], i: int, opts: dict[str, Option]) -> int:
    """Record option `m` (found at args[i]) with its value; the index after what it consumed."""
    from ...vocab.releases.sglang_flags import convert

    info = m.info
    if info.kind == "help":
        raise fail(m.spelling, "a server line (-h prints SGLang's help and starts nothing)")
    if info.kind == "error":
        raise _error(release, m.spelling, info.extra)
    deprecated = info.marks == "deprecated"
    if not info.takes_value:
        if m.value is not None:  # argparse.py:2037-2041
            raise _error(release, m.spelling, f"argument {_names(info)}: ignored explicit argument {m.value!r}",
                         m.value)
        value = (not m.negated) if info.kind in ("store_true", "bool_optional") else info.extra
        opts[info.dest] = Option(dest=info.dest, spelling=m.spelling, value=value, deprecated=deprecated)
        return i + 1
    values, i = _values(release, m, args, i)
    converted = []
    for v in values:
        if "${" in v:  # a variable the shell expands before SGLang reads it (a manifest's fieldRef): its text
            converted.append(v)
            continue
        try:
            converted.append(convert(info, v))
        except ValueError as e:
            raise _error(release, m.spelling, f"argument {_names(info)}: {e}", v) from None
    if info.extra is not None:  # a deprecated valued flag whose one choice stores a value (--monokernel-backend)
        converted = [info.extra]
    value = converted if info.nargs in ("+", "*") else (converted[0] if converted else None)
    opts[info.dest] = Option(dest=info.dest, spelling=m.spelling, value=value, deprecated=deprecated)
    return i
