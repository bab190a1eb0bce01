"""Hostile input, fuzzed: every example and config fixture mutated; the CLI must answer with a JSON document
(exit 0) or exactly one line on stderr naming the file (exit 2) — never a traceback, never exit 70.

The CI profile (CI=true) runs 2,600 cases per fuzz test, over 10,000 in all.
"""

import contextlib
import copy
import io
import json
import os
import tempfile

import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import EXAMPLES_DIR
from kvcalc.cli import main

HERE = os.path.dirname(__file__)
WORK = tempfile.mkdtemp(prefix="kvcalc-fuzz-")


def _load_sources():
    out = []
    for name in sorted(os.listdir(EXAMPLES_DIR)):
        if name.endswith(".yaml"):
            with open(os.path.join(EXAMPLES_DIR, name)) as fh:
                data = yaml.safe_load(fh)
            model = data.get("model", {})
            for holder in (model, model.get("draft") or {}):
                if "hf_config" in holder:  # absolute, so the mutated copy still finds it
                    holder["hf_config"] = os.path.join(EXAMPLES_DIR, holder["hf_config"])
            out.append(("yaml", name, data))
    for sub in ("models", "hf"):
        folder = os.path.join(HERE, "fixtures", sub)
        for name in sorted(os.listdir(folder)):
            if "eagle" in name:
                continue
            with open(os.path.join(folder, name)) as fh:
                out.append(("json", name, json.load(fh)))
    return out


