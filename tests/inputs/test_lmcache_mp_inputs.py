"""The LMCache MP server's inputs (issue 33): its command line (--lmcache-server, a manifest's server container), its
options as kvcalc flags and as the layout's offload.lmcache_mp section, and vLLM's side (a serve line naming
LMCacheMPConnector). Every bad input is exit 2 with one stderr line naming the flag, what was expected and what was
given; LMCache's own parser messages are quoted as LMCache 0.5.6 prints them (tests/fixtures/lmcache_mp/vectors.json
holds the executed ones)."""

import json
import os

import pytest

from conftest import GIB, run
from kvcalc.inputs.serve.lmcache_mp import parse
from kvcalc.vocab.errors import LayoutError
from kvcalc.vocab.releases.lmcache_mp_flags import FLAGS

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.path.join(HERE, "..", "fixtures", "models", "llama-3.1-8b.json")
BASE = ["plan", LLAMA, "--vllm-version", "0.33.0", "--offload-backend", "lmcache_mp", "--format", "json"]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("kvcalc: error:")]
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------------------------ the server's parser

def test_the_flag_table_is_the_executed_parsers():
    # tests/fixtures/lmcache_mp/server_flags.json: the 90 actions of `lmcache server`'s parser, dumped by running
    # LMCache 0.5.6 (ServerCommand.add_arguments); the generated table holds each with its default, type, choices.
    dump = json.load(open(os.path.join(HERE, "..", "fixtures", "lmcache_mp", "server_flags.json"), encoding="utf-8"))
    assert len(dump) == len(FLAGS) == 90
    for action, row in zip(dump, FLAGS):
        spellings, dest, kind, typ, default, choices, _ = row
        assert (list(spellings), dest) == (action["flags"], action["dest"])
        assert (action["type"] or "str") == (typ or "str") or kind in ("bool_optional", "store_true", "help")
        assert (list(choices) if choices else None) == action["choices"]
        if action["default"] != "==SUPPRESS==":
            assert (list(default) if isinstance(default, tuple) else default) == action["default"]


def test_a_line_reads_as_the_parser_reads_it():
    got = parse(["lmcache", "server", "--l1-size", "10", "--no-l1-use-lazy", "--l1-align-bytes=65536",
                 "--l2-adapter", '{"type":"fs"}', "--l2-adapter", '{"type":"mock"}', "--enable", "a", "b",
                 "--eviction-policy", "ARC", "--l1-size-gb", "12.5"])
    values, source = got["offload.lmcache_mp"]
    assert source == "--lmcache-server"
    assert values == {"l1_size_gb": 12.5, "l1_use_lazy": False, "l1_align_bytes": 65536,
                      "l2_adapter": ['{"type":"fs"}', '{"type":"mock"}'], "enable": ["a", "b"],
                      "eviction_policy": "ARC"}  # an abbreviation, the last of a repeated option, an append, nargs *
    # The module entry points: http_server has the same options; `.server` has no P2P / HTTP groups.
    assert parse(["python", "-m", "lmcache.v1.multiprocess.http_server", "--http-port", "9000"])
    with pytest.raises(LayoutError, match="server.py: error: unrecognized arguments: --http-port 9000"):
        parse(["python3", "-m", "lmcache.v1.multiprocess.server", "--http-port", "9000"])


@pytest.mark.parametrize("line, message", [
    ("lmcache server --l1-size-gb", "argument --l1-size-gb: expected one argument"),
    ("lmcache server --l1-use-lazy=1", "argument --l1-use-lazy/--no-l1-use-lazy: ignored explicit argument '1'"),
    ("lmcache server --l1-use x", "ambiguous option: --l1-use could match --l1-use-lazy, --l1-use-hugepages"),
    ("lmcache server --port x", "argument --port: invalid int value: 'x'"),
    ("lmcache server extra", "lmcache: error: unrecognized arguments: extra"),
])
def test_the_parsers_refusals(capsys, line, message):
    # Each as Python 3.11's argparse words it for LMCache's parser (checked by running it: the issue's notes).
    code, out, err = run(capsys, *BASE, "--lmcache-server", line)
    assert code == 2
    text = one_error_line(err)
    assert message in text
    assert text.startswith("kvcalc: error: --lmcache-server: ")


# ------------------------------------------------------------------------- kvcalc's flags, one bad input each

