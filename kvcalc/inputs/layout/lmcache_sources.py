"""LMCache's own configuration sources -> layout overrides under offload.lmcache, in LMCache's precedence.

LMCache 0.5.6 integration/vllm/utils.py lmcache_get_or_create_config (the same from 0.3.6): with
LMCACHE_CONFIG_FILE set, the YAML file, then every LMCACHE_<KEY> environment variable over it
(update_config_from_env; LMCACHE_EXTRA_CONFIG replaces the file's whole extra_config); without it, the
environment alone. vLLM's kv_connector_extra_config "lmcache.<key>" entries are applied after both
(vllm_v1_adapter.py _apply_extra_config); serve.py reads those. Input stage: reads files, never the network.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any, Mapping

from ...vocab.releases import lmcache as lmr
from ...vocab.errors import LayoutError

ENV_PREFIX = "LMCACHE_"
CONFIG_FILE_VAR = "LMCACHE_CONFIG_FILE"


def _all_names() -> dict[str, str]:
    """LMCACHE_<NAME> -> name for every key and alias any release read defines (v1/config_base.py from_env reads
    f"LMCACHE_{name.upper()}" for each)."""
    names: set[str] = set()
    for version in lmr.LMCACHE_RELEASES:
        names |= lmr.config_keys(version) | set(lmr.aliases(version))
    return {ENV_PREFIX + n.upper(): n for n in sorted(names)}


def unquote(value: str) -> str:
    """v1/config_base.py _parse_quoted_string: surrounding quotes removed (as a Python literal when it is one)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:
            out = ast.literal_eval(value)
            if isinstance(out, str):
                return out
        except (ValueError, SyntaxError):
            pass
        return value[1:-1]
    return value


def _text(path: str, what: str) -> str:
    from ..files import decode, read_bytes

    return decode(read_bytes(path, what), path)


def read_env_file(path: str) -> dict[str, str]:
    """A .env-style file: KEY=VALUE lines, optional `export `, # comments, blank lines."""
    text = _text(path, "a readable .env file")
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("export "):
            s = s[7:].lstrip()
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$", s)
        if not m:
            raise LayoutError(path, f"line {n}", "NAME=VALUE", line[:60])
        if m.group(1) in out:
            raise LayoutError(path, f"line {n}", "each variable once", m.group(1))
        out[m.group(1)] = m.group(2).strip()
    return out


def read_config_file(path: str, text: str | None = None) -> dict[str, Any]:
    """An LMCache YAML config (the file LMCACHE_CONFIG_FILE names), read strictly (load.parse_yaml); `text`: its
    content when it comes from a manifest (a ConfigMap mounted in the container), not from this machine."""
    from ..files import parse_yaml

    data = parse_yaml(_text(path, "a readable LMCache config YAML") if text is None else text, source=path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise LayoutError(path, "(top level)", "a mapping of LMCache config keys", type(data).__name__)
    return data


def overrides(*, config_file: str | None = None, environ: Mapping[str, str] | None = None,
              env_label: str = "environment",
              files: Mapping[str, str] | None = None) -> tuple[dict[str, tuple[Any, str]], list[str]]:
    """(overrides {offload.lmcache.<key>: (value, where)}, notes) from an LMCache config file and LMCACHE_*
    variables, the file first and the environment over it, as LMCache reads them. `config_file` is the file given
    with --lmcache-config; without it, LMCACHE_CONFIG_FILE from `environ` names it (relative to the working
    directory, as in the LMCache process)."""
    out: dict[str, tuple[Any, str]] = {}
    notes: list[str] = []
    env = dict(environ or {})
    named = env.get(CONFIG_FILE_VAR)
    path = config_file
    if path is None and named:
        path = unquote(named)
    elif path is not None and named and os.path.abspath(unquote(named)) != os.path.abspath(path):
        notes.append(f"--lmcache-config {path} is read instead of {CONFIG_FILE_VAR}={named} ({env_label})")
    text = None
    if path is not None and config_file is None and files is not None:
        # A manifest's LMCACHE_CONFIG_FILE is a path in the container: its text is a file the manifest mounts, never
        # a file of the same name on this machine.
        text = files.get(os.path.normpath(path))
        if text is None:
            raise LayoutError(env_label, CONFIG_FILE_VAR, "a file the manifest mounts in the container (a ConfigMap "
                              "or Secret it holds), or the file given with --lmcache-config", path)
    if path is not None:
        label = path if config_file is not None else f"{path} ({CONFIG_FILE_VAR})"
        for key, value in read_config_file(path, text).items():
            if key == "version":
                # offload.lmcache.version is kvcalc's own key (the release it models); LMCache's file has no such
                # key in any release read (v1/config.py _CONFIG_DEFINITIONS): refused like any key LMCache does
                # not define (LMCache itself logs "Unknown configuration key: version" and ignores it,
                # v1/config_base.py:211-212 _resolve_config_aliases), never taken as the release.
                raise LayoutError(label, "version", "a config key LMCache defines (no release "
                                  f"{lmr.LMCACHE_RELEASES[0]} - {lmr.LMCACHE_RELEASES[-1]} has `version`: LMCache "
                                  "ignores it; name the LMCache release with --lmcache-version)", value,
                                  detail="unknown key")
            out[f"offload.lmcache.{key}"] = (value, label)
    names = _all_names()
    unread = []
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or var == CONFIG_FILE_VAR:
            continue
        name = names.get(var)
        if name is None:
            unread.append(var)
            continue
        out[f"offload.lmcache.{name}"] = (unquote(env[var]), f"{var} ({env_label})")
    if unread:
        notes.append(f"LMCACHE_* variables that are no LMCache config key (LMCache does not read them as config): "
                     f"{', '.join(unread)}")
    return out, notes
