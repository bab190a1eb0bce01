"""A `vllm serve` line read as the selected release's own parser reads it (vocab/releases/vllm_flags.py: every
option of each release's serve parser, and its FlexibleArgumentParser's rewrites): the command prefix, `--config`,
`--model` moved to the positional place, underscores, `-O`, dotted JSON options, abbreviations, switches that refuse
`=value`, choices, the last of a repeated option winning whole. What the release refuses is refused with vLLM's own
words (exit 2); an option kvcalc has no rule for is accepted only when it cannot change the KV cache.
"""

from __future__ import annotations

from contextvars import ContextVar

import os
from typing import Any

from ...vocab.errors import LayoutError, UnsupportedError
from ...vocab.records import record
from ..hf.hub import fail
from .servers import server_of

SOURCE = "vllm serve"
PROGRAM = "vllm"  # vLLM's command (`vllm serve ...`)
@record
class Option:
    """One option as argparse leaves it: the value (a list for nargs '+' or a repeatable option; None for a
    switch), whether the spelling set a switch False, and the spelling written."""

    name: str
    spelling: str
    value: Any
    negated: bool = False


def serve_words(words: list[str]) -> list[str]:
    """The arguments after the command (`serve`, or a vLLM form of server_of in the first four words). A line
    that starts another server is named as such."""
    if words[:1] == ["serve"]:
        return words[1:]
    got = server_of(words, within=4)
    if got is not None and got[0] != "vLLM":
        raise UnsupportedError(f"{SOURCE}: {' '.join(words[:3])[:80]} starts {got[0]}, not vLLM: kvcalc plans "
                               "vLLM's `vllm serve`")
    if got is not None:
        return words[got[1]:]
    if words and not words[0].startswith("-") and os.path.basename(words[0]) == PROGRAM:
        raise fail("argv", "a `vllm serve` command line", " ".join(words[:3]))
    return list(words)


# The files a manifest's container mounts (path -> text) while its serve line is read (inputs/sources.py): what
# --config reads there. None: a serve line of this machine, whose --config is a file here.
CONTAINER_FILES: ContextVar = ContextVar("container_files", default=None)


def config_tokens(release: str, args: list[str]) -> list[str] | None:
    """The tokens of the `--config FILE` YAML (only the exact token `--config` is expanded, as
    utils/argparse_utils.py does: `--config=FILE` is an option the serve parser then refuses or ignores); None
    without one. vLLM requires a .yaml / .yml file (0.14.0 utils/argparse_utils.py:460-466)."""
    if "--config" not in args:
        return None
    if args.count("--config") > 1:
        return []  # vllm_flags.rewrite raises vLLM's "More than one config file specified!"
    at = args.index("--config")
    if at + 1 >= len(args):
        return []  # vllm_flags.rewrite raises vLLM's "No config file specified!"
    path = args[at + 1]
    if not path.endswith((".yaml", ".yml")):
        raise fail("--config", "a .yaml or .yml file (vLLM's --config)", path)
    from ...vocab.releases.vllm_flags import config_tokens as tokens_of
    from ..files import decode, parse_yaml, read_bytes

    mounted = CONTAINER_FILES.get()
    if mounted is not None:
        # A manifest's container: --config names a path in the container, a file the manifest mounts (a ConfigMap
        # or Secret it holds), never a file of the same name on this machine.
        text = mounted.get(os.path.normpath(path)) if path.startswith("/") else None
        if text is None:
            raise fail("--config", "a file the manifest mounts in the container (a ConfigMap or Secret it holds, "
                                   "at an absolute path)", path,
                       detail="kvcalc does not read the container's files from this machine")
        data = parse_yaml(text, source=f"{path} (mounted in the container)")
    else:
        data = parse_yaml(decode(read_bytes(path, "a readable vLLM --config YAML"), path), source=path)
    if data is None:
        return []
    if not isinstance(data, dict):
        raise LayoutError(path, "", "a mapping of vllm serve arguments", type(data).__name__)
    return tokens_of(release, data)


