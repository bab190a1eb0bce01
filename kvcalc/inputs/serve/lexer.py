"""A shell script's tokens, as a POSIX shell reads them (XCU 2.2 - 2.3): quoting ('…', "…", backslash), line
continuations (LF and CRLF), comments, the control operators, redirections (dropped with their target, as the token
"redirect"), and expansions kept as parts for serve/shell.py to evaluate. Input stage, pure."""

from __future__ import annotations

import re

from ...vocab.errors import LayoutError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SCRIPT = 1 << 20  # a container script longer than 1 MiB is not a serve command


def split_script(source: str, key: str, script: str) -> list:
    """The script's tokens: words (lists of (quoted, kind, text) parts) and operators (str)."""
    if len(script) > MAX_SCRIPT:
        raise LayoutError(source, key, f"a script of at most {MAX_SCRIPT:,} characters", f"{len(script):,}")
    lexer = _Lexer(source, key, script)
    return lexer.run()


class _Lexer:
    """Tokens of a POSIX shell script: words as parts and the control operators between them."""

    def __init__(self, source: str, key: str, text: str):
        self.source, self.key, self.s, self.i = source, key, text, 0
        self.tokens: list = []
        self.word: list | None = None

    def fail(self, what: str) -> LayoutError:
        line = self.s.count("\n", 0, self.i) + 1
        return LayoutError(self.source, f"{self.key} line {line}", "a shell script kvcalc can read", what)

    def part(self, quoted: bool, kind: str, text: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append((quoted, kind, text))

    def end(self) -> None:
        if self.word is not None:
            self.tokens.append(self.word)
            self.word = None

    def op(self, text: str) -> None:
        self.end()
        self.tokens.append(text)

    def run(self) -> list:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.backslash()
            elif c in " \t\r":
                self.end()
                self.i += 1
            elif c == "\n":
                self.op("\n")
                self.i += 1
            elif c == "#" and self.word is None:
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise self.fail("an unterminated ' quote")
                self.part(True, "text", s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                self.double()
            elif c == "$":
                self.dollar(False)
            elif c == "`":
                self.backquote(False)
            elif s.startswith("&>", self.i):  # bash: &>file sends both streams
                self.i += 1
                self.redirect()
            elif c in ";&|()":
                two = s[self.i:self.i + 2]
                text = two if two in ("&&", "||", ";;", "|&") else c
                self.op(text)
                self.i += len(text)
            elif c in "<>":
                self.redirect()
            else:
                self.part(False, "text", c)
                self.i += 1
        self.end()
        return self.tokens

    def backslash(self) -> None:
        s, i = self.s, self.i
        if s.startswith("\\\n", i):
            self.i += 2
        elif s.startswith("\\\r\n", i):
            self.i += 3
        else:
            self.part(True, "text", s[i + 1:i + 2])
            self.i += 2

    def double(self) -> None:
        s = self.s
        self.i += 1
        self.part(True, "text", "")  # "" is a word even when empty
        while True:
            if self.i >= len(s):
                raise self.fail('an unterminated " quote')
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    self.part(True, "text", s[self.i + 1])
                self.i += 2
            elif c == "$":
                self.dollar(True)
            elif c == "`":
                self.backquote(True)
            else:
                self.part(True, "text", c)
                self.i += 1

    def dollar(self, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1:i + 2]
        if nxt == "(":
            end = _closing(s, i + 1)
            if end < 0:
                raise self.fail("an unterminated $( substitution")
            self.part(quoted, "unknown", s[i:end + 1])
            self.i = end + 1
        elif nxt == "{":
            end = s.find("}", i + 2)
            if end < 0:
                raise self.fail("an unterminated ${ expansion")
            self.part(quoted, "param", s[i + 2:end])
            self.i = end + 1
        elif nxt and (nxt in "@*#?$!-0123456789"):
            self.part(quoted, "param", nxt)
            self.i += 2
        else:
            m = _NAME.match(s, i + 1)
            if m:
                self.part(quoted, "param", m.group(0))
                self.i = m.end()
            else:
                self.part(quoted, "text", "$")
                self.i += 1

    def backquote(self, quoted: bool) -> None:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise self.fail("an unterminated ` substitution")
        self.part(quoted, "unknown", self.s[self.i:end + 1])
        self.i = end + 1

    def redirect(self) -> None:
        """`>file`, `2>&1`, `>>log`, `<in`, `&>out`: dropped with their target (a leading fd number too)."""
        s = self.s
        if self.word is not None and all(not q and k == "text" and t.isdigit() for q, k, t in self.word):
            self.word = None  # the fd of 2>…
        self.end()
        m = re.compile(r"<<-?|>>|>&|<&|>\||<>|>|<").match(s, self.i)
        assert m is not None  # noqa: S101 - run() calls it on < or >
        if m.group(0).startswith("<<"):
            raise self.fail("a here-document")
        self.i = m.end()
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        self.tokens.append("redirect")


def _closing(s: str, open_at: int) -> int:
    """The index of the `)` that closes the `(` at open_at (quotes inside skipped), or -1."""
    depth, i = 0, open_at
    while i < len(s):
        c = s[i]
        if c in "'\"":
            end = s.find(c, i + 1)
            if end < 0:
                return -1
            i = end
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1
