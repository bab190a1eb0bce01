"""Generate kvcalc/vocab/releases/sglang_flags.json: every option of each SGLang release's own server parser.

Not part of the installed package; the standard library only.

Input: a flags dump, one JSON file per run of releases, as /work/notes/sglang/gen_flags.py writes it: for each
release, every argparse action of `argparse.ArgumentParser(prog="sglang serve")` after that release's own
`ServerArgs.add_cli_args(parser)` ran on it (the release imported from its wheel's sources with only the imports a
CPU machine cannot load stubbed): option strings, dest, action class, type, nargs, choices, default, and where it
was registered. The dump is `{"releases": {release: {"options": [...], ...}}}`; several dumps are merged (a later
one's release wins). argparse's -h/--help is not in a dump (gen_flags.py skips the _HelpAction): every release has
it (add_help defaults to True).

What a dump cannot carry (an action's own attributes): `error_message=` of a DeprecatedAction (0.5.18 - 0.5.19's
--enable-expert-distribution-metrics stops the launch with it) and `const_value=` of a DeprecatedStoreConstAction
(--disable-piecewise-cuda-graph stores cuda_graph_backend_prefill = disabled). `--src ROOT` reads them from each
release's sources (ROOT/<release>/sglang/srt/server_args.py, the add_argument calls, by `ast`); without it those
rows carry no const and no message.

The table: one row per option and run of consecutive releases with the same facts, [spelling, first, last, dest,
kind, nargs, choices (an index into "choices"), aliases, negatives, type, marks, extra], and per release the rows in
its registration order ("order": argparse lists the matches of an ambiguous abbreviation in that order). kind:
value | store_true | bool_optional (argparse.BooleanOptionalAction, its --no- spellings in negatives) | store_const
(a switch storing `extra`) | error (stops the launch: parser.error(extra)) | help. marks: "deprecated" (SGLang's
Deprecated*Action: a warning, still read). type: the converter's name (int, float, str, json, human_readable_int,
json_list_type, nullable_str, cuda_graph_backend, cuda_graph_config).

Re-run:

    python scripts/sglang_flags.py --src /work/src/sglang --out kvcalc/vocab/releases/sglang_flags.json \\
        /work/notes/sglang/flags.json /tmp/flags_0.5.15.post1.json

(0.5.15.post1's dump: gen_flags.py's `one("0.5.15.post1")` over `pip download sglang==0.5.15.post1 --no-deps`'s
sources, its transformers pin 5.8.1; its parser equals 0.5.15's but for the order of --sampling-backend's choices.)
`--dump RELEASE DUMP...` prints one release's rows.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys

ROW = ["spelling", "first", "last", "dest", "kind", "nargs", "choices", "aliases", "negatives", "type", "marks",
       "extra"]
TYPES = {"int": "int", "float": "float", "str": "str", None: "str", "json.loads": "json",
         "sglang.srt.utils.common.human_readable_int": "human_readable_int",
         "sglang.srt.utils.common.json_list_type": "json_list_type",
         "sglang.srt.utils.common.nullable_str": "nullable_str",
         "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_backend_arg": "cuda_graph_backend",
         "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_config_arg": "cuda_graph_config"}


def release_key(release: str) -> tuple[int, ...]:
    main, _, post = release.partition(".post")
    return (*(int(x) for x in main.split(".")), int(post or 0))


def _literal(node: ast.AST):
    """A keyword's value: a literal, an f-string-free string concatenation, or an enum member's name lowered
    (Backend.DISABLED -> 'disabled', the member's value in cuda_graph_config.py)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    return None


def source_extras(src_root: str | None, release: str) -> dict[str, dict]:
    """{option string: {"const": .., "error": ..}} of the add_argument calls in the release's server_args.py that
    pass const_value= or error_message=."""
    if not src_root:
        return {}
    path = os.path.join(src_root, release, "sglang", "srt", "server_args.py")
    if not os.path.exists(path):
        return {}
    out: dict[str, dict] = {}
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords}
        extra = {}
        if "const_value" in kw:
            extra["const"] = _literal(kw["const_value"])
        if "error_message" in kw:
            extra["error"] = _literal(kw["error_message"])
        for n in names if extra else ():
            out[n] = extra
    return out


