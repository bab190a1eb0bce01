"""The design rules, checked: a pure core, stages importing only earlier stages, torch only for --verify."""

import ast
import glob
import os
import subprocess
import sys

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kvcalc")
# Stage order: a module may import only modules to its left. Data modules first (errors, units, records, kinds,
# layout, versions, flags), then readers (load, hf_config), the core stages, the report, its consumers, the CLI.
ORDER = ["errors", "units", "records", "kinds", "lmcache_releases", "layout", "versions", "flags", "hf_config", "load",
         "serve", "k8s", "lmcache_input", "specs", "layers", "grouping", "tensors", "offload", "lmcache", "plan", "report", "render_json", "render_table", "render_yaml", "schema",
         "gates", "sizing", "sweep", "logcheck", "metricscheck", "vllm_args", "verify", "cli", "__init__", "__main__"]
CORE = ["records", "kinds", "specs", "layers", "grouping", "tensors", "offload", "plan", "report", "versions", "units",
        "layout", "errors", "gates", "sizing", "lmcache", "lmcache_releases"]


def imports_of(module: str) -> set[str]:
    with open(os.path.join(PKG, module + ".py")) as fh:
        tree = ast.parse(fh.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(alias.name for alias in node.names)  # from . import x
            elif node.level == 0 and node.module:
                found.add("ext:" + node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.add("ext:" + alias.name.split(".")[0])
    return found


def test_every_module_has_a_place_in_the_order():
    modules = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(PKG, "*.py"))}
    assert modules == set(ORDER), f"modules without a stage: {sorted(modules - set(ORDER))}"


def test_core_is_pure():
    for mod in CORE:
        ext = {i for i in imports_of(mod) if i.startswith("ext:")}
        forbidden = ext & {"ext:typer", "ext:rich", "ext:yaml", "ext:torch", "ext:click", "ext:io", "ext:os"}
        assert not forbidden, f"{mod} imports {forbidden}"


def test_stages_import_only_earlier_stages():
    for i, mod in enumerate(ORDER):
        internal = {x for x in imports_of(mod) if not x.startswith("ext:")} - {"__version__"}
        later = internal & set(ORDER[i + 1:])
        assert not later, f"{mod} imports later stage(s) {later}"


def test_plan_does_not_import_torch():
    code = ("import sys, kvcalc.cli as c; c.main(['plan', 'examples/deepseek-v3-tp4.yaml', '--format', 'json']); "
            "sys.stderr.write(str('torch' in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(PKG), timeout=60)
    assert r.stderr.strip().endswith("False")


def test_no_assert_chains_conditions_with_and():
    # `assert a == 1 and b == 2` fails as one expression; two asserts say which value broke (issue 9).
    here = os.path.dirname(__file__)
    chained = []
    for path in sorted(glob.glob(os.path.join(here, "*.py"))):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        chained += [f"{os.path.basename(path)}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Assert) and isinstance(node.test, ast.BoolOp)
                    and isinstance(node.test.op, ast.And)]
    assert chained == []
