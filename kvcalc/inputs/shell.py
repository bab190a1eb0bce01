"""A container's command as it runs: Kubernetes' `$(VAR)` expansion, then, for `sh -c` / `bash -c`, the script read
the way a POSIX shell reads it, far enough to find the one command that starts the server and the words and
environment it gets.

Input stage, pure (no I/O). What is read: quoting ('…', "…", backslash), line continuations (LF and CRLF), comments,
the separators `;` `&&` `||` `|` `&` and newlines, redirections (dropped with their target), `$VAR` / `${VAR}` /
`${VAR:-default}` and their field splitting outside quotes, `"$@"` and `$1…` from the words after the script,
`export X=…` / `X=…` lines and `X=… cmd` prefixes, and the wrappers `exec`, `env`, `nohup`, `time`, `command`.
What cannot be known (`$(cmd)`, backticks, a variable the pod gets from somewhere kvcalc cannot read) is kept as
the reference text with the reason beside it, so a caller can refuse only when a value it needs is unknown.
"""

from __future__ import annotations

import os
import re

from ..vocab.errors import LayoutError
from ..vocab.records import record

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh"))
# Words that run the command after them (with their own options first).
WRAPPERS = frozenset(("exec", "nohup", "time", "command", "env", "stdbuf", "taskset", "numactl", "tini", "dumb-init"))
MAX_SCRIPT = 1 << 20  # a container script longer than 1 MiB is not a serve command


def k8s_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of command, args and env values (k8s.io/kubernetes third_party/forked/golang/expansion
    expand.go): `$(NAME)` becomes NAME's value when the container defines it and stays as written otherwise; `$$`
    is a literal `$`; any other `$` is kept."""
    if "$" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "$" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:end]
            out.append(env[name] if name in env else f"$({name})")
            i = end + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


@record
class Command:
    """One simple command of a script: its words after expansion, the references in each word whose value is
    unknown (the text as written -> why), and the environment the process gets (exported variables and the
    command's own `X=… cmd` prefix)."""

    words: tuple
    unknown: dict  # reference as written ("$(hostname)", "${POD_IP}") -> why its value is unknown
    env: dict


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


SEPARATORS = frozenset(("\n", ";", "&&", "||", "|", "|&", "&", ";;", "(", ")"))


def run_script(tokens: list, env: dict[str, str], unknown_env: dict[str, str], params: list[str]) -> list[Command]:
    """The script's simple commands in order, each expanded with the variables set before it. `env`: the
    container's variables (exported); `unknown_env`: variables the container gets whose value kvcalc cannot read
    (name -> why); `params`: $0, $1, … (the words after the script in `sh -c SCRIPT …`)."""
    shell = _Shell(dict(env), dict(unknown_env), set(env) | set(unknown_env), params)
    out: list[Command] = []
    words: list = []
    skip_next = False
    for tok in tokens + ["\n"]:
        if isinstance(tok, list):
            if skip_next:
                skip_next = False
            else:
                words.append(tok)
        elif tok == "redirect":
            skip_next = True
        elif tok in SEPARATORS:
            if words:
                cmd = shell.command(words)
                if cmd is not None:
                    out.append(cmd)
            words = []
    return out


class _Shell:
    def __init__(self, values: dict, unknown: dict, exported: set, params: list[str]):
        self.values, self.unknown, self.exported, self.params = values, unknown, exported, params

    def command(self, words: list) -> Command | None:
        prefix: dict[str, str] = {}
        missing: dict[str, str] = {}
        i = 0
        while i < len(words) and self.assignment(words[i]) is not None:
            name, value_parts = self.assignment(words[i])
            prefix[name] = self.joined(value_parts, missing)
            i += 1
        fields: list[str] = []
        for w in words[i:]:
            fields += self.fields(w, missing)
        if not fields:  # X=1 alone: a shell variable (exported if it was)
            self.set_all(prefix, export=False)
            return None
        if fields[0] in ("export", "readonly", "declare", "typeset") or fields[0] == "unset":
            self.builtin(fields)
            return None
        env = {k: v for k, v in self.values.items() if k in self.exported}
        env.update(prefix)
        return Command(words=tuple(fields), unknown=missing, env=env)

    @staticmethod
    def assignment(word: list):
        quoted, kind, text = word[0]
        if quoted or kind != "text":
            return None
        head = "".join(t for q, k, t in _leading_text(word))
        m = _ASSIGN.match(head)
        if not m or not _NAME.fullmatch(m.group(1)):
            return None
        name = m.group(1)
        consumed = len(name) + 1
        parts: list = []
        for q, k, t in word:  # drop the `NAME=` characters from the leading text parts
            if consumed and not q and k == "text":
                take = min(consumed, len(t))
                t, consumed = t[take:], consumed - take
                if not t:
                    continue
            parts.append((True, k, t))  # an assignment's value is not field-split
        return name, parts

    def builtin(self, fields: list[str]) -> None:
        if fields[0] == "unset":
            for name in fields[1:]:
                self.values.pop(name, None)
                self.unknown.pop(name, None)
            return
        for arg in fields[1:]:
            if arg.startswith("-"):
                continue
            name, eq, value = arg.partition("=")
            if eq:
                self.set_all({name: value}, export=fields[0] != "readonly")
            else:
                self.exported.add(name)

    def set_all(self, assignments: dict, export: bool) -> None:
        for name, value in assignments.items():
            self.values[name] = value
            self.unknown.pop(name, None)
            if export:
                self.exported.add(name)

    def lookup(self, expr: str, missing: dict) -> list[str] | None:
        """A parameter's value as fields ($@ gives one per parameter), or None with `missing` told why."""
        if expr in ("@", "*"):
            return list(self.params[1:])
        if expr.isdigit():
            n = int(expr)
            return [self.params[n]] if n < len(self.params) else [""]
        if expr == "#":
            return [str(max(len(self.params) - 1, 0))]
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?])(.*))?", expr, re.S)
        ref = "${" + expr + "}"
        if not m:
            missing[ref] = "a shell expansion kvcalc does not evaluate"
            return None
        name, op, word = m.group(1), m.group(2), m.group(3) or ""
        if name in self.unknown and not (op and op.endswith("+")):
            missing[ref] = self.unknown[name]
            return None
        value = self.values.get(name)
        unset = value is None
        empty = unset or (value == "" and (op or "").startswith(":"))
        if op in ("-", ":-", "=", ":="):
            if empty:
                value = word
                if op.endswith("="):
                    self.values[name] = word
        elif op in ("+", ":+"):
            value = "" if empty else word
        elif op in ("?", ":?") and empty:
            missing[ref] = f"{name} is not set (the script would stop)"
            return None
        return [value or ""]

    def fields(self, word: list, missing: dict) -> list[str]:
        """A word's fields: unquoted expansions split on blanks, "$@" one field per parameter."""
        out: list[str] = []
        cur: list[str] = []
        has = False  # the current field exists (a quoted part, even empty, makes it exist)
        for quoted, kind, text in word:
            if kind == "text":
                cur.append(text)
                has = has or quoted or bool(text)
                continue
            if kind == "unknown":
                missing[text] = "a command substitution kvcalc does not run"
                cur.append(text)
                has = True
                continue
            values = self.lookup(text, missing)
            if values is None:
                cur.append("${" + text + "}")
                has = True
                continue
            if text == "@" and quoted:  # "$@": each parameter a field of its own
                for j, v in enumerate(values):
                    if j:
                        out.append("".join(cur))
                        cur = []
                    cur.append(v)
                    has = True
                continue
            joined = " ".join(values)
            if quoted:
                cur.append(joined)
                has = True
                continue
            pieces = joined.split()
            if not pieces:
                continue
            if joined[:1].isspace() and has:
                out.append("".join(cur))
                cur, has = [], False
            for j, piece in enumerate(pieces):
                if j:
                    out.append("".join(cur))
                    cur = []
                cur.append(piece)
                has = True
            if joined[-1:].isspace():
                out.append("".join(cur))
                cur, has = [], False
        if has:
            out.append("".join(cur))
        return out

    def joined(self, parts: list, missing: dict) -> str:
        fields = self.fields(parts, missing)
        return " ".join(fields)


