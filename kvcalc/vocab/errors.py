"""One error base for everything kvcalc refuses; the CLI turns it into one stderr line."""

from __future__ import annotations


class KvcalcError(Exception):
    """Base class: every refusal kvcalc makes on purpose derives from this."""

    exit_code = 2

    def one_line(self) -> str:
        """The message on one line, with every character a terminal could act on (escape sequences, other
        control and non-printable characters) written as its escape: input text echoed back cannot drive the
        terminal."""
        return cut_long(_printable(" ".join(str(self).split())))


LONG_WORD = 200  # characters: a path, value or flag echoed longer than this is cut, with its length said


def cut_long(text: str) -> str:
    """`text` with every word (a run without blanks) longer than LONG_WORD cut to its first and last characters
    and its length: a 5,000-character value echoed back is no one-line message."""
    if len(text) <= LONG_WORD:
        return text
    import re

    def cut(m) -> str:
        w = m.group(0)
        return f"{w[:80]}...{w[-20:]} ({len(w):,} characters)"

    return re.sub(r"\S{%d,}" % (LONG_WORD + 1), cut, text)


def _printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class LayoutError(KvcalcError):
    """Bad input: names the source, the key path, what was expected and what was found."""

    def __init__(self, source: str, key: str, expected: str, got: object = None, *, detail: str = ""):
        self.source = source
        self.key = key
        self.expected = expected
        self.got = got
        self.detail = detail
        where = f"{source}: {key}" if key else source
        msg = f"{where}: expected {expected}"
        if got is not None:
            msg += f", got {_short(got)}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class UnsupportedError(KvcalcError):
    """A setting or architecture kvcalc does not model; refused rather than guessed."""


class StartupRefusal(KvcalcError):
    """vLLM itself would refuse this configuration at startup (the message says which rule)."""


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
