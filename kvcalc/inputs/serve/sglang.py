"""`python -m sglang.launch_server ...` / `sglang serve ...` -> the layout of an SGLang deployment (engine sglang),
with SGLang's own flag spellings (vocab/releases/sglang_flags.py: every option of SGLang's parser; argparse's prefix
abbreviations included, as SGLang accepts them). The flags that size the pools map to layout keys; flags SGLang has
that do not change them are listed in a note; flags that change them in ways kvcalc does not model are refused,
naming them; a flag SGLang does not have is refused too. Loaded only for SGLang lines (start-up time is a target)."""

from __future__ import annotations

import os
from typing import Any

from ...vocab.errors import LayoutError, UnsupportedError, known
from ...vocab.releases.sglang_flags import SWITCHES, VALUED
from .vllm import assignments, resolve_model

SOURCE = "sglang serve"
INT, FLOAT, STR = int, float, str
# SGLang flag -> (layout key, how its value is read)
VALUES: dict[str, tuple[str, Any]] = {
    "tp-size": ("parallel.tensor_parallel_size", INT), "tensor-parallel-size": ("parallel.tensor_parallel_size", INT),
    "pp-size": ("parallel.pipeline_parallel_size", INT),
    "pipeline-parallel-size": ("parallel.pipeline_parallel_size", INT),
    "dp-size": ("parallel.data_parallel_size", INT), "data-parallel-size": ("parallel.data_parallel_size", INT),
    "nnodes": ("parallel.nnodes", INT), "context-length": ("cache.max_model_len", INT),
    "kv-cache-dtype": ("cache.kv_cache_dtype", STR), "dtype": ("model.dtype", STR),
    "mem-fraction-static": ("sglang.mem_fraction_static", FLOAT), "max-total-tokens": ("sglang.max_total_tokens", INT),
    "page-size": ("sglang.page_size", INT), "chunked-prefill-size": ("sglang.chunked_prefill_size", INT),
    "cuda-graph-max-bs": ("sglang.cuda_graph_max_bs", INT),
    "cuda-graph-max-bs-decode": ("sglang.cuda_graph_max_bs", INT),
    "max-running-requests": ("sglang.max_running_requests", INT),
    "swa-full-tokens-ratio": ("sglang.swa_full_tokens_ratio", FLOAT),
    "hicache-ratio": ("sglang.hicache.ratio", FLOAT), "hicache-size": ("sglang.hicache.size", INT),
    "hicache-mem-layout": ("sglang.hicache.mem_layout", STR),
    "hicache-host-memory-mode": ("sglang.hicache.host_memory_mode", STR),
    "hicache-io-backend": ("sglang.hicache.io_backend", STR),
    "hicache-write-policy": ("sglang.hicache.write_policy", STR),
    "hicache-storage-backend": ("sglang.hicache.storage_backend", STR),
    "hicache-host-memory-fraction": ("sglang.hicache.host_memory_fraction", FLOAT),
}
SWITCH_VALUES = {"enable-hierarchical-cache": ("sglang.hicache.enabled", True),
                 "enable-hicache": ("sglang.hicache.enabled", True),
                 "disable-cuda-graph": ("sglang.disable_cuda_graph", True)}
