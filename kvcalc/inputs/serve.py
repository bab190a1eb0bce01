"""A `vllm serve` command line -> layout overrides, and a model id -> its config.json in the local Hugging Face cache.

Input stage (like load): the result is a layout dict plus {key path: (value, the vLLM flag that set it)}, validated
by load.validate as any layout. Offline: a hub id is looked up in the local cache only, never fetched.

vLLM's own syntax (engine/arg_utils.py, 0.33.0; the same spellings in 0.14.0): `--flag value` or `--flag=value`,
`-tp`/`-pp`/`-dp` aliases, booleans as `--flag` / `--no-flag`, JSON for `--kv-transfer-config`,
`--speculative-config` and `--hf-overrides`, sizes through `human_readable_int` (uppercase K/M/G/T binary, lowercase
decimal), `--config FILE` a YAML of serve arguments that the command line overrides.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Any

from ..vocab.errors import LayoutError, UnsupportedError
from ..vocab.keys import KEYS, Key

SOURCE = "vllm serve"

# vLLM flag -> the key it sets: the key table's vLLM spellings (vocab/keys: a row's `vllm` and `vllm_parse`).
VALUE_FLAGS: dict[str, Key] = {spelling: k for k in KEYS if k.vllm_parse not in ("", "switch") for spelling in k.vllm}
BOOL_FLAGS: dict[str, Key] = {k.vllm[0]: k for k in KEYS if k.vllm_parse == "switch"}  # --flag / --no-flag
JSON_FLAGS = ("--kv-transfer-config", "--speculative-config", "--hf-overrides")
# Flags that do not change the KV cache or the offload pool: accepted, listed in a note. Switches take no value.
IGNORED_SWITCHES = frozenset((
    "--trust-remote-code", "--disable-log-requests", "--enable-log-requests", "--disable-log-stats",
    "--enable-chunked-prefill", "--enable-auto-tool-choice", "--enable-expert-parallel",
    "--enable-lora", "--async-scheduling", "--disable-custom-all-reduce", "--disable-fastapi-docs",
    "--enable-prompt-tokens-details", "--enable-force-include-usage", "--enable-server-load-tracking", "--headless",
))
IGNORED = IGNORED_SWITCHES | frozenset((
    "--host", "--port", "--served-model-name", "--tokenizer", "--tokenizer-mode", "--api-key",
    "--uvicorn-log-level", "--no-enable-chunked-prefill", "--seed",
    "--swap-space", "--load-format", "--chat-template", "--tool-call-parser", "--reasoning-parser",
    "--limit-mm-per-prompt", "--max-logprobs", "--compilation-config", "-O", "--cuda-graph-sizes",
    "--generation-config", "--override-generation-config", "--max-loras", "--max-lora-rank", "--lora-modules",
    "--scheduling-policy", "--kv-events-config", "--tokenizer-revision", "--code-revision", "--response-role",
    "--ssl-keyfile", "--ssl-certfile", "--allowed-origins", "--root-path", "--middleware",
    "--max-parallel-loading-workers", "--worker-cls", "--api-server-count", "--data-parallel-address",
    "--data-parallel-rpc-port", "--data-parallel-start-rank", "--node-rank", "--master-addr", "--master-port",
    "--cpu-offload-gb", "--revision", "--download-dir",
    "--model", "--config",
))
# Ignored but worth a word: what it changes that kvcalc takes from elsewhere.
NOTE = {
    "--cpu-offload-gb": "offloads weights, not the KV cache (not modelled in the KV budget prediction)",
}


def changes_kv(flag: str) -> bool:
    """Whether a flag's value can change what kvcalc plans: the model, its revision and --config do, and so does
    every flag kvcalc reads; the IGNORED ones do not."""
    return flag in ("--model", "--config", "--revision") or flag not in IGNORED


def _fail(key: str, expected: str, got: Any = None, detail: str = "") -> LayoutError:
    return LayoutError(SOURCE, key, expected, got, detail=detail)


def split(text: str) -> list[str]:
    """One serve line as a shell would split it (line continuations joined); refuses what shlex cannot read."""
    try:
        return shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError as e:
        raise _fail("--serve", "a command line a shell can split", text[:60], detail=str(e)) from None


def assignments(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading shell environment assignments (`VLLM_USE_SIMPLE_KV_OFFLOAD=1 vllm serve ...`, also after `env`) ->
    ({name: value}, the rest of the words)."""
    env: dict[str, str] = {}
    i = 1 if words[:1] == ["env"] else 0
    while i < len(words) and "=" in words[i] and words[i].split("=", 1)[0].isidentifier():
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    return (env, words[i:]) if env else ({}, list(words))