def _leading_text(word: list) -> list:
    """The unquoted text parts a word starts with (where an assignment's `NAME=` must be)."""
    out = []
    for part in word:
        if part[0] or part[1] != "text":
            break
        out.append(part)
    return out


def shell_script(argv: list[str]) -> tuple[str, list[str]] | None:
    """`sh -c SCRIPT [$0 $1 …]` (any shell of SHELLS, options such as -e, -x, -o pipefail before -c): (SCRIPT, the
    parameters); None when argv does not run a shell with -c."""
    if not argv or os.path.basename(argv[0]) not in SHELLS:
        return None
    i, has_c = 1, False
    while i < len(argv) and argv[i][:1] in "-+" and len(argv[i]) > 1 and argv[i] != "--":
        opt = argv[i]
        if opt in ("-o", "+o"):
            i += 2
            continue
        if opt.startswith("-") and not opt.startswith("--") and "c" in opt:
            has_c = True
        i += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    if not has_c or i >= len(argv):
        return None
    return argv[i], argv[i + 1:]


def unwrap(words: tuple) -> tuple[list[str], dict[str, str]]:
    """A command's words after its wrappers (`exec`, `env X=1`, `nohup`, …) and the assignments `env` adds."""
    ws = list(words)
    added: dict[str, str] = {}
    while ws and os.path.basename(ws[0]) in WRAPPERS:
        head = os.path.basename(ws.pop(0))
        while ws and ws[0].startswith("-") and head != "exec":
            opt = ws.pop(0)
            if head in ("taskset", "numactl", "stdbuf") and "=" not in opt and ws and not ws[0].startswith("-") \
                    and len(opt) == 2:
                ws.pop(0)  # the option's argument (taskset -c 0-7)
        if head == "taskset" and ws and re.fullmatch(r"[0-9a-fx,\-]+", ws[0]):
            ws.pop(0)  # the mask
        while head == "env" and ws and _ASSIGN.fullmatch(ws[0]) and _NAME.fullmatch(ws[0].split("=", 1)[0]):
            name, value = ws.pop(0).split("=", 1)
            added[name] = value
    return ws, added
