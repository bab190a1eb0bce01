"""Generate kvcalc/vocab/releases/vllm_flags.json: every option of each vLLM release's own `vllm serve` parser.

Not part of the installed package; the standard library only (ast, argparse, typing, ...; PyYAML if present, for
the --config checks of `--probe`).

How it reads a release. Importing vLLM needs torch and CUDA, so nothing of vLLM is imported. The generator parses the
release's files with `ast` and runs only the parser-building code of the release itself, from its own source, over
stand-ins for everything else:

* exec'd from the wheel's source, as the release wrote it: vllm/entrypoints/cli/serve.py (ServeSubcommand.
  subparser_init, as cli/main.py calls it), the module of `make_arg_parser` (entrypoints/openai/cli_args.py up to
  0.28.0, entrypoints/launchers/cli_args.py 0.29.0 - 0.32.0, entrypoints/common/cli_args.py 0.33.0: FrontendArgs,
  one flag per dataclass field),
  engine/arg_utils.py (EngineArgs/AsyncEngineArgs.add_cli_args, get_kwargs/_compute_kwargs, human_readable_int) and
  utils/argparse_utils.py (FlexibleArgumentParser, EnableDisableAction from 0.33.0). The serve parser built is the
  release's own FlexibleArgumentParser (a subparser of one built as cli/main.py builds it), on Python's argparse.
* read, not run: every other module the code reaches. A config class (vllm/config/*.py, ...) becomes a class whose
  dataclass fields are its annotated class-level names (with its bases' fields first, as dataclasses orders them),
  each field's type evaluated from the annotation's source in its module: Literal/Union/Optional/Annotated/list/...
  are the real `typing` objects, vLLM names are followed through imports (LazyLoader included) to their definitions,
  an Enum becomes a real Enum of its members, a class becomes a class of that name and module (a dict subclass stays
  one, a TypedDict stays one), anything outside vLLM and the standard library a stand-in class of its module. So
  get_kwargs sees the same type hints it sees at run time and turns them into argparse kwargs by the release's own
  code (bool -> BooleanOptionalAction, Literal -> choices, list -> nargs '+', ...).
* stubs: functions of the modules that are read, not run (e.g. load_general_plugins, current_platform.
  pre_register_and_update: the CUDA platform keeps the interface's no-op, platforms/interface.py), loggers, envs.
  A stand-in refuses to be tested for truth, so no `if` ever silently takes a branch on a stub.

Re-run (each wheel is ~400 MB; keep only its .py files):

    for v in 0.14.0 ... 0.33.0; do
      pip download vllm==$v --no-deps -d /tmp/w_$v/whl && unzip -q /tmp/w_$v/whl/*.whl 'vllm/*.py' -d /tmp/w_$v/src
      rm -rf /tmp/w_$v/whl
    done
    python scripts/vllm_flags.py --out kvcalc/vocab/releases/vllm_flags.json /tmp/w_0.14.0/src ... /tmp/w_0.33.0/src

(each SRC is a directory holding vllm/; the release is read from vllm/version.py or the directory's name.)
`--check SRC...` runs every spelling of the package's table (as given, with underscores, abbreviated, misspelt,
with `=value`, and the -O forms: ~1,400-2,400 command lines a release) through both the release's own parser and
the package's rewrite/resolve, and lists any disagreement (all 30 releases: none). `--dump SRC` prints one
release's flags; `SRC --probe ARGS...` parses `vllm serve ARGS` with that release's own parser (the options it
set, or its error line); `--log` lists every stub the run touched (review it after a release is
added: a name that should have been followed is a stub there).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import copy
import enum
import io
import json
import os
import re
import sys
import types
import typing
from dataclasses import MISSING

LOG: list[str] = []
EXEC_MODULES = (
    "vllm.engine.arg_utils", "vllm.entrypoints.openai.cli_args", "vllm.entrypoints.common.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.utils.argparse_utils", "vllm.entrypoints.cli.serve", "vllm.entrypoints.cli.types",
)
# Standard-library modules used as they are; any other module outside vLLM is a stand-in.
REAL_MODULES = {
    "typing", "typing_extensions", "collections", "collections.abc", "dataclasses", "enum", "functools", "json",
    "copy", "argparse", "itertools", "re", "math", "abc", "types", "ssl", "textwrap", "string", "numbers",
    "operator", "warnings", "contextlib", "inspect", "pathlib", "hashlib", "uuid", "datetime", "fractions",
    "ipaddress", "socket", "yaml", "regex",
}


class StubTruth(Exception):
    """A stand-in was tested for truth: the code took a branch the generator cannot decide."""


class StubMeta(type):
    """Classes standing in for names outside what is read: attributes and calls give more stand-ins."""

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        LOG.append(f"attr {cls.__module__}.{cls.__qualname__}.{attr}")
        return stub_class(f"{cls.__qualname__}.{attr}", cls.__module__)

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_stub_pure", False):
            LOG.append(f"call {cls.__module__}.{cls.__qualname__}")
            return Stub(f"{cls.__module__}.{cls.__qualname__}()")
        return super().__call__(*args, **kwargs)

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        LOG.append(f"iter {cls.__module__}.{cls.__qualname__}")
        return iter(())

    def __bool__(cls):
        if cls.__dict__.get("_stub_pure", False):
            raise StubTruth(f"{cls.__module__}.{cls.__qualname__}")
        return True


def stub_class(name: str, module: str) -> type:
    return StubMeta(name.rpartition(".")[2], (), {"_stub_pure": True, "__module__": module, "__qualname__": name})


class Stub:
    """An instance standing in for a value computed outside what is read (a logger, envs.X, a call's result)."""

    def __init__(self, name: str = "stub"):
        self.__dict__["_name"] = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Stub(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        return Stub(f"{self._name}()")

    def __getitem__(self, item):
        return Stub(f"{self._name}[]")

    def __iter__(self):
        LOG.append(f"iter {self._name}")
        return iter(())

    def __bool__(self):
        raise StubTruth(self._name)

    def __eq__(self, other):
        if other is self:
            return True
        raise StubTruth(f"{self._name} == {other!r}")

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<stub {self._name}>"

    __str__ = __repr__


class ModuleProxy:
    """`import vllm.x as m` / a LazyLoader: attributes resolve in that module."""

    def __init__(self, loader: Loader, name: str):
        self._loader, self._name = loader, name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._loader.attribute(self._name, attr)


class FieldRec:
    """A dataclass field as get_kwargs reads it (name, type, default); the type is evaluated on first use."""

    def __init__(self, name, annotation, ns, default=None):
        self.name, self._annotation, self._ns, self.default = name, annotation, ns, default
        self.default_factory = MISSING
        self._type = MISSING

    @property
    def type(self):
        if self._type is MISSING:
            ann = self._annotation
            if isinstance(ann, ast.AST):
                ann = self._ns.evaluate(ann)
            if isinstance(ann, str):  # a string annotation: resolved as typing.get_type_hints would
                LOG.append(f"string annotation {self.name}: {ann}")
                ann = self._ns.evaluate(ast.parse(ann, mode="eval").body)
            self._type = ann
        return self._type


def _is_classvar(ann: ast.AST) -> bool:
    node = ann.value if isinstance(ann, ast.Subscript) else ann
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.startswith(("ClassVar", "InitVar"))
    return name in ("ClassVar", "InitVar", "KW_ONLY")


def fields(cls):
    return tuple(cls.__dataclass_fields__.values())


def _base_fields(bases) -> dict:
    out: dict = {}
    for base in reversed(bases):
        for klass in reversed(getattr(base, "__mro__", (base,))):
            out.update(klass.__dict__.get("__dataclass_fields__", {}))
    return out


def fake_dataclass(cls=None, /, **kwargs):
    """dataclasses.dataclass, pydantic.dataclasses.dataclass and vllm.config.config on a class that is run: its fields
    are its own annotations after its bases' (the values do not matter to argparse kinds)."""
    if cls is None:
        return fake_dataclass
    if isinstance(cls, Stub):
        return cls
    own = {}
    ns = cls.__dict__.get("_flags_ns")
    for name, ann in cls.__dict__.get("__annotations__", {}).items():
        if typing.get_origin(ann) is typing.ClassVar or ann is typing.ClassVar:
            continue
        if isinstance(ann, str) and ann.startswith(("ClassVar", "InitVar")):
            continue
        own[name] = FieldRec(name, ann, ns)
    merged = _base_fields(cls.__bases__)
    merged.update(own)
    cls.__dataclass_fields__ = merged
    return cls


class Namespace(dict):
    """A module's globals, filled on first use of a name from its definition in the module's source."""

    def __init__(self, loader: Loader, name: str, path: str | None):
        super().__init__()
        self.loader, self.modname, self.path = loader, name, path
        self.tree = None
        if path:
            with open(path, encoding="utf-8") as fh:
                self.source = fh.read()
            self.tree = ast.parse(self.source)
        self["__name__"] = name
        self["__builtins__"] = loader.builtins
        self.resolving: set[str] = set()

    def __missing__(self, name):
        if name in self.resolving:
            LOG.append(f"cycle {self.modname}.{name}")
            return stub_class(name, self.modname)
        self.resolving.add(name)
        try:
            value = self.loader.define(self, name)
        finally:
            self.resolving.discard(name)
        self[name] = value
        return value

    def evaluate(self, node: ast.AST):
        preload(self, node)
        try:
            return eval(compile(ast.Expression(body=node), self.path or "<stub>", "eval", dont_inherit=True), self)
        except StubTruth:
            raise
        except Exception as e:  # logged: the value becomes a stand-in
            LOG.append(f"eval {self.modname}: {ast.unparse(node)[:80]}: {type(e).__name__}: {e}")
            return stub_class(ast.unparse(node)[:40], self.modname)


def preload(ns: Namespace, node: ast.AST) -> None:
    """Resolve the module-level names a class body or a module-level expression reads (LOAD_NAME reads globals
    without __missing__); function bodies read theirs through LOAD_GLOBAL, which does use it."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(n.decorator_list)
            stack.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            stack.extend(a.annotation for a in n.args.args + n.args.kwonlyargs + n.args.posonlyargs
                         if a.annotation is not None)
            if n.returns is not None:
                stack.append(n.returns)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            ns[n.id]  # fills the namespace
        stack.extend(ast.iter_child_nodes(n))


def _bindings(tree: ast.Module, name: str) -> list[tuple[ast.stmt, int]]:
    """Top-level statements binding `name`: (stmt, 0 unconditional | 1 conditional | 2 under TYPE_CHECKING)."""
    found = []

    def binds(st) -> bool:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return st.name == name
        if isinstance(st, ast.Assign):
            return any(isinstance(t, ast.Name) and t.id == name for t in st.targets)
        if isinstance(st, ast.AnnAssign):
            return isinstance(st.target, ast.Name) and st.target.id == name and st.value is not None
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            return any((a.asname or a.name.split(".")[0]) == name for a in st.names)
        return False

    def walk(body, level):
        for st in body:
            if binds(st):
                found.append((st, level))
            elif isinstance(st, ast.If):
                tc = "TYPE_CHECKING" in ast.unparse(st.test)
                walk(st.body, 2 if tc else max(level, 1))
                walk(st.orelse, max(level, 1))
            elif isinstance(st, ast.Try):
                walk(st.body, max(level, 1))
                for h in st.handlers:
                    walk(h.body, max(level, 1))
                walk(st.orelse, max(level, 1))
            elif isinstance(st, ast.With):
                walk(st.body, level)

    walk(tree.body, 0)
    return found


def _pick(found):
    for level in (0, 1, 2):
        same = [st for st, lv in found if lv == level]
        if same:
            return same[-1] if level == 0 else same[0]
    return None


def _strip_defaults(cls: ast.ClassDef) -> ast.ClassDef:
    """A class body run without its field values (argparse kinds depend on the types only)."""
    cls = copy.deepcopy(cls)
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and st.value is not None:
            st.value = ast.copy_location(ast.Constant(value=None), st.value)
    return ast.fix_missing_locations(cls)


class Loader:
    """One release's source tree: module namespaces, name definitions and the overrides of a few names."""

    def __init__(self, root: str):
        self.root = root
        self.namespaces: dict[str, Namespace] = {}
        self.builtins = dict(vars(builtins))
        self.builtins["__import__"] = self.import_hook
        self.fake_sys = types.SimpleNamespace(argv=["vllm", "serve", "MODEL"], version_info=(3, 12, 3),
                                              modules={}, platform="linux", maxsize=sys.maxsize,
                                              stdout=sys.stdout, stderr=sys.stderr, exit=sys.exit)

    # -- modules
    def path_of(self, module: str) -> str | None:
        base = os.path.join(self.root, *module.split("."))
        for p in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(p):
                return p
        return None

    def namespace(self, module: str) -> Namespace:
        if module not in self.namespaces:
            self.namespaces[module] = Namespace(self, module, self.path_of(module))
        return self.namespaces[module]

    def is_package(self, module: str) -> bool:
        return os.path.isfile(os.path.join(self.root, *module.split("."), "__init__.py"))

    def external(self, module: str, attr: str | None):
        override = OVERRIDES.get((module, attr))
        if override is not None:
            return override(self) if isinstance(override, staticmethod) else override
        top = module.split(".")[0]
        if module == "sys" or top == "sys":
            return self.fake_sys if attr is None else getattr(self.fake_sys, attr)
        if module in REAL_MODULES or top in ("typing", "collections"):
            real = {"regex": "re"}.get(module, module)
            try:
                mod = __import__(real, fromlist=["_"])
                return mod if attr is None else getattr(mod, attr)
            except (ImportError, AttributeError):
                pass
        LOG.append(f"external {module}.{attr}")
        return stub_class(attr or module, module)

    def attribute(self, module: str, attr: str):
        if not module.startswith("vllm"):
            return self.external(module, attr)
        ns = self.namespace(module)
        if ns.tree is not None and (_bindings(ns.tree, attr) or self.path_of(f"{module}.{attr}") is None):
            return ns[attr]
        if self.path_of(f"{module}.{attr}"):
            return ModuleProxy(self, f"{module}.{attr}")
        return ns[attr]

    def import_hook(self, name, globals=None, locals=None, fromlist=(), level=0):
        """`import` statements inside the functions that are run: modules of this tree, by the same rules."""
        if level:
            here = (globals or {}).get("__name__", "")
            pkg = here if self.is_package(here) else here.rpartition(".")[0]
            parts = pkg.split(".")
            name = ".".join(parts[: len(parts) - (level - 1)] + ([name] if name else []))
        if fromlist:
            return ModuleProxy(self, name)
        return self.import_module_value(name.split(".")[0])

    def import_module_value(self, module: str):
        if module.startswith("vllm"):
            return ModuleProxy(self, module)
        return self.external(module, None)

    # -- definitions
    def define(self, ns: Namespace, name: str):
        override = OVERRIDES.get((ns.modname, name))
        if override is not None:
            return override(self) if isinstance(override, staticmethod) else override
        st = _pick(_bindings(ns.tree, name)) if ns.tree is not None else None
        if st is None:
            star = self._star(ns, name)
            if star is not MISSING:
                return star
            if hasattr(builtins, name):
                return getattr(builtins, name)
            if name == "__file__":
                return ns.path
            LOG.append(f"undefined {ns.modname}.{name}")
            return stub_class(name, ns.modname)
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            return self._import(ns, st, name)
        if isinstance(st, ast.ClassDef):
            return self._class(ns, st)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._function(ns, st)
        value = st.value
        return ns.evaluate(value)

    def _star(self, ns: Namespace, name: str):
        for st in (ns.tree.body if ns.tree is not None else []):
            if isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names):
                mod = self._absolute(ns, st)
                if mod.startswith("vllm"):
                    other = self.namespace(mod)
                    if other.tree is not None and _bindings(other.tree, name):
                        return other[name]
        return MISSING

    def _absolute(self, ns: Namespace, st: ast.ImportFrom) -> str:
        if not st.level:
            return st.module or ""
        package = ns.modname if ns.path and ns.path.endswith("__init__.py") else ns.modname.rpartition(".")[0]
        parts = package.split(".")
        base = parts[: len(parts) - (st.level - 1)]
        return ".".join(base + ([st.module] if st.module else []))

    def _import(self, ns: Namespace, st, name: str):
        for alias in st.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound != name:
                continue
            if isinstance(st, ast.Import):
                return self.import_module_value(alias.name if alias.asname else alias.name.split(".")[0])
            module = self._absolute(ns, st)
            if module.startswith("vllm"):
                return self.attribute(module, alias.name)
            return self.external(module, alias.name)
        raise KeyError(name)

    def _function(self, ns: Namespace, st):
        if ns.modname in EXEC_MODULES:
            preload(ns, st)
            code = compile(ast.Module(body=[st], type_ignores=[]), ns.path, "exec", dont_inherit=True)
            exec(code, ns)  # the release's own parser code, over stand-ins
            return dict.__getitem__(ns, st.name)
        qual = f"{ns.modname}.{st.name}"

        def stub_function(*args, **kwargs):
            LOG.append(f"call {qual}")
            return Stub(f"{qual}()")

        stub_function.__name__ = st.name
        stub_function.__module__ = ns.modname
        return stub_function

    def _class(self, ns: Namespace, st: ast.ClassDef):
        if ns.modname in EXEC_MODULES:
            node = _strip_defaults(st) if st.decorator_list else st
            preload(ns, node)
            code = compile(ast.Module(body=[node], type_ignores=[]), ns.path, "exec", dont_inherit=True)
            exec(code, ns)  # the release's own class, over stand-ins
            cls = dict.__getitem__(ns, st.name)
            if "__dataclass_fields__" in cls.__dict__:  # decorated: field types resolved in this module
                for f in cls.__dict__["__dataclass_fields__"].values():
                    f._ns = ns
            return cls
        return self._read_class(ns, st)

    def _read_class(self, ns: Namespace, st: ast.ClassDef):
        bases = [ns.evaluate(b) for b in st.bases]
        real_bases = tuple(b for b in bases if isinstance(b, type) and not isinstance(b, StubMeta))
        doc = ast.get_docstring(st)
        if any(isinstance(b, enum.EnumMeta) for b in real_bases):
            return self._enum(ns, st, real_bases, doc)
        if any(b is typing.TypedDict or getattr(b, "__name__", "") == "TypedDict" for b in bases) or any(
                typing.is_typeddict(b) for b in real_bases):
            td = typing.TypedDict(st.name, {})
            td.__module__ = ns.modname
            return td
        is_dc = any(self._is_dataclass_decorator(ns, d) for d in st.decorator_list) or any(
            "__dataclass_fields__" in getattr(k, "__dict__", {}) for b in bases for k in getattr(b, "__mro__", ()))
        body = {"__module__": ns.modname, "__qualname__": st.name, "__doc__": doc, "_stub_pure": False}
        keep = tuple(b for b in real_bases if b in (dict, str, int, float, list, tuple, set, Exception)) or ()
        meta = StubMeta if not keep else type
        try:
            cls = meta(st.name, keep, body)
        except TypeError:
            cls = StubMeta(st.name, (), body)
        if is_dc:
            own = {}
            for item in st.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    if not _is_classvar(item.annotation):
                        own[item.target.id] = FieldRec(item.target.id, item.annotation, ns)
            merged = _base_fields(bases)
            merged.update(own)
            cls.__dataclass_fields__ = merged
        return cls

    def _is_dataclass_decorator(self, ns: Namespace, node: ast.AST) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        value = ns.evaluate(target)
        return value is fake_dataclass

    def _enum(self, ns: Namespace, st: ast.ClassDef, bases, doc):
        members = []
        local: dict = {}
        for item in st.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                key = item.targets[0].id
                if key.startswith("_"):
                    continue
                try:
                    value = eval(compile(ast.Expression(body=item.value), ns.path, "eval", dont_inherit=True),
                                 {"__builtins__": builtins, "enum": enum, "auto": enum.auto}, local)
                except Exception:  # a member whose value needs more than the class body
                    value = ns.evaluate(item.value)
                local[key] = value
                members.append((key, value if not isinstance(value, (Stub, StubMeta)) else key))
        mixin = next((b for b in bases if b in (str, int)), None)
        try:
            cls = enum.Enum(st.name, members or [("_EMPTY", 0)], type=mixin, module=ns.modname)
        except (TypeError, ValueError):
            cls = enum.Enum(st.name, [(k, k) for k, _ in members] or [("_EMPTY", 0)], module=ns.modname)
        cls.__doc__ = doc
        return cls


class CudaPlatform(Stub):
    """vllm.platforms.current_platform on a CUDA machine, as far as the parser reads it: device_type 'cuda'
    (platforms/cuda.py: device_type = "cuda"); pre_register_and_update is the interface's no-op (platforms/
    interface.py; cuda.py does not override it)."""

    device_type = "cuda"
    device_name = "cuda"

    def pre_register_and_update(self, parser=None):
        return None


def _lazy_loader(loader: Loader):
    def lazy(local_name, parent_globals, name):
        return ModuleProxy(loader, name)
    return lazy


def _init_logger(loader: Loader):
    def init_logger(name):
        return Stub(f"logger[{name}]")
    return init_logger


def _sub_decorator(*args, **kwargs):
    """pydantic's field_validator/model_validator(...) and other decorator factories: leave the function as is."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


class _SkipValidation:
    def __class_getitem__(cls, item):
        return typing.Annotated[item, "SkipValidation"]


class FieldInfo:
    pass


class TypeAdapter:
    """pydantic.TypeAdapter(cls).validate_json: the JSON value itself (`--probe` shows what a dataclass flag got)."""

    def __init__(self, cls, *args, **kwargs):
        self.cls = cls

    def validate_json(self, text):
        return json.loads(text)


def _pyd_field(*args, **kwargs):
    return None


OVERRIDES = {
    ("dataclasses", "dataclass"): fake_dataclass,
    ("pydantic.dataclasses", "dataclass"): fake_dataclass,
    ("vllm.config.utils", "config"): fake_dataclass,
    ("dataclasses", "fields"): fields,
    ("pydantic", "Field"): _pyd_field,
    ("pydantic.fields", "FieldInfo"): FieldInfo,
    ("pydantic", "TypeAdapter"): TypeAdapter,
    ("pydantic", "SkipValidation"): _SkipValidation,
    ("pydantic", "field_validator"): _sub_decorator,
    ("pydantic", "model_validator"): _sub_decorator,
    ("vllm.utils.import_utils", "LazyLoader"): staticmethod(_lazy_loader),
    ("vllm.logger", "init_logger"): staticmethod(_init_logger),
    ("typing_extensions", "deprecated"): _sub_decorator,
    ("vllm.platforms", "current_platform"): CudaPlatform("current_platform"),
}


# -- the serve parser of one release


def release_of(src: str) -> str:
    path = os.path.join(src, "vllm", "version.py")
    for candidate in (os.path.join(src, "vllm", "_version.py"), path):
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as fh:
                m = re.search(r"(?:__version__|version)\s*(?::\s*str)?\s*=\s*['\"]([0-9][^'\"]*)['\"]", fh.read())
            if m:
                return m.group(1).split("+")[0]
    m = re.search(r"(\d+\.\d+\.\d+)", src)
    if not m:
        raise SystemExit(f"{src}: no release in vllm/_version.py or the directory's name")
    return m.group(1)


def build(src: str):
    """The release's top-level parser (as cli/main.py builds it) and its serve subparser."""
    loader = Loader(src)
    sys.setrecursionlimit(10000)
    flex = loader.attribute("vllm.utils.argparse_utils", "FlexibleArgumentParser")
    parser = flex(description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version="X")  # cli/main.py
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    serve_cls = loader.attribute("vllm.entrypoints.cli.serve", "ServeSubcommand")
    serve = serve_cls().subparser_init(subparsers)
    return parser, serve


def _type_name(fn) -> str:
    """The `type=` converter, named: int, float, str, json, human_readable_int, optional(...)."""
    if fn is None:
        return ""
    if fn in (int, float, str):
        return fn.__name__
    if fn is json.loads:
        return "json"
    name = getattr(fn, "__name__", type(fn).__name__)
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())]
    inner = next((c for c in cells if callable(c)), None)
    if name == "_optional_type":
        return f"optional({_type_name(inner)})"
    if name == "_parse_type":
        return _type_name(inner)
    if name == "parse_dataclass":
        return "json"
    if name == "<lambda>":
        return _lambda_source(fn)
    return name.lstrip("_")


