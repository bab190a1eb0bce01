"""Frozen, keyword-only records: kvcalc's dataclasses, cheap to define, with their JSON form and JSON Schema.

A `@record` class behaves as `@dataclass(frozen=True, kw_only=True)`: fields from annotations, defaults,
equality and hashing by class and fields, a repr, assignment refused. What differs is the cost: defining a
dataclass compiles four to six methods (~1 ms each class here, and kvcalc's start-up time is a target), while a
record compiles nothing: its `__init__` is a closure over the field table, and the other methods are shared.

`field(doc=...)` attaches the description the generated JSON Schema carries; `to_json` turns records, enums,
tuples and dicts into plain JSON values; `json_schema` derives the schema from the annotations.

Type checkers see `record` through `typing.dataclass_transform` (PEP 681): a record class is a frozen,
keyword-only dataclass whose `field(...)` calls give defaults (`default=`, `factory=`). At run time the marker is
`typing.dataclass_transform` from Python 3.11 and a no-op on 3.10 (`typing_extensions` is not a dependency: only
type checkers read it, from their own stubs).
"""

from __future__ import annotations

import sys
from enum import Enum
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, TypeVar, overload

if TYPE_CHECKING:
    # Type checkers ship typing_extensions' stubs, so the marker is seen whatever Python version they check for
    # (3.10 included); it is never imported at run time.
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: the marker only informs type checkers
    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda fn: fn

_T = TypeVar("_T")

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


class Field:
    """One field of a record (a plain slotted class: a NamedTuple costs ~0.7 M instructions to define)."""

    __slots__ = ("name", "default", "factory", "doc", "omit_if_none", "json_name", "in_json")

    def __init__(self, name: str, default: Any, factory: Any, doc: str, omit_if_none: bool, in_json: bool = True):
        self.name = name
        self.default = default  # MISSING: required
        self.factory = factory  # a callable making the default, or None
        self.doc = doc
        self.omit_if_none = omit_if_none  # JSON: leave the key out when None (sections shown only on request)
        self.in_json = in_json  # False: a working value, not part of the JSON form (nor of its schema)
        # The JSON key: the field name without a trailing underscore (`from_` -> `from`).
        self.json_name = name[:-1] if name.endswith("_") else name


def field(doc: str = "", *, default: Any = MISSING, factory: Callable[[], Any] | None = None,
          omit_if_none: bool = False, json: bool = True) -> Any:
    """A field with a description (and, optionally, a default or default factory). A field left out of the JSON
    when None defaults to None. The Field is named by @record (one object per field: defining ~90 record classes
    is part of the start-up time)."""
    if omit_if_none and default is MISSING and factory is None:
        default = None
    return Field("", default, factory, doc, omit_if_none, json)


class Output(property):
    """A property that is part of its record's JSON form (see `output`)."""

    json_doc = ""


def output(doc: str):
    """A derived value that is part of the record's JSON form (after the fields, in definition order), with its
    description: `@output("why resident differs")` over a method, read as a property."""

    def wrap(fn) -> Output:
        prop = Output(fn)
        prop.json_doc = doc
        return prop

    return wrap


if TYPE_CHECKING:
    from functools import cached_property as cached  # what `cached` is to a type checker
else:
    class cached:
        """A property computed on first read and kept in the instance's __dict__ (later reads find it there: this is a
        non-data descriptor). functools.cached_property without its lock: Python 3.11's takes an RLock on every first
        read (3.12 dropped it), and a plan reads a few of them every time; kvcalc shares no record across threads
        while it is being computed, and a value computed twice would be the same value. Measured on Python 3.11
        (callgrind): functools.cached_property costs 1.1 % more instructions a plan (MLA example) and 3.3 % more
        on the 10,000-point sweep."""

        def __init__(self, fn):
            self.fn = fn
            self.name = fn.__name__
            self.__doc__ = fn.__doc__

        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, obj, cls=None):
            if obj is None:
                return self
            value = obj.__dict__[self.name] = self.fn(obj)
            return value


class FrozenRecordError(AttributeError):
    pass


def _setattr(self, name, value):
    raise FrozenRecordError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _delattr(self, name):
    raise FrozenRecordError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self.__record_key__(self) == other.__record_key__(other)


def _hash(self):
    return hash((self.__class__, self.__record_key__(self)))


def _cached_hash(self):
    # Specs are hashed thousands of times per plan (buckets, merges): compute once per object.
    d = self.__dict__
    try:
        return d["_hash"]
    except KeyError:
        h = d["_hash"] = hash((self.__class__, self.__record_key__(self)))
        return h