SOURCES = _load_sources()
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, -(2 ** 80), 2 ** 80, 2 ** 63, 1.5, 0.0, -0.0]),
    st.integers(min_value=-(2 ** 90), max_value=2 ** 90),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.text(max_size=12), st.sampled_from(["", " ", "\x00\x07", "💥", "64g", "64GiB", "0x10", "1e999", "-5G",
                                           "auto", "on", "mla", "mamba", "0.19.1", "9" * 40]),
    st.lists(st.integers(-3, 3), max_size=3), st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def dotted(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def get(node, path):
    for p in path:
        node = node[p]
    return node


def run_cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def write(kind, data, tag) -> str:
    path = os.path.join(WORK, f"case-{tag}.{'yaml' if kind == 'yaml' else 'json'}")
    with open(path, "w", encoding="utf-8") as fh:
        if kind == "yaml":
            yaml.safe_dump(data, fh, allow_unicode=True, sort_keys=False)
        else:
            json.dump(data, fh, allow_nan=True)
    return path


def config_paths(data) -> list[str]:
    """The config.json files a layout points at: an error inside one of them names that file."""
    model = data.get("model") if isinstance(data, dict) else None
    found = []
    for holder in (model, model.get("draft") if isinstance(model, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("hf_config"), str):
            found.append(holder["hf_config"])
    return found


def assert_contract(code, out, err, path, data=None):
    assert 'Traceback' not in err
    assert 'Traceback' not in out
    assert code in (0, 2), (code, err)
    errors = [line for line in err.splitlines() if line.startswith("kvcalc: error: ")]
    if code == 0:
        doc = json.loads(out)
        assert_integers(doc)
        assert "error" not in doc, err
        assert not errors, err
    elif "offload" in json.loads(out):
        # A release that would not start: the plan is still the answer on stdout, with its `error`; stderr has
        # notes and that one error line last.
        doc = json.loads(out)
        assert_integers(doc)
        assert doc["error"], err
        assert errors == [err.splitlines()[-1]], err
        assert doc["error"] in errors[0], err
        assert doc["offload"]["selected"] is None
    else:
        # Any other refusal: one stderr line, and (--format json) the same text as the document's `error`.
        assert err.count('\n') == 1, err
        assert err.startswith('kvcalc: error: '), err
        assert json.loads(out) == {"schema_version": 1, "error": err.strip()[len("kvcalc: error: "):], "exit_code": 2}
    if code == 2:
        assert any(p in err for p in [path, *config_paths(data)]), err


def assert_integers(node, key=""):
    """No float reaches a byte or block count."""
    if isinstance(node, dict):
        for k, v in node.items():
            assert_integers(v, k)
    elif isinstance(node, list):
        for v in node:
            assert_integers(v, key)
    # LMCache's sizes in GiB are floats in LMCache itself (v1/config.py: float, pinned as int(x * 1024**3)); the
    # byte counts next to them are integers.
    elif any(word in key for word in ("bytes", "blocks", "size", "tokens")) and key not in (
            "block_size_factor", "max_local_cpu_size", "first_rank_max_local_cpu_size", "kv_offloading_size"):
        assert node is None or isinstance(node, (int, str, bool)), (key, node)


@st.composite
def mutated(draw, ops=("replace", "delete", "add_unknown", "rename")):
    kind, name, data = draw(st.sampled_from(SOURCES))
    data = copy.deepcopy(data)
    path = draw(st.sampled_from(list(paths(data))))
    op = draw(st.sampled_from(ops))
    value = draw(HOSTILE)
    if path == ():
        data = value if op == "replace" else data
        return kind, name, data, path, op
    parent, last = get(data, path[:-1]), path[-1]
    if op == "replace":
        parent[last] = value
    elif op == "delete":
        del parent[last]
    elif op == "add_unknown" and isinstance(parent, dict):
        parent["zz_unknown_key"] = value
    elif op == "rename" and isinstance(parent, dict):
        parent[f"{last}_typo"] = parent.pop(last)
    return kind, name, data, path, op


@given(case=mutated())
def test_mutated_inputs_never_crash(case):
    kind, name, data, path, op = case
    file = write(kind, data, "mut")
    code, out, err = run_cli("plan", file, "--format", "json")
    assert_contract(code, out, err, file, data)
    if kind == "yaml" and code == 2 and op == "add_unknown" and path and isinstance(get(data, path[:-1]), dict):
        assert "zz_unknown_key" in err or "expected" in err


@given(case=mutated(ops=("replace",)), flags=st.sampled_from([[], ["--tp", "8"], ["--pp", "3"],
                                                                ["--vllm-version", "0.19.1"], ["--check"]]))
def test_mutated_inputs_with_flags_and_table(case, flags):
    kind, name, data, path, op = case
    file = write(kind, data, "flags")
    extra = [] if kind == "yaml" else ["--cpu-bytes", "64G", "--kv-cache-memory", "40GiB"]
    code, out, err = run_cli("plan", file, *extra, *flags)
    assert 'Traceback' not in err, (code, err)
    assert code in ((0, 1, 2) if '--check' in flags else (0, 2)), (code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("kvcalc: error:")]
        assert len(errors) == 1, err
        if "refuses to start the offloading connector" in errors[0]:
            # The plan itself is the answer: the document is on stdout, the refusal on stderr (notes before it).
            assert out, err
            assert err.splitlines()[-1] == errors[0], err
        else:
            assert out == '', err
            assert err.count('\n') == 1, err
        assert any((p in err for p in [file, *config_paths(data)])), err


@given(value=HOSTILE, key=st.sampled_from(["model.num_layers", "model.num_kv_heads", "model.head_size",
                                           "cache.block_size", "cache.kv_cache_memory", "offload.cpu_bytes_to_use",
                                           "parallel.tensor_parallel_size", "vllm.version", "cache.max_model_len",
                                           "offload.block_size", "model.layer_types", "cache.kv_cache_dtype"]))
def test_a_wrong_value_names_its_key(value, key):
    """A value of the wrong kind at a known key: the one-line error names that key."""
    with open(os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml")) as fh:
        data = yaml.safe_load(fh)
    section, field = key.split(".")
    data.setdefault(section, {})[field] = value
    file = write("yaml", data, "key")
    code, out, err = run_cli("plan", file, "--format", "json")
    assert_contract(code, out, err, file)
    if code == 2:
        assert key in err or "vLLM" in err or "refuse" in err, err


@given(raw=st.one_of(st.binary(max_size=600), st.text(max_size=600)),
       suffix=st.sampled_from(["yaml", "json"]))
def test_garbage_files(raw, suffix):
    file = os.path.join(WORK, f"garbage.{suffix}")
    with open(file, "wb") as fh:
        fh.write(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"))
    code, out, err = run_cli("plan", file, "--format", "json")
    assert_contract(code, out, err, file)


def refusal(*args, name):
    code, out, err = run_cli("plan", *args)
    assert code == 2, (code, err)
    assert out == '', (code, err)
    assert err.count('\n') == 1, (code, err)
    assert name in err, (code, err)
    return err


def test_alias_bomb_is_refused_fast(tmp_path):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    bomb = "\n".join(lines)
    for text in (bomb, "model:\n  layer_types: *a11\n" + bomb, "model:\n  name: &n x\n  num_layers: *n\n"):
        p = tmp_path / "bomb.yaml"
        p.write_text(text)
        refusal(str(p), name=str(p))


def test_deep_nesting(tmp_path):
    for name, text in (("deep.yaml", "model: " + "[" * 5000 + "]" * 5000), ("deep.json", "[" * 100000 + "]" * 100000)):
        p = tmp_path / name
        p.write_text(text)
        refusal(str(p), name=str(p))


def test_size_limit(tmp_path):
    p = tmp_path / "huge.yaml"
    p.write_text("model:\n  name: " + "x" * (2 << 20) + "\n")
    assert "at most" in refusal(str(p), name=str(p))


def test_empty_directory_missing_and_non_mapping(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    refusal(str(empty), name=str(empty))
    refusal(str(tmp_path), name=str(tmp_path))
    refusal(str(tmp_path / "missing.yaml"), name="missing.yaml")
    for text in ("42\n", "- a\n", "just text\n", "null\n"):
        empty.write_text(text)
        refusal(str(empty), name=str(empty))
    bad = tmp_path / "config.json"
    bad.write_text("{'model_type': 'llama'}")
    refusal(str(bad), "--cpu-bytes", "1G", name=str(bad))


YAML11_INTS = st.one_of(st.integers(0, 777).map(lambda n: f"0{n:o}"), st.integers(0, 255).map(lambda n: f"0b{n:b}"),
                        st.integers(0, 255).map(lambda n: f"0x{n:x}"),
                        st.tuples(st.integers(1, 99), st.integers(0, 59)).map(lambda t: f"{t[0]}:{t[1]:02d}"))
TEXT_EDITS = st.one_of(
    st.tuples(st.just("dup"), st.integers(0, 200)),
    st.tuples(st.just("yaml11"), YAML11_INTS),
    st.tuples(st.just("escape"), st.sampled_from(["\x1b[31m", "\x1b]0;title\x07", "\x9b", "\r", "\u202e"])),
    st.tuples(st.just("huge"), st.integers(4301, 20000)),
)


@given(edit=TEXT_EDITS, name=st.sampled_from(sorted(n for n in os.listdir(EXAMPLES_DIR) if n.endswith(".yaml"))))
def test_hostile_text_edits(edit, name):
    """Edits a YAML parser reads silently: a line given twice (a repeated key), YAML 1.1 integers (octal, binary,
    hex, base 60), terminal escape sequences, integers past Python's 4,300-digit limit: one line or a plan."""
    with open(os.path.join(EXAMPLES_DIR, name)) as fh:
        lines = fh.read().splitlines()
    kind, arg = edit
    numeric = [i for i, line in enumerate(lines) if line.rstrip().split(":")[-1].strip().isdigit()]
    if kind == "dup":
        i = arg % len(lines)
        lines.insert(i, lines[i])
    elif kind in ("yaml11", "huge") and numeric:
        i = numeric[hash(str(arg)) % len(numeric)]
        key = lines[i].rsplit(":", 1)[0]
        lines[i] = f"{key}: {arg if kind == 'yaml11' else '7' * arg}"
    elif kind == "escape":
        lines.insert(1, f'"{arg}key": 1')
    file = os.path.join(WORK, f"text-{name}")
    with open(file, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    code, out, err = run_cli("plan", file, "--format", "json")
    assert "Traceback" not in err, (code, err)
    assert code in (0, 2), (code, err)
    assert "\x1b" not in err, err  # escapes are echoed escaped
    assert "\x9b" not in err, err
    if code == 2 and not out:
        assert err.count("\n") == 1, err
        assert err.startswith(f"kvcalc: error: {file}"), err
    if kind == "yaml11" and numeric and code == 2 and not out:
        assert "decimal integer" in err or "expected" in err, err
    if kind == "huge" and numeric:
        assert code == 2, err
        assert "digits" in err, err


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "layout.yaml"
    os.mkfifo(fifo)
    refusal(str(fifo), name=str(fifo))
