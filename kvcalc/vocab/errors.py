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
        return _printable(" ".join(str(self).split()))


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
