"""The JSON Schema of the layout YAML (schema v1), for editors, generated from the key table (vocab/keys.KEYS).

`kvcalc schema layout` lets an editor validate a layout through a `# yaml-language-server: $schema=` line;
tests validate every example against it. Each key's schema follows its row's kind, bounds and choices, and its
description is the row's doc; a Mamba kind's fields come from vocab/kinds.MAMBA_KINDS, LMCache's config keys under
offload.lmcache from LMCACHE below (LMCache's own names, checked per release by validate_lmcache.py).
"""

from __future__ import annotations

from ...vocab.keys import CHILDREN, KEY, Key
from ...vocab.kinds import MAMBA_KINDS, MAMBA_STATE_DTYPE_FIELD
from ...vocab.units import MODEL_DTYPES

_INT = {"type": "integer", "minimum": 0}
_POS = {"type": "integer", "minimum": 1}
_SIZE = {"description": "bytes: an integer, or a string such as 64GiB (64G = 64Gi = 64GiB = 64 x 2^30; "
                        "64GB = 64 x 10^9)",
         "anyOf": [{"type": "integer", "minimum": 0},
                   {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9_]*)?\s*([KMGTP](i|iB|ib|B|b)?|"
                                                 r"[kmgtp](iB|ib|B|b)|[Bb])?\s*$"}]}
_HUMAN_TEXT = {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kmgtKMGT]?\s*$"}
_VERSION = {"type": "string", "pattern": r"^v?\d+\.\d+(\.\d+)?"}
_NULL = {"type": "null"}

