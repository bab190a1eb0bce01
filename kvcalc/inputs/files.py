"""Reading input files, strictly: size-capped regular files only, YAML that refuses what it would misread
(duplicate keys, YAML 1.1 non-decimal integers, huge integers), JSON that refuses duplicate keys. The only module
that opens a layout, config, manifest, log or scrape."""

from __future__ import annotations

import os
import re
from functools import cache
from typing import Any

from ..vocab.errors import LayoutError

MAX_INPUT_BYTES = 1 << 20  # a layout is a few KiB; refuse anything that could be a YAML bomb


def read_json(path: str, what: str = "a readable config.json", limit: int = MAX_INPUT_BYTES) -> Any:
    import json

    raw = read_bytes(path, what, limit)

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            raise LayoutError(path, "", f"integers of at most {MAX_INT_DIGITS} digits", f"{len(text)} digits")
        return int(text)

    def pairs(items: list) -> dict:
        out: dict = {}
        for k, v in items:
            if k in out:
                # json.loads keeps the last of two equal keys; a config that says two things is refused.
                raise LayoutError(path, k, "each key once in an object", detail="given twice")
            out[k] = v
        return out

    try:
        return json.loads(raw.decode("utf-8"), parse_int=integer, object_pairs_hook=pairs)
    except UnicodeDecodeError:
        raise LayoutError(path, "", "UTF-8 JSON") from None
    except json.JSONDecodeError as e:
        raise LayoutError(path, f"line {e.lineno}", "valid JSON", detail=e.msg) from None
    except RecursionError:
        raise LayoutError(path, "", "JSON nested less deeply") from None


def read_bytes(path: str, what: str, limit: int = MAX_INPUT_BYTES, *, head: bool = False) -> bytes:
    """The file's bytes, refused above `limit`; `head`: only its first `limit` bytes (a safetensors header)."""
    import stat

    if path == "-":
        raise LayoutError(path, "", what, detail="standard input is not read: give a file path")
    # Opened without blocking (a FIFO swapped in after a stat, or /proc/kmsg, would wait forever), then checked
    # on the open descriptor itself: what is read is what was checked.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise LayoutError(path, "", what, detail=e.strerror or str(e)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
            raise LayoutError(path, "", what, detail=kind)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        raw = b"".join(chunks)
    except OSError as e:
        raise LayoutError(path, "", what, detail=e.strerror or str(e)) from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        if head:
            return raw[:limit]
        raise LayoutError(path, "", f"a file of at most {limit:,} bytes")
    return raw


_C_LOADER_DEPTH = 64  # nesting a layout never needs; deeper input goes to the pure-Python loader


