"""One error base for everything kvcalc refuses; the CLI turns it into one stderr line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")


class KvcalcError(Exception):
    """Base class: every refusal kvcalc makes on purpose derives from this."""

    exit_code = 2
    document_printed = False  # with --format json: the command already printed a document that carries the error

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

    # The engine's memory refusal (no KV budget left, or one max_model_len request does not fit): more GPUs may
    # start it, where another refusal (a layout rule) stays whatever the parallelism (tools/loading.py).
    memory_short = False
    weights_bytes: int | None = None  # the weights a GPU holds, where the refusal came from a predicted budget
    requested_bytes: int | None = None  # what the engine has for everything on a GPU (vLLM: total x utilization)
    requested_what = "the engine may use"  # how a sentence names requested_bytes


class InternalError(Exception):
    """A kvcalc bug, not a refusal: a stage was handed what its caller never gives it (an engine's or a backend's own
    module asked for the section of a layout of another kind). Not a KvcalcError: no input can cause it."""


def known(value: _T | None, what: str = "a figure") -> _T:
    """`value`, where the caller's own invariant says it is set (a pool with a budget has its bytes; a size target
    sets one of its three): the typed form of that invariant, an InternalError if it ever breaks."""
    if value is None:
        raise InternalError(f"{what} that is always set here is missing")
    return value


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
