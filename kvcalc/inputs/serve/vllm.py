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
import math
import os
import shlex
from typing import Any

from ...vocab.errors import StartupRefusal, UnsupportedError
from ...vocab.keys import KEYS, Key
from ..hf.hub import fail as _fail
from .engine_env import read_switches
from ..hf.hub import hub_cache_dirs, resolve_model  # noqa: F401 - the model lookup, also part of this module's API

SOURCE = "vllm serve"

# vLLM option -> the key it sets: the key table's vLLM spellings (vocab/keys: a row's `vllm` and `vllm_parse`).
KEY_OF: dict[str, Key] = {spelling: k for k in KEYS if k.vllm_parse for spelling in k.vllm}
JSON_FLAGS = ("--kv-transfer-config", "--speculative-config", "--hf-overrides")
# Options of vLLM's parser that change the KV cache, its budget or the offload pool in ways kvcalc does not model:
# refused unless given their no-op value (None: any use is refused; "set": a switch turned on).
UNMODELLED = {
    "--disable-sliding-window": "set", "--kv-sharing-fast-prefill": "set", "--use-replayssm": "set",
    "--enable-mamba-shared-prefix-checkpoint": "set", "--decode-context-parallel-size": "1",
    "--prefill-context-parallel-size": "1", "--kv-cache-dtype-skip-layers": None, "--hf-config-path": None,
    "--replayssm-buffer-len": None, "--swa-bounded-replay": "set", "--spec-method": None, "--spec-model": None,
    "--spec-tokens": None,
}
# Read elsewhere or handled on their own: not listed among the options that leave the KV cache alone.
HANDLED = frozenset(("--model", "--revision", "--config", "--kv-offloading-backend", *JSON_FLAGS))
# Accepted, with a word on what they change that kvcalc takes from elsewhere.
NOTE = {
    "--cpu-offload-gb": "offloads weights, not the KV cache: a predicted budget takes the offloaded parameters off "
                        "the GPU weights, and the host_memory gate counts their pinned allocations per rank",
    "--compilation-config": "CUDA graph settings: the predicted KV budget assumes vLLM's default capture sizes",
    "--optimization-level": "CUDA graph settings: the predicted KV budget assumes vLLM's default capture sizes",
    "--cudagraph-capture-sizes": "CUDA graph sizes: the predicted KV budget assumes vLLM's default capture sizes",
    "--max-cudagraph-capture-size": "CUDA graph sizes: the predicted KV budget assumes vLLM's default capture sizes",
}


def changes_kv(flag: str) -> bool:
    """Whether an option's value can change what kvcalc plans (the model, its revision, --config, every option
    kvcalc reads or refuses); the release parser's other options do not. A manifest's unreadable value in one of
    these is refused; in the others it is noted."""
    name = flag.split("=", 1)[0]
    return name in HANDLED or name in KEY_OF or name in UNMODELLED or name in ("-tp", "-pp", "-dp", "-dpl", "-q")


def split(text: str) -> list[str]:
    """One serve line as a shell would split it (line continuations joined); refuses what shlex cannot read."""
    try:
        return shlex.split(text.replace("\\\r\n", " ").replace("\\\n", " "), comments=True)
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