def _kind(o: dict, extra: dict) -> tuple[str, str, object]:
    """(kind, marks, extra) of one dumped action."""
    cls = o["action_class"].rsplit(".", 1)[-1]
    if cls == "BooleanOptionalAction":
        return "bool_optional", "", None
    if cls in ("_StoreTrueAction",):
        return "store_true", "", None
    if cls == "DeprecatedStoreTrueAction":
        return "store_true", "deprecated", None
    if cls == "DeprecatedStoreConstAction":
        return ("store_const" if o["nargs"] == 0 else "value"), "deprecated", extra.get("const")
    if cls == "DeprecatedAction":
        if extra.get("error"):
            return "error", "deprecated", extra["error"]
        return "store_const", "deprecated", None  # warns, stores nothing
    if cls == "DeprecatedAliasStoreAction":
        return "value", "deprecated", None
    if cls in ("_StoreAction", "LoRAPathAction"):
        return "value", "", None
    raise SystemExit(f"unknown action {o['action_class']} for {o['options']}")


def facts(o: dict, extra: dict) -> tuple:
    """One option's facts (what a row holds but its releases)."""
    kind, marks, value = _kind(o, extra)
    negatives = tuple(o.get("negative_option") or ())
    spellings = [s for s in o["options"] if s not in negatives]
    choices = None if o["choices"] is None else tuple(o["choices"])  # the parser's order (its error lists them)
    if o["type"] not in TYPES:
        raise SystemExit(f"unknown type {o['type']} for {o['options']}")
    nargs = None if o["nargs"] in (None, 0) else str(o["nargs"])
    return (spellings[0], o["dest"], kind, nargs, choices, tuple(spellings[1:]), negatives, TYPES[o["type"]], marks,
            value)


HELP = ("-h", "help", "help", None, None, ("--help",), (), "", "", None)


def table(dumps: list[str], src_root: str | None) -> dict:
    releases: dict[str, list[dict]] = {}
    for path in dumps:
        data = json.load(open(path, encoding="utf-8"))
        for release, r in (data.get("releases") or {data["release"]: data}).items():
            releases[release] = r["options"]
    order_of = sorted(releases, key=release_key)
    per_release = {}
    for release in order_of:
        extras = source_extras(src_root, release)
        per_release[release] = [HELP] + [facts(o, next((extras[s] for s in o["options"] if s in extras), {}))
                                         for o in releases[release]]
    rows: list[list] = []
    open_rows: dict[tuple, int] = {}  # facts -> the row still running at the previous release
    order: dict[str, list[int]] = {}
    for i, release in enumerate(order_of):
        here, running = [], {}
        for f in per_release[release]:
            at = open_rows.get(f)
            if at is None:
                at = len(rows)
                rows.append([f, release, release])
            rows[at][2] = release
            running[f] = at
            here.append(at)
        open_rows = running
        order[release] = here
    choices: list[tuple] = []
    out_rows = []
    for f, first, last in rows:
        spelling, dest, kind, nargs, ch, aliases, negatives, type_, marks, extra = f
        ci = None
        if ch is not None:
            if ch not in choices:
                choices.append(ch)
            ci = choices.index(ch)
        out_rows.append([spelling, first, last, dest, kind, nargs, ci, list(aliases), list(negatives), type_, marks,
                         extra])
    return {"generated_by": "scripts/sglang_flags.py (re-run: its docstring)", "row": ROW, "releases": order_of,
            "choices": [list(c) for c in choices], "flags": out_rows, "order": order}


def write_json(data: dict, path: str) -> None:
    """One row per line: small diffs when a release is added."""
    lines = ["{"]
    for key in ("generated_by", "row", "releases"):
        lines.append(f" {json.dumps(key)}: {json.dumps(data[key])},")
    lines.append(' "choices": [')
    lines.append(",\n".join("  " + json.dumps(c) for c in data["choices"]))
    lines.append(" ],")
    lines.append(' "flags": [')
    lines.append(",\n".join("  " + json.dumps(r) for r in data["flags"]))
    lines.append(" ],")
    lines.append(' "order": {')
    lines.append(",\n".join(f"  {json.dumps(r)}: {json.dumps(o, separators=(',', ':'))}"
                            for r, o in data["order"].items()))
    lines.append(" }")
    lines.append("}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the table (JSON) here")
    ap.add_argument("--src", help="ROOT holding <release>/sglang/srt/server_args.py (const_value=, error_message=)")
    ap.add_argument("--dump", metavar="RELEASE", help="print one release's rows")
    ap.add_argument("dumps", nargs="+", help="flags dumps (gen_flags.py's flags.json)")
    ns = ap.parse_args(argv)
    data = table(ns.dumps, ns.src)
    if ns.dump:
        for i in data["order"][ns.dump]:
            print(json.dumps(data["flags"][i]))
        return 0
    if ns.out:
        write_json(data, ns.out)
    print(f"{len(data['releases'])} releases, {len(data['flags'])} rows, {len(data['choices'])} choice lists",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
