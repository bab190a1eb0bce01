"""A container's command as it runs: Kubernetes' `$(VAR)` expansion, then, for `sh -c` / `bash -c`, the script read
the way a POSIX shell reads it, far enough to find the one command that starts the server and the words and
environment it gets.

Input stage, pure (no I/O). What is read: the tokens (serve/lexer.py: quoting, continuations, comments, operators,
redirections dropped with their target), the control flow (serve/flow.py: lists, AND-OR lists, pipelines, subshells,
if / while / for / case; what it decides is unknown), `set -a`, `set --`, `shift`, `$VAR` / `${VAR}` /
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
from .lexer import MAX_SCRIPT, split_script  # noqa: F401 - the script's tokens, read here

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
# Built-ins whose effect on the variables and the exit status kvcalc evaluates (no process is started).
BUILTINS = frozenset(("export", "readonly", "declare", "typeset", "unset", "set", "shift", "true", "false", ":"))


@record
class Command:
    """One simple command of a script: its words after expansion, the references in each word whose value is
    unknown (the text as written -> why), and the environment the process gets (exported variables and the
    command's own `X=… cmd` prefix)."""

    words: tuple
    unknown: dict  # reference as written ("$(hostname)", "${POD_IP}") -> why its value is unknown
    env: dict
    env_unknown: dict = field(factory=dict)  # the process's variables whose value cannot be read: name -> why


MAX_EXPANDED = 4 << 20  # bytes a script's expansions may produce in all ($V, $(cat FILE)): a bound on the work


def run_script(tokens: list, env: dict[str, str], unknown_env: dict[str, str], params: list[str],
               files: dict[str, str] | None = None, *, wanted=None, source: str = "the script",
               key: str = "") -> list[Command]:
    """The script's simple commands in order, each expanded with the variables set before it and the control flow
    followed (serve/flow.py). `env`: the container's variables (exported); `unknown_env`: variables the container
    gets whose value kvcalc cannot read (name -> why); `params`: $0, $1, … (the words after the script in
    `sh -c SCRIPT …`); `files`: path -> text of the files the manifest mounts (for `$(cat FILE)`); `wanted`: the
    commands to return, by their words (None: every one): the others get no copy of the environment."""
    from .flow import Flow

    shell = _Shell(dict(env), dict(unknown_env), set(env) | set(unknown_env), params, files or {})
    shell.wanted, shell.where = wanted, (source, key)
    return Flow(shell, source, key).run(tokens)


class _Shell:
    def __init__(self, values: dict, unknown: dict, exported: set, params: list[str], files: dict):
        self.values, self.unknown, self.exported, self.params = values, unknown, exported, params
        self.files = files
        self.wanted, self.where = None, ("the script", "")
        self.conditional: str | None = None  # why the command being run may or may not run (serve/flow.py)
        self.status: int | None = 0  # the last command's exit status, when kvcalc knows it
        self.last = ""  # the last command's words, for a reason
        self.allexport = False  # set -a
        self.params_unknown: str | None = None  # why $@ is unknown (a `set --` the control flow decides)
        self.expanded = 0  # bytes the expansions produced (MAX_EXPANDED)

    def snapshot(self) -> tuple:
        """What a subshell may change: restored at its end (the exit status is the subshell's)."""
        return (dict(self.values), dict(self.unknown), set(self.exported), list(self.params), self.allexport,
                self.params_unknown)

    def restore(self, saved: tuple) -> None:
        (self.values, self.unknown, self.exported, self.params, self.allexport, self.params_unknown) = saved

    def mark_unknown(self, name: str, why: str) -> None:
        self.values.pop(name, None)
        self.unknown[name] = why

    def grow(self, text: str) -> str:
        """`text`, counted against the script's expansion bound."""
        self.expanded += len(text)
        if self.expanded > MAX_EXPANDED:
            source, key = self.where
            raise LayoutError(source, key, f"a script whose expansions produce at most {MAX_EXPANDED:,} bytes "
                                           "(kvcalc's bound on the work)", f"more than {MAX_EXPANDED:,}")
        return text

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
        self.last, self.status = " ".join(fields)[:60], None
        if not fields:  # X=1 alone: a shell variable (exported if it was, or under set -a)
            self.set_all(prefix, export=False)
            self.unset_known({n: self.conditional or why for n, why in prefix_unknown.items()})
            self.status = 0
            return None
        if fields[0] in BUILTINS:
            self.builtin(fields, missing)
            return None
        if self.wanted is not None and not self.wanted(tuple(fields)):
            return None  # not a server: no copy of the environment
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
        head = fields[0]
        self.status = 1 if head == "false" else 0
        if head == "unset":
            for name in fields[1:]:
                if self.conditional:
                    self.mark_unknown(name, self.conditional)
                else:
                    self.values.pop(name, None)
                    self.unknown.pop(name, None)
            return
        if head in ("set", "shift"):
            self.positional(fields)
            return
        if head in ("true", "false", ":"):
            return
        for arg in fields[1:]:
            if arg.startswith("-"):
                continue
            name, eq, value = arg.partition("=")
            refs = [r for r in missing if r in value]
            if eq and refs:
                self.unset_known({name: self.conditional or missing[refs[0]]})
                if fields[0] != "readonly":
                    self.exported.add(name)
            elif eq:
                self.set_all({name: value}, export=fields[0] != "readonly")
            else:
                if self.conditional and name in self.values:
                    self.mark_unknown(name, self.conditional)  # whether the server gets it: the flow decides
                self.exported.add(name)

    def set_all(self, assignments: dict, export: bool) -> None:
        for name, value in assignments.items():
            if self.conditional:
                self.mark_unknown(name, self.conditional)
            else:
                self.values[name] = value
                self.unknown.pop(name, None)
            if export or self.allexport:
                self.exported.add(name)

    def positional(self, fields: list[str]) -> None:
        """`set -a` / `set +a` / `set -o allexport` (assignments exported from then on), `set -- ARGS` and `set ARGS`
        (the positional parameters become ARGS), `shift [N]`: as sh does them (XCU 2.14 set, shift)."""
        if fields[0] == "shift":
            n = fields[1] if len(fields) > 1 else "1"
            if self.conditional:
                self.params_unknown = self.conditional
            elif n.isdigit() and int(n) <= len(self.params) - 1:
                self.params = self.params[:1] + self.params[1 + int(n):]
            else:
                self.status = 1
            return
        args, i = fields[1:], 0
        while i < len(args) and args[i][:1] in "-+" and args[i] not in ("-", "--"):
            opt = args[i]
            if opt in ("-o", "+o") and i + 1 < len(args):
                if args[i + 1] == "allexport":
                    self.allexport = opt == "-o"
                i += 2
                continue
            if "a" in opt[1:]:
                self.allexport = opt[0] == "-"
            i += 1
        if i < len(args) and args[i] in ("-", "--"):
            i += 1
        elif i >= len(args):
            return  # options only: the parameters stay
        if self.conditional:
            self.params_unknown = self.conditional
        else:
            self.params, self.params_unknown = self.params[:1] + args[i:], None

    def lookup(self, expr: str, missing: dict) -> list[str] | None:
        """A parameter's value as fields ($@ gives one per parameter), or None with `missing` told why."""
        if self.params_unknown and (expr in ("@", "*", "#") or expr.isdigit() and expr != "0"):
            missing["${" + expr + "}"] = self.params_unknown
            return None
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
        return [self.grow(value or "")]

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
            return self.grow(self.files[m.group(1)].rstrip("\n"))  # $(...) drops trailing newlines
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