def _tokens(argv: list[str]) -> tuple[str | None, list[tuple[str, str | None]]]:
    """argv (with or without `vllm serve`) -> (positional model, [(flag, value or None)])."""
    args = list(argv)
    if args[:2] == ["vllm", "serve"]:
        args = args[2:]
    elif args[:1] == ["serve"]:
        args = args[1:]
    elif args and args[0] == "vllm":
        raise _fail("argv", "a `vllm serve` command line", " ".join(args[:3]))
    model = None
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not _number(a):
            name, eq, value = a.partition("=")
            if eq:
                out.append((name, value))
            elif _takes_value(name) and i + 1 < len(args):
                out.append((name, args[i + 1]))
                i += 1
            else:
                out.append((name, None))
        elif model is None:
            model = a
        else:
            raise _fail("argv", "one positional argument (the model)", a)
        i += 1
    return model, out


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _takes_value(name: str) -> bool:
    return not (name in BOOL_FLAGS or name in IGNORED_SWITCHES or name.startswith("--no-"))


def _config_file(path: str) -> list[tuple[str, str | None]]:
    """vLLM's --config YAML: a mapping of serve arguments (dashes or underscores), as `--key value` pairs."""
    from .files import parse_yaml, read_bytes

    data = parse_yaml(read_bytes(path, "a readable vLLM --config YAML").decode("utf-8", "replace"), source=path)
    if not isinstance(data, dict):
        raise LayoutError(path, "", "a mapping of vllm serve arguments", type(data).__name__)
    out: list[tuple[str, str | None]] = []
    for key, value in data.items():
        flag = "--" + str(key).replace("_", "-")
        if isinstance(value, bool):
            out.append((flag if value else f"--no-{flag[2:]}", None))
        elif isinstance(value, (dict, list)):
            out.append((flag, json.dumps(value)))
        elif value is not None:
            out.append((flag, str(value)))
    return out


def _json(flag: str, text: str | None) -> Any:
    if text is None:
        raise _fail(flag, "a JSON value")
    if len(text) > 1 << 16:
        raise _fail(flag, "a JSON value of at most 65,536 characters", f"{len(text):,} characters")
    try:
        return json.loads(text)
    except ValueError as e:
        raise _fail(flag, "valid JSON", text[:60], detail=str(e).split(":")[0]) from None
    except RecursionError:
        raise _fail(flag, "JSON nested less deeply", text[:20]) from None


def hub_cache_dirs(env: dict[str, str] | None = None) -> list[str]:
    """Where huggingface_hub keeps its cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return [env["HF_HUB_CACHE"]]
    if env.get("HF_HOME"):
        return [os.path.join(env["HF_HOME"], "hub")]
    return [os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub")]


def resolve_model(model: str, *, revision: str | None = None, flag: str = "MODEL",
                  env: dict[str, str] | None = None) -> str:
    """A local directory (or config.json), or a hub id in the local cache -> the config.json path. The hub
    client's layout: models--ORG--NAME/refs/<revision> holds a commit hash, snapshots/<hash>/config.json the file
    (often a symlink into blobs/); a revision that is a commit hash names the snapshot directly."""
    if os.path.isdir(model):
        return os.path.join(model, "config.json")
    if model.endswith(".json") and os.path.isfile(model):
        return model
    tried = []
    rev = revision or "main"
    # A revision is a ref name (main, v1.0, refs/pr/1) or a commit hash: never a path out of the cache (a serve
    # line or a manifest someone else wrote must not make kvcalc read, or print, another file).
    if not _REF.fullmatch(rev) or ".." in rev.split("/") or rev.startswith("/"):
        raise _fail("--revision", "a branch, tag or commit hash", rev[:60])
    if not _REPO.fullmatch(model):
        raise _fail(flag, "a local model directory or a hub id such as org/name", model[:80])
    for cache in hub_cache_dirs(env):
        repo = os.path.join(cache, "models--" + model.replace("/", "--"))
        ref = os.path.join(repo, "refs", rev)
        commit = rev
        if os.path.isfile(ref):
            commit = _ref_commit(ref)
        path = os.path.join(repo, "snapshots", commit, "config.json")
        tried.append(path)
        if os.path.isfile(path):
            return path
    raise _fail(flag, f"a local model directory or a model in the Hugging Face cache (tried {', '.join(tried)})",
                model, detail=f"fetch its config with: huggingface-cli download {model} config.json"
                              + (f" --revision {revision}" if revision else ""))


_REF = __import__("re").compile(r"[A-Za-z0-9._-][A-Za-z0-9._/-]{0,200}")
_REPO = __import__("re").compile(r"[A-Za-z0-9._-]{1,96}(/[A-Za-z0-9._-]{1,96})?")
_COMMIT = __import__("re").compile(r"[0-9A-Za-z]{1,64}")  # the hub writes 40 hex digits; no path characters


def _ref_commit(path: str) -> str:
    """The commit hash a refs/<name> file of the cache holds (the hub client writes 40 hex digits); anything else
    is refused without echoing it."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(81)
    except OSError as e:
        raise _fail("--revision", "a readable ref in the Hugging Face cache", detail=f"{path}: {e.strerror}") from None
    text = raw.decode("ascii", "replace").strip()
    if not _COMMIT.fullmatch(text):
        raise _fail("--revision", "a ref file holding a commit hash", detail=path)
    return text