@pytest.mark.parametrize("flag, value, expected", [
    ("--l1-size-gb", "ten", "'ten' is not a valid float"),
    ("--l1-init-size-gb", "0.5", "'0.5' is not a valid int"),
    ("--l1-align-bytes", "4k", "'4k' is not a valid int"),
    ("--eviction-policy", "FIFO", "expected one of LRU, ARC, IsolatedLRU, noop (the server's --eviction-policy), got "
                                  "'FIFO'"),
    ("--eviction-trigger-watermark", "high", "'high' is not a valid float"),
    ("--lmcache-chunk-size", "256.0", "'256.0' is not a valid int"),
    ("--free-hugepages", "-1", "expected an integer between 0 and"),
    ("--lmcache-server", "vllm serve m", "expected an LMCache MP server command"),
    ("--server-memory", "90g", "--server-memory"),
    ("--l1-use-lazy=1", None, "Option '--l1-use-lazy' does not take a value"),
    ("--no-l1-use-hugepages=0", None, "Option '--no-l1-use-hugepages' does not take a value"),
])
def test_every_new_flag_refuses_a_bad_value_in_one_line(capsys, flag, value, expected):
    extra = ["--check"] if flag == "--server-memory" else []
    code, out, err = run(capsys, *BASE, "--l1-size-gb", "10", "--eviction-policy", "LRU", *extra, flag,
                         *([] if value is None else [value]))
    assert code == 2
    text = one_error_line(err)
    assert flag.split("=")[0] in text
    assert expected in text


def test_switch_flags_set_the_server_options(capsys):
    code, out, err = run(capsys, *BASE, "--l1-size-gb", "10", "--eviction-policy", "LRU", "--no-l1-use-lazy",
                         "--l1-use-hugepages", "--free-hugepages", "5120", "--lmcache-chunk-size", "512",
                         "--l1-align-bytes", "2097152", "--eviction-trigger-watermark", "0.9", "--l1-init-size-gb", "1")
    assert code == 0, err
    m = json.loads(out)["offload"]["lmcache_mp"]
    assert (m["pool"]["mode"], m["pool"]["hugepages"], m["chunk_size"], m["pool"]["align_bytes"],
            m["eviction_trigger_watermark"]) == ("hugepages", 5120, 512, 2097152, 0.9)
    assert m["server_from"]["l1_use_hugepages"] == "--l1-use-hugepages"


def test_flags_win_over_the_server_line(capsys):
    code, out, err = run(capsys, *BASE, "--lmcache-server", "lmcache server --l1-size-gb 10 --eviction-policy LRU",
                         "--l1-size-gb", "20")
    assert code == 0, err
    m = json.loads(out)["offload"]["lmcache_mp"]
    assert (m["pool"]["size_bytes"], m["server_from"]["l1_size_gb"]) == (20 * GIB, "--l1-size-gb")
    assert m["server_from"]["eviction_policy"] == "--lmcache-server"


# ---------------------------------------------------------------------------------------- the layout section

def _layout(tmp_path, offload):
    path = tmp_path / "l.yaml"
    path.write_text(json.dumps({"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128},
                                "cache": {"max_model_len": 4096}, "offload": offload, "vllm": {"version": "0.33.0"}}))
    return str(path)


@pytest.mark.parametrize("offload, message", [
    ({"backend": "lmcache_mp", "lmcache_mp": {"l1_size": 10}}, "offload.lmcache_mp.l1_size: expected an option of "
                                                              "LMCache 0.5.6's server"),
    ({"backend": "lmcache_mp", "lmcache_mp": {"l1_size_gb": "10"}}, "offload.lmcache_mp.l1_size_gb: expected a number"),
    ({"backend": "lmcache_mp", "lmcache_mp": {"l1_init_size_gb": 0.5}}, "expected an integer (the server's "
                                                                        "--l1-init-size-gb is type=int)"),
    ({"backend": "lmcache_mp", "lmcache_mp": {"l2_adapter": "x"}}, "expected a list of strings"),
    ({"backend": "lmcache_mp", "lmcache_mp": {"l1_size_gb": 10}, "cpu_bytes_to_use": "64G"},
     "offload.cpu_bytes_to_use: expected no value with offload.backend lmcache_mp"),
    ({"backend": "lmcache_mp", "kv_offloading_size": 64}, "through --kv-offloading-backend lmcache"),
    ({"cpu_bytes_to_use": "64G", "lmcache_mp": {"l1_size_gb": 10}}, "offload.lmcache_mp: expected no LMCache server "
                                                                    "section with offload.backend native"),
    ({"backend": "lmcache", "lmcache": {"max_local_cpu_size": 5}, "lmcache_mp": {"l1_size_gb": 10}},
     "no LMCache server section with LMCacheConnectorV1"),
])
def test_the_section_refuses_what_the_server_would_not_read(capsys, tmp_path, offload, message):
    code, out, err = run(capsys, "plan", _layout(tmp_path, offload))
    assert code == 2
    assert message in one_error_line(err)