def _repr(self):
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__)
    return f"{type(self).__name__}({inner})"


# A class built this many times gets a compiled __init__ (below): one plan builds most record classes a few times,
# so the CLI's single plan never pays the compile (~60 us a class); a loop of plans (sweep, API) gets the faster
# one (~0.65 us a call instead of ~1.45 us: Python's own keyword binding instead of set checks and a dict update).
# Measured (callgrind): without it a plan of the MLA example costs 30 % more instructions and the 10,000-point sweep
# 25 % more; a cold start 0.03 % less.
_COMPILE_AFTER = 64
_FACTORY = type("Factory", (), {"__repr__": lambda self: "<factory>"})()


def _compiled_init(cls, post_init):
    """The same __init__ as generated source: keyword-only parameters, defaults in the signature, factories
    called for a missing value, the same TypeError for unknown or missing names (Python's binding raises it)."""
    fields_ = cls.__record_fields__
    if any(f.name.startswith("__") or not f.name.isidentifier() for f in fields_):  # pragma: no cover
        raise TypeError(f"{cls.__name__}: a field name the compiled __init__ cannot take")
    ns: dict = {"_FACTORY": _FACTORY, "_post_init": post_init}
    # The instance and its dict under names no field can have (fields never start with two underscores).
    params, body = [], ["    __d = __s.__dict__"]
    for i, f in enumerate(fields_):
        if f.default is MISSING and f.factory is None:
            params.append(f.name)
            body.append(f"    __d[{f.name!r}] = {f.name}")
        elif f.factory is not None:
            ns[f"_f{i}"] = f.factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    __d[{f.name!r}] = _f{i}() if {f.name} is _FACTORY else {f.name}")
        else:
            ns[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
            body.append(f"    __d[{f.name!r}] = {f.name}")
    if post_init is not None:
        body.append("    _post_init(__s)")
    src = f"def __init__(__s{', *, ' + ', '.join(params) if params else ''}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<record {cls.__name__}>", "exec"), ns)  # noqa: S102 - source built from field names
    fn = ns["__init__"]
    fn.__qualname__ = f"{cls.__name__}.__init__"
    return fn


def _make_init(cls):
    """cls.__init__ from its fields: keyword-only, with defaults and factories, unknown and missing names refused.
    A closure over the field table, no generated source (compiling one costs ~0.06 ms a class at start-up), whose
    tables are built on the first call (many classes are never built in a run); after _COMPILE_AFTER instances it
    replaces itself with the compiled equivalent."""
    name = cls.__name__
    state: list = [0, None]  # instances built, (allowed, required, optional, number of fields, post_init)

    def tables():
        fields_ = cls.__record_fields__
        required = frozenset(f.name for f in fields_ if f.default is MISSING and f.factory is None)
        state[1] = (frozenset(f.name for f in fields_), required,
                    tuple((f.name, f.default, f.factory) for f in fields_ if f.name not in required), len(fields_),
                    getattr(cls, "__post_init__", None))
        return state[1]

    def __init__(self, **kwargs):
        allowed, required, optional, n, post_init = state[1] or tables()
        keys = kwargs.keys()
        if not keys <= allowed:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(keys - allowed)}")
        if not required <= keys:
            raise TypeError(f"{name}() missing keyword arguments {sorted(required - keys)}")
        d = self.__dict__
        d.update(kwargs)
        if len(kwargs) < n:
            for key, default, factory in optional:
                if key not in kwargs:
                    d[key] = factory() if factory is not None else default
        if post_init is not None:
            post_init(self)
        state[0] += 1
        if state[0] == _COMPILE_AFTER and cls.__dict__.get("__init__") is __init__:
            cls.__init__ = _compiled_init(cls, post_init)

    return __init__


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, cache_hash: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
def record(cls: Any = None, /, *, cache_hash: bool = False) -> Any:
    """Make `cls` a frozen, keyword-only record (see the module docstring)."""

    def wrap(cls: Any) -> Any:
        fields: dict[str, Field] = {f.name: f for f in getattr(cls, "__record_fields__", ())}
        d = cls.__dict__  # one mapping proxy for the whole loop (each cls.__dict__ makes a new one)
        for name, annotation in d.get("__annotations__", {}).items():
            if (annotation if isinstance(annotation, str) else str(annotation)).startswith("ClassVar"):
                continue
            value = d.get(name, MISSING)
            if value.__class__ is Field and not value.name:  # made by field(): name it
                value.name = name
                value.json_name = name[:-1] if name.endswith("_") else name
                fields[name] = value
            else:
                fields[name] = Field(name, value, None, "", False)
            if value is not MISSING:
                delattr(cls, name)
        order = list(fields.values())
        cls.__record_fields__ = tuple(order)
        # The JSON form: the fields that are part of it, then the derived outputs (inherited ones first).
        outputs = dict(getattr(cls, "__record_outputs__", {}))
        outputs.update((k, v) for k, v in d.items() if isinstance(v, Output))
        cls.__record_outputs__ = outputs
        cls.__record_json__ = tuple(f for f in order if f.in_json)
        names = [f.name for f in order]
        cls.__record_names__ = tuple(names)
        if len(names) == 1:
            only = names[0]
            cls.__record_key__ = staticmethod(lambda obj: (getattr(obj, only),))
        else:
            cls.__record_key__ = staticmethod(attrgetter(*names)) if names else staticmethod(lambda obj: ())

        cls.__init__ = _make_init(cls)
        cls.__setattr__ = _setattr
        cls.__delattr__ = _delattr
        cls.__eq__ = _eq
        cls.__hash__ = _cached_hash if cache_hash else _hash
        cls.__repr__ = _repr
        return cls

    return wrap(cls) if cls is not None else wrap