def parse(argv: list[str], *, env: dict[str, str] | None = None,
          release: str | None = None) -> tuple[dict, dict[str, tuple[Any, str]], list[str]]:
    """A serve command line -> (layout dict, overrides {path: (value, flag)}, notes), read as `release`'s own
    parser reads it (the newest kvcalc models when none is named)."""
    from ...vocab.releases.vllm import DEFAULT_VERSION
    from .vllm_args import read, serve_words
    from ..values import Reader

    release = release or DEFAULT_VERSION
    engine_env, words = assignments(list(argv))
    positional, opts = read(release, serve_words(words))
    # A positional model wins over --model (a --config file's `model:`): vLLM's serve command sets args.model from
    # model_tag when one is given (entrypoints/cli/serve.py cmd, every release read).
    model = positional or (opts["--model"].value if "--model" in opts else None)
    if not model:
        raise _fail("MODEL", "a model: vllm serve MODEL, or --model")
    revision = opts["--revision"].value if "--revision" in opts else None
    config = resolve_model(model, revision=revision, env=env)
    top: dict = {"model": {"hf_config": os.path.abspath(config)}}
    overrides: dict[str, tuple[Any, str]] = {}
    notes: list[str] = []
    ignored: list[str] = []
    r = Reader(SOURCE, {})
    offloading_backend = "native"
    for name, opt in opts.items():
        key = KEY_OF.get(name) or next((KEY_OF[a] for a in _aliases(release, name) if a in KEY_OF), None)
        if key is not None and key.vllm_parse == "switch":
            overrides[key.path] = (key.vllm_switch[1] if opt.negated else key.vllm_switch[0], opt.spelling)
        elif key is not None:
            value = _value(r, opt.spelling, opt.value, key, notes)
            if value is not None:
                overrides[key.path] = (value, opt.spelling)
            if name in NOTE:
                notes.append(f"{opt.spelling}: {NOTE[name]}")
        elif name == "--kv-transfer-config":
            _transfer(_json(name, opt.value), overrides, notes)
        elif name == "--speculative-config":
            _speculative(_json(name, opt.value), overrides, env)
        elif name == "--hf-overrides":
            if _json(name, opt.value):
                raise UnsupportedError(f"{SOURCE}: --hf-overrides: kvcalc does not apply config overrides; edit the "
                                       "config.json (or write a layout YAML) instead")
        elif name == "--kv-offloading-backend":
            offloading_backend = opt.value
        elif name in UNMODELLED:
            _unmodelled(name, opt)
        elif name in NOTE:
            notes.append(f"{opt.spelling}: {NOTE[name]}")
        elif name not in HANDLED:
            ignored.append(opt.spelling)
    _offloading(engine_env, offloading_backend, overrides, notes)
    if ignored:
        notes.append(f"options of vLLM {release}'s parser that do not change the KV cache or the offload pool: "
                     + ", ".join(dict.fromkeys(ignored)))
    return top, overrides, notes


def option_value(release: str, tokens: list[str]) -> Any:
    """What the release's parser makes of one option's tokens (serve/vllm_args.spans), for telling a change of value
    from a change of spelling (`--max-model-len 128K` is 131,072): a switch's state, the key's parsed value, the
    JSON, else the text; None when the parser refuses the tokens."""
    from ...vocab.errors import KvcalcError
    from .vllm_args import read
    from ..values import Reader

    try:
        _, opts = read(release, list(tokens))
    except KvcalcError:
        return None
    if len(opts) != 1:
        return None
    opt = next(iter(opts.values()))
    if opt.value is None:
        return ("switch", opt.name, not opt.negated)
    key = KEY_OF.get(opt.name) or next((KEY_OF[a] for a in _aliases(release, opt.name) if a in KEY_OF), None)
    try:
        if opt.name in JSON_FLAGS:
            return _json(opt.name, opt.value)
        if key is not None and key.vllm_parse != "switch":
            return _value(Reader(SOURCE, {}), opt.spelling, opt.value, key, [])
    except KvcalcError:
        pass
    return opt.value


def _aliases(release: str, name: str) -> tuple[str, ...]:
    from ...vocab.releases.vllm_flags import flags_of

    info = flags_of(release).get(name)
    return info.aliases if info is not None else ()


def _unmodelled(name: str, opt) -> None:
    """An option that changes the KV cache in a way kvcalc does not model: refused unless it is its no-op."""
    noop = UNMODELLED[name]
    if noop == "set" and opt.negated:
        return
    if noop not in (None, "set") and str(opt.value).strip() == noop:
        return
    raise UnsupportedError(f"{SOURCE}: {opt.spelling}"
                           + (f" {opt.value}" if opt.value is not None else "")
                           + ": changes the KV cache in a way kvcalc does not model; plan without it")


