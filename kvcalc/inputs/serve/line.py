"""A --serve line that is a little shell script (`export X=1; vllm serve …`, `cd /x && vllm serve …`,
`env -i X=1 vllm serve …`): read as the shell runs it (serve/shell.py, serve/flow.py) and given back as the one
server command with the environment it gets in front (`X=1 vllm serve …`), the form the line readers read. A plain
line comes back as it is. Input stage, pure."""

from __future__ import annotations

import os
import re
import shlex

from ...vocab.errors import LayoutError
from .argv import WRAPPERS, unwrap, unwrap_env
from .flow import literal
from .lexer import split_script
from .servers import server_of
from .shell import BUILTINS, run_script

SOURCE = "--serve"
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
READ = ("LMCACHE_", "VLLM_USE_SIMPLE_KV_OFFLOAD")  # the server's variables a plan reads


def _starts_server(words: tuple) -> bool:
    return server_of(unwrap(words)[0]) is not None


def as_line(text: str) -> str:
    """The server command of `text` with its environment as leading assignments."""
    tokens = split_script(SOURCE, "", text)
    words = [t for t in tokens if isinstance(t, list)]
    operators = [t for t in tokens if isinstance(t, str) and t != "\n" or t == "\n" and t is not tokens[-1]]
    heads = [literal(w) or "" for w in words]
    head = next((h for h in heads if not _ASSIGNMENT.fullmatch(h)), "")  # the first word after X=1 prefixes
    if not operators and os.path.basename(head) not in WRAPPERS | BUILTINS:
        return text
    hits = run_script(tokens, {}, {}, [], wanted=_starts_server, source=SOURCE, key="")
    if not hits:
        return text  # the line readers say what is missing
    if len(hits) > 1:
        raise LayoutError(SOURCE, "", "one server command (kvcalc plans one engine per line)", len(hits))
    cmd = hits[0]
    argv, added, cleared, removed = unwrap_env(cmd.words)
    env = {} if cleared else {k: v for k, v in cmd.env.items() if k not in removed}
    env.update(added)
    decided = sorted(k for k in ({} if cleared else cmd.env_unknown) if k not in removed and k not in added
                     and (k.startswith(READ) or k in READ))
    if decided:
        # A variable the plan reads, set where the script's control flow decides: nothing to plan with.
        raise LayoutError(SOURCE, decided[0], "a value kvcalc can read", detail=cmd.env_unknown[decided[0]])
    return shlex.join([f"{k}={v}" for k, v in env.items()] + argv)
