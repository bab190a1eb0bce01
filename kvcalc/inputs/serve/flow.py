"""A script's control flow, as a POSIX shell runs it (XCU 2.9 Shell Commands), far enough to know which settings
reach the server and which the script's own flow decides.

What is followed: lists (`;`, newlines, `&` whose command runs in the background, in a subshell of its own), AND-OR
lists (`a && b`, `a || b`: b runs by a's exit status, known for the assignment and the built-ins kvcalc evaluates,
unknown for any other command), pipelines (each command in a subshell), subshells `( … )` (what they set is gone
after the `)`), groups `{ …; }`, and the compound commands `if`, `while`, `until`, `for` and `case`, whose bodies may
or may not run. An assignment, `export`, `unset`, `set --` or `shift` that runs only where the control flow decides
makes what it touches unknown (named with the reason), so a gate that depends on it is `unknown`, never passed on a
guess. Input stage, pure.
"""

from __future__ import annotations

from ...vocab.errors import LayoutError

SEPARATORS = frozenset(("\n", ";", "&&", "||", "|", "|&", "&", ";;", "(", ")"))
OPENS = frozenset(("if", "while", "until", "for", "case"))
CLOSES = frozenset(("fi", "done", "esac"))
BODIES = frozenset(("then", "else", "elif", "do"))
GROUPS = frozenset(("{", "}", "!"))
MAX_COPIED = 4_000_000  # variables copied into subshells over a whole script: a bound on the work


class Frame:
    """An open compound command: `kind` subshell | if | while | until | for | case; `saved`: a subshell's shell
    state to restore at its `)`; `body`: inside the part that may or may not run (after then / else / elif / do)."""

    __slots__ = ("kind", "saved", "body")

    def __init__(self, kind: str, saved: tuple | None = None):
        self.kind, self.saved, self.body = kind, saved, False


def literal(word: list) -> str | None:
    """A word's text when it is one unquoted literal (how a reserved word must be written), else None."""
    if all(not quoted and kind == "text" for quoted, kind, _ in word):
        return "".join(text for _, _, text in word)
    return None


class Flow:
    """Runs a script's tokens through a shell (serve/shell._Shell), command by command, with the control flow."""

    def __init__(self, shell, source: str, key: str):
        self.shell, self.source, self.key = shell, source, key
        self.stack: list[Frame] = []
        self.copied = 0
        self.out: list = []

    def run(self, tokens: list) -> list:
        words: list = []
        skip_next, prev = False, "\n"  # prev: the operator before the command being read
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
                    self.execute(words, prev, tok)
                words = []
                prev = "\n" if tok == "(" else tok
                if tok == "(":
                    self.open_subshell()
                elif tok == ")":
                    self.close_subshell()
        return self.out

    # ------------------------------------------------------------------ compound commands

    def open_subshell(self) -> None:
        sh = self.shell
        self.copied += len(sh.values) + len(sh.unknown) + len(sh.exported)
        if self.copied > MAX_COPIED:
            raise LayoutError(self.source, self.key, f"a script whose subshells copy at most {MAX_COPIED:,} "
                                                     "variables in all (kvcalc's bound on the work)")
        self.stack.append(Frame(kind="subshell", saved=sh.snapshot()))

    def close_subshell(self) -> None:
        if self.stack and self.stack[-1].kind == "case":
            return  # a case pattern's `)`
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].kind == "subshell":
                self.shell.restore(self.stack[i].saved)
                del self.stack[i:]
                return

    def reserved(self, words: list) -> list:
        """The command's words after its reserved words, the frames they open and close handled."""
        while words:
            head = literal(words[0])
            if head in OPENS:
                self.stack.append(Frame(kind=head))
                self.stack[-1].body = head == "case"  # every pattern's commands may or may not run
                if head in ("for", "case"):
                    if head == "for" and len(words) > 1 and literal(words[1]):
                        self.shell.mark_unknown(literal(words[1]), "a for loop's variable: it takes each listed "
                                                                   "value in turn")
                    return []
            elif head in BODIES:
                frame = next((f for f in reversed(self.stack) if f.kind != "subshell"), None)
                if frame is not None:
                    frame.body = True
            elif head in CLOSES:
                for i in range(len(self.stack) - 1, -1, -1):
                    if self.stack[i].kind != "subshell":
                        del self.stack[i:]
                        break
            elif head not in GROUPS:
                return words
            words = words[1:]
        return words

    # ------------------------------------------------------------------ one command

    def execute(self, words: list, before: str, after: str) -> None:
        sh = self.shell
        words = self.reserved(words)
        if not words:
            return
        why = self.decided_by_flow(before)
        if why == "skipped":
            return
        alone = before in ("|", "|&") or after in ("|", "|&", "&")  # a subshell of its own
        saved = sh.snapshot() if alone else None
        sh.conditional = why
        try:
            cmd = sh.command(words)
        finally:
            sh.conditional = None
        if cmd is not None:
            self.out.append(cmd)
        if saved is not None:
            sh.restore(saved)
            sh.status = 0 if after == "&" else None
        if why is not None:
            sh.status = None

    def decided_by_flow(self, before: str) -> str | None:
        """Why the command may or may not run (None: it runs), or "skipped" when the shell skips it (`a && b`
        after a failed a)."""
        sh = self.shell
        if before in ("&&", "||"):
            if sh.status is not None:
                if (sh.status == 0) != (before == "&&"):
                    return "skipped"
            else:
                return (f"set after `{before}` on a command whose exit status kvcalc cannot know "
                        f"({sh.last[:40]}): the script's control flow decides whether it runs")
        body = next((f.kind for f in self.stack if f.kind != "subshell" and f.body), None)
        if body is not None:
            return f"set inside a `{body}` body: the script's control flow decides whether it runs"
        return None