def _value(r, name: str, value: Any, key: Key, notes: list[str]) -> Any:
    """A value option's text as vLLM's parser converts it (the key's vllm_parse): int() as argparse's type=int
    ('1_000', '+5' pass), human_readable_int as vLLM computes it (int(float(x) x 10^3k) for k/m/g/t, so '1.001k'
    is 1000: vocab/releases/vllm_flags.human_readable_int), float(), or the text."""
    from ...vocab.releases.vllm_flags import human_readable_int

    if value is None:
        raise _fail(name, "a value")
    text = str(value)
    if len(text) > 40:
        raise _fail(name, "a value of at most 40 characters", f"{len(text)} characters")
    parse = key.vllm_parse
    if key.path == "model.dtype" and text == "auto":
        # ModelConfig's "auto": the config's own torch_dtype (a float32 checkpoint served in half precision), which
        # is what kvcalc reads from config.json.
        return None
    try:
        if parse == "int":
            return int(text)
        if parse == "human":
            if key.path == "cache.max_model_len" and text.strip().lower() in ("auto", "-1"):
                # human_readable_int_or_auto (0.14.0 engine/arg_utils.py): -1 asks vLLM to fit the longest length
                # the KV memory holds.
                notes.append(f"{name} {text}: vLLM lowers max_model_len to what the KV memory holds when the model's "
                             "own maximum does not fit; kvcalc plans the model's maximum (the Verdict says if it fits)")
                return None
            out = human_readable_int(text)
            if out < key.minimum:
                raise ValueError(text)
            return out
        if parse == "float":
            number = float(text)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError(text)
            return number
    except ValueError:
        raise _fail(name, {"int": "an integer", "human": "an integer, or digits with one K/M/G/T (binary) or "
                           "k/m/g/t (decimal) suffix", "float": "a number"}[parse], text) from None
    return text


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
        _native_flag(overrides, notes)
    elif overrides.get("offload.backend", (None, ""))[1].startswith("--kv-transfer-config") and \
            overrides["offload.backend"][0] in ("native", "simple") and "offload.cpu_bytes_to_use" not in overrides:
        # The connector named with no budget: its spec raises at start-up (v1/kv_offload/cpu/spec.py:100-104
        # @0.33.0: `if not cpu_bytes_to_use: raise Exception(...)`; simple: simple_cpu_offload_connector.py).
        if overrides["offload.backend"][0] == "native":
            raise StartupRefusal(f"{SOURCE}: --kv-transfer-config names OffloadingConnector without cpu_bytes_to_use "
                                 "(and there is no --kv-offloading-size): vLLM stops with 'cpu_bytes_to_use must be "
                                 "specified in kv_connector_extra_config'")




def _engine_env(env: dict[str, str], overrides: dict, notes: list[str], where: str) -> None:
    """The engine's variables kvcalc reads (VLLM_USE_SIMPLE_KV_OFFLOAD: envs.py bool(int(value)), a ValueError for
    anything int() does not read; the switches of serve/engine_env.py); the others are listed in a note."""
    from ...vocab.releases.simple import ENV_VAR, env_enabled

    def fail(var: str, value: str) -> Exception:
        return _fail(var, f"an integer (vLLM reads bool(int(value)); {where})", value)

    if ENV_VAR in env:
        try:
            on = env_enabled(env[ENV_VAR])
        except ValueError:
            raise fail(ENV_VAR, env[ENV_VAR]) from None
        overrides["offload.use_simple_kv_offload"] = (on, f"{ENV_VAR}={env[ENV_VAR]} ({where})")
    read = {ENV_VAR} | read_switches(env, overrides, where, fail)
    if overrides.get("offload.backend", (None,))[0] == "lmcache":
        read |= _lmcache_env(env, overrides, notes, where)
    others = sorted(k for k in env if k not in read)
    if others:
        notes.append(f"environment variables that do not change the KV cache or the offload pool ({where}): "
                     + ", ".join(others))


def _lmcache_env(env: dict[str, str], overrides: dict, notes: list[str], where: str) -> set[str]:
    """`LMCACHE_MAX_LOCAL_CPU_SIZE=100 vllm serve … LMCacheConnectorV1`: the LMCACHE_* variables (and the file
    LMCACHE_CONFIG_FILE names) the LMCache process reads, as a manifest's env is read (layout/lmcache_sources.py);
    the line's kv_connector_extra_config entries win over them, as LMCache applies those last. The names read."""
    from ..layout.lmcache_sources import ENV_PREFIX
    from ..layout.lmcache_sources import overrides as lmcache_sources

    lm = {k: v for k, v in env.items() if k.startswith(ENV_PREFIX)}
    if not lm:
        return set()
    got, lm_notes = lmcache_sources(environ=lm, env_label=where)
    for path, value in got.items():
        overrides.setdefault(path, value)
    notes += lm_notes
    return set(lm)


