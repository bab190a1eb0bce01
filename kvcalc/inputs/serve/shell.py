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

import re

from ...vocab.errors import LayoutError
from ...vocab.records import field, record
from .arith import arithmetic

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
MAX_SCRIPT = 1 << 20  # a container script longer than 1 MiB is not a serve command


@record
class Command:
    """One simple command of a script: its words after expansion, the references in each word whose value is
    unknown (the text as written -> why), and the environment the process gets (exported variables and the
    command's own `X=… cmd` prefix)."""

    words: tuple
    unknown: dict  # reference as written ("$(hostname)", "${POD_IP}") -> why its value is unknown
    env: dict
    env_unknown: dict = field(factory=dict)  # the process's variables whose value cannot be read: name -> why


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


def run_script(tokens: list, env: dict[str, str], unknown_env: dict[str, str], params: list[str],
               files: dict[str, str] | None = None) -> list[Command]:
    """The script's simple commands in order, each expanded with the variables set before it. `env`: the
    container's variables (exported); `unknown_env`: variables the container gets whose value kvcalc cannot read
    (name -> why); `params`: $0, $1, … (the words after the script in `sh -c SCRIPT …`); `files`: path -> text of
    the files the manifest mounts (for `$(cat FILE)`)."""
    shell = _Shell(dict(env), dict(unknown_env), set(env) | set(unknown_env), params, files or {})
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
    def __init__(self, values: dict, unknown: dict, exported: set, params: list[str], files: dict):
        self.values, self.unknown, self.exported, self.params = values, unknown, exported, params
        self.files = files

    def command(self, words: list) -> Command | None:
        prefix: dict[str, str] = {}
        prefix_unknown: dict[str, str] = {}
        missing: dict[str, str] = {}
        i = 0
        while i < len(words) and self.assignment(words[i]) is not None:
            name, value_parts = self.assignment(words[i])
            own: dict[str, str] = {}
            value = self.joined(value_parts, own)
            if own:  # a value kvcalc cannot compute: the variable is unknown from here on, with the reason
                prefix_unknown[name] = next(iter(own.values()))
            else:
                prefix[name] = value
            i += 1
        fields: list[str] = []
        for w in words[i:]:
            fields += self.fields(w, missing)
        if not fields:  # X=1 alone: a shell variable (exported if it was)
            self.set_all(prefix, export=False)
            self.unset_known(prefix_unknown)
            return None
        if fields[0] in ("export", "readonly", "declare", "typeset") or fields[0] == "unset":
            self.builtin(fields, missing)
            return None
        env = {k: v for k, v in self.values.items() if k in self.exported}
        env.update(prefix)
        for name in prefix_unknown:
            env.pop(name, None)
        unknown_env = {k: v for k, v in self.unknown.items() if k in self.exported}
        unknown_env.update(prefix_unknown)
        return Command(words=tuple(fields), unknown=missing, env=env, env_unknown=unknown_env)

    def unset_known(self, unknown: dict[str, str]) -> None:
        for name, why in unknown.items():
            self.values.pop(name, None)
            self.unknown[name] = why

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

    def builtin(self, fields: list[str], missing: dict) -> None:
        if fields[0] == "unset":
            for name in fields[1:]:
                self.values.pop(name, None)
                self.unknown.pop(name, None)
            return
        for arg in fields[1:]:
            if arg.startswith("-"):
                continue
            name, eq, value = arg.partition("=")
            refs = [r for r in missing if r in value]
            if eq and refs:
                self.unset_known({name: missing[refs[0]]})
                if fields[0] != "readonly":
                    self.exported.add(name)
            elif eq:
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
        if value is None and op is None:
            # Unset, the shell gives '': in a manifest that is a variable something else injects (a controller,
            # the image), not a value to plan with.
            missing[ref] = f"{name} is set nowhere in the manifest or the script (injected elsewhere, or empty)"
            return None
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
                got = self.substitute(text, missing)
                if got is None:
                    cur.append(text)
                    has = True
                    continue
                values: list[str] | None = [got]
            else:
                values = self.lookup(text, missing)
            if values is None:
                cur.append("${" + text + "}")
                has = True
                continue
            if text == "@" and quoted:  # "$@": each parameter a field of its own
                cur = _spread(out, cur, values)
                has = has or bool(values)
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
            cur, has = _spread(out, cur, pieces), True
            if joined[-1:].isspace():
                out.append("".join(cur))
                cur, has = [], False
        if has:
            out.append("".join(cur))
        return out

    def substitute(self, text: str, missing: dict) -> str | None:
        """A substitution kvcalc can evaluate: `$((arithmetic))` over known variables, `$(cat FILE)` / `$(< FILE)`
        of a file the manifest holds (a ConfigMap or Secret mounted in the container); else None, `missing` told."""
        if text.startswith("$((") and text.endswith("))"):
            # Parameter expansions inside come first (${X:-0}), then the arithmetic.
            inner, why = self.expand_params(text[3:-2])
            value = arithmetic(inner, self.arith_value) if why is None else why
            if isinstance(value, int):
                return str(value)
            missing[text] = value
            return None
        m = re.fullmatch(r"(?:\$\(|`)\s*(?:cat\s+|<\s*)([^\s;&|<>()`$]+)\s*(?:\)|`)", text)
        if m and m.group(1) in self.files:
            return self.files[m.group(1)].rstrip("\n")  # $(...) drops trailing newlines
        missing[text] = (f"{m.group(1)} is not a file of this manifest (a ConfigMap or Secret mounted in the "
                         "container)" if m else "a command substitution kvcalc does not run")
        return None

    def expand_params(self, text: str) -> tuple[str, str | None]:
        """`${…}` and `$NAME` in an arithmetic expression replaced by their values; (text, why) when one is unknown."""
        whys: list[str] = []

        def one(m) -> str:
            got = self.lookup(m.group(1) or m.group(2), {})
            if got is None:
                name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", m.group(1) or m.group(2))
                whys.append(self.unknown.get(name.group(0) if name else "", f"{m.group(0)} is unknown"))
                return "0"
            return " ".join(got)

        out = re.sub(r"\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", one, text)
        return out, (whys[0] if whys else None)

    def arith_value(self, name: str) -> int | str:
        """A variable's value in $((…)): an integer, or why it is unknown (an unset variable is 0, as in sh)."""
        if name in self.unknown:
            return f"{name}: {self.unknown[name]}"
        text = self.values.get(name, "0").strip() or "0"
        return int(text) if re.fullmatch(r"-?[0-9]{1,18}", text) else f"{name} is {text[:20]!r}, not an integer"

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


def _spread(out: list[str], cur: list[str], items: list[str]) -> list[str]:
    """Expanded items that are fields of their own ("$@"'s parameters, an unquoted value's pieces): the first joins
    the field being built, each later one ends it and starts the next. The field being built afterwards."""
    for j, item in enumerate(items):
        if j:
            out.append("".join(cur))
            cur = []
        cur.append(item)
    return cur