def test_tagged_and_gds_l1s_are_not_modelled(capsys, tmp_path):
    for section in ({"l1_manager": ['{"type":"DRAM","tag":"_default","size_gb":10}'], "eviction_policy": "LRU"},
                    {"l1_size_gb": 10, "eviction_policy": "LRU", "gds_l1_path": "/nvme"}):
        code, out, err = run(capsys, "plan", _layout(tmp_path, {"backend": "lmcache_mp", "lmcache_mp": section}))
        assert code == 2
        assert "is not modelled" in one_error_line(err)


# --------------------------------------------------------------------------------------------- vLLM's side

def test_a_serve_line_naming_the_connector(capsys, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(open(LLAMA).read())
    transfer = json.dumps({"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both",
                           "kv_connector_extra_config": {"lmcache.mp.port": 6000}})
    code, out, err = run(capsys, "plan", "--vllm-version", "0.22.0", "--format", "json", "--lmcache-server",
                         "lmcache server --l1-size-gb 10 --eviction-policy LRU --port 6000", "--",
                         "vllm", "serve", str(model), "--kv-transfer-config", transfer)
    assert code == 0, err
    m = json.loads(out)["offload"]["lmcache_mp"]
    # 10 GiB // (2 x 32 x 256 x 8 x 128 x 2 = 33,554,432) = 320 chunks = 81,920 tokens
    assert (m["selected_by"], m["tokens_held"]) == ("--kv-transfer-config kv_connector LMCacheMPConnector", 81920)
    assert "do not change the LMCache server's pool: lmcache.mp.port" in err
    assert "the server listens on localhost:6000" in err


# ------------------------------------------------------------------------------------------- a manifest

def test_a_manifests_lmcache_server_sidecar(capsys, tmp_path):
    # The server runs beside vLLM in the pod (the pattern of LMCache's MP quickstart): its command line sizes the L1
    # and its own memory limit is what the pinned L1 must fit (its cgroup, not vLLM's container's).
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(open(LLAMA).read())
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(f"""apiVersion: v1
kind: Pod
metadata: {{name: llama-mp}}
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.33.0
      command: ["vllm", "serve", "{model}", "-tp", "8", "--kv-offloading-backend", "lmcache",
                "--kv-offloading-size", "64"]
      resources: {{limits: {{memory: 40Gi}}}}
    - name: lmcache
      image: lmcache/standalone:v0.5.6
      command: ["/bin/sh", "-c", "exec lmcache server --l1-size-gb 100 --eviction-policy LRU"]
      resources: {{limits: {{memory: 90Gi}}}}
""")
    code, out, err = run(capsys, "plan", "--k8s", str(manifest), "--check", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["offload"]["lmcache_mp"]["tokens_held"] == 819200
    gate = next(c for c in doc["checks"] if c["name"] == "host_memory")
    # 100 GiB pinned against the server container's 90 GiB: short by 10 GiB.
    assert (gate["status"], gate["need"], gate["limit"]) == ("fail", 100 * GIB, 90 * GIB)
    assert "the LMCache MP server: " in err


# ---------------------------------------------------------------------------------------------- hostile lines

from hypothesis import given, strategies as st  # noqa: E402

_SPELLINGS = sorted({s for row in FLAGS for s in row[0]})
_WORDS = st.one_of(st.sampled_from(_SPELLINGS), st.sampled_from([s[:6] for s in _SPELLINGS if len(s) > 6]),
                   st.sampled_from(["10", "-1", "0", "1e3", "nan", "inf", "x", "", "--", "-", "LRU", "noop", "3000",
                                    "1_0", '{"type":"DRAM","tag":"_default","size_gb":1}', "256.0", "--=", "-h"]),
                   st.text(max_size=8))


@given(st.lists(st.one_of(_WORDS, st.builds(lambda a, b: f"{a}={b}", st.sampled_from(_SPELLINGS), _WORDS)),
                max_size=12))
def test_any_server_line_is_read_or_refused_in_one_line(words):
    # No traceback: a line is read, or refused with kvcalc's one error (LayoutError); what it reads plans, or is
    # refused as LMCache or vLLM would refuse it (KvcalcError: exit 2), never anything else.
    from kvcalc.inputs.layout.read import layout_from_dict
    from kvcalc.pipeline import plan
    from kvcalc.vocab.errors import KvcalcError

    try:
        section = parse(["lmcache", "server", *words])["offload.lmcache_mp"][0]
    except LayoutError as e:
        assert "\n" not in e.one_line()
        return
    data = {"model": {"num_layers": 2, "num_kv_heads": 8, "head_size": 128}, "cache": {"max_model_len": 4096},
            "offload": {"backend": "lmcache_mp", "lmcache_mp": section}, "vllm": {"version": "0.33.0"}}
    try:
        p = plan(layout_from_dict(data, source="fuzz"))
    except KvcalcError:
        return
    assert p.pool.startup_error or p.pool.mp.pool is not None