def _shallow(text: str) -> bool:
    """An upper bound on the nesting depth is small: flow brackets (counted even inside quotes), indentation,
    and block entries on one line. libyaml's composer recurses in C and overflows the stack on deep nesting
    (`[` x 100,000 segfaults), so only input this check bounds goes to the C loader."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    if deepest > _C_LOADER_DEPTH // 2:
        return False
    for line in text.splitlines():
        stripped = line.lstrip(" -")
        if len(line) - len(stripped) > _C_LOADER_DEPTH or line.count(": ") > 4:
            return False
    return True


class StrictYAMLError(Exception):
    def __init__(self, line: int, expected: str, got: Any = None, detail: str = ""):
        super().__init__(expected)
        self.line, self.expected, self.got, self.detail = line, expected, got, detail


# YAML 1.1 integers that are not decimal: octal (032 = 26), binary (0b101), hex (0x1F), base 60 (1:00 = 60).
_NON_DECIMAL_INT = r"^[-+]?(0[0-7_]+|0b[01_]+|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$"


MAX_INT_DIGITS = 1000  # far beyond any layout value (sizes stop at 2^62), far below Python's 4,300-digit limit


@cache
def strict_loader(fast: bool):
    """PyYAML's safe loader (libyaml's parser when `fast`) that refuses what would be misread silently: a key
    given twice in one mapping (PyYAML keeps the last), YAML 1.1 integers that are not decimal, and integers
    too long to be a layout value."""
    import yaml

    base = yaml.CSafeLoader if fast else yaml.SafeLoader

    # The base is chosen at run time (libyaml's C parser when it is there): mypy takes no variable as a base class.
    class Strict(base):  # type: ignore[valid-type,misc]
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    line = key_node.start_mark.line + 1
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise StrictYAMLError(line, "each key once in a mapping", key_node.value,
                                               detail=f"also on line {seen[key]}")
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node):
            text = node.value
            line = node.start_mark.line + 1
            digits = text[1:] if text[:1] in "+-" else text
            plain = digits.isascii() and digits.isdigit() and (len(digits) == 1 or digits[0] != "0")
            # A plain decimal never matches the pattern: skip compiling it (start-up time is a target).
            if not plain and re.match(_NON_DECIMAL_INT, text):
                value = super().construct_yaml_int(node) if len(text) <= 40 else None
                raise StrictYAMLError(line, "a decimal integer (write the digits you mean)", text,
                                       detail=f"YAML 1.1 reads it as {value}" if value is not None else "")
            if len(text) > MAX_INT_DIGITS:
                raise StrictYAMLError(line, f"an integer of at most {MAX_INT_DIGITS} digits",
                                       f"{len(text)} digits")
            return super().construct_yaml_int(node)

    Strict.add_constructor("tag:yaml.org,2002:int", Strict.construct_yaml_int)
    return Strict


def parse_yaml(text: str, *, source: str) -> Any:
    """One YAML document, read strictly (strict_loader) with aliases bounded (yaml_documents)."""
    docs = yaml_documents(text, source=source)
    if len(docs) > 1:
        raise LayoutError(source, "", "one YAML document", f"{len(docs)} documents")
    return docs[0] if docs else None


MAX_YAML_NODES = 50_000  # nodes with aliases expanded: a vLLM manifest holds a few thousand; a 1 MiB flat file
# of 250,000 took 10 s to build in Python (a 600-byte alias bomb expands to gigabytes)


def yaml_documents(text: str, *, source: str, octal: bool = False) -> list:
    """Every YAML document of `text`, read strictly. Aliases are counted as the nodes they stand for, and more than
    MAX_YAML_NODES refuse the input before anything is built (a 600-byte alias bomb expands to gigabytes).
    `octal`: read YAML 1.1 octal integers as Kubernetes does (defaultMode: 0644 = 420) instead of refusing them."""
    import yaml

    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise LayoutError(source, "", f"a file of at most {MAX_INPUT_BYTES} bytes")
    if _flow_depth(text) > MAX_FLOW_DEPTH:
        # The pure-Python scanner checks every open flow level at each token: `[` x 100,000 took minutes.
        raise LayoutError(source, "", f"YAML nested at most {MAX_FLOW_DEPTH} brackets deep")
    if len(text) > 1 << 16:
        _few_nodes(text, source)
    # libyaml for any size the nesting bound passes (the pure-Python loader took 12-15 s and 357 MB on a 1 MB flat
    # manifest); the nesting bound is what keeps libyaml's recursive composer safe.
    fast = _shallow(text) and hasattr(yaml, "CSafeLoader")
    loader = (octal_loader if octal else strict_loader)(fast)(text)
    docs: list = []
    try:
        while loader.check_node():
            node = loader.get_node()
            _bounded(node, source)  # before anything is built: an alias multiplies nodes, a flat file has many
            docs.append(loader.construct_document(node))
    except StrictYAMLError as e:
        raise LayoutError(source, f"line {e.line}", e.expected, e.got, detail=e.detail) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or "not valid YAML"
        raise LayoutError(source, where, "valid YAML", detail=str(problem)) from None
    except RecursionError:
        raise LayoutError(source, "", "YAML nested less deeply") from None
    finally:
        loader.dispose()
    return docs


MAX_FLOW_DEPTH = 512  # [ and { open at once (counted even inside quotes): far beyond any layout or manifest


def _flow_depth(text: str) -> int:
    """The deepest nesting of flow brackets, counted as _shallow counts them (quotes not skipped)."""
    if "[" not in text and "{" not in text:
        return 0
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest


def _few_nodes(text: str, source: str) -> None:
    """Refuse a large text of more than MAX_YAML_NODES nodes from its parser events, one at a time (libyaml's
    parser is iterative), before any node is built: composing them first took seconds and hundreds of MB."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    kinds = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
    n = 0
    try:
        while loader.check_event():
            if isinstance(loader.get_event(), kinds):
                n += 1
                if n > MAX_YAML_NODES:
                    raise LayoutError(source, "", f"at most {MAX_YAML_NODES:,} YAML nodes", f"over {MAX_YAML_NODES:,}")
    except yaml.YAMLError:
        return  # the reading proper says what is wrong, and where
    finally:
        loader.dispose()


def _bounded(root, source: str) -> None:
    """Refuse a document whose nodes, each alias counted as the whole node it repeats, exceed MAX_YAML_NODES.
    Iterative, with each distinct node's expanded size computed once (a DAG: aliases share nodes)."""
    import yaml

    size: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids = ([] if isinstance(node, yaml.ScalarNode) else
                [x for pair in node.value for x in pair] if isinstance(node, yaml.MappingNode) else list(node.value))
        if not done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        total = 1 + sum(size.get(id(k), 1) for k in kids)
        if total > MAX_YAML_NODES:
            raise LayoutError(source, f"line {node.start_mark.line + 1}",
                              f"at most {MAX_YAML_NODES:,} YAML nodes with aliases expanded", f"over {total:,}")
        size[id(node)] = total


@cache
def octal_loader(fast: bool):
    """strict_loader, but YAML 1.1 non-decimal integers read as YAML 1.1 (and Kubernetes) reads them."""
    import yaml

    strict = strict_loader(fast)

    class Octal(strict):  # type: ignore[valid-type,misc]  # a base chosen at run time, as Strict's
        def construct_yaml_int(self, node):
            if len(node.value) > MAX_INT_DIGITS:
                raise StrictYAMLError(node.start_mark.line + 1, f"an integer of at most {MAX_INT_DIGITS} digits",
                                      f"{len(node.value)} digits")
            return yaml.SafeLoader.construct_yaml_int(self, node)

    Octal.add_constructor("tag:yaml.org,2002:int", Octal.construct_yaml_int)
    return Octal


def read_yaml_documents(path: str, what: str) -> list:
    """A Kubernetes manifest's documents: strict UTF-8 (a byte-order mark allowed), aliases bounded."""
    return yaml_documents(decode(read_bytes(path, what), path), source=path, octal=True)


def decode(raw: bytes, source: str) -> str:
    """UTF-8 text (a leading byte-order mark dropped); anything else is refused rather than read with
    replacement characters."""
    bom = 3 if raw.startswith(b"\xef\xbb\xbf") else 0  # by hand: the utf-8-sig codec is a module import
    try:
        return raw[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = e.start + bom
        raise LayoutError(source, f"byte {at}", "UTF-8 text", raw[at:at + 4]) from None