def _native_flag(overrides: dict, notes: list[str]) -> None:
    """--kv-offloading-size with the native offloading backend: vLLM names the connector itself
    (SimpleCPUOffloadConnector with VLLM_USE_SIMPLE_KV_OFFLOAD=1, else OffloadingConnector) and sets the budget,
    keeping the other kv_connector_extra_config entries (config/vllm.py _post_init_kv_transfer_config, 0.33.0:
    1167-1175, 0.14.0:516-518: `kv_connector = ...; kv_connector_extra_config.update({"cpu_bytes_to_use":
    kv_offloading_size * (1 << 30)})`): the flag wins over a --kv-transfer-config budget and connector."""
    named = overrides.get("offload.backend", (None, ""))
    if overrides.pop("offload.cpu_bytes_to_use", None) is not None:
        notes.append("--kv-offloading-size replaces --kv-transfer-config's cpu_bytes_to_use (vLLM updates "
                     "kv_connector_extra_config with the flag's budget)")
    if named[1].startswith("--kv-transfer-config"):
        del overrides["offload.backend"]  # vLLM names the connector: VLLM_USE_SIMPLE_KV_OFFLOAD decides which
        replaced = [k for k in overrides if k.startswith(("offload.lmcache.", "offload.simple."))]
        for k in replaced:
            del overrides[k]
        if named[0] not in ("native",):
            notes.append(f"--kv-offloading-size replaces the connector --kv-transfer-config names ({named[1]}) "
                         "with vLLM's own offloading connector")


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


def _int_budget(budget: Any, notes: list[str]) -> int:
    """cpu_bytes_to_use as the spec reads it: int(value) (v1/kv_offload/cpu/spec.py:123 @0.33.0, :43 @0.19.1,
    cpu.py:49 @0.14.0). A float truncates (1.5e10 is 15,000,000,000 B), digits in a string pass; "64G", inf and
    nan raise there."""
    if isinstance(budget, float) and math.isfinite(budget) and budget >= 0:
        notes.append(f"--kv-transfer-config cpu_bytes_to_use {budget!r}: vLLM takes int() of it, {int(budget):,} B")
        return int(budget)
    if isinstance(budget, str) and budget.strip().isascii() and budget.strip().isdigit():
        return int(budget.strip())
    why = {float: "int() raises on it (OverflowError or ValueError)", bool: "a boolean is no byte count"}.get(
        type(budget), "int() raises on it (ValueError)")
    raise StartupRefusal(f"{SOURCE}: --kv-transfer-config cpu_bytes_to_use {budget!r}: {why}, and vLLM stops (give "
                         "a whole number of bytes, or --kv-offloading-size in GiB)")


