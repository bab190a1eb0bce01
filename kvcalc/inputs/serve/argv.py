"""A container's argv before and around the shell: Kubernetes' `$(VAR)` expansion of command and args, `sh -c
SCRIPT …` recognised (the script and its positional parameters), and the wrappers in front of a server command
(`exec`, `env X=1`, `nohup`, …). Pure."""

from __future__ import annotations

import os
import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh"))
# Words that run the command after them (with their own options first).
WRAPPERS = frozenset(("exec", "nohup", "time", "command", "env", "stdbuf", "taskset", "numactl", "tini", "dumb-init"))


class ExpansionTooLong(ValueError):
    """A `$(VAR)` expansion past its bound (its `limit`, in characters)."""

    def __init__(self, limit: int):
        super().__init__(limit)
        self.limit = limit


def k8s_expand(text: str, env: dict[str, str], limit: int | None = None) -> str:
    """Kubernetes' expansion of command, args and env values (k8s.io/kubernetes third_party/forked/golang/expansion
    expand.go): `$(NAME)` becomes NAME's value when the container defines it and stays as written otherwise; `$$`
    is a literal `$`; any other `$` is kept. `limit`: ExpansionTooLong as soon as the result would pass it (env
    entries that each repeat the one before twice double at every entry)."""
    if "$" not in text:
        return text
    out: list[str] = []
    size = 0
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
            value = env[name] if name in env else f"$({name})"
            size += len(value)
            if limit is not None and size > limit:
                raise ExpansionTooLong(limit)
            out.append(value)
            i = end + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


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
    ws, added, _, _ = unwrap_env(words)
    return ws, added


def unwrap_env(words: tuple) -> tuple[list[str], dict[str, str], bool, set[str]]:
    """(the words after the wrappers, the assignments `env` adds, whether `env -i` starts from an empty
    environment, the names `env -u NAME` removes): GNU coreutils env's options -i / --ignore-environment / a lone
    `-`, -u NAME / --unset=NAME, and `--` before the command."""
    ws = list(words)
    added: dict[str, str] = {}
    cleared, removed = False, set[str]()
    while ws and os.path.basename(ws[0]) in WRAPPERS:
        head = os.path.basename(ws.pop(0))
        if head == "env":
            cleared, removed = _env_options(ws, added, cleared, removed)
            continue
        while ws and ws[0].startswith("-") and head != "exec":
            opt = ws.pop(0)
            if head in ("taskset", "numactl", "stdbuf") and "=" not in opt and ws and not ws[0].startswith("-") \
                    and len(opt) == 2:
                ws.pop(0)  # the option's argument (taskset -c 0-7)
        if head == "taskset" and ws and re.fullmatch(r"[0-9a-fx,\-]+", ws[0]):
            ws.pop(0)  # the mask
    return ws, added, cleared, removed


def _env_options(ws: list[str], added: dict, cleared: bool, removed: set) -> tuple[bool, set]:
    """`env`'s options and assignments, taken off the front of `ws`."""
    while ws:
        w = ws[0]
        if w in ("-i", "--ignore-environment", "-"):
            cleared = True
            added.clear()
        elif w in ("-u", "--unset") and len(ws) > 1:
            ws.pop(0)
            removed.add(ws[0])
            added.pop(ws[0], None)
        elif w.startswith("--unset=") or w.startswith("-u") and len(w) > 2:
            name = w.split("=", 1)[1] if w.startswith("--") else w[2:]
            removed.add(name)
            added.pop(name, None)
        elif w == "--":
            ws.pop(0)
            break
        elif w.startswith("-"):
            pass  # -0, -v, -C DIR is rare: its argument would be taken for the command
        elif _ASSIGN.fullmatch(w) and _NAME.fullmatch(w.split("=", 1)[0]):
            name, value = w.split("=", 1)
            added[name] = value
            removed.discard(name)
        else:
            break
        ws.pop(0)
    return cleared, removed
