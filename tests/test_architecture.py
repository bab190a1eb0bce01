"""The design rules, checked: one package per stage, imports only flowing forward, a pure core, torch only for
--verify, no private names reached across modules."""

import ast
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "kvcalc")
# The stages, in data-flow order: a package may import itself and the packages to its left, never one to its right
# (inputs and engines are side by side: neither imports the other).
STAGES = ["vocab", "inputs", "engines", "backends", "pipeline", "report", "tools", "cli"]
SIDE_BY_SIDE = {("inputs", "engines"), ("engines", "inputs")}
# The pure core: no CLI, terminal, YAML, torch or file-system library.
PURE = ("vocab", "engines", "backends", "pipeline", "report.report", "report.sections",
        "tools.gates", "tools.sizing")
IMPURE = {"typer", "rich", "yaml", "torch", "click", "io", "os"}


def modules() -> dict[str, str]:
    """kvcalc's modules: dotted name (without 'kvcalc.') -> file path."""
    out = {}
    for path in glob.glob(os.path.join(PKG, "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, PKG)[:-3].replace(os.sep, ".")
        out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _type_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    return lines


def imports_of(name: str, path: str, *, runtime: bool = False) -> list[tuple[str, tuple[str, ...]]]:
    """(imported module, dotted, 'ext:' prefix for third-party; the names taken from it) for every import
    (`runtime`: only those run at run time, not the ones under `if TYPE_CHECKING:`)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    skip = _type_only(tree) if runtime else set()
    is_pkg = path.endswith("__init__.py")
    here = name.split(".") if name != "__init__" else []
    package = here if is_pkg else here[:-1]
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            if node.level == 0:
                mod = node.module or ""
                if mod == "kvcalc" or mod.startswith("kvcalc."):
                    found.append((mod[len("kvcalc."):] if mod != "kvcalc" else "", names))
                else:
                    found.append(("ext:" + mod.split(".")[0], names))
                continue
            base = package[: len(package) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            if node.module is None:
                # from . import x: x is a module of that package, or a name of its __init__
                for n in names:
                    sub = ".".join(base + [n])
                    found.append((sub if sub in modules() else target, (n,)))
            else:
                found.append((target, names))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                mod = alias.name
                found.append((mod[len("kvcalc."):] if mod.startswith("kvcalc.") else "ext:" + mod.split(".")[0], ()))
    return found


# An engine's hook modules (engines/<name>/plan.py, report.py, table.py, tools.py) belong to the stage they serve
# (engines/base.HOOKS): an engine is one package across stages, with the stage order kept inside it.
from kvcalc.engines.base import HOOKS  # noqa: E402


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "engines" and len(parts) >= 3 and parts[2] in HOOKS:
        return HOOKS[parts[2]]
    return parts[0] if parts[0] in STAGES else None


def test_every_module_belongs_to_a_stage():
    loose = [m for m in modules() if m not in ("__init__", "__main__") and stage_of(m) is None]
    assert loose == []


def test_stages_import_only_earlier_stages():
    bad = []
    for name, path in modules().items():
        mine = stage_of(name)
        if mine is None:
            continue
        for target, _ in imports_of(name, path):
            theirs = stage_of(target)
            if theirs is None or theirs == mine:
                continue
            if STAGES.index(theirs) > STAGES.index(mine) or (mine, theirs) in SIDE_BY_SIDE:
                bad.append(f"{name} -> {target}")
    assert bad == []


def test_vocab_imports_nothing_of_kvcalc_outside_vocab():
    bad = [f"{n} -> {t}" for n, p in modules().items() if stage_of(n) == "vocab"
           for t, _ in imports_of(n, p) if not t.startswith("ext:") and stage_of(t) != "vocab"]
    assert bad == []


def test_backends_are_imported_only_by_the_pipeline_and_above():
    allowed = {"backends", "pipeline", "report", "tools", "cli"}  # by stage: an engine's plan hook is the pipeline
    bad = [f"{n} -> {t}" for n, p in modules().items() for t, _ in imports_of(n, p)
           if stage_of(t) == "backends" and stage_of(n) not in allowed]
    assert bad == []


def test_core_is_pure():
    bad = []
    for name, path in modules().items():
        if not any(name == p or name.startswith(p + ".") for p in PURE) or stage_of(name) not in (
                "vocab", "inputs", "engines", "backends", "pipeline", "report", "tools"):
            continue
        if name.split(".")[-1] == "table":  # an engine's renderer hook (engines/<name>/table.py)
            continue
        ext = {t[4:] for t, _ in imports_of(name, path) if t.startswith("ext:")}
        if ext & IMPURE:
            bad.append(f"{name} imports {sorted(ext & IMPURE)}")
    assert bad == []


def test_no_private_name_is_imported_from_another_module():
    bad = [f"{n} takes {x} from {t}" for n, p in modules().items() for t, names in imports_of(n, p)
           if not t.startswith("ext:") for x in names if x.startswith("_") and not x.startswith("__")]
    assert bad == []


def test_no_import_cycles():
    graph = {n: {t for t, _ in imports_of(n, p, runtime=True) if t in modules() and t != n}
             for n, p in modules().items()}
    # Package __init__ modules re-export their children: an edge child -> package is not a cycle of stages.
    state: dict[str, int] = {}
    cycles = []

    def visit(n: str, trail: list[str]) -> None:
        state[n] = 1
        for t in sorted(graph[n]):
            if n.startswith(t + ".") or t == "__init__":
                continue
            if state.get(t) == 1:
                cycles.append(trail + [t])
            elif t not in state:
                visit(t, trail + [t])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert cycles == []


def test_plan_does_not_import_torch():
    code = ("import sys, kvcalc.cli as c; c.main(['plan', 'examples/deepseek-v3-tp4.yaml', '--format', 'json']); "
            "sys.stderr.write(str('torch' in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stderr.strip().endswith("False")


def test_no_assert_chains_conditions_with_and():
    # `assert a == 1 and b == 2` fails as one expression; two asserts say which value broke (issue 9).
    here = os.path.dirname(__file__)
    chained = []
    for path in sorted(glob.glob(os.path.join(here, "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        chained += [f"{os.path.relpath(path, here)}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Assert) and isinstance(node.test, ast.BoolOp)
                    and isinstance(node.test.op, ast.And)]
    assert chained == []


def test_no_module_over_500_lines_and_no_function_over_60():
    # Issue 18: small pieces. A function's length is its body's (a Typer command's option list is its signature).
    long_modules, long_functions = [], []
    for name, path in modules().items():
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        if src.count("\n") > 500:
            long_modules.append(name)
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.body[0].lineno + 1 > 60:
                    long_functions.append(f"{name}.{node.name}")
    assert long_modules == []
    assert long_functions == []


# The engines and host-pool backends kvcalc plans, and the plan / pool / report classes that are one of them.
KINDS = {"vllm", "sglang", "native", "lmcache", "lmcache_mp", "simple", "hicache"}
KIND_CLASSES = {"VllmPlan", "SglangPlan", "NativePool", "LMCachePool", "LMCacheMPPool", "SimplePool", "NoPool",
                "HiCachePool", "SglangReport"}


def named_for_a_kind(module: str) -> bool:
    """A module of an engine's or a backend's own: one whose dotted path has a part named for it (engines/sglang/,
    backends/lmcache_plan.py, inputs/serve/vllm.py, report/table_simple.py, vocab/releases/sglang_flags.py)."""
    return any(kind in part.split("_") for part in module.split(".") for kind in KINDS)


def kind_tests(tree: ast.AST) -> list[tuple[int, str]]:
    """Where code tells engines or backends apart: a comparison with a kind's name (or a list of them), an
    isinstance with a kind's class, a getattr / hasattr of a kind-named attribute."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = set()
            for v in [node.left, *node.comparators]:
                items = v.elts if isinstance(v, (ast.Tuple, ast.List, ast.Set)) else [v]
                consts |= {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if consts & KINDS:
                out.append((node.lineno, f"compares {sorted(consts & KINDS)}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) > 1:
            if node.func.id == "isinstance":
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if names & KIND_CLASSES:
                    out.append((node.lineno, f"isinstance {sorted(names & KIND_CLASSES)}"))
            elif node.func.id in ("getattr", "hasattr") and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in KINDS:
                out.append((node.lineno, f"{node.func.id} {node.args[1].value!r}"))
    return out


def test_no_engine_or_backend_is_told_apart_outside_its_own_modules():
    # Issue 28: the pipeline, report, tools and CLI ask the engine (engines/base) and read a Pool (backends/base);
    # a branch on a kind anywhere else is one a new engine or backend has to find. Tables keyed by kind (a
    # registry) are not branches; nothing is exempt but the kinds' own modules.
    bad = []
    for name, path in modules().items():
        if named_for_a_kind(name):
            continue
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        bad += [f"{name}:{line} {what}" for line, what in kind_tests(tree)]
    assert bad == []


def test_the_kind_check_finds_each_way_of_telling_kinds_apart():
    # The check above cannot pass by going blind: each form it looks for is found.
    src = ("a == 'sglang'\nb in ('native', 'x')\nisinstance(p, SglangPlan)\nhasattr(l, 'lmcache')\n"
           "t[:2] == ['vllm', 'serve']\n")
    assert [line for line, _ in kind_tests(ast.parse(src))] == [1, 2, 3, 4, 5]
    assert named_for_a_kind("report.table_simple")
    assert not named_for_a_kind("report.table")