def _lambda_source(fn) -> str:
    """A lambda `type=` as its source text (the release's own: `lambda s: s.lower().replace('-', '_')`)."""
    code = fn.__code__
    with open(code.co_filename, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            return ast.unparse(node)
    return "lambda"


def _accepted_choices(action) -> list[str] | None:
    """The texts the parser accepts for an action with choices: each choice's text run through the action's own
    type (0.14.0 lists 'None' among the choices but its optional_type turns 'None' into None: refused)."""
    if action.choices is None:
        return None
    out = []
    candidates = [str(c) for c in action.choices if c is not None]
    if None in list(action.choices):
        candidates += ["None", ""]
    for text in dict.fromkeys(candidates):
        try:
            value = action.type(text) if action.type else text
        except Exception:  # refused by the option's own type: not an accepted text
            continue
        if value in action.choices:
            out.append(text)
    return out


KINDS = (
    (argparse.BooleanOptionalAction, "bool_optional"), (argparse._StoreTrueAction, "store_true"),
    (argparse._StoreFalseAction, "store_false"), (argparse._StoreConstAction, "store_const"),
    (argparse._HelpAction, "help"), (argparse._VersionAction, "version"), (argparse._CountAction, "count"),
    (argparse._AppendConstAction, "store_const"),
)


def kind_of(action) -> str:
    for cls, kind in KINDS:
        if isinstance(action, cls):
            return kind
    if action.nargs == 0:
        return "store_const"
    return "value"


def describe(serve) -> dict[str, dict]:
    """Every option of the serve parser: canonical spelling -> its facts (all spellings the parser registered)."""
    by_action: dict[int, list[str]] = {}
    actions = {}
    for spelling, action in serve._option_string_actions.items():
        by_action.setdefault(id(action), []).append(spelling)
        actions[id(action)] = action
    groups = {id(a): g.title for g in serve._action_groups for a in g._group_actions}
    out = {}
    for key, spellings in by_action.items():
        action = actions[key]
        kind = kind_of(action)
        negatives = sorted(getattr(action, "negative_option_strings", None)
                           or [s for s in spellings if kind == "bool_optional" and s.startswith("--no-")])
        positives = [s for s in spellings if s not in negatives]
        canonical = "--" + action.dest.replace("_", "-")
        if canonical not in positives:
            canonical = next((s for s in positives if s.startswith("--")), positives[0])
        deprecated = action in getattr(serve, "_deprecated", ()) or action in getattr(
            type(serve), "_deprecated", ()) or bool(getattr(action, "deprecated", False))
        out[canonical] = {
            "kind": kind,
            "nargs": action.nargs if kind == "value" else None,
            "choices": _accepted_choices(action) if kind == "value" else None,
            "aliases": sorted(s for s in positives if s != canonical),
            "negatives": negatives,
            "type": _type_name(action.type) if kind == "value" else "",
            "append": isinstance(action, argparse._AppendAction),
            "deprecated": deprecated,
            "group": groups.get(key, ""),
        }
    return out


def probe(src: str, args: list[str]) -> str:
    """`vllm serve ARGS` through the release's own parser: the options it set (those differing from their default),
    or its error line."""
    parser, _ = build(src)
    defaults = vars(parser.parse_args(["serve", "MODEL"])) if args[:1] != ["MODEL"] else {}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(parser.parse_args(["serve", *args]))
    except SystemExit:
        return "error: " + err.getvalue().strip().splitlines()[-1]
    except Exception as e:  # the release's own code raised (ValueError ...): shown as such
        return f"raises {type(e).__name__}: {e}"
    changed = {k: v for k, v in ns.items() if k not in defaults or defaults[k] != v}
    return json.dumps(changed, default=repr, sort_keys=True)


# -- the table


def negation_rule(info: dict) -> str:
    """How the release spells a BooleanOptionalAction's False: 'no' (argparse: --no-X for each --X) or 'no+inverse'
    (0.33.0 utils/argparse_utils.py EnableDisableAction: also --disable-X for --enable-X and the reverse)."""
    positives = [info["canonical"], *info["aliases"]]
    plain = sorted("--no-" + p[2:] for p in positives if p.startswith("--"))
    inverse = sorted(set(plain) | {inv + p[len(pre):] for p in positives
                                   for pre, inv in (("--enable-", "--disable-"), ("--disable-", "--enable-"))
                                   if p.startswith(pre)})
    if plain == inverse and info["negatives"] == plain:
        return ""  # either rule: no --enable-/--disable- spelling
    if info["negatives"] == plain:
        return "no"
    if info["negatives"] == inverse:
        return "no+inverse"
    raise SystemExit(f"{info['canonical']}: negatives {info['negatives']} follow no known rule")


def release_table(src: str) -> tuple[str, dict, set[str]]:
    release = release_of(src)
    LOG.clear()
    _, serve = build(src)
    flags = describe(serve)
    rules = set()
    for name, info in flags.items():
        info["canonical"] = name
        if info["kind"] == "bool_optional":
            rules.add(negation_rule(info))
    return release, flags, rules - {""}


def _row_key(info: dict) -> tuple:
    marks = ",".join(m for m in ("append", "deprecated") if info[m])
    return (info["kind"], info["nargs"], tuple(info["choices"]) if info["choices"] is not None else None,
            tuple(info["aliases"]), info["type"], marks)


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


def table(srcs: list[str]) -> dict:
    per_release = {}
    negation = []
    for src in srcs:
        release, flags, rules = release_table(src)
        if len(rules) != 1:
            raise SystemExit(f"{release}: negation rules {rules}")
        per_release[release] = flags
        negation.append((release, rules.pop()))
        print(f"{release}: {len(flags)} options", file=sys.stderr)
    releases = sorted(per_release, key=_key)
    choices: list[tuple] = []
    rows = []
    for name in sorted({n for flags in per_release.values() for n in flags}):
        run = None
        for i, release in enumerate(releases + [None]):
            info = per_release[release].get(name) if release else None
            key = _row_key(info) if info else None
            if run and (key != run[0] or i != run[2] + 1):
                rows.append((name, releases[run[1]], releases[run[2]], run[0]))
                run = None
            if key is not None:
                run = (key, i if run is None else run[1], i)
    out_rows = []
    for name, first, last, (kind, nargs, ch, aliases, type_, marks) in sorted(rows, key=lambda r: (r[0], _key(r[1]))):
        if ch is not None and ch not in choices:
            choices.append(ch)
        out_rows.append([name, first, last, kind, nargs, choices.index(ch) if ch is not None else None,
                         list(aliases), type_, marks])
    ranges = []
    for release, rule in sorted(negation, key=lambda r: _key(r[0])):
        if ranges and ranges[-1][2] == rule:
            ranges[-1][1] = release
        else:
            ranges.append([release, release, rule])
    return {"releases": releases, "negation": ranges, "choices": [list(c) for c in choices], "flags": out_rows}


def write_json(data: dict, path: str) -> None:
    """One row per line: diffs between regenerations stay readable."""
    lines = ["{"]
    lines.append(' "generated_by": "scripts/vllm_flags.py (re-run: its docstring)",')
    lines.append(' "row": ["spelling", "first", "last", "kind", "nargs", "choices", "aliases", "type", "marks"],')
    lines.append(f' "releases": {json.dumps(data["releases"])},')
    lines.append(f' "negation": {json.dumps(data["negation"])},')
    lines.append(' "choices": [')
    lines.append(",\n".join("  " + json.dumps(c) for c in data["choices"]))
    lines.append(" ],")
    lines.append(' "flags": [')
    lines.append(",\n".join("  " + json.dumps(r) for r in data["flags"]))
    lines.append(" ]")
    lines.append("}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _real_outcome(parser, args: list[str]) -> str:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(["serve", *args])
    except SystemExit:
        text = err.getvalue().strip()
        line = text.splitlines()[-1] if text else ""
        if "unrecognized arguments: " in line:
            return "unknown:" + " ".join(t for t in line.split("unrecognized arguments: ")[1].split() if t[:1] == "-")
        for word in ("ambiguous option", "ignored explicit argument"):
            if word in line:
                return word
    except Exception:  # the release's own ValueError (--model, --config): compared as such
        return "raises"
    return "ok"  # accepted, or the option was known and its value refused


def _table_outcome(release: str, args: list[str]) -> str:
    from kvcalc.vocab.releases import vllm_flags as table

    try:
        tokens = table.rewrite(release, args)
    except ValueError:
        return "raises"
    unknown = []
    for token in tokens:
        if token[:1] != "-" or token == "--" or token[1:].replace(".", "").isdigit():
            continue
        try:
            m = table.resolve(release, token)
        except ValueError:
            return "ambiguous option"
        if m is None:
            unknown.append(token)
        elif m.value is not None and not m.info.takes_value:
            return "ignored explicit argument"
    return "unknown:" + " ".join(unknown) if unknown else "ok"


def _cases(flags) -> list[list[str]]:
    """Each spelling as given, with underscores, abbreviated, misspelt and with `=value`; and the -O forms."""
    sample = {"int": "1", "float": "0.5", "json": "{}", "human_readable_int": "1k", "human_readable_int_or_auto": "auto"}
    cases = []
    for s, info in flags.items():
        if info.kind == "help" or s in ("--config", "--model"):
            continue
        val = [info.choices[0] if info.choices else sample.get(info.type.removeprefix("optional(").rstrip(")"), "x")
               ] if info.takes_value else []
        cases.append([s, *val])
        if s.startswith("--"):
            cases += [["--" + s[2:].replace("-", "_"), *val], [s[:max(len(s) - 3, 4)], *val], [s + "-x", *val],
                      [s + "=" + (val[0] if val else "false")]]
        else:
            cases += [[s + (val[0] if val else "1")], [s[:2], *val]]
    return cases + [["-O3"], ["-O", "2"], ["-O"], ["-Ofast"], ["-tp2"], ["-qfp8"], ["--enable"], ["--max-model"],
                    ["--no-enable-prefix"], ["-d", "1"], ["-dp=2"], ["--kv-transfer-config.kv_connector", "X"]]


def check(srcs: list[str]) -> int:
    """The package's table and its rewrite/resolve against each release's own parser: every spelling in five forms
    through both; the outcomes (accepted, unknown options, ambiguous, explicit argument to a switch) must agree."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from kvcalc.vocab.releases import vllm_flags as table

    bad = 0
    for src in srcs:
        release = release_of(src)
        parser, _ = build(src)
        cases = _cases(table.flags_of(release))
        for case in cases:
            real, ours = _real_outcome(parser, ["M", *case]), _table_outcome(release, ["M", *case])
            if real != ours:
                bad += 1
                print(f"{release} {case}: vLLM {real}, table {ours}")
        print(f"{release}: {len(cases)} command lines", file=sys.stderr)
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the table (JSON) here")
    ap.add_argument("--dump", action="store_true", help="print each release's options")
    ap.add_argument("--probe", nargs=argparse.REMAINDER, help="ARGS after the SRC: vllm serve ARGS")
    ap.add_argument("--log", action="store_true", help="list the stand-ins each release touched")
    ap.add_argument("--check", action="store_true", help="compare the package's table with each release's parser")
    ap.add_argument("srcs", nargs="*", help="directories holding a release's vllm/")
    ns = ap.parse_args(argv)
    if ns.probe is not None:
        print(probe(ns.srcs[0], ns.probe))
        return 0
    if ns.check:
        return check(ns.srcs)
    if ns.dump:
        for src in ns.srcs:
            release, flags, _ = release_table(src)
            for name in sorted(flags):
                print(release, name, json.dumps(flags[name]))
            if ns.log:
                for line in sorted(set(LOG)):
                    print(release, "LOG", line)
        return 0
    data = table(ns.srcs)
    if ns.out:
        write_json(data, ns.out)
    print(f"{len(data['flags'])} rows, {len(data['choices'])} choice lists", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