# LMCache's config keys under offload.lmcache (any key the release defines is accepted; these are described).
_GIB = {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": r"^\s*[0-9.]+\s*$"}]}
_FLAG = {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false", "1", "0", "True", "False"]}]}
_IDS = {"anyOf": [{"type": "array", "items": _INT}, _INT, {"type": "string"}, {"type": "null"}]}
LMCACHE: dict[str, tuple[dict, str]] = {
    "chunk_size": (_POS, "tokens per chunk (LMCache's default 256)"),
    "local_cpu": (_FLAG, "the CPU tier serves hits (false: the pool is only a staging buffer)"),
    "max_local_cpu_size": (_GIB, "GiB of pinned host memory PER RANK (LMCache: int(x * 1024**3) bytes); default 5"),
    "local_disk": ({"type": ["string", "null"]}, "a directory (or comma-separated directories) for the disk tier"),
    "max_local_disk_size": (_GIB, "GiB of disk per rank"),
    "use_layerwise": (_FLAG, "store every layer of a chunk as its own object"),
    "local_cpu_use_hugepages": (_FLAG, "0.4.6+: pin the pool on 2 MiB hugepages"),
    "lookup_server_worker_ids": (_IDS, "ranks running a lookup server (with save_only_first_rank they allocate a "
                                       "pool too)"),
    "enable_controller": (_FLAG, "start LMCache workers (on lmcache_worker_ids)"),
    "lmcache_worker_ids": (_IDS, "ranks with an LMCache worker"),
}
LMCACHE_EXTRA: dict[str, tuple[dict, str]] = {
    "save_only_first_rank": ({"type": "boolean"}, "MLA: only rank 0 stores (LMCache's default for MLA models)"),
    "first_rank_max_local_cpu_size": ({"type": "number", "minimum": 0}, "MLA with save_only_first_rank: rank 0's "
                                                                        "pool, GiB"),
    "local_cpu.pinned_align_bytes": (_POS, "0.3.15+: alignment of each chunk object, a power of two (default 4096)"),
}


def _int(key: Key) -> dict:
    out = {"type": "integer", "minimum": key.minimum}
    if key.maximum is not None:
        out["maximum"] = key.maximum
    return out


def _described(fragment: dict, doc: str) -> dict:
    return {**fragment, "description": doc}


def _object(path: str, extra: dict | None = None) -> dict:
    """A mapping of rows (and, for a Mamba state, its kinds' fields): no other key; required rows required."""
    props = {leaf: _described(fragment(KEY[f"{path}.{leaf}"]), KEY[f"{path}.{leaf}"].doc) for leaf in CHILDREN[path]}
    return {"type": "object", "additionalProperties": False, "properties": {**props, **(extra or {})},
            "required": [leaf for leaf in CHILDREN[path] if KEY[f"{path}.{leaf}"].required]}


def _mamba_fields() -> dict:
    """Every Mamba kind's fields and their other configs' names (vocab/kinds.MAMBA_KINDS)."""
    out = {}
    for row in MAMBA_KINDS.values():
        for name in row.fields + row.optional + tuple(row.aliases):
            kinds = [k for k, r in MAMBA_KINDS.items() if name in r.fields + r.optional]
            names = sorted({r.aliases[name] for r in MAMBA_KINDS.values() if name in r.aliases})
            out[name] = _described(_POS, f"the Hugging Face config field {name} ({', '.join(kinds)})" if kinds else
                                   f"another config's name for {' / '.join(names)}")
        for name in row.checked:
            out[name] = _described(_POS, f"the config file's {name} ({row.name}): checked against the fields that "
                                         "give the state's shape")
    out[MAMBA_STATE_DTYPE_FIELD] = _described({"enum": list(MODEL_DTYPES)}, "the model config's SSM state dtype: "
                                              "what cache.mamba_ssm_cache_dtype auto takes")
    return out


def _lmcache(key: Key) -> dict:
    """LMCache's own config: open (validate_lmcache.py checks the names per release), the common keys described."""
    extra = {"type": ["object", "null"], "additionalProperties": True,
             "properties": {name: _described(s, doc) for name, (s, doc) in LMCACHE_EXTRA.items()}}
    props = {leaf: _described(fragment(KEY[f"{key.path}.{leaf}"]), KEY[f"{key.path}.{leaf}"].doc)
             for leaf in CHILDREN[key.path]}
    props.update({name: _described(s, doc) for name, (s, doc) in LMCACHE.items()})
    props["extra_config"] = _described(extra, "LMCache's extra_config mapping")
    return {"type": "object", "additionalProperties": True, "properties": props}


def _server(key: Key) -> dict:
    """The LMCache MP server's options (vocab/releases/lmcache_mp_flags.py) under their argparse names, each typed as
    its parser types it; the rows with kvcalc flags described by their docs."""
    from ...vocab.releases.lmcache_mp_flags import FLAGS

    types = {"int": {"type": "integer"}, "float": {"type": "number"}, "str": {"type": "string"}}
    props = {}
    for spellings, dest, kind, typ, default, choices, _ in FLAGS:
        if kind == "help":
            continue
        if kind in ("bool_optional", "store_true"):
            frag: dict = {"type": "boolean"}
        elif kind in ("star", "append"):
            frag = {"type": "array", "items": {"type": "string"}}
        else:
            frag = {"enum": list(choices)} if choices else dict(types[typ])
        row = KEY.get(f"{key.path}.{dest}")
        props[dest] = _described(frag, row.doc if row else f"the server's {'/'.join(spellings)} (default "
                                                          f"{default!r})")
    return {"type": "object", "additionalProperties": False, "properties": props}


def _list_of(key: Key) -> dict:
    """kinds (layer kinds), ints, indices (an index or one of the row's choices)."""
    if key.kind == "kinds":
        out: dict = {"type": "array", "items": {"enum": list(key.choices)}}
        if key.minimum:
            out["minItems"] = key.minimum
        return out
    if key.kind == "ints":
        return {"type": "array", "items": _int(key)}
    return {"type": "array", "items": {"anyOf": [_int(key), *({"const": c} for c in key.choices)]}}


def fragment(key: Key) -> dict:
    """The JSON Schema of one key's value, from its row (without the description)."""
    kind = key.kind
    if kind == "section":
        return _object(key.path)
    if kind == "mamba":
        return _object(key.path, _mamba_fields())
    if kind == "config":  # a connector's own config keys, under their names (LMCache's)
        return _lmcache(key)
    if kind == "server":  # a server's command-line options, under their argparse names (LMCache's MP server)
        return _server(key)
    if kind in ("kinds", "ints", "indices"):
        return _list_of(key)
    if kind == "bool":
        return {"type": ["boolean", "null"] if key.nullable else "boolean"}
    if kind == "sizes":  # a size, one per worker, or null
        return {"anyOf": [_SIZE, {"type": "array", "items": _SIZE}] + ([_NULL] if key.nullable else [])}
    out = {
        "int": _int, "choice": lambda k: {"enum": list(k.choices)}, "str": lambda k: {"type": "string"},
        "path": lambda k: {"type": "string"}, "human": lambda k: {"anyOf": [_int(k), _HUMAN_TEXT]},
        "size": lambda k: _SIZE, "gib": lambda k: {"type": "number", "minimum": k.minimum},
        "fraction": lambda k: {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "number": lambda k: {"type": "number", "exclusiveMinimum": 0},
        "per_layer": lambda k: {"anyOf": [_int(k), {"type": "array", "items": _int(k)}]},
        "choice_or_bool": lambda k: {"anyOf": [{"enum": list(k.choices)}, {"type": "boolean"}]},
        "version": lambda k: _VERSION, "const": lambda k: {"const": k.default},
    }[kind](key)
    return {"anyOf": [out, _NULL]} if key.nullable else out


def _tree(node):
    """A copy of a schema fragment in which no dict or list is shared: the fragments above are used in many places,
    and a description attached to one property must not show up on every other use of the same fragment."""
    if isinstance(node, dict):
        return {k: _tree(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_tree(v) for v in node]
    return node


def layout_schema() -> dict:
    top = {"type": "object", "additionalProperties": False,
           "properties": {leaf: _described(fragment(KEY[leaf]), KEY[leaf].doc) for leaf in CHILDREN[""]},
           "required": [leaf for leaf in CHILDREN[""] if KEY[leaf].required]}
    return _tree({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "kvcalc-layout-v1",
                  "title": "kvcalc layout, schema version 1", **top})