# srt/arg_groups/fields/model.py @0.5.23 --dtype choices -> the layout's dtype; 'auto' keeps the config's.
DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32"}
# srt/mem_cache/kv_cache_dtype.py @0.5.23 --kv-cache-dtype -> kvcalc's names (the others are refused there).
KV_DTYPES = {"auto": "auto", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16",
             "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "fp32": "float32", "float32": "float32"}
# Flags that change the pools in ways kvcalc does not model.
NOT_MODELLED = {
    "speculative-algorithm": "a speculative draft (its KV cells and weights)",
    "speculative-draft-model-path": "a speculative draft (its KV cells and weights)",
    "enable-dp-attention": "DP attention (attention TP shrinks to TP / DP, padding buffers grow)",
    "attn-dp-size": "DP attention (attention TP shrinks to TP / DP, padding buffers grow)",
    "enable-lmcache": "LMCache's SGLang connector", "cpu-offload-gb": "weights offloaded to the CPU",
    "quantization": "a runtime weight quantization", "enable-unified-memory": "the unified memory pool",
    "dcp-size": "decode context parallelism", "enable-hisparse": "HiSparse",
    "disable-hybrid-swa-memory": "the hybrid SWA pool turned off", "config": "an SGLang --config YAML",
}
NOTE = {"node-rank": "one node of the engine (the plan is the engine's)",
        "attention-backend": "kvcalc takes SGLang's default page size for the GPU; give --page-size if it differs",
        "ep-size": "experts split over EP ranks: the weights figure shards them by TP",
        "expert-parallel-size": "experts split over EP ranks: the weights figure shards them by TP"}
MODEL_FLAGS = ("model-path", "model", "revision")


def is_sglang(argv: list[str]) -> bool:
    """A `python -m sglang.launch_server` or `sglang serve` line (after any environment assignments)."""
    _, words = assignments(list(argv))
    if words[:2] == ["sglang", "serve"]:
        return True
    return len(words) >= 3 and os.path.basename(words[0]).startswith("python") and words[1:3] == [
        "-m", "sglang.launch_server"]


def _fail(key: str, expected: str, got: Any = None) -> LayoutError:
    return LayoutError(SOURCE, key, expected, got)


def _canonical(name: str) -> str:
    """argparse's prefix matching (allow_abbrev): an exact option, else the one option it abbreviates."""
    bare = name[2:]
    if bare in SWITCHES or bare in VALUED:
        return bare
    found = sorted(n for n in SWITCHES | VALUED if n.startswith(bare))
    if len(found) == 1:
        return found[0]
    raise UnsupportedError(f"{SOURCE}: {name}: " + (f"ambiguous, SGLang would refuse it (it could be "
                           f"{', '.join('--' + f for f in found[:5])})" if found else
                           "SGLang 0.5.23's server has no such option (kvcalc refuses what SGLang would)"))


def _tokens(words: list[str]) -> tuple[str | None, list[tuple[str, str | None]]]:
    args = words[2:] if words[:2] == ["sglang", "serve"] else words[3:]
    model, i = None, 0
    out: list[tuple[str, str | None]] = []
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            name, eq, value = a.partition("=")
            canon = _canonical(name)
            if eq and canon in SWITCHES and canon not in VALUED:
                # A bool field is a store_true switch (srt/arg_groups/arg_utils.py:393-395 @0.5.23): argparse
                # stops on `--switch=VALUE` with "ignored explicit argument 'VALUE'" (it was read as on).
                raise _fail(f"--{canon}", "no value (a switch; SGLang's parser stops with \"argument "
                                          f"--{canon}: ignored explicit argument {value!r}\")", value)
            if eq:
                out.append((canon, value))
            elif canon in VALUED and i + 1 < len(args):
                out.append((canon, args[i + 1]))
                i += 1
            elif canon in VALUED:
                raise _fail(f"--{canon}", "a value")
            else:
                out.append((canon, None))
        elif model is None:
            model = a
        else:
            raise _fail("argv", "one positional argument (the model)", a)
        i += 1
    return model, out


def _read(flag: str, value: str, how) -> Any:
    try:
        return how(value)
    except ValueError:
        raise _fail(f"--{flag}", f"{'an integer' if how is int else 'a number'}", value) from None


def parse(argv: list[str], *, env: dict[str, str] | None = None,
          release: str | None = None) -> tuple[dict, dict[str, tuple[Any, str]], list[str]]:
    """An SGLang server line -> (layout dict, overrides {path: (value, flag)}, notes)."""
    _, words = assignments(list(argv))
    positional, given = _tokens(words)
    values = {name: value for name, value in given}
    model = values.get("model-path") or values.get("model") or positional
    if not model:
        raise _fail("--model-path", "a model: --model-path MODEL")
    config = resolve_model(model, revision=values.get("revision"), flag="--model-path", env=env)
    overrides: dict[str, tuple[Any, str]] = {"engine": ("sglang", SOURCE)}
    notes, ignored = [], []
    for name, value in given:
        flag = f"--{name}"
        if name in NOT_MODELLED:
            raise UnsupportedError(f"{SOURCE}: {flag}: {NOT_MODELLED[name]} is not modelled for SGLang; remove it "
                                   "to plan without it")
        if name in VALUES:
            key, how = VALUES[name]
            got = _read(name, known(value, "a valued flag's value"), how)  # a canonical name in VALUED: one
            if name == "dtype":
                if got == "auto":
                    continue
                got = DTYPES.get(got, got)
            elif name == "kv-cache-dtype":
                got = KV_DTYPES.get(got, got)
            overrides[key] = (got, flag)
        elif name in SWITCH_VALUES:
            key, on = SWITCH_VALUES[name]
            overrides[key] = (on, flag)
        elif name in NOTE:
            notes.append(f"{flag}: {NOTE[name]}")
        elif name not in MODEL_FLAGS:
            ignored.append(flag)
    if ignored:
        notes.append("flags that do not change the KV pools: " + ", ".join(dict.fromkeys(ignored)))
    return {"model": {"hf_config": os.path.abspath(config)}}, overrides, notes


def load_sglang_serve(argv: list[str], *, overrides: dict[str, tuple[Any, str]] | None = None,
                      env: dict[str, str] | None = None, base: dict[str, tuple[Any, str]] | None = None):
    """An SGLang server line -> a validated Layout (kvcalc's own flags in `overrides` win over the line's)."""
    from ..layout.validate import validate
    from ..layout.read import expand

    top, from_line, notes = parse(argv, env=env)
    merged = {**(base or {}), **from_line, **(overrides or {})}
    data, origin = expand(top, source=SOURCE, overrides=merged)
    return validate(data, source=SOURCE, overrides=merged, origin=origin), notes


# The line-reader interface (serve/servers.line_reader).
is_line = is_sglang
load_line = load_sglang_serve


def image_release(image: str, overrides: dict, base: dict, say, where: str = "") -> None:
    """An SGLang container's image tag gives its SGLang release, under --sglang-version
    (vocab/releases/sglang.image_release); a tag that names none is a note."""
    from ...vocab.releases.sglang import image_release as sglang_image

    version, how = sglang_image(image)
    if version is not None and "sglang.version" not in overrides:
        overrides["sglang.version"] = (version, how)
    elif version is None:
        say(f"note: {how}")
