"""The key table (vocab/keys.KEYS) against every consumer: the validator, the layout schema, `vllm serve` parsing,
`vllm-args`, the sweep, the CLI options and `kvcalc init`. Each test fails when a consumer and the table disagree;
expected values come from vLLM's and the README's own statements, or from a round trip through two consumers."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest
import typer.main

from conftest import EXAMPLES_DIR, run
from kvcalc.cli.app import app
from kvcalc.inputs.layout.schema import layout_schema
from kvcalc.inputs.serve.vllm import load_serve, parse
from kvcalc.inputs.layout.read import layout_from_dict, load_layout
from kvcalc.pipeline import plan
from kvcalc.tools import vllm_args
from kvcalc.tools.sweep import COLUMNS
from kvcalc.vocab import layout as records
from kvcalc.vocab.errors import KvcalcError
from kvcalc.vocab.keys import GROUPS, KEY, KEYS, SOURCE_FLAGS, Key

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(EXAMPLES_DIR, "configs")
KIMI = os.path.join(CONFIGS, "kimi-k2.5.json")
MINIMAL = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128, "max_position_embeddings": 4096}}
KINDS = {"section", "const", "int", "choice", "str", "bool", "human", "path", "size", "sizes", "gib", "fraction", "number",
         "per_layer",
         "kinds", "ints", "indices", "choice_or_bool", "version", "mamba", "config", "server"}


def _with(path: str, value) -> dict:
    data = json.loads(json.dumps(MINIMAL))
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {"method": "eagle"} if part == "draft" else {})
    node[parts[-1]] = value
    return data


# ----------------------------------------------------------------------------------------------- the rows

def test_every_row_is_a_whole_key_record():
    # Rows are made without Key's constructor (start-up time): each must be the record Key(...) makes.
    for row in KEYS + SOURCE_FLAGS:
        assert set(vars(row)) == set(Key.__record_names__), row.path
        assert Key(**vars(row)) == row
    assert len({k.path for k in KEYS}) == len(KEYS)
    assert len({k.name for k in KEYS + SOURCE_FLAGS if k.name}) == len([k for k in KEYS + SOURCE_FLAGS if k.name])


def test_rows_are_consistent():
    for k in KEYS:
        assert k.kind in KINDS, k.path
        assert k.parent == "" or KEY[k.parent].kind in ("section", "mamba", "config", "server"), k.path
        assert bool(k.flag) == bool(k.name) == bool(k.panel) == bool(k.help), k.path
        assert not k.panel or k.panel in GROUPS, k.path
        assert bool(k.vllm) == bool(k.vllm_parse), k.path
        assert k.vllm_parse in ("", "int", "human", "str", "float", "switch"), k.path
        assert k.vllm_args in ("", "always", "changed", "plan"), k.path
        assert not k.vllm_args or k.vllm, k.path
        if k.choices and k.default is not None and k.kind in ("choice", "choice_or_bool"):
            assert k.default in k.choices, k.path
        if not k.modelled:  # read by its row alone, with nothing else to decide it
            assert k.kind in ("int", "choice", "str", "bool", "human"), k.path
    planned = {k.path for k in KEYS if k.vllm_args == "plan"}
    assert planned == set(vllm_args.PLAN_VALUES)


def test_sweep_columns_keep_their_order():
    # README: sweep takes comma lists for --tp, --pp, --block-size, --cpu-bytes, --kv-cache-dtype, --vllm-version,
    # --offload-block-size; the CSV's first columns are those axes, in that order, then the results.
    # A sweepable key added later takes the next column: these never move.
    axes = ("tp", "pp", "block_size", "cpu_bytes", "kv_cache_dtype", "vllm_version", "offload_block_size")
    numbered = sorted((k for k in KEYS if k.sweep), key=lambda k: k.sweep)
    assert [k.sweep for k in numbered] == list(range(1, len(numbered) + 1))
    assert tuple(k.name for k in numbered)[:len(axes)] == axes
    assert COLUMNS[:len(numbered)] == tuple(k.name for k in numbered)
    assert COLUMNS[len(numbered)] == "family"


def test_sweep_csv_header(capsys):
    code, out, err = run(capsys, "sweep", os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml"), "--tp", "1,2",
                         "--cpu-bytes", "16G,64G", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][:7] == ["tp", "pp", "block_size", "cpu_bytes", "kv_cache_dtype", "vllm_version",
                           "offload_block_size"]
    assert [r[:2] for r in rows[1:]] == [["1", ""], ["1", ""], ["2", ""], ["2", ""]]


# ------------------------------------------------------------------------------------------ the validator

@pytest.mark.parametrize("path", [k.path for k in KEYS if k.parent])
def test_the_validator_knows_every_key(path):
    # A value of any kind at a known key is refused for its value (or taken), never as an unknown key.
    for value in (object(), None):
        try:
            layout_from_dict(_with(path, value))
        except KvcalcError as e:
            assert "unknown key" not in str(e), str(e)


def test_the_validator_refuses_a_key_without_a_row():
    for section in ("model", "model.draft", "parallel", "cache", "offload", "host", "vllm"):
        with pytest.raises(KvcalcError, match="unknown key"):
            layout_from_dict(_with(f"{section}.no_such_key", 1))
    with pytest.raises(KvcalcError, match="unknown key"):
        layout_from_dict({**MINIMAL, "no_such_section": {}})


def test_defaults():
    # vLLM's defaults (EngineArgs: tp = pp = dp = 1, mp, max_num_batched_tokens 8192 on the API server's default,
    # kv_cache_dtype auto, one node) and kvcalc's documented ones (README: release 0.33.0, cuda, no GPU arch named:
    # an H100-class GPU, 4096 B host pages; no KV connector without a budget, as vLLM runs none), as the validator
    # gives them for a
    # layout that names none.
    lay = layout_from_dict(MINIMAL)
    expected = {
        "parallel.tensor_parallel_size": 1, "parallel.pipeline_parallel_size": 1, "parallel.data_parallel_size": 1,
        "parallel.distributed_executor_backend": "mp", "parallel.nnodes": 1, "parallel.data_parallel_size_local": None,
        "cache.block_size": None, "cache.kv_cache_dtype": "auto", "cache.max_num_batched_tokens": 8192,
        "cache.enable_prefix_caching": None, "cache.hybrid_kv_cache_manager": "auto", "cache.mamba_cache_dtype": "auto",
        "cache.mamba_ssm_cache_dtype": "auto", "cache.mamba_cache_mode": "auto", "cache.kv_cache_memory": None,
        "cache.num_gpu_blocks_override": None, "offload.backend": "none", "offload.block_size": None,
        "offload.blocks_per_chunk": None, "host.page_size": 4096, "host.pinned_round_threshold_mb": None,
        "vllm.version": "0.33.0", "vllm.platform": "cuda", "vllm.gpu_arch": None, "vllm.attention_backend": None,
        "vllm.rocm_use_aiter": False,
        "model.name": "unnamed model", "model.kv_head_replication": True,
    }
    for path, value in expected.items():
        assert vllm_args.layout_value(lay, KEY[path]) == value, path
        if path != "offload.backend":  # the key's default (native) applies once a budget or connector key is given
            assert KEY[path].default == value, path
    with_budget = layout_from_dict({**MINIMAL, "offload": {"cpu_bytes_to_use": "1GiB"}})
    assert with_budget.offload.backend == KEY["offload.backend"].default == "native"
    assert lay.model.dtype == KEY["model.dtype"].default == "bfloat16"
    draft = layout_from_dict(_with("model.draft", {"method": "eagle", "num_kv_heads": 8, "head_size": 128})).model.draft
    assert draft.num_layers == KEY["model.draft.num_layers"].default == 1
    assert draft.num_speculative_tokens == KEY["model.draft.num_speculative_tokens"].default == 1


def test_the_records_defaults_are_the_tables():
    # The layout records (the Python API builds them directly) default as the table does.
    sections = {"parallel": records.ParallelLayout(), "cache": records.CacheLayout(), "host": records.HostLayout()}
    for k in KEYS:
        section = sections.get(k.parent)
        if section is not None and k.leaf in type(section).__record_names__ and k.default is not None:
            assert getattr(section, k.leaf) == k.default, k.path
    assert records.OffloadLayout(cpu_bytes_to_use=None).backend == KEY["offload.backend"].default
    from kvcalc.vocab.releases.lmcache import LMCacheLayout

    assert LMCacheLayout().version == KEY["offload.lmcache.version"].default


@pytest.mark.parametrize("path", [k.path for k in KEYS if k.kind == "int" and (k.cap or k.maximum)])
def test_bounds(path):
    key = KEY[path]
    top = key.cap or key.maximum
    with pytest.raises(KvcalcError, match=path.replace(".", r"\.")):
        layout_from_dict(_with(path, top + 1))
    with pytest.raises(KvcalcError, match=path.replace(".", r"\.")):
        layout_from_dict(_with(path, key.minimum - 1))


# ---------------------------------------------------------------------------------------------- the schema

def _schema_node(path: str) -> dict:
    node = {"properties": layout_schema()["properties"]}
    for part in path.split("."):
        node = node["properties"][part]
    return node


def test_the_schema_describes_every_key_with_its_doc():
    for k in KEYS:
        assert _schema_node(k.path)["description"] == k.doc, k.path
        assert k.doc, k.path


def test_the_schema_has_no_key_without_a_row():
    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            full = f"{path}.{key}" if path else key
            if path == "model.mamba" and key != "kind" or path.startswith("offload.lmcache"):
                continue  # a Mamba kind's Hugging Face fields; LMCache's own names
            assert full in KEY, full
            walk(sub, full)
    walk(layout_schema(), "")


def test_the_schema_states_the_published_bounds():
    import jsonschema

    schema = layout_schema()
    jsonschema.validate(_with("parallel.pipeline_parallel_size", 64), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_with("parallel.pipeline_parallel_size", 65), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_with("host.page_size", 2048), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_with("cache.kv_cache_dtype", "fp9"), schema)


# ---------------------------------------------------------------------------------------------- vllm serve

def _sample(key: Key) -> tuple[str, object]:
    """A value vLLM accepts for the flag, and what it means."""
    if key.choices:
        # A choice both kvcalc and vLLM 0.33.0's own parser accept (the parser is what reads a serve line).
        from kvcalc.vocab.releases.vllm_flags import flags_of

        vllm = flags_of("0.33.0")[key.vllm[0]].choices
        text = [c for c in key.choices if vllm is None or c in vllm][-1]
        return text, text
    return {"int": ("2", 2), "human": ("4K", 4096), "float": ("1.5", 1.5)}.get(key.vllm_parse, ("x", "x"))


@pytest.mark.parametrize("key", [k for k in KEYS if k.vllm], ids=lambda k: k.path)
def test_serve_parses_every_vllm_spelling(key):
    for spelling in key.vllm:
        if key.vllm_parse == "switch":
            _, on, _ = parse(["vllm", "serve", KIMI, spelling])
            _, off, _ = parse(["vllm", "serve", KIMI, "--no-" + spelling[2:]])
            assert on[key.path] == (key.vllm_switch[0], spelling)
            assert off[key.path] == (key.vllm_switch[1], "--no-" + spelling[2:])
            continue
        text, value = _sample(key)
        for argv in ([spelling, text], [f"{spelling}={text}"]):
            _, overrides, _ = parse(["vllm", "serve", KIMI, *argv])
            assert overrides[key.path] == (value, spelling)


@pytest.mark.parametrize("name", sorted(os.listdir(CONFIGS)))
@pytest.mark.parametrize("flags", [
    {"vllm_version": "0.19.1"}, {"pp": 2, "dp": 2, "backend": "ray"},
    {"kv_cache_dtype": "fp8", "kv_cache_memory": "40G", "num_gpu_blocks_override": 512, "max_model_len": "32K",
     "prefix": False, "vllm_version": "0.22.1", "hma": False},
])
def test_vllm_args_read_back_through_serve(name, flags):
    # What vllm-args prints, vLLM's serve parsing (kvcalc's) reads back to the same plan.
    from kvcalc.inputs.values import overrides
    from kvcalc.report.report import build_report
    from kvcalc.vocab.records import to_json

    config = os.path.join(CONFIGS, name)
    try:
        loaded = load_layout(config, overrides=overrides({"tp": 2, "cpu_bytes": "64G", **flags}))
        startable, _ = vllm_args.startable_plan(loaded)
    except KvcalcError:
        pytest.skip("a layout kvcalc refuses")
    doc = vllm_args.build(startable)
    expected = to_json(build_report(startable))
    for args in (doc["args_kv_offloading_size"], doc["args_kv_transfer_config"]):
        if args is None:
            continue
        back, _ = load_serve(["vllm", "serve", config, *args],
                             overrides={"vllm.version": (loaded.vllm_version, "--vllm-version")})
        got = to_json(build_report(plan(back)))
        # The line names the block size vllm-args settled (--block-size): the attention section's reasons say so;
        # the backend and every number are the same.
        assert _numbers(got["gpu"]) == _numbers(expected["gpu"])
        assert [c["backend"] for c in got["gpu"]["attention"]["choices"]] == \
            [c["backend"] for c in expected["gpu"]["attention"]["choices"]]
        assert got["offload"]["selected"] == expected["offload"]["selected"]
        assert got["parallel"] == expected["parallel"]


# ------------------------------------------------------------------------------------------ the CLI options

@pytest.mark.parametrize("command", ["plan", "init", "vllm-args", "size", "sweep", "check"])
def test_every_flag_is_an_option(command):
    cmd = typer.main.get_command(app).commands[command]
    options = {o: p for p in cmd.params for o in p.opts + p.secondary_opts}
    left_out = {"size": {"cpu_bytes", "kv_offloading_size"}}.get(command, set())
    for k in KEYS + SOURCE_FLAGS:
        if not k.flag or k.name in left_out:
            continue
        for spelling in k.flag[0].split("/") + list(k.flag[1:]):
            assert spelling in options, (command, spelling)
            param = options[spelling]
            assert param.name == k.name
            assert getattr(param, "rich_help_panel", None) == k.panel
            if command == "sweep" and k.sweep:
                assert param.type.name in ("str", "text"), spelling  # a comma list
            elif k.cli_type is int:
                assert param.type.name in ("int", "integer"), spelling
    assert not left_out & {p.name for p in cmd.params}


def test_init_writes_what_each_flag_set_in_table_order(capsys):
    given = ["--tp", "4", "--pp", "2", "--nnodes", "2", "--data-parallel-size-local", "1", "--dp", "2",
             "--distributed-executor-backend", "ray", "--vllm-version", "0.19.1", "--platform", "rocm",
             "--attention-backend", "FLASHMLA", "--gpu-arch", "sm100", "--kv-cache-dtype", "fp8", "--block-size", "64",
             "--kv-cache-memory", "40G", "--num-gpu-blocks-override", "100", "--max-model-len", "32K",
             "--max-num-batched-tokens", "4K", "--enable-prefix-caching", "--hma", "--cpu-bytes", "64G",
             "--offload-block-size", "128", "--blocks-per-chunk", "2", "--offload-backend", "native"]
    code, text, err = run(capsys, "init", KIMI, *given)
    assert code == 0, err
    sections, current, comments = {}, None, {}
    for line in text.splitlines():
        if line and not line.startswith(("#", " ")):
            current = line.split(":")[0]
            sections[current] = []
        elif line.startswith("  ") and not line.startswith("   ") and current:
            leaf = line.split(":")[0].strip()
            sections[current].append(leaf)
            comments[f"{current}.{leaf}"] = line.split("  # ")[-1]
    assert list(sections) == ["schema_version", "model", "parallel", "vllm", "cache", "offload"]
    for section, keys in sections.items():
        order = [k.leaf for k in KEYS if k.parent == section]
        assert keys == [k for k in order if k in keys], section
    assert sections["parallel"] == ["tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                                    "distributed_executor_backend", "nnodes", "data_parallel_size_local"]
    # Every flag given is written at its key, the comment naming the flag.
    for k in KEYS:
        if k.flag and any(spelling in given for spelling in k.flag[0].split("/") + list(k.flag[1:])):
            assert comments[k.path] == k.named, k.path


# ---------------------------------------------------------------------------------------- a new key = 1 row

# A key no release has: vLLM's spelling is made up too (serve refuses an unknown flag without the row).
NEW_ROW = '''    _k("cache.probe_slots", "int", "a test key", minimum=1, nullable=True, modelled=False,
       flag=("--probe-slots",), name="probe_slots", help="a test flag", panel="cache", sweep=%d,
       vllm=("--stream-interval",), vllm_parse="int", vllm_args="changed"),
''' % (1 + max(k.sweep for k in KEYS))
PROBE = r'''
import importlib.abc, importlib.machinery, json, sys
ROW, ANCHOR = sys.argv[1], "\n)\n\n# Flags that set no single key"


class Loader(importlib.abc.Loader):
    def __init__(self, origin):
        self.origin = origin

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        src = open(self.origin).read()
        assert ANCHOR in src
        exec(compile(src.replace(ANCHOR, "\n" + ROW.rstrip("\n") + ANCHOR), self.origin, "exec"), module.__dict__)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "kvcalc.vocab.keys":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Loader(spec.origin)
        return spec


sys.meta_path.insert(0, Finder())
import io
from contextlib import redirect_stderr, redirect_stdout
from kvcalc.cli import main

out = {}
for argv in json.loads(sys.argv[2]):
    o, e = io.StringIO(), io.StringIO()
    with redirect_stdout(o), redirect_stderr(e):
        code = main(argv)
    out[" ".join(argv)] = [code, o.getvalue(), e.getvalue()]
print(json.dumps(out))
'''


def test_a_new_key_with_a_flag_is_one_row():
    # One row added to the table (nothing else): the validator, schema, options, serve parsing, vllm-args, the sweep
    # and init all take the new key.
    llama = os.path.join(EXAMPLES_DIR, "llama-3.1-8b.yaml")
    commands = {
        "schema": ["schema", "layout"],
        "help": ["plan", "--help"],
        "args": ["vllm-args", llama, "--probe-slots", "64", "--format", "json"],
        "default": ["vllm-args", llama, "--format", "json"],
        "sweep": ["sweep", llama, "--probe-slots", "32,64", "--format", "csv"],
        # vLLM's own spelling of the key (a real option of 0.33.0's parser: a serve line is read as vLLM reads it).
        "serve": ["init", "--serve", f"vllm serve {KIMI} --stream-interval 48"],
        "refused": ["plan", llama, "--probe-slots", "0"],
    }
    r = subprocess.run([sys.executable, "-c", PROBE, NEW_ROW, json.dumps(list(commands.values()))], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    got = {name: json.loads(r.stdout)[" ".join(argv)] for name, argv in commands.items()}
    schema = json.loads(got["schema"][1])["properties"]["cache"]["properties"]["probe_slots"]
    assert schema == {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "description": "a test key"}
    assert "--probe-slots" in got["help"][1]
    assert got["args"][0] == 0
    args = json.loads(got["args"][1])["args_kv_transfer_config"]
    assert args[args.index("--stream-interval") + 1] == "64"
    assert "--stream-interval" not in json.loads(got["default"][1])["args_kv_transfer_config"]
    rows = list(csv.reader(io.StringIO(got["sweep"][1])))
    axes = [k.name for k in sorted((k for k in KEYS if k.sweep), key=lambda k: k.sweep)]
    assert rows[0][:len(axes) + 1] == axes + ["probe_slots"]
    assert [row[len(axes)] for row in rows[1:]] == ["32", "64"]
    assert "probe_slots: 48  # --stream-interval" in got["serve"][1]
    assert got["refused"][0] == 2
    assert "cache.probe_slots (from --probe-slots): expected an integer between 1 and" in got["refused"][2]


def _numbers(gpu: dict) -> dict:
    """The GPU section without the attention selection's reasons (they name a --block-size the line gives)."""
    return {k: v for k, v in gpu.items() if k != "attention"}