def parse(argv: list[str], *, env: dict[str, str] | None = None) -> tuple[dict, dict[str, tuple[Any, str]], list[str]]:
    """A serve command line -> (layout dict, overrides {path: (value, flag)}, notes)."""
    from .values import Reader

    engine_env, argv = assignments(list(argv))
    positional, given = _tokens(argv)
    flags: list[tuple[str, str | None]] = []
    for name, value in given:
        if name == "--config":
            if value is None:
                raise _fail("--config", "a vLLM --config YAML path")
            flags = _config_file(value) + flags  # the file first: the command line overrides it, as vLLM does
    flags += given
    model = positional
    revision = None
    for name, value in flags:
        if name == "--model":
            model = value
        elif name == "--revision":
            revision = value
    if not model:
        raise _fail("MODEL", "a model: vllm serve MODEL, or --model")
    config = resolve_model(model, revision=revision, env=env)
    top: dict = {"model": {"hf_config": os.path.abspath(config)}}
    overrides: dict[str, tuple[Any, str]] = {}
    notes: list[str] = []
    ignored: list[str] = []
    r = Reader(SOURCE, {})
    offloading_backend = "native"
    for name, value in flags:
        if name in VALUE_FLAGS:
            key = VALUE_FLAGS[name]
            overrides[key.path] = (_value(r, name, value, key), name)
        elif name in BOOL_FLAGS or (name.startswith("--no-") and f"--{name[5:]}" in BOOL_FLAGS):
            key = BOOL_FLAGS[name if name in BOOL_FLAGS else f"--{name[5:]}"]
            overrides[key.path] = (key.vllm_switch[0] if name in BOOL_FLAGS else key.vllm_switch[1], name)
        elif name == "--kv-transfer-config":
            _transfer(_json(name, value), overrides, notes)
        elif name == "--speculative-config":
            _speculative(_json(name, value), overrides, env)
        elif name == "--hf-overrides":
            if _json(name, value):
                raise UnsupportedError(f"{SOURCE}: --hf-overrides: kvcalc does not apply config overrides; edit the "
                                       "config.json (or write a layout YAML) instead")
        elif name == "--kv-offloading-backend":
            if value not in ("native", "lmcache"):
                raise _fail("--kv-offloading-backend", "native or lmcache (vLLM's choices)", value)
            offloading_backend = value
        elif name in IGNORED:
            if name in NOTE:
                notes.append(f"{name}: {NOTE[name]}")
            elif name not in ("--model", "--revision", "--config"):
                ignored.append(name)
        else:
            raise UnsupportedError(f"{SOURCE}: {name}: kvcalc does not know whether this flag changes the KV cache; "
                                   "remove it to plan without it")
    _offloading(engine_env, offloading_backend, overrides, notes)
    if ignored:
        notes.append("flags that do not change the KV cache or the offload pool: " + ", ".join(dict.fromkeys(ignored)))
    return top, overrides, notes


def _value(r, name: str, value: str | None, key: Key) -> Any:
    """A value flag's text as vLLM parses it (the key's vllm_parse: int, human_readable_int, float or text)."""
    if value is None:
        raise _fail(name, "a value")
    parse = key.vllm_parse
    if parse == "int":
        if not (value.isascii() and value.isdigit()):
            raise _fail(name, "an integer", value)
        return int(value)
    if parse == "human":
        return r.human_int(value, name, minimum=key.minimum)
    if parse == "float":
        if not _number(value):
            raise _fail(name, "a number", value)
        return float(value)
    return value