def _transfer(cfg: Any, overrides: dict, notes: list[str]) -> None:
    if not isinstance(cfg, dict):
        raise _fail("--kv-transfer-config", "a JSON object", cfg)
    connector = cfg.get("kv_connector")
    extra = cfg.get("kv_connector_extra_config") or {}
    if not isinstance(extra, dict):
        raise _fail("--kv-transfer-config.kv_connector_extra_config", "a JSON object", extra)
    if connector is not None and cfg.get("kv_role") is None:
        # config/kv_transfer.py __post_init__ (0.14.0:100, 0.33.0:120): a connector without a role is a ValueError.
        raise StartupRefusal(f"{SOURCE}: --kv-transfer-config: vLLM stops with 'Please specify kv_role when "
                             "kv_connector is set' (kv_both for offloading)")
    budget = extra.get("cpu_bytes_to_use")
    if budget is not None and not (isinstance(budget, int) and not isinstance(budget, bool)):
        extra = {**extra, "cpu_bytes_to_use": _int_budget(budget, notes)}
    if connector == "LMCacheConnectorV1":
        _lmcache_extra(extra, overrides, notes)
        return
    if connector == "SimpleCPUOffloadConnector":
        _simple_extra(extra, overrides, notes)
        return
    if connector == "LMCacheMPConnector":
        # Its pool is the LMCache server's (--lmcache-server); its extra config names the server (lmcache.mp.host /
        # port / server_urls, LMCache 0.5.6 integration/vllm/lmcache_mp_connector.py:600-650), not the pool's size.
        overrides["offload.backend"] = ("lmcache_mp", "--kv-transfer-config kv_connector LMCacheMPConnector")
        if extra:
            notes.append("kv_connector_extra_config entries that do not change the LMCache server's pool: "
                         + ", ".join(map(str, extra)))
        return
    if connector != "OffloadingConnector":
        raise UnsupportedError(f"{SOURCE}: --kv-transfer-config: kv_connector {connector!r}: kvcalc models "
                               "OffloadingConnector, LMCacheConnectorV1, LMCacheMPConnector and "
                               "SimpleCPUOffloadConnector")
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
               "ngram": "ngram", "ngram_gpu": "ngram", "suffix": "suffix",  # config/speculative.py:74-82 @0.33.0
               "dspark": "dspark"}  # DeepSeek-V4's (config/speculative.py:62,934-943 @0.26.0)
    if method not in methods:
        raise UnsupportedError(f"{SOURCE}: --speculative-config: method {method!r}: kvcalc models "
                               f"{', '.join(methods)}")
    overrides["model.draft.method"] = (methods[method], "--speculative-config method")
    if cfg.get("num_speculative_tokens") is not None:
        overrides["model.draft.num_speculative_tokens"] = (cfg["num_speculative_tokens"],
                                                           "--speculative-config num_speculative_tokens")
    # ngram and suffix drafting read no draft model; MTP and DeepSeek-V4's DSpark read the target's
    # (config/speculative.py:706-712 @0.26.0: dspark takes target_model_config.model)
    if methods[method] not in ("mtp", "dspark", "ngram", "suffix"):
        if not isinstance(cfg.get("model"), str):
            raise _fail("--speculative-config.model", f"the {method} drafter model (a directory or a hub id)",
                        cfg.get("model"))
        revision = cfg.get("revision")
        if revision is not None and not isinstance(revision, str):
            raise _fail("--speculative-config.revision", "a branch, tag or commit hash", revision)
        # The drafter's own revision (config/speculative.py: revision for the draft model), not main.
        path = resolve_model(cfg["model"], revision=revision, flag="--speculative-config.model", env=env)
        overrides["model.draft.hf_config"] = (os.path.abspath(path), "--speculative-config model")


def load_serve(argv: list[str], *, overrides: dict[str, tuple[Any, str]] | None = None,
               env: dict[str, str] | None = None, base: dict[str, tuple[Any, str]] | None = None):
    """A serve command line -> a validated Layout (kvcalc's own flags in `overrides` win over the line's; the
    line's win over `base`: LMCache's file and environment, which its kv_connector_extra_config overrides)."""
    from ..layout.read import expand
    from ..layout.validate import validate

    release = (overrides or {}).get("vllm.version", (None, ""))[0]
    top, from_line, notes = parse(argv, env=env, release=release if isinstance(release, str) else None)
    merged = {**(base or {}), **from_line, **(overrides or {})}
    data, origin = expand(top, source=SOURCE, overrides=merged)
    return validate(data, source=SOURCE, overrides=merged, origin=origin), notes


# The line-reader interface (serve/servers.line_reader): vLLM's reads every line no other engine's reader claims.
load_line = load_serve
RELEASE_KEY = "vllm.version"  # the layout key naming the release that reads the line


def is_line(argv: list[str]) -> bool:
    return True


def image_release(image: str, overrides: dict, base: dict, say, where: str = "") -> None:
    """A vLLM container's image tag gives its vLLM (and LMCache) release, under --vllm-version / --lmcache-version
    (vocab/releases/images.py); a tag naming a release kvcalc does not model is refused before the model is looked
    up (the image decides)."""
    from ...vocab.releases.images import image_release as releases_of

    found = releases_of(image)
    if found.vllm is not None and "vllm.version" not in overrides:
        from ...vocab.releases.vllm import behaviour_for

        try:
            behaviour_for(found.vllm)
        except UnsupportedError as e:
            raise UnsupportedError(f"{where}: {found.how}: {e}") from None
        overrides["vllm.version"] = (found.vllm, found.how)
    else:
        say(f"note: {found.how}")
    if found.lmcache is not None:
        base.setdefault("offload.lmcache.version", (found.lmcache, found.how))
