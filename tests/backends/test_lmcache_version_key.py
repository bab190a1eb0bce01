"""A `version:` key in an LMCache config (issue 22): LMCache has no such key in any release kvcalc read (v1/config.py
_CONFIG_DEFINITIONS, 0.3.10 - 0.5.6); its loader warns "Unknown configuration key: version" and ignores it
(v1/config_base.py:211-212 _resolve_config_aliases; validate_and_set_config_value for "lmcache.*" entries). kvcalc
refuses it as it refuses every key LMCache does not define, and never takes it as the release it models."""

import json
import os
import shutil

from conftest import run

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(path, text):
    path.write_text(text)
    return str(path)


def test_a_version_key_in_lmcache_config_is_not_the_release(tmp_path, capsys):
    # No LMCache release defines `version` (v1/config.py _CONFIG_DEFINITIONS): LMCache warns and ignores it, kvcalc
    # refuses it as every key LMCache does not define; it never selects the modelled release.
    cfg = write(tmp_path / "lmcache.yaml", 'version: "0.3.12"\nmax_local_cpu_size: 4\n')
    code, out, err = run(capsys, "plan", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--lmcache-config", cfg)
    assert code == 2
    assert err.count("\n") == 1
    assert f"{cfg}: version: expected a config key LMCache defines" in err
    assert "(unknown key)" in err
    # A serve line's kv_connector_extra_config "lmcache.version" likewise.
    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(HERE, "fixtures", "models", "llama-3.1-8b.json"), model / "config.json")
    kvt = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"lmcache.version": "0.3.12"}})
    code, out, err = run(capsys, "plan", "--vllm-version", "0.33.0", "--", "vllm", "serve", str(model),
                         "--kv-transfer-config", kvt)
    assert code == 2
    assert "offload.lmcache.version (from --kv-transfer-config lmcache.version): expected a config key" in err
    # LMCACHE_VERSION is no LMCache variable either: noted, and the release stays the layout's.
    env = write(tmp_path / "e.env", "LMCACHE_VERSION=0.3.12\n")
    code, out, err = run(capsys, "plan", "examples/llama-3.1-8b-lmcache-tp8.yaml", "--lmcache-env-file", env,
                         "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["lmcache"]["lmcache_version"] == "0.5.6"
    assert "LMCACHE_VERSION" in err