def _lmcache_backend(overrides: dict, notes: list[str]) -> None:
    """--kv-offloading-backend lmcache: config/vllm.py _post_init_kv_transfer_config configures nothing without
    --kv-offloading-size; with it, vLLM writes the connector config itself (LMCache's, per release: lmcache.py),
    replacing any given."""
    if "offload.kv_offloading_size" not in overrides:
        notes.append("--kv-offloading-backend lmcache without --kv-offloading-size: vLLM configures no offloading")
    elif overrides.get("offload.backend", (None, ""))[1].startswith("--kv-transfer-config"):
        raise UnsupportedError(f"{SOURCE}: --kv-offloading-backend lmcache with --kv-offloading-size replaces the "
                               "connector --kv-transfer-config names: give one of them")
    else:
        overrides["offload.backend"] = ("lmcache", "--kv-offloading-backend")


def _offloading(engine_env: dict[str, str], offloading_backend: str, overrides: dict, notes: list[str]) -> None:
    """What the line's environment and --kv-offloading-backend / --kv-offloading-size make vLLM start."""
    if engine_env:
        _engine_env(engine_env, overrides, notes, "the serve line's environment")
    if offloading_backend == "lmcache":
        _lmcache_backend(overrides, notes)
    elif "offload.kv_offloading_size" in overrides:
        _native_flag(overrides)


def _engine_env(env: dict[str, str], overrides: dict, notes: list[str], where: str) -> None:
    """The engine's environment variables kvcalc reads: VLLM_USE_SIMPLE_KV_OFFLOAD (envs.py, 0.19.0:1666:
    bool(int(value)), a ValueError for anything int() does not read); the others are listed in a note."""
    from ..vocab.releases.simple import ENV_VAR, env_enabled

    if ENV_VAR in env:
        try:
            on = env_enabled(env[ENV_VAR])
        except ValueError:
            raise _fail(ENV_VAR, f"an integer (vLLM reads bool(int(value)); {where})", env[ENV_VAR]) from None
        overrides["offload.use_simple_kv_offload"] = (on, f"{ENV_VAR}={env[ENV_VAR]} ({where})")
    others = sorted(k for k in env if k != ENV_VAR)
    if others:
        notes.append(f"environment variables that do not change the KV cache or the offload pool ({where}): "
                     + ", ".join(others))


def _native_flag(overrides: dict) -> None:
    """--kv-offloading-size with the native offloading backend: config/vllm.py _post_init_kv_transfer_config names
    the connector itself (SimpleCPUOffloadConnector with VLLM_USE_SIMPLE_KV_OFFLOAD=1, else OffloadingConnector),
    replacing the one --kv-transfer-config names."""
    named = overrides.get("offload.backend", (None, ""))
    simple = overrides.get("offload.use_simple_kv_offload", (False, ""))[0]
    if named[0] == "simple" and not simple:
        raise UnsupportedError(f"{SOURCE}: --kv-offloading-size makes vLLM name OffloadingConnector (no "
                               "VLLM_USE_SIMPLE_KV_OFFLOAD=1), replacing the SimpleCPUOffloadConnector "
                               "--kv-transfer-config names: give one of them")


_SIMPLE_KEYS = ("cpu_bytes_to_use_per_rank", "num_cpu_blocks", "kv_offload_backend", "disk_path",
                "disk_capacity_bytes", "disk_buffer_slots", "use_page_cache", "lazy_offload")


def _simple_extra(extra: dict, overrides: dict, notes: list[str]) -> None:
    """SimpleCPUOffloadConnector's kv_connector_extra_config (simple_cpu_offload_connector.py, 0.33.0:98-165):
    cpu_bytes_to_use for the engine, the others under offload.simple."""
    overrides["offload.backend"] = ("simple", "--kv-transfer-config kv_connector SimpleCPUOffloadConnector")
    others = []
    for key, value in extra.items():
        if key == "cpu_bytes_to_use":
            overrides["offload.cpu_bytes_to_use"] = (value, "--kv-transfer-config cpu_bytes_to_use")
        elif key in _SIMPLE_KEYS:
            overrides[f"offload.simple.{key}"] = (value, f"--kv-transfer-config {key}")
        else:
            others.append(str(key))
    if others:
        notes.append("kv_connector_extra_config entries SimpleCPUOffloadConnector does not read: " + ", ".join(others))