def read(release: str, argv: list[str]) -> tuple[str | None, dict[str, Option]]:
    """(the positional model, {option name: Option}) of a serve line's arguments, as the release's parser reads
    them; what it refuses raises (exit 2)."""
    from ...vocab.releases import vllm_flags as vf

    try:
        args = vf.rewrite(release, argv, config_tokens(release, argv))
    except ValueError as e:
        raise fail("argv", f"a command line vLLM {release} accepts", detail=str(e)) from None
    positional: list[str] = []
    opts: dict[str, Option] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            positional += args[i + 1:]
            break
        if not a.startswith("-") or a == "-" or _negative_number(a):
            positional.append(a)
            i += 1
            continue
        try:
            m = vf.resolve(release, a)
        except ValueError as e:  # ambiguous abbreviation
            raise fail("argv", f"an option vLLM {release} reads", a, detail=str(e)) from None
        if m is None:
            hint = vf.closest(release, a)
            raise fail(a.split("=", 1)[0][:60], f"an option of vLLM {release}'s `vllm serve` (vLLM stops with "
                       "'unrecognized arguments')", detail=f"did you mean {hint}?" if hint else "")
        i = _take(release, m, args, i, opts)
    if len(positional) > 1:
        raise fail("argv", f"one positional argument, the model (vLLM {release}: 'unrecognized arguments')",
                   " ".join(positional[1:])[:60])
    return (positional[0] if positional else None), opts


def _negative_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _take(release: str, m, args: list[str], i: int, opts: dict[str, Option]) -> int:
    """Record option `m` (found at args[i]) with its value; the index after what it consumed."""
    info = m.info
    if info.kind == "help":
        raise fail(m.spelling, "a serve line (-h prints vLLM's help and starts nothing)")
    if not info.takes_value:
        if m.value is not None:
            # argparse.py:2037-2041: a switch given `=value` -> "ignored explicit argument".
            raise fail(m.spelling, f"a switch without a value (vLLM {release}: 'argument {m.spelling}: ignored "
                       f"explicit argument {m.value!r}')", m.value)
        opts[info.name] = Option(name=info.name, spelling=m.spelling, value=None, negated=m.negated)
        return i + 1
    if m.value is not None:
        values, i = [m.value], i + 1
    else:
        j = i + 1
        values = []
        while j < len(args) and (not args[j].startswith("-") or _negative_number(args[j]) or args[j] == "-"):
            values.append(args[j])
            j += 1
            if info.nargs is None or info.nargs == "?":
                break
        if not values and info.nargs != "?":
            raise fail(m.spelling, f"a value (vLLM {release}: 'expected one argument')")
        i = j
    for v in values:
        if info.choices is not None and v not in info.choices:
            raise fail(m.spelling, f"one of {', '.join(info.choices)} (vLLM {release}: 'invalid choice')", v)
    value: Any = values if info.nargs == "+" else (values[0] if values else None)
    if info.marks == "append" and info.name in opts:
        prev = opts[info.name].value
        value = (prev if isinstance(prev, list) else [prev]) + (value if isinstance(value, list) else [value])
    opts[info.name] = Option(name=info.name, spelling=m.spelling, value=value)  # argparse: the last one wins
    return i


def spans(release: str, args: list[str]) -> list[tuple[str | None, list[str]]]:
    """A serve line's arguments (after `vllm serve`), as given, cut into (the option's name in the release's parser,
    its tokens): `-tp 4` and `--tensor-parallel-size=4` are both ("--tensor-parallel-size", tokens as written); a
    positional word is ("", [word]); a token the parser does not resolve alone (`--config`'s file, a dotted JSON
    option) is (None, [token]), kept whole. vllm-args replaces the spans it spells and keeps the others."""
    from ...vocab.releases import vllm_flags as vf

    out: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-" or _negative_number(a):
            out.append(("" if a != "--" else None, [a]))
            i += 1
            continue
        try:
            rewritten = vf.rewrite(release, [a])
            m = vf.resolve(release, rewritten[0]) if len(rewritten) == 1 and "." not in rewritten[0] else None
        except ValueError:
            m = None
        if m is None:
            out.append((None, [a]))
            i += 1
            continue
        j = i + 1
        if m.info.takes_value and m.value is None:
            while j < len(args) and (not args[j].startswith("-") or _negative_number(args[j]) or args[j] == "-"):
                j += 1
                if m.info.nargs is None or m.info.nargs == "?":
                    break
        out.append((m.info.name, args[i:j]))
        i = j
    return out
