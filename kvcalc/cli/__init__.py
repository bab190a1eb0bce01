"""The `kvcalc` command: a thin Typer layer over the pipeline and the tools. `main` is the entry point: it runs one
command and turns every refusal into one stderr line and an exit code, once. The commands are in app.py, their
options in options.py, the streams in console.py."""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # the copy typer ships (the type checker's typer is the one pyproject.toml installs)
    from typer import _click as click
else:
    try:  # typer >= 0.2x ships its own copy of click; its exceptions are the ones raised here
        from typer import _click as click
    except ImportError:  # pragma: no cover - older typer uses click itself
        import click

from ..vocab.errors import KvcalcError, known
from .app import APP_SETTINGS, app, root_callback
from .console import encodable_streams, err, quiet_stdout
from .options import FlagCommand, grouped_command_class


def app_for(args: list[str]) -> typer.Typer:
    """The full app, or one holding only the command asked for: typer builds every command's parameters
    before it parses, which costs more start-up time than planning the model."""
    commands = {(c.name or known(c.callback).__name__.replace("_", "-")): c for c in app.registered_commands}
    helped = any(a in ("-h", "--help") for a in args[1:])
    for name, c in commands.items():
        if isinstance(c.callback, FlagCommand):  # a layout command: only the flags this line spells are built
            c.callback.select(args[1:] if args and name == args[0] and not helped else None)
    if not args or args[0] not in commands:
        return app  # --help, completion, an unknown command: the full app answers
    if helped:
        # Grouped help, built only when help is asked for (start-up time is a target).
        commands[args[0]].cls = grouped_command_class()  # (typer's default: TyperCommand, one block)
    one = typer.Typer(add_completion=False, **APP_SETTINGS)
    one.callback()(root_callback)
    one.registered_commands.append(commands[args[0]])
    return one


INPUT_COMMANDS = ("plan", "size", "sweep", "check", "vllm-args", "init")  # the commands that read an input


def serve_tail(args: list[str]) -> list[str]:
    """`kvcalc CMD [opts] -- vllm serve MODEL ...` -> `kvcalc CMD [opts] --serve "vllm serve MODEL ..."`."""
    if "--" in args and args[:1] and args[0] in INPUT_COMMANDS:
        import shlex  # only here: importing it compiles a regex, and start-up time is a target

        i = args.index("--")
        tail = args[i + 1:]
        from ..inputs.serve.servers import starts_line

        # `-- VLLM_USE_SIMPLE_KV_OFFLOAD=1 vllm serve ...` (or `env ...`): the line's environment comes along.
        if starts_line(tail):
            return args[:i] + ["--serve", shlex.join(tail)]
    return args


def entry() -> int:
    """The console script's and `python -m kvcalc`'s entry: one command in a process of its own.

    gc.freeze() once the command is done: the interpreter's finalization (Py_FinalizeEx) runs the cyclic collector
    over every tracked object, and a frozen one is not examined. A cold `kvcalc plan --format json` runs 416.7 M
    instructions instead of 452.2 M (PYTHONHASHSEED=0, callgrind, 2026-12-02; frozen before the command instead:
    423.8 M; the target is 1.3 x `import typer, rich, yaml`'s ~333 M). The process ends right after, so nothing
    frozen would have been collected for its memory; `main` itself (the Python API, the tests' thousands of calls)
    leaves the collector alone."""
    rc = main()
    gc.freeze()
    return rc


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns the exit code instead of raising, so errors stay one line. Diagnostics that could not
    be written (a closed or full stderr) turn an exit 0 into 74: a failed write is never a silent success."""
    from .console import LOST

    LOST.clear()
    args = serve_tail(list(sys.argv[1:] if argv is None else argv))
    encodable_streams()
    try:
        rc = _run(args)
    finally:
        for c in app.registered_commands:  # the next caller (the full app, an API user) sees every flag again
            if isinstance(c.callback, FlagCommand):
                c.callback.select(None)
    return 74 if rc == 0 and LOST else rc


def _json_asked(args: list[str]) -> bool:
    for i, a in enumerate(args):
        if a in ("--format=json", "--format=jsonl") or (a == "--format" and args[i + 1:i + 2] in (["json"], ["jsonl"])):
            return True
    return False


def _write(text: str) -> bool:
    """`text` on stdout; False, with the one-line reason on stderr, when stdout is full, closed or gone."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()
        return True  # the reader left: nothing to say
    except OSError as e:
        quiet_stdout()
        err(f"kvcalc: error: cannot write the output: {e.strerror or e}")
        return False
    return True


def _run(args: list[str]) -> int:
    try:
        rc = app_for(args)(args=args, prog_name="kvcalc", standalone_mode=False)
        if isinstance(rc, int) and not isinstance(rc, bool):
            return rc  # typer.Exit(code) inside a command comes back as the return value
    except KvcalcError as e:
        err(f"kvcalc: error: {e.one_line()}")
        if _json_asked(args) and not getattr(e, "document_printed", False):
            # README (Exit codes): with --format json every refusal after the command line parsed is also a
            # document on stdout, its `error` the stderr line's text.
            import json

            # The refusal's exit code stands when its document cannot be written (as when stderr is closed); one
            # line under --format jsonl: a JSON-lines reader reads it as one document.
            _write(json.dumps({"schema_version": 1, "error": e.one_line(), "exit_code": e.exit_code},
                              indent=None if "jsonl" in " ".join(args) else 2) + "\n")
        return e.exit_code
    except click.ClickException as e:  # usage errors: bad flag values, missing arguments
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `kvcalc`: the help, as asked
            return 0 if _write(e.format_message() + "\n") else 74
        from ..vocab.errors import cut_long

        err(f"kvcalc: error: {cut_long(' '.join(e.format_message().split()))}")
        return 2
    except (typer.Exit, typer.Abort) as e:
        return getattr(e, "exit_code", 1)
    except BrokenPipeError:
        quiet_stdout()  # the reader left (`| head -1`): nothing to say, and nothing left to flush
        return 0
    except SystemExit as e:
        # typer's main turns EPIPE into sys.exit(1) (typer/core.py), even outside standalone mode.
        if isinstance(e.__context__, BrokenPipeError):
            quiet_stdout()
            return 0
        raise
    except OSError as e:  # writing the output failed (`> /dev/full`, a closed stdout): not a kvcalc bug
        quiet_stdout()
        err(f"kvcalc: error: cannot write the output: {e.strerror or e}")
        return 74  # EX_IOERR
    except Exception as e:  # noqa: BLE001 - the last line of defence: never a traceback for users
        if os.environ.get("KVCALC_DEBUG"):
            raise
        err(f"kvcalc: internal error: {type(e).__name__}: {' '.join(str(e).split())} "
             "(a kvcalc bug: please report it; KVCALC_DEBUG=1 shows the traceback)")
        return 70
    return 0


__all__ = ["main"]