def _transfer(cfg: Any, overrides: dict, notes: list[str]) -> None:
    if not isinstance(cfg, dict):
        raise _fail("--kv-transfer-config", "a JSON object", cfg)
    connector = cfg.get("kv_connector")
    extra = cfg.get("kv_connector_extra_config") or {}
    if not isinstance(extra, dict):
        raise _fail("--kv-transfer-config.kv_connector_extra_config", "a JSON object", extra)
    if connector == "LMCacheConnectorV1":
        _lmcache_extra(extra, overrides, notes)
        return
    if connector == "SimpleCPUOffloadConnector":
        _simple_extra(extra, overrides, notes)
        return
    if connector != "OffloadingConnector":
        raise UnsupportedError(f"{SOURCE}: --kv-transfer-config: kv_connector {connector!r}: kvcalc models "
                               "OffloadingConnector, LMCacheConnectorV1 and SimpleCPUOffloadConnector")
    spec = extra.get("spec_name", "CPUOffloadingSpec")
    if spec != "CPUOffloadingSpec":
        raise UnsupportedError(f"{SOURCE}: --kv-transfer-config: spec_name {spec!r}: kvcalc models CPUOffloadingSpec")
    # The connector is configured even without a budget (its GPU side: the hybrid manager as it allows it).
    overrides["offload.backend"] = ("native", "--kv-transfer-config kv_connector OffloadingConnector")
    for key, path in (("cpu_bytes_to_use", "offload.cpu_bytes_to_use"), ("block_size", "offload.block_size"),
                      ("blocks_per_chunk", "offload.blocks_per_chunk")):
        if key in extra:
            overrides[path] = (extra[key], f"--kv-transfer-config {key}")


def _lmcache_extra(extra: dict, overrides: dict, notes: list[str]) -> None:
    """LMCacheConnectorV1's kv_connector_extra_config: "lmcache.<key>" entries set LMCache config keys after its
    file and environment (LMCache 0.5.6 integration/vllm/vllm_v1_adapter.py _apply_extra_config)."""
    overrides["offload.backend"] = ("lmcache", "--kv-transfer-config kv_connector LMCacheConnectorV1")
    if extra.get("use_native"):
        # vLLM kv_connector/v1/lmcache_connector.py: use_native runs vLLM's bundled copy of the integration.
        raise UnsupportedError(f"{SOURCE}: --kv-transfer-config: use_native runs vLLM's bundled copy of LMCache's "
                               "integration; kvcalc models the lmcache package's own")
    others = []
    for key, value in extra.items():
        if isinstance(key, str) and key.startswith("lmcache.") and len(key) > 8:
            overrides[f"offload.lmcache.{key[8:]}"] = (value, f"--kv-transfer-config {key}")
        else:
            others.append(str(key))
    if others:
        notes.append("kv_connector_extra_config entries that do not change LMCache's CPU pool: " + ", ".join(others))


def _speculative(cfg: Any, overrides: dict, env) -> None:
    if not isinstance(cfg, dict):
        raise _fail("--speculative-config", "a JSON object", cfg)
    method = cfg.get("method")
    methods = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "deepseek_mtp": "mtp", "qwen3_next_mtp": "mtp",
               "ngram": "ngram", "ngram_gpu": "ngram", "suffix": "suffix"}  # config/speculative.py:74-82 @0.33.0
    if method not in methods:
        raise UnsupportedError(f"{SOURCE}: --speculative-config: method {method!r}: kvcalc models "
                               f"{', '.join(methods)}")
    overrides["model.draft.method"] = (methods[method], "--speculative-config method")
    if cfg.get("num_speculative_tokens") is not None:
        overrides["model.draft.num_speculative_tokens"] = (cfg["num_speculative_tokens"],
                                                           "--speculative-config num_speculative_tokens")
    if methods[method] not in ("mtp", "ngram", "suffix"):  # ngram and suffix drafting read no draft model
        if not isinstance(cfg.get("model"), str):
            raise _fail("--speculative-config.model", f"the {method} drafter model (a directory or a hub id)",
                        cfg.get("model"))
        path = resolve_model(cfg["model"], flag="--speculative-config.model", env=env)
        overrides["model.draft.hf_config"] = (os.path.abspath(path), "--speculative-config model")


def load_serve(argv: list[str], *, overrides: dict[str, tuple[Any, str]] | None = None,
               env: dict[str, str] | None = None, base: dict[str, tuple[Any, str]] | None = None):
    """A serve command line -> a validated Layout (kvcalc's own flags in `overrides` win over the line's; the
    line's win over `base`: LMCache's file and environment, which its kv_connector_extra_config overrides)."""
    from .yaml_layout import expand
    from .validate import validate

    top, from_line, notes = parse(argv, env=env)
    merged = {**(base or {}), **from_line, **(overrides or {})}
    data, origin = expand(top, source=SOURCE, overrides=merged)
    return validate(data, source=SOURCE, overrides=merged, origin=origin), notes