def fields(obj_or_cls) -> tuple[Field, ...]:
    return obj_or_cls.__record_fields__


def is_record(obj) -> bool:
    return hasattr(type(obj) if not isinstance(obj, type) else obj, "__record_fields__")


def replace(obj, **changes):
    """A copy of a record with some fields changed (dataclasses.replace for records)."""
    cls = type(obj)
    kw = dict(zip(cls.__record_names__, cls.__record_key__(obj)))  # the fields' values in one C-level call
    kw.update(changes)
    return cls(**kw)


def to_json(value: Any) -> Any:
    """Records, enums, tuples and mappings -> plain JSON values (dict keys kept as given)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        if isinstance(value, Enum):
            return value.value
        return value
    if isinstance(value, Enum):
        return value.value
    fields_ = getattr(type(value), "__record_json__", None)
    if fields_ is not None:
        out = {}
        for f in fields_:
            v = getattr(value, f.name)
            if v is None and f.omit_if_none:
                continue
            out[f.json_name] = to_json(v)
        for name in type(value).__record_outputs__:
            out[name] = to_json(getattr(value, name))
        return out
    if isinstance(value, dict):
        return {(k.value if isinstance(k, Enum) else k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    raise TypeError(f"no JSON form for {type(value).__name__}")  # pragma: no cover - a kvcalc bug


# ---------------------------------------------------------------------------------------------------------
# JSON Schema from the annotations (only `kvcalc schema output` and the tests pay for it).

def _schema_of(tp: Any, defs: dict, extra_types: dict | None) -> dict:
    """The JSON Schema of one annotation (records go to `defs` by name and are referred to)."""
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        options = [_schema_of(a, defs, extra_types) for a in args]
        simple = [o["type"] for o in options if set(o) == {"type"} and isinstance(o["type"], str)]
        if len(simple) == len(options):
            return {"type": simple}
        return {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple):
        return {"type": "array", "items": _schema_of(args[0] if args else Any, defs, extra_types)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], defs, extra_types)}
    simple_types = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp is Any:
        return {}
    if tp in simple_types:
        return {"type": simple_types[tp]}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"enum": [m.value for m in tp]}
    if is_record(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder: recursion-safe
            defs[tp.__name__] = json_schema(tp, defs=defs, extra_types=extra_types)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no schema for {tp!r}")  # pragma: no cover - a kvcalc bug


def json_schema(cls, *, defs: dict | None = None, extra_types: dict | None = None) -> dict:
    """The JSON Schema of a record class: every field required (null where the type allows it), no other key.
    `extra_types`: record classes an annotation names that its module imports only for type checkers."""
    import typing

    defs = {} if defs is None else defs
    namespace = {**vars(__import__(cls.__module__, fromlist=["_"])), **(extra_types or {})}
    hints = typing.get_type_hints(cls, namespace)
    props, required = {}, []
    for f in cls.__record_json__:
        s = _schema_of(hints[f.name], defs, extra_types)
        if f.doc:
            s = {"description": f.doc, **s}
        props[f.json_name] = s
        if not f.omit_if_none:
            required.append(f.json_name)
    for name, prop in cls.__record_outputs__.items():
        ret = typing.get_type_hints(prop.fget, namespace)["return"]
        props[name] = {"description": prop.json_doc, **_schema_of(ret, defs, extra_types)}
        required.append(name)
    out = {"type": "object", "additionalProperties": False, "properties": props, "required": required}
    if cls.__doc__:
        out = {"description": " ".join(cls.__doc__.split()), **out}
    return out
